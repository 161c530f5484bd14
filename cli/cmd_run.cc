// `ios run`: an engine built now (build_engine: the network searched or its schedule read, the execution
// modes asked for timed) or loaded from a plan file, then timed, traced and checked against the CPU reference;
// `--device cpu` runs the CPU reference alone.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cli/commands.h"
#include "cli/run_reference.h"
#include "cli/search_report.h"
#include "common/tensor_file.h"
#include "engine/buckets.h"
#include "engine/plan_file.h"
#include "reference/reference_executor.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/compile_ahead.h"
#include "runtime/profiler.h"
#endif

namespace ios::cli {

int cmd_run_reference(const GraphSource& src, int batch, const std::string& input_file, const std::string& output_file,
                      Report& report) {
  Expected<LoadedModel> model = src.load_model();
  if (!model) return fail(model.status());
  const ios::ir::Weights weights = model->take_weights();
  const ios::cli::ReferenceRunOptions options{batch, input_file, output_file};
  if (Status s = ios::cli::run_reference(model->graph, weights, options, report.text(), report.json); !s)
    return fail(s);
  return report.finish();
}

void RunArgs::add_to(CLI::App* run) {
  build.add_to(run);
  run->add_option("--plan", plan_file,
                  "run this engine plan (`ios build --save`) instead of building one; of a file of batch "
                  "buckets (`ios build --batches`), the bucket --batch names");
  run->add_option("--warmup", warmup, "warm-up runs")->check(CLI::Range(0, 1000000));
  run->add_option("--iters,--iterations", iters, "timed runs (at least)")->check(CLI::Range(1, 100000000));
  run->add_option("--warmUp", warmup_ms, "warm up for at least this many milliseconds too (trtexec)")
      ->check(CLI::Range(0.0, 3.6e6));
  run->add_option("--duration", duration_s, "keep timing until at least this many seconds have passed (trtexec)")
      ->check(CLI::Range(0.0, 86400.0));
  run->add_option("--exportTimes", export_times, "write every timed inference's latency as JSON (trtexec)");
  run->add_option("--input", input_file,
                  "input batch: .npy (float32, N x C x H x W) or raw float32 (default: seeded uniform [-1, 1])");
  run->add_option("--output", output_file, "write the output batch: .npy, or raw float32 for other names");
  run->add_flag("--check", check, "compare the output with the CPU reference");
  run->add_flag("--check-nodes", check_nodes,
                "compare every node's output with the CPU reference and name those past the tolerance (keeps every "
                "activation: more memory)");
  run->add_option("--trace", trace_file, "write a Chrome-trace timeline (CUPTI) of one inference");
  run->add_option("--graph-dot", graph_dot_file,
                  "write the CUDA graph as Graphviz (every node with its launch parameters, every edge)");
  run->add_option("--chaos", chaos,
                  "instead of timing: N replays with random delays before every plan step, each output compared "
                  "bit for bit with the unperturbed run (exit 3 if any differs)")
      ->check(CLI::Range(0, 100000));
}

namespace {

// --exec auto, --prefetch-weights auto and --concat-writes auto build several executors and keep the fastest:
// not something to trace or perturb.
Status check_run_flags(const RunArgs& a) {
  const BuildArgs& b = a.build;
  const bool several = b.exec == "auto" || b.opt.prefetch_weights == "auto" || b.opt.concat_writes == "auto";
  RETURN_ERROR_IF(several && (b.no_graph || a.chaos > 0 || !a.trace_file.empty()), ios::ErrorCode::kInvalidArgument,
                  "--exec auto, --prefetch-weights auto and --concat-writes auto time the CUDA graphs they name and "
                  "keep the fastest; they cannot be combined with --no-graph, --chaos or --trace");
  RETURN_ERROR_IF(!a.plan_file.empty() && !b.schedule_file.empty(), ios::ErrorCode::kInvalidArgument,
                  "--plan holds its schedule: it cannot be combined with --schedule");
  return Status::ok();
}

// --plan's engine: the file's one engine, or of a file of batch buckets the bucket --batch names. A --batch
// other than the engine's is an error rather than a run at another batch than asked.
Expected<std::shared_ptr<ios::engine::Engine>> load_plan(const RunArgs& a,
                                                         const ios::engine::Engine::LoadOptions& options) {
  const int batch = a.build.opt.options.batch;
  ASSIGN_OR_RETURN(ios::engine::PlanFileKind kind, ios::engine::plan_file_kind(a.plan_file));
  std::shared_ptr<ios::engine::Engine> engine;
  if (kind == ios::engine::PlanFileKind::kBuckets) {
    ASSIGN_OR_RETURN(ios::engine::BatchBuckets buckets, ios::engine::BatchBuckets::load(a.plan_file, options));
    std::string sizes;
    for (int b : buckets.batches()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b);
    RETURN_ERROR_IF(!a.batch_given, ios::ErrorCode::kInvalidArgument,
                    a.plan_file + " holds batch buckets of " + sizes + ": give --batch with one of them");
    for (const auto& e : buckets.engines())
      if (e->config().batch == batch) engine = e;
    RETURN_ERROR_IF(!engine, ios::ErrorCode::kInvalidArgument,
                    "--batch " + std::to_string(batch) + ": " + a.plan_file + " holds batch buckets of " + sizes);
    return engine;
  }
  ASSIGN_OR_RETURN(engine, ios::engine::Engine::load(a.plan_file, options));
  RETURN_ERROR_IF(a.batch_given && engine->config().batch != batch, ios::ErrorCode::kInvalidArgument,
                  "--batch " + std::to_string(batch) + ": " + a.plan_file + " is an engine of batch " +
                      std::to_string(engine->config().batch));
  return engine;
}

}  // namespace

#ifdef IOS_WITH_RUNTIME
namespace {

void print_kernels(const ios::rt::Executor& exec, const ios::rt::Context& ctx, Report& report) {
  const ios::rt::KernelReport r = exec.kernel_report();
  const ios::rt::KernelStats& k = ctx.kernel_stats();
  std::fprintf(
      report.text(),
      "Convolutions: %d (%d with bias/activation fused, %d on our kernels, %d on the legacy API, %d writing a packed "
      "output our kernel copies into its slice) | %s, from the kernel cache file %d (%d "
      "of them compiled plans loaded; %d tuned again, kept from the file) | concat inputs written in place %d, copied "
      "%d | sums fused into convolutions "
      "%d (%d in the cuDNN graph)\n",
      r.convs, r.fused, r.own, r.legacy, r.output_copied, tuning_text(k).c_str(), k.from_file, k.plans_loaded,
      k.retuned, r.concat_inputs_in_place, r.concat_inputs_copied, r.sums_in_conv + r.sums_in_epilogue, r.sums_in_conv);
  if (ctx.options().verbose)
    for (const auto& [name, count] : r.engines)
      std::fprintf(report.text(), "  engine %-48s x%d\n", name.c_str(), count);
}

// "cuda-graph, dataflow (412 edges)" / "streams, staged" / "cuda-graph, auto: staged+prefetch".
std::string mode_text(const ios::rt::Executor& exec, const RunArgs& a, const ios::engine::Execution& e,
                      const std::string& variant) {
  const BuildArgs& b = a.build;
  const bool automatic =
      a.plan_file.empty() && (b.exec == "auto" || b.opt.prefetch_weights == "auto" || b.opt.concat_writes == "auto");
  std::string text =
      std::string(e.cuda_graph ? "cuda-graph" : "streams") + ", " + (automatic ? "auto: " : "") + variant;
  if (exec.graph_edges() >= 0) text += " (" + std::to_string(exec.graph_edges()) + " edges)";
  if (exec.programmatic_edges() > 0)
    text += ", " + std::to_string(exec.programmatic_edges()) + " programmatic edges made full";
  if (e.prefetch_ahead > 0)
    text += exec.prefetch_nodes() > 0 ? ", " + std::to_string(exec.prefetch_nodes()) + " prefetch nodes"
                                      : ", nothing prefetched: the schedule has no stages with weights";
  return text;
}

// Compares a GPU output with the CPU reference: exit code 2 past the precision's tolerance.
int check_output(const Graph& g, const ios::ir::Weights& weights, const std::vector<float>& input,
                 const std::vector<float>& gpu, const ios::ExecConfig& config, Report& report) {
  ios::reference::Tensor in(config.batch, g.input_shape());
  in.data = input;
  auto ref = ios::reference::run(g, weights, in);
  if (!ref) return fail(ref.status());
  const double err = ios::reference::relative_l2_error(gpu, ref->data);
  const double tol = config.tolerance();
  report.json["check"] = {{"relative_l2_error", err}, {"tolerance", tol}, {"pass", err < tol}};
  std::fprintf(report.text(), "Check: relative L2 error vs CPU reference %.3e (tolerance %.0e): %s\n", err, tol,
               err < tol ? "PASS" : "FAIL");
  return err < tol ? 0 : 2;
}

// --check-nodes: every node's GPU output against the CPU reference's, in graph order, so a wrong answer
// names the first op that computes it. Exit code 2 when any node is past the precision's tolerance.
int check_nodes(const Graph& g, const ios::ir::Weights& weights, const std::vector<float>& input,
                const ios::rt::Executor& exec, const ios::ExecConfig& config, Report& report) {
  ios::reference::Tensor in(config.batch, g.input_shape());
  in.data = input;
  auto ref = ios::reference::run_all(g, weights, in, {true});
  if (!ref) return fail(ref.status());
  const double tol = config.tolerance();
  nlohmann::json failing = nlohmann::json::array();
  for (ios::ir::NodeId id = 1; id < static_cast<ios::ir::NodeId>(g.nodes.size()); ++id) {
    auto got = exec.read(id);
    if (!got) return fail(got.status());
    const double err = ios::reference::relative_l2_error(*got, (*ref)[size_t(id)].data);
    if (err < tol) continue;
    const ios::ir::Node& n = g.node(id);
    if (failing.size() < 10)
      std::fprintf(report.text(), "Node '%s' (%s %s): relative L2 error vs CPU reference %.3e\n", n.name.c_str(),
                   ios::ir::op_kind_name(n.kind()), ios::ir::attrs_key(n.op).c_str(), err);
    failing.push_back({{"node", n.name}, {"relative_l2_error", err}});
  }
  report.json["check_nodes"] = {{"tolerance", tol}, {"failing", failing}};
  std::fprintf(report.text(), "Check nodes: %zu of %d nodes past the tolerance %.0e: %s\n", failing.size(),
               g.op_count(), tol, failing.empty() ? "PASS" : "FAIL");
  return failing.empty() ? 0 : 2;
}

// Chaos mode: the unperturbed output, then `replays` runs with random delays before every plan step, each
// output compared bit for bit (activations poisoned before every run, so a stale read cannot pass).
int run_chaos(ios::rt::Executor& exec, const std::vector<float>& input, int replays, std::vector<float>& baseline,
              Report& report) {
  auto run_with = [&](uint64_t seed) -> Expected<std::vector<float>> {
    if (Status s = exec.perturb(seed); !s) return s;
    if (Status s = exec.poison_activations(); !s) return s;
    if (Status s = exec.set_input(input); !s) return s;
    if (Status s = exec.run(); !s) return s;
    return exec.output();
  };
  auto first = run_with(0);
  if (!first) return fail(first.status());
  baseline = *first;
  int differing = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= replays; ++i) {
    auto out = run_with(uint64_t(i));
    if (!out) return fail(out.status());
    differing += std::memcmp(out->data(), baseline.data(), baseline.size() * sizeof(float)) != 0;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t > 2.0 && (i % 10 == 0 || i == replays))
      std::fprintf(stderr, "\r[chaos %d/%d] %d differ (ETA %.0f s)%s", i, replays, differing, t / i * (replays - i),
                   i == replays ? "\n" : "");
  }
  std::fprintf(report.text(),
               "Chaos: %d perturbed replays (random delays before every plan step), %d differ bit-for-bit from the "
               "unperturbed output: %s\n",
               replays, differing, differing == 0 ? "PASS" : "FAIL");
  report.json["chaos"] = {{"replays", replays}, {"differing", differing}, {"pass", differing == 0}};
  return differing == 0 ? 0 : 3;
}

