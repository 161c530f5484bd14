// `ios run`: a network scheduled (or its schedule file read), built on the GPU in the execution modes asked
// for, timed, traced, checked against the CPU reference; `--device cpu` runs the CPU reference alone.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cli/commands.h"
#include "cli/run_reference.h"
#include "cli/search_report.h"
#include "common/tensor_file.h"
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

#ifdef IOS_WITH_RUNTIME
namespace {

void print_kernels(const ios::rt::Executor& exec, const ios::rt::Context& ctx, Report& report) {
  const ios::rt::KernelReport r = exec.kernel_report();
  const ios::rt::KernelStats& k = ctx.kernel_stats();
  std::fprintf(
      report.text(),
      "Convolutions: %d (%d with bias/activation fused, %d on the legacy API, %d writing a packed output our kernel "
      "copies into its slice) | %s, from the kernel cache file %d (%d "
      "of them compiled plans loaded; %d tuned again, kept from the file) | concat inputs written in place %d, copied "
      "%d | sums fused into convolutions "
      "%d (%d in the cuDNN graph)\n",
      r.convs, r.fused, r.legacy, r.output_copied, tuning_text(k).c_str(), k.from_file, k.plans_loaded, k.retuned,
      r.concat_inputs_in_place, r.concat_inputs_copied, r.sums_in_conv + r.sums_in_epilogue, r.sums_in_conv);
  if (ctx.options().verbose)
    for (const auto& [name, count] : r.engines)
      std::fprintf(report.text(), "  engine %-48s x%d\n", name.c_str(), count);
}

// One way to run a schedule: its execution mode, how many stages ahead the CUDA graph prefetches each
// stage's weights (0: not at all), and how its concatenations are written.
struct RunVariant {
  ios::sched::ExecMode mode = ios::sched::ExecMode::kStaged;
  int prefetch_ahead = 0;
  ios::ConcatWrites concat_writes = ios::ConcatWrites::kInPlace;
  std::string name() const {
    std::string text = std::string(ios::sched::exec_mode_name(mode)) + ios::rt::prefetch_suffix(prefetch_ahead);
    if (concat_writes != ios::ConcatWrites::kInPlace) text += std::string("/") + ios::concat_writes_name(concat_writes);
    return text;
  }
};

// "cuda-graph, dataflow (412 edges)" / "streams, staged" / "cuda-graph, auto: staged+prefetch".
std::string mode_text(const ios::rt::Executor& exec, const RunArgs& a, const RunVariant& v) {
  const bool automatic = a.exec == "auto" || a.opt.prefetch_weights == "auto" || a.opt.concat_writes == "auto";
  std::string text = std::string(a.no_graph ? "streams" : "cuda-graph") + ", " + (automatic ? "auto: " : "") + v.name();
  if (exec.graph_edges() >= 0) text += " (" + std::to_string(exec.graph_edges()) + " edges)";
  if (exec.programmatic_edges() > 0)
    text += ", " + std::to_string(exec.programmatic_edges()) + " programmatic edges made full";
  if (v.prefetch_ahead > 0)
    text += exec.prefetch_nodes() > 0 ? ", " + std::to_string(exec.prefetch_nodes()) + " prefetch nodes"
                                      : ", nothing prefetched: the schedule has no stages with weights";
  return text;
}

// How --concat-writes may write concatenations: one way, or both for auto.
Expected<std::vector<ios::ConcatWrites>> concat_writes_variants(const std::string& flag) {
  if (flag == "auto") return std::vector<ios::ConcatWrites>{ios::ConcatWrites::kInPlace, ios::ConcatWrites::kConvCopy};
  Expected<ios::ConcatWrites> writes = ios::parse_concat_writes(flag);
  if (!writes)
    return ios::error(ios::ErrorCode::kInvalidArgument,
                      "--concat-writes must be in-place, conv-copy or auto, got '" + flag + "'");
  return std::vector<ios::ConcatWrites>{*writes};
}

// The variants --exec, --prefetch-weights and --concat-writes name: one, or for auto every one an engine
// builder would time.
Expected<std::vector<RunVariant>> run_variants(const RunArgs& a) {
  std::vector<ios::sched::ExecMode> modes;
  if (a.exec == "auto") {
    modes = {ios::sched::ExecMode::kStaged, ios::sched::ExecMode::kDataflow};
  } else {
    Expected<ios::sched::ExecMode> mode = ios::sched::parse_exec_mode(a.exec);
    if (!mode) return mode.status().with_context("--exec");
    modes = {*mode};
  }
  RETURN_IF_ERROR(a.opt.check_prefetch_weights());
  RETURN_IF_ERROR(a.opt.compile_ahead_processes().status());
  const std::vector<int> prefetch = a.opt.prefetch_aheads();
  Expected<std::vector<ios::ConcatWrites>> writes = concat_writes_variants(a.opt.concat_writes);
  if (!writes) return writes.status();
  RETURN_ERROR_IF(a.no_graph && a.opt.prefetch_weights != "off", ios::ErrorCode::kInvalidArgument,
                  "--prefetch-weights adds nodes to the CUDA graph; it cannot be combined with --no-graph");
  RETURN_ERROR_IF(
      modes.size() * prefetch.size() * writes->size() > 1 && (a.no_graph || a.chaos > 0 || !a.trace_file.empty()),
      ios::ErrorCode::kInvalidArgument,
      "--exec auto, --prefetch-weights auto and --concat-writes auto time the CUDA graphs they name and "
      "keep the fastest; they cannot be combined with --no-graph, --chaos or --trace");
  std::vector<RunVariant> out;
  for (ios::sched::ExecMode mode : modes)
    for (int p : prefetch)
      for (ios::ConcatWrites w : *writes) out.push_back(RunVariant{mode, p, w});
  return out;
}

struct BuiltRun {
  RunVariant variant;
  ios::sched::ExecutionPlan plan;
  std::unique_ptr<ios::rt::Executor> exec;
};

// The schedule compiled and built for each variant; with more than one, each is timed in three
// interleaved rounds of 100 replays (the candidates share one store: weights uploaded once) and the one
// with the lowest median of round medians is kept. Reported, so that a user sees what auto chose and why.
Expected<BuiltRun> build_run(const std::vector<RunVariant>& variants, const Graph& g,
                             const ios::sched::Schedule& schedule, const ios::ir::Weights& weights,
                             ios::rt::ExecutorOptions options, Report& report) {
  if (variants.size() > 1) options.store = std::make_shared<ios::rt::DeviceStore>();
  std::vector<BuiltRun> runs;
  for (const RunVariant& v : variants) {
    ASSIGN_OR_RETURN(ios::sched::ExecutionPlan plan, ios::sched::compile_plan(g, schedule, v.mode));
    options.prefetch_ahead = v.prefetch_ahead;
    options.config.concat_writes = v.concat_writes;
    ASSIGN_OR_RETURN(auto exec, ios::rt::Executor::create(g, weights, plan, options));
    runs.push_back(BuiltRun{v, std::move(plan), std::move(exec)});
  }
  if (runs.size() == 1) return std::move(runs.front());
  std::vector<std::vector<double>> rounds(runs.size());
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      ASSIGN_OR_RETURN(ios::rt::Timing t, runs[i].exec->time(ios::rt::TimingOptions{10, 0, 100, 0}));
      rounds[i].push_back(t.median_ms);
    }
  std::vector<double> ms;
  for (const std::vector<double>& r : rounds) ms.push_back(ios::sched::median_of(r));
  const size_t best = size_t(std::min_element(ms.begin(), ms.end()) - ms.begin());
  nlohmann::json timed;
  std::fprintf(report.text(), "Exec auto (3 interleaved rounds of 100):");
  for (size_t i = 0; i < runs.size(); ++i) {
    timed[runs[i].variant.name()] = ms[i];
    std::fprintf(report.text(), "%s %s %.3f ms", i ? "," : "", runs[i].variant.name().c_str(), ms[i]);
  }
  std::fprintf(report.text(), " -> %s\n", runs[best].variant.name().c_str());
  report.json["exec_auto_ms"] = timed;
  return std::move(runs[best]);
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

// The schedule `ios run` executes: a file (checked against the network), or a search now.
Expected<ios::sched::Schedule> run_schedule(RunArgs& a, const Graph& g, Session& session, std::string& label) {
  if (!a.schedule_file.empty()) {
    auto s = ios::sched::load_schedule_for(g, a.schedule_file);
    if (!s) return s.status();
    label = s->meta.policy + " (from " + a.schedule_file + ")";
    if (!s->meta.device.empty() && s->meta.device != ios::rt::device_description())
      std::fprintf(a.opt.report.text(), "Note: schedule was optimised on another device: %s\n", s->meta.device.c_str());
    return s;
  }
  auto policy = ios::sched::parse_policy(a.opt.policy);
  if (!policy) return policy.status().with_context("--opt");
  a.opt.options.policy = *policy;
  auto model =
      make_cost_model(g, a.opt.cost_model, session.config, a.opt.timing_rule(), [&] { return session.context(); });
  if (!model) return model.status();
  if (Status s = attach_opara_profile(g, a.opt, session); !s) return s;
  a.opt.options.dataflow_segment = dataflow_segment(a.opt, **model);
  auto r = ios::sched::optimize(g, a.opt.options, **model);
  if (!r) return r.status();
  label = display_name(a.opt, *policy);
  return r->schedule;
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

// The batch the run feeds: --input's file, else the seeded input of ir/weights.h.
Expected<std::vector<float>> run_input(const RunArgs& a, const Graph& g, int batch) {
  return ios::cli::read_run_input(a.input_file, g, batch);
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
  auto session = make_session(a);
  if (!session) return fail(session.status());
  auto engine = ios::rt::parse_conv_engine(a.conv_engine);
  if (!engine) return fail(engine.status());
  ios::rt::ContextOptions co;
  co.conv_engine = *engine;
  co.kernel_cache_path = a.kernel_cache == "none" ? "" : a.kernel_cache;
  auto compiled = ios::rt::compile_shard(*g, session->config, co, k, n, plans_dir);
  if (!compiled) return fail(compiled.status());
  std::printf("compiled %d plans (shard %d/%d)\n", *compiled, k, n);
  return 0;
}

int cmd_run(RunArgs& a) {
  Report& report = a.opt.report;
  if (a.device == "cpu") return cmd_run_reference(a.opt.src, a.opt.options.batch, a.input_file, a.output_file, report);
  auto variants = run_variants(a);  // flags first: a typo is reported on any machine
  if (!variants) return fail(variants.status());
  Expected<LoadedModel> model = a.opt.src.load_model();
  if (!model) return fail(model.status());
  const Graph* g = &model->graph;
  if (Status s = ios::rt::require_gpu(); !s) return fail(s);
  auto session = make_session(a.opt);
  if (!session) return fail(session.status());
  if (Status s = session->compile_ahead_on_tuning(*g); !s) return fail(s);
  auto context = session->context();
  if (!context) return fail(context.status());
  std::string label;
  auto schedule = run_schedule(a, *g, *session, label);
  if (!schedule) return fail(schedule.status());
  const ios::ir::Weights weights = model->take_weights();
  ios::rt::ExecutorOptions options;
  options.config = session->config;
  options.context = *context;
  options.use_graph = !a.no_graph;
  options.fuse_sums = !a.no_fused_sums;
  options.share_concats = !a.no_shared_concats;
  options.chaos = a.chaos > 0;
  options.keep_all = a.check_nodes;
  std::unique_ptr<ios::rt::KernelProfiler> profiler;
  if (!a.trace_file.empty()) {
    auto p = ios::rt::KernelProfiler::create();
    if (!p) return fail(p.status().with_context("--trace"));
    profiler = std::move(*p);
    options.observer = profiler.get();
  }
  auto built = build_run(*variants, *g, *schedule, weights, options, report);
  (*context)->stop_tuning_companions();  // the network has its kernels: nothing left for them to compile
  if (!built) return fail(built.status());
  ios::rt::Executor& exec = *built->exec;
  const ios::sched::ExecutionPlan& plan = built->plan;
  const ios::ExecConfig& config = exec.config();  // the variant's: how it writes concatenations
  auto input = run_input(a, *g, config.batch);
  if (!input) return fail(input.status());
  if (Status s = exec.set_input(*input); !s) return fail(s);
  if (!a.graph_dot_file.empty())
    if (Status s = exec.write_graph_dot(a.graph_dot_file); !s) return fail(s);
  std::fprintf(report.text(), "Model: %s | Optimization: %s | Batchsize: %d | Precision: %s | Layout: %s | Mode: %s\n",
               g->name.c_str(), label.c_str(), config.batch, config.precision().c_str(),
               ios::layout_name(config.layout), mode_text(exec, a, built->variant).c_str());
  report.json.update({{"model", g->name},
                      {"optimization", label},
                      {"batch", config.batch},
                      {"precision", config.precision()},
                      {"layout", ios::layout_name(config.layout)},
                      {"concat_writes", ios::concat_writes_name(config.concat_writes)},
                      {"graph", !a.no_graph},
                      {"exec", a.exec},
                      {"exec_mode", ios::sched::exec_mode_name(built->variant.mode)},
                      {"prefetch_ahead", built->variant.prefetch_ahead}});
  std::vector<float> output;
  if (a.chaos > 0) {
    if (int rc = run_chaos(exec, *input, a.chaos, output, report); rc != 0) return report.finish(rc);
  } else {
    const ios::rt::TimingOptions timing{a.warmup, a.warmup_ms, a.iters, a.duration_s};
    auto t = exec.time(timing);
    if (!t) return fail(t.status());
    if (Status s = report_timing(a, exec, **context, plan, *t, report); !s) return fail(s);
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
#endif

}  // namespace ios::cli
