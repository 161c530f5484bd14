// `ios build`: a network searched (or its schedule read), its kernels tuned and its execution chosen, then
// saved as an engine plan (trtexec's --saveEngine). `ios run` builds its engine the same way.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/search_setup.h"
#include "engine/buckets.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/context.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#endif

namespace ios::cli {

namespace {

// The flags as the engine's build options; every flag checked, so a typo is reported on any machine.
Expected<ios::engine::BuildOptions> build_options(const BuildArgs& a) {
  ios::engine::BuildOptions o;
  ASSIGN_OR_RETURN(o.device, ios::engine::parse_device(a.device));
  o.precision = a.opt.precision;
  o.layout = a.opt.layout;
  o.search = a.opt.options;
  Expected<ios::sched::Policy> policy = ios::sched::parse_policy(a.opt.policy);
  if (!policy) return policy.status().with_context("--opt");
  o.search.policy = *policy;
  o.cost_model = a.opt.cost_model;
  RETURN_IF_ERROR(a.opt.check_prefetch_weights());
  RETURN_IF_ERROR(a.opt.compile_ahead_processes().status());
  o.timing_rule = a.opt.timing_rule();
  o.dataflow_segment = a.opt.dataflow_segment;
  o.resources = a.opt.resources;
  Expected<std::vector<ios::sched::ExecMode>> modes = ios::engine::parse_exec_modes(a.exec);
  if (!modes) return modes.status().with_context("--exec");
  o.exec_modes = *modes;
  o.prefetch_aheads = a.opt.prefetch_aheads();
  Expected<std::vector<ios::ConcatWrites>> writes = ios::engine::parse_concat_writes_variants(a.opt.concat_writes);
  if (!writes) return writes.status().with_context("--concat-writes");
  o.concat_writes = *writes;
  RETURN_ERROR_IF(a.no_graph && a.opt.prefetch_weights != "off", ios::ErrorCode::kInvalidArgument,
                  "--prefetch-weights adds nodes to the CUDA graph; it cannot be combined with --no-graph");
  o.cuda_graph = !a.no_graph;
  o.fused_sums = !a.no_fused_sums;
  o.shared_concats = !a.no_shared_concats;
  o.conv_engine = a.opt.conv_engine;
  o.own_kernels = a.opt.own_kernels_on();
  o.kernel_cache = a.opt.kernel_cache == "none" ? "" : a.opt.kernel_cache;
  o.verbose = a.opt.verbose;
  return o;
}

// --schedule's file, checked against the network; a note where it was searched on another device.
Expected<std::optional<ios::sched::Schedule>> given_schedule(const BuildArgs& a, const Graph& g, FILE* out) {
  if (a.schedule_file.empty()) return std::optional<ios::sched::Schedule>();
  ASSIGN_OR_RETURN(ios::sched::Schedule s, ios::sched::load_schedule_for(g, a.schedule_file));
#ifdef IOS_WITH_RUNTIME
  if (a.device == "gpu" && !s.meta.device.empty() && s.meta.device != ios::rt::device_description())
    std::fprintf(out, "Note: schedule was optimised on another device: %s\n", s.meta.device.c_str());
#endif
  return std::optional<ios::sched::Schedule>(std::move(s));
}

void report_variants(const ios::engine::BuildReport& b, Report& report) {
  if (b.variants_ms.empty()) return;
  nlohmann::json timed;
  std::fprintf(report.text(), "Exec auto (3 interleaved rounds of 100):");
  for (size_t i = 0; i < b.variants_ms.size(); ++i) {
    timed[b.variants_ms[i].first] = b.variants_ms[i].second;
    std::fprintf(report.text(), "%s %s %.3f ms", i ? "," : "", b.variants_ms[i].first.c_str(), b.variants_ms[i].second);
  }
  std::fprintf(report.text(), " -> %s\n", b.variant.c_str());
  report.json["exec_auto_ms"] = timed;
}

}  // namespace

void BuildArgs::add_to(CLI::App* cmd) {
  opt.add_to(cmd);
  cmd->add_option("--schedule", schedule_file, "use this schedule file instead of searching");
  cmd->add_option("--exec", exec,
                  "staged (each stage waits for the previous one, as IOS runs) | dataflow (each launch waits only "
                  "for what it reads; the CUDA graph keeps exactly the data and memory-reuse edges) | "
                  "dataflow-ordered (dataflow, keeping the order of launches on each of the schedule's streams) | "
                  "auto (staged and dataflow built and timed, the faster kept)");
  cmd->add_flag("--no-graph", no_graph, "issue launches on streams instead of replaying a CUDA graph");
  cmd->add_flag("--no-fused-sums", no_fused_sums,
                "compute every sum with its own kernel (default: a convolution adds it in its epilogue)");
  cmd->add_flag("--no-shared-concats", no_shared_concats,
                "gather every concatenation an op reads (default: ops whose concatenations extend one another, as "
                "DenseNet's layers, read prefixes of one shared buffer)");
  cmd->add_option("--device", device, kDeviceHelp)->check(CLI::IsMember({"gpu", "cpu"}));
}

Status check_build_flags(const BuildArgs& a) { return build_options(a).status(); }

Expected<BuiltEngine> build_engine(BuildArgs& a, const ios::engine::DebugOptions& debug, Report& report) {
  ASSIGN_OR_RETURN(ios::engine::BuildOptions options, build_options(a));
  ASSIGN_OR_RETURN(LoadedModel model, a.opt.src.load_model());
  ASSIGN_OR_RETURN(std::unique_ptr<ios::engine::Builder> builder, ios::engine::Builder::create(options));
#ifdef IOS_WITH_RUNTIME
  const Graph& g = model.graph;
  const OptimizeArgs& opt = a.opt;
  const ios::ExecConfig config = builder->config();
  builder->on_gpu_context(
      [&g, &opt, config](ios::rt::Context& c) { return start_compile_ahead_on_tuning(g, opt, config, c); });
#endif
  ASSIGN_OR_RETURN(std::optional<ios::sched::Schedule> schedule, given_schedule(a, model.graph, report.text()));
  BuiltEngine built;
  Expected<std::shared_ptr<ios::engine::Engine>> engine =
      builder->build(model.graph, model.take_weights(), std::move(schedule), debug, &built.build);
#ifdef IOS_WITH_RUNTIME
  // The network has its kernels: nothing is left for --compile-ahead's processes to compile.
  if (a.device == "gpu")
    if (auto context = builder->gpu_context()) (*context)->stop_tuning_companions();
#endif
  if (!engine) return engine.status();
  built.engine = std::move(*engine);
  report_variants(built.build, report);
  return built;
}

int cmd_build_buckets(BuildArgs& a, const std::string& save_file, const std::vector<int>& batches) {
  Report& report = a.opt.report;
  if (!a.schedule_file.empty())
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--schedule was searched at one batch size: it cannot be given with --batches"));
  Expected<ios::engine::BuildOptions> options = build_options(a);
  if (!options) return fail(options.status());
  Expected<LoadedModel> model = a.opt.src.load_model();
  if (!model) return fail(model.status());
  auto buckets = ios::engine::BatchBuckets::build(*options, model->graph, model->take_weights(), batches);
  if (!buckets) return fail(buckets.status());
  if (Status s = buckets->save(save_file); !s) return fail(s);
  nlohmann::json built = nlohmann::json::array();
  for (const auto& engine : buckets->engines()) {
    const ios::engine::EnginePlan& p = engine->plan();
    const std::string variant = ios::engine::variant_name(p.execution, p.config.concat_writes);
    std::fprintf(report.text(), "Built %s | Batchsize: %d | Optimization: %s (%d stages) | Precision: %s | Mode: %s\n",
                 p.graph.name.c_str(), p.config.batch, p.info.schedule_label.c_str(), p.schedule.stage_count(),
                 p.config.precision().c_str(), variant.c_str());
    built.push_back({{"batch", p.config.batch},
                     {"optimization", p.info.schedule_label},
                     {"stages", p.schedule.stage_count()},
                     {"exec", variant}});
  }
  std::fprintf(report.text(), "wrote %s (%zu batch buckets)\n", save_file.c_str(), buckets->engines().size());
  report.json.update({{"buckets", built}, {"plan_file", save_file}});
  return report.finish();
}

int cmd_build(BuildArgs& a, const std::string& save_file, const std::vector<int>& batches) {
  if (!batches.empty()) return cmd_build_buckets(a, save_file, batches);
  Report& report = a.opt.report;
  auto built = build_engine(a, {}, report);
  if (!built) return fail(built.status());
  const ios::engine::EnginePlan& p = built->engine->plan();
  if (Status s = built->engine->save(save_file); !s) return fail(s);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(save_file, ec);
  std::fprintf(report.text(),
               "Built %s | Optimization: %s (%d stages) | Batchsize: %d | Precision: %s | Layout: %s | Mode: %s | "
               "Kernels: %zu tuned choices | Built for: %s\n",
               p.graph.name.c_str(), p.info.schedule_label.c_str(), p.schedule.stage_count(), p.config.batch,
               p.config.precision().c_str(), ios::layout_name(p.config.layout), built->build.variant.c_str(),
               p.kernels.size(), p.info.device.empty() ? "any GPU (no kernels tuned)" : p.info.device.c_str());
  std::fprintf(report.text(), "wrote %s (%.1f MiB)\n", save_file.c_str(), ec ? 0.0 : double(bytes) / 1048576.0);
  report.json.update({{"model", p.graph.name},
                      {"optimization", p.info.schedule_label},
                      {"stages", p.schedule.stage_count()},
                      {"batch", p.config.batch},
                      {"precision", p.config.precision()},
                      {"layout", ios::layout_name(p.config.layout)},
                      {"exec", built->build.variant},
                      {"kernel_choices", p.kernels.size()},
                      {"built_for", p.info.device},
                      {"plan_file", save_file}});
  return report.finish();
}

}  // namespace ios::cli