// The timing line, plan and memory figures, kernels and device; the same figures into the JSON report.
Status report_timing(const RunArgs& a, const ios::rt::Executor& exec, const ios::rt::Context& ctx,
                     const ios::sched::ExecutionPlan& plan, const ios::rt::Timing& t, Report& report) {
  FILE* out = report.text();
  std::fprintf(out, "Latency: %.3f ms (median of %d after %d warm-up runs; min %.3f, mean %.3f, p90 %.3f)\n",
               t.median_ms, t.iterations, t.warmup_runs, t.min_ms, t.mean_ms, t.p90_ms);
  std::fprintf(out,
               "Streams: %d | Launches: %d | Events: %d | Activations: %.1f MiB peak (%.1f MiB without reuse, "
               "%d concats in place) | Workspace: %.1f MiB | Weights: %.1f MiB\n",
               plan.streams, plan.launches(), plan.events, exec.activation_bytes() / 1048576.0,
               exec.activation_bytes_no_reuse() / 1048576.0, exec.memory_plan().elided_concats,
               exec.workspace_bytes() / 1048576.0, exec.weight_bytes() / 1048576.0);
  print_kernels(exec, ctx, report);
  std::fprintf(out, "Device: %s | %s\n", ios::rt::device_description().c_str(), ios::rt::library_versions().c_str());
  const ios::rt::KernelReport k = exec.kernel_report();
  nlohmann::json& j = report.json;
  j["latency_ms"] = {{"median", t.median_ms},      {"min", t.min_ms},
                     {"mean", t.mean_ms},          {"p90", t.p90_ms},
                     {"iterations", t.iterations}, {"warmup_runs", t.warmup_runs}};
  j["plan"] = {{"streams", plan.streams}, {"launches", plan.launches()}, {"events", plan.events}};
  if (exec.graph_edges() >= 0) j["plan"]["graph_edges"] = exec.graph_edges();
  j["memory"] = {{"peak_activation_bytes", exec.activation_bytes()},
                 {"no_reuse_bytes", exec.activation_bytes_no_reuse()},
                 {"workspace_bytes", exec.workspace_bytes()},
                 {"weight_bytes", exec.weight_bytes()}};
  j["kernels"] = {{"convolutions", k.convs},
                  {"fused_bias_activation", k.fused},
                  {"legacy", k.legacy},
                  {"own_kernels", k.own},
                  {"output_copied", k.output_copied},
                  {"engines_tuned", ctx.kernel_stats().tuned},
                  {"engines_from_cache_file", ctx.kernel_stats().from_file},
                  {"engines_from_cache_file_tuned_again", ctx.kernel_stats().retuned},
                  {"engines_loaded_compiled", ctx.kernel_stats().plans_loaded},
                  {"tuning", tuning_json(ctx.kernel_stats())},
                  {"concat_inputs_in_place", k.concat_inputs_in_place},
                  {"concat_inputs_copied", k.concat_inputs_copied},
                  {"fused_sums", k.sums_in_conv + k.sums_in_epilogue},
                  {"engines", k.engines}};
  j["device"] = ios::rt::device_description();
  j["libraries"] = ios::rt::library_versions();
  if (a.export_times.empty()) return Status::ok();
  // trtexec's --exportTimes: one record per timed inference.
  nlohmann::json times = nlohmann::json::array();
  for (size_t i = 0; i < t.samples_ms.size(); ++i) times.push_back({{"iteration", i}, {"latencyMs", t.samples_ms[i]}});
  std::fprintf(out, "wrote %s (%zu inference times)\n", a.export_times.c_str(), t.samples_ms.size());
  return ios::write_text_file(a.export_times, times.dump(1) + "\n");
}

// CUPTI: one inference's kernels as a Chrome trace, and the utilization of five.
Status report_trace(const RunArgs& a, const Graph& g, ios::rt::Executor& exec, ios::rt::KernelProfiler& profiler,
                    const ios::sched::ExecutionPlan& plan, Report& report) {
  auto records = ios::rt::profile_runs(exec, profiler, 5);
  if (!records) return records.status();
  const ios::rt::Utilization u = ios::rt::summarize_utilization(*records);
  std::vector<ios::rt::KernelRecord> last;
  int attributed = 0;
  for (const auto& k : *records)
    if (k.replay == 4) {
      last.push_back(k);
      attributed += k.plan_step >= 0;
    }
  if (Status s = ios::write_text_file(a.trace_file, ios::rt::chrome_trace_json(g, plan, last)); !s) return s;
  std::fprintf(report.text(),
               "Utilization (CUPTI, mean of 5 inferences): span %.1f us | GPU busy %.1f%% | kernels %d, %.1f us "
               "summed | mean concurrency %.2f, max %d | %d/%zu kernels attributed to ops | wrote %s\n",
               u.span_us, 100 * u.busy_fraction, u.kernels, u.kernel_us, u.mean_concurrency, u.max_concurrency,
               attributed, last.size(), a.trace_file.c_str());
  report.json["utilization"] = {
      {"span_us", u.span_us},      {"busy_fraction", u.busy_fraction},       {"kernels", u.kernels},
      {"kernel_us", u.kernel_us},  {"mean_concurrency", u.mean_concurrency}, {"max_concurrency", u.max_concurrency},
      {"trace_file", a.trace_file}};
  return Status::ok();
}

// The engine `ios run` runs: --plan's, or one built now; `label` and `variant` name its schedule and execution.
Expected<std::shared_ptr<ios::engine::Engine>> run_engine(RunArgs& a, const ios::engine::DebugOptions& debug,
                                                          std::string& label, std::string& variant) {
  if (!a.plan_file.empty()) {
    ios::engine::Engine::LoadOptions lo;
    lo.kernel_cache = a.build.opt.kernel_cache;
    lo.verbose = a.build.opt.verbose;
    ASSIGN_OR_RETURN(std::shared_ptr<ios::engine::Engine> engine, load_plan(a, lo));
    const ios::engine::EnginePlan& p = engine->plan();
    label = p.info.schedule_label + " (from " + a.plan_file + ")";
    variant = ios::engine::variant_name(p.execution, p.config.concat_writes);
    return engine;
  }
  ASSIGN_OR_RETURN(BuiltEngine built, build_engine(a.build, debug, a.build.opt.report));
  label = built.engine->plan().info.schedule_label;
  if (!a.build.schedule_file.empty()) label += " (from " + a.build.schedule_file + ")";
  variant = built.build.variant;
  return built.engine;
}

}  // namespace

// One --compile-ahead process: its shard of the network's runtime-compiled engines built, nothing run.
int cmd_compile_ahead(const OptimizeArgs& a, const std::string& shard, const std::string& plans_dir) {
  int k = -1, n = 0;
  char slash = 0;
  std::istringstream in(shard);
  if (!(in >> k >> slash >> n) || slash != '/' || !in.eof())
    return fail(ios::error(ios::ErrorCode::kInvalidArgument, "--shard must be k/n, got '" + shard + "'"));
  Expected<Graph> g = a.src.load();
  if (!g) return fail(g.status());
  auto setup = make_search_setup(a);
  if (!setup) return fail(setup.status());
  auto engine = ios::rt::parse_conv_engine(a.conv_engine);
  if (!engine) return fail(engine.status());
  ios::rt::ContextOptions co;
  co.conv_engine = *engine;
  co.own_kernels = a.own_kernels_on();
  co.kernel_cache_path = a.kernel_cache == "none" ? "" : a.kernel_cache;
  auto compiled = ios::rt::compile_shard(*g, setup->config, co, k, n, plans_dir);
  if (!compiled) return fail(compiled.status());
  std::printf("compiled %d plans (shard %d/%d)\n", *compiled, k, n);
  return 0;
}

namespace {

// The run proper: the engine's executor timed (or perturbed), traced and checked as the flags ask.
int run_on_gpu(RunArgs& a, ios::engine::Engine& engine, ios::engine::DebugOptions debug,
               ios::rt::KernelProfiler* profiler, const std::string& label, const std::string& variant) {
  Report& report = a.build.opt.report;
  auto context = engine.create_context(debug);
  if (!context) return fail(context.status());
  ios::rt::Executor& exec = *(*context)->executor();
  const Graph* g = &engine.graph();
  const ios::ir::Weights& weights = *engine.plan().weights;
  auto compiled = ios::sched::compile_plan(*g, engine.plan().schedule, engine.plan().execution.mode);
  if (!compiled) return fail(compiled.status());
  const ios::sched::ExecutionPlan& plan = *compiled;
  const ios::ExecConfig& config = exec.config();
  auto input = ios::cli::read_run_input(a.input_file, *g, config.batch);
  if (!input) return fail(input.status());
  if (Status s = exec.set_input(*input); !s) return fail(s);
  if (!a.graph_dot_file.empty())
    if (Status s = exec.write_graph_dot(a.graph_dot_file); !s) return fail(s);
  std::fprintf(report.text(), "Model: %s | Optimization: %s | Batchsize: %d | Precision: %s | Layout: %s | Mode: %s\n",
               g->name.c_str(), label.c_str(), config.batch, config.precision().c_str(),
               ios::layout_name(config.layout), mode_text(exec, a, engine.plan().execution, variant).c_str());
  report.json.update({{"model", g->name},
                      {"optimization", label},
                      {"batch", config.batch},
                      {"precision", config.precision()},
                      {"layout", ios::layout_name(config.layout)},
                      {"concat_writes", ios::concat_writes_name(config.concat_writes)},
                      {"graph", engine.plan().execution.cuda_graph},
                      {"exec", a.plan_file.empty() ? a.build.exec : variant},
                      {"exec_mode", ios::sched::exec_mode_name(engine.plan().execution.mode)},
                      {"prefetch_ahead", engine.plan().execution.prefetch_ahead}});
  if (!a.plan_file.empty()) report.json["plan_file"] = a.plan_file;
  std::vector<float> output;
  if (a.chaos > 0) {
    if (int rc = run_chaos(exec, *input, a.chaos, output, report); rc != 0) return report.finish(rc);
  } else {
    const ios::rt::TimingOptions timing{a.warmup, a.warmup_ms, a.iters, a.duration_s};
    auto t = exec.time(timing);
    if (!t) return fail(t.status());
    if (Status s = report_timing(a, exec, exec.context(), plan, *t, report); !s) return fail(s);
    if (profiler)
      if (Status s = report_trace(a, *g, exec, *profiler, plan, report); !s) return fail(s);
    if (a.check || a.check_nodes || !a.output_file.empty()) {
      if (Status s = exec.poison_activations(); !s) return fail(s);
      if (Status s = exec.set_input(*input); !s) return fail(s);
      if (Status s = exec.run(); !s) return fail(s);
      auto gpu = exec.output();
      if (!gpu) return fail(gpu.status());
      output = std::move(*gpu);
    }
  }
  if (!a.output_file.empty()) {
    const ios::ir::Shape out = g->output_shape();
    if (Status s = ios::write_tensor_file(a.output_file, output, {config.batch, out.c, out.h, out.w}); !s)
      return fail(s);
    std::fprintf(report.text(), "wrote %s (%d x %s float32)\n", a.output_file.c_str(), config.batch,
                 out.to_string().c_str());
    report.json["output_file"] = a.output_file;
  }
  int rc = a.check ? check_output(*g, weights, *input, output, config, report) : 0;
  if (a.check_nodes) rc = std::max(rc, check_nodes(*g, weights, *input, exec, config, report));
  return report.finish(rc);
}

}  // namespace
#endif

int cmd_run(RunArgs& a) {
  Report& report = a.build.opt.report;
  if (a.build.device == "cpu") {
    if (a.plan_file.empty())
      return cmd_run_reference(a.build.opt.src, a.build.opt.options.batch, a.input_file, a.output_file, report);
    auto engine = load_plan(a, {ios::engine::Device::kCpu, "", false});
    if (!engine) return fail(engine.status());
    const ios::cli::ReferenceRunOptions options{(*engine)->config().batch, a.input_file, a.output_file};
    if (Status s = ios::cli::run_reference((*engine)->graph(), *(*engine)->plan().weights, options, report.text(),
                                           report.json);
        !s)
      return fail(s);
    return report.finish();
  }
  if (Status s = check_run_flags(a); !s) return fail(s);
  if (a.plan_file.empty())
    if (Status s = check_build_flags(a.build); !s) return fail(s);
#ifdef IOS_WITH_RUNTIME
  if (Status s = ios::rt::require_gpu(); !s) return fail(s);
  std::unique_ptr<ios::rt::KernelProfiler> profiler;
  ios::engine::DebugOptions debug;
  debug.chaos = a.chaos > 0;
  debug.keep_all = a.check_nodes;
  if (!a.trace_file.empty()) {
    auto p = ios::rt::KernelProfiler::create();
    if (!p) return fail(p.status().with_context("--trace"));
    profiler = std::move(*p);
    debug.observer = profiler.get();
  }
  std::string label, variant;
  auto engine = run_engine(a, debug, label, variant);
  if (!engine) return fail(engine.status());
  return run_on_gpu(a, **engine, debug, profiler.get(), label, variant);
#else
  return fail(ios::error(ios::ErrorCode::kUnavailable,
                         "ios run on the GPU needs the GPU runtime, which this build does not include (configure "
                         "with CUDA); --device cpu runs the CPU reference"));
#endif
}

}  // namespace ios::cli
