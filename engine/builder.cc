// Builder: a schedule searched (or given), the kernels tuned, the execution variants timed, one kept.
#include <algorithm>

#include "engine/components.h"
#include "engine/engine.h"
#include "scheduler/barriers.h"
#ifdef IOS_WITH_RUNTIME
#include "engine/gpu_state.h"
#include "runtime/profiler.h"
#endif

namespace ios::engine {

#ifndef IOS_WITH_RUNTIME
struct Builder::GpuState {};
#endif

std::string schedule_label(const sched::OptimizeOptions& search) {
  std::string name = sched::policy_display_name(search.policy);
  const bool dp = search.policy == sched::Policy::kDpBoth || search.policy == sched::Policy::kDpParallel;
  if (dp && (search.r != 3 || search.s != 8))
    name += "(r=" + std::to_string(search.r) + ", s=" + std::to_string(search.s) + ")";
  return name;
}

Builder::Builder(BuildOptions options, ExecConfig config)
    : options_(std::move(options)), config_(config), gpu_(std::make_unique<GpuState>()) {}
Builder::~Builder() = default;

Expected<std::unique_ptr<Builder>> Builder::create(const BuildOptions& o) {
  RETURN_ERROR_IF(o.exec_modes.empty() || o.prefetch_aheads.empty() || o.concat_writes.empty(),
                  ErrorCode::kInvalidArgument, "an engine needs at least one execution variant");
  for (int ahead : o.prefetch_aheads)
    RETURN_ERROR_IF(ahead < 0 || ahead > 99, ErrorCode::kInvalidArgument,
                    "prefetch ahead must be 0-99, got " + std::to_string(ahead));
  ASSIGN_OR_RETURN(ExecConfig config, make_exec_config(o.precision, o.layout, o.search.batch,
                                                       concat_writes_name(o.concat_writes.front())));
  if (o.device == Device::kCpu) {
    RETURN_ERROR_IF(o.cost_model == "measured", ErrorCode::kInvalidArgument,
                    "--cost-model measured times stages on the GPU: it cannot build an engine for the CPU");
  } else {
#ifdef IOS_WITH_RUNTIME
    RETURN_IF_ERROR(rt::parse_conv_engine(o.conv_engine).status().with_context("--conv-engine"));
    RETURN_IF_ERROR(rt::require_gpu());
#else
    return error(ErrorCode::kUnavailable, "this build has no GPU runtime: build the engine for the CPU (--device cpu)");
#endif
  }
  return std::unique_ptr<Builder>(new Builder(o, config));
}

void Builder::share_device_weights([[maybe_unused]] const Engine& first) {
#ifdef IOS_WITH_RUNTIME
  if (first.gpu_) gpu_->weights = first.gpu_->weights;
#endif
}

Expected<std::shared_ptr<rt::Context>> Builder::gpu_context() {
#ifdef IOS_WITH_RUNTIME
  RETURN_ERROR_IF(options_.device != Device::kGpu, ErrorCode::kUnavailable, "a build for the CPU has no GPU context");
  if (!gpu_->context) {
    ASSIGN_OR_RETURN(gpu_->context, make_gpu_context(config_, options_.conv_engine, options_.own_kernels,
                                                     options_.kernel_cache, options_.verbose));
    if (on_gpu_context_) RETURN_IF_ERROR(on_gpu_context_(*gpu_->context));
  }
  return gpu_->context;
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
}

Expected<std::unique_ptr<sched::CostModel>> Builder::cost_model(const ir::Graph& g) {
  std::string kind = options_.cost_model;
  if (options_.device == Device::kCpu && kind == "auto") kind = "analytic";
  return make_cost_model(g, kind, config_, options_.timing_rule, [this] { return gpu_context(); });
}

// Opara orders launches by each op's shared memory: measured with CUPTI on a GPU (unless the cost model is
// the analytic one), else estimated (noted in the schedule).
Status Builder::attach_opara_profile(const ir::Graph& g, const ir::Weights& w, sched::OptimizeOptions& search) {
  if (search.policy != sched::Policy::kOpara || options_.cost_model == "analytic" || options_.device != Device::kGpu)
    return Status::ok();
#ifdef IOS_WITH_RUNTIME
  ASSIGN_OR_RETURN(std::shared_ptr<rt::Context> context, gpu_context());
  rt::ExecutorOptions eo;
  eo.config = config_;
  eo.context = context;
  Expected<sched::ResourceProfile> profile = rt::measure_resource_profile(g, w, eo);
  if (!profile) return profile.status().with_context("Opara's CUPTI profile");
  search.profile = *profile;
#endif
  return Status::ok();
}

Expected<sched::Schedule> Builder::search(const ir::Graph& g, const ir::Weights& w, std::string* label) {
  sched::OptimizeOptions search = options_.search;
  ASSIGN_OR_RETURN(std::unique_ptr<sched::CostModel> model, cost_model(g));
  RETURN_IF_ERROR(attach_opara_profile(g, w, search));
  search.dataflow_segment =
      options_.dataflow_segment >= 0 ? options_.dataflow_segment : sched::default_dataflow_segment(model->name());
  SearchSetupOptions setup;
  setup.config = config_;
  setup.rule = options_.timing_rule;
  setup.resources = options_.resources;
  setup.dp = sched::is_dp(search.policy);
  setup.new_context = [this] {
    return make_gpu_context(config_, options_.conv_engine, options_.own_kernels, options_.kernel_cache,
                            options_.verbose);
  };
  ASSIGN_OR_RETURN(std::unique_ptr<Search> searcher, Search::create(std::move(model), setup));
  ASSIGN_OR_RETURN(sched::OptimizeResult result, searcher->run(g, search));
  RETURN_IF_ERROR(searcher->save_cache());
  result.schedule.meta.precision = config_.precision();
  result.schedule.meta.layout = layout_name(config_.layout);
  if (label) *label = schedule_label(search);
  return std::move(result.schedule);
}

#ifdef IOS_WITH_RUNTIME
namespace {

struct Candidate {
  Execution execution;
  ConcatWrites writes;
  std::unique_ptr<rt::Executor> executor;
};

// Every variant the options name, each built on `context`, their weights in `weights` (uploaded once) and,
// where there are several, their activations in one arena (they are timed one after another).
Expected<std::vector<Candidate>> build_candidates(const EnginePlan& plan, const BuildOptions& o,
                                                  const std::shared_ptr<rt::Context>& context,
                                                  const std::shared_ptr<rt::DeviceStore>& weights,
                                                  const DebugOptions& debug) {
  std::vector<Candidate> out;
  for (sched::ExecMode mode : o.exec_modes)
    for (int ahead : o.prefetch_aheads)
      for (ConcatWrites writes : o.concat_writes)
        out.push_back(Candidate{Execution{mode, ahead, o.cuda_graph, o.fused_sums, o.shared_concats}, writes, {}});
  std::shared_ptr<rt::DeviceStore> store = out.size() > 1 ? std::make_shared<rt::DeviceStore>() : nullptr;
  for (Candidate& c : out) {
    ExecConfig config = plan.config;
    config.concat_writes = c.writes;
    ASSIGN_OR_RETURN(c.executor, build_executor(plan.graph, *plan.weights, plan.schedule, config, c.execution, context,
                                                debug, weights, store));
  }
  return out;
}

// With several candidates, each is timed in three interleaved rounds of 100 replays and the one with the
// lowest median of round medians is kept.
Expected<size_t> fastest(std::vector<Candidate>& candidates, BuildReport* report) {
  if (candidates.size() == 1) return size_t{0};
  std::vector<std::vector<double>> rounds(candidates.size());
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < candidates.size(); ++i) {
      ASSIGN_OR_RETURN(rt::Timing t, candidates[i].executor->time(rt::TimingOptions{10, 0, 100, 0}));
      rounds[i].push_back(t.median_ms);
    }
  std::vector<double> ms;
  for (const std::vector<double>& r : rounds) ms.push_back(sched::median_of(r));
  const size_t best = size_t(std::min_element(ms.begin(), ms.end()) - ms.begin());
  if (report)
    for (size_t i = 0; i < candidates.size(); ++i)
      report->variants_ms.emplace_back(variant_name(candidates[i].execution, candidates[i].writes), ms[i]);
  return best;
}

}  // namespace

Expected<std::unique_ptr<rt::Executor>> build_executor(const ir::Graph& g, const ir::Weights& w,
                                                       const sched::Schedule& schedule, const ExecConfig& config,
                                                       const Execution& execution, std::shared_ptr<rt::Context> context,
                                                       const DebugOptions& debug,
                                                       std::shared_ptr<rt::DeviceStore> weights,
                                                       std::shared_ptr<rt::DeviceStore> store) {
  ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(g, schedule, execution.mode));
  rt::ExecutorOptions o;
  o.config = config;
  o.context = std::move(context);
  o.store = std::move(store);
  o.weight_store = std::move(weights);
  o.use_graph = execution.cuda_graph;
  o.fuse_sums = execution.fused_sums;
  o.share_concats = execution.shared_concats;
  o.prefetch_ahead = execution.prefetch_ahead;
  o.chaos = debug.chaos;
  o.keep_all = debug.keep_all;
  o.observer = debug.observer;
  return rt::Executor::create(g, w, plan, o);
}
#endif

Expected<std::shared_ptr<Engine>> Builder::build(ir::Graph g, ir::Weights w, std::optional<sched::Schedule> schedule,
                                                 const DebugOptions& debug, BuildReport* report) {
  return build(std::move(g), std::make_shared<const ir::Weights>(std::move(w)), std::move(schedule), debug, report);
}

Expected<std::shared_ptr<Engine>> Builder::build(ir::Graph g, std::shared_ptr<const ir::Weights> w,
                                                 std::optional<sched::Schedule> schedule, const DebugOptions& debug,
                                                 BuildReport* report) {
  RETURN_ERROR_IF(!w || w->per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument,
                  "the weights were made for another graph");
  EnginePlan plan;
  if (schedule) {
    RETURN_IF_ERROR(sched::validate(g, *schedule));
    Expected<sched::Policy> policy = sched::parse_policy(schedule->meta.policy);
    plan.info.schedule_label = policy ? sched::policy_display_name(*policy) : "given schedule";
    plan.schedule = std::move(*schedule);
  } else {
    ASSIGN_OR_RETURN(plan.schedule, search(g, *w, &plan.info.schedule_label));
  }
  plan.graph = std::move(g);
  plan.weights = std::move(w);
  plan.config = config_;
  const BuildOptions& o = options_;
  plan.execution =
      Execution{o.exec_modes.front(), o.prefetch_aheads.front(), o.cuda_graph, o.fused_sums, o.shared_concats};
  plan.info.conv_engine = o.conv_engine;
  plan.info.own_kernels = o.own_kernels;
  plan.info.ios_version = IOS_VERSION;
  if (report) report->variant = variant_name(plan.execution, plan.config.concat_writes);
  if (o.device == Device::kCpu) return std::shared_ptr<Engine>(new Engine(std::move(plan), Device::kCpu));
#ifdef IOS_WITH_RUNTIME
  ASSIGN_OR_RETURN(std::shared_ptr<rt::Context> context, gpu_context());
  // Executors point at the graph they run: they are built on the engine's own copy.
  std::shared_ptr<Engine> engine(new Engine(std::move(plan), Device::kGpu));
  EnginePlan& p = engine->plan_;
  // The engine's (its later contexts read them too), or the first batch bucket's.
  auto weights = gpu_->weights ? gpu_->weights : std::make_shared<rt::DeviceStore>();
  ASSIGN_OR_RETURN(std::vector<Candidate> candidates, build_candidates(p, o, context, weights, debug));
  ASSIGN_OR_RETURN(size_t best, fastest(candidates, report));
  Candidate& kept = candidates[best];
  p.execution = kept.execution;
  p.config.concat_writes = kept.writes;
  p.kernels = kept.executor->kernel_choices();
  p.info.environment = rt::kernel_environment();
  p.info.device = rt::device_description();
  p.info.libraries = rt::library_versions();
  if (report) report->variant = variant_name(p.execution, p.config.concat_writes);
  engine->gpu_ = std::make_unique<Engine::GpuState>();
  engine->gpu_->context = context;
  engine->gpu_->built = std::move(kept.executor);
  engine->gpu_->weights = std::move(weights);
  engine->gpu_->built_debug = debug;
  return engine;
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
}

}  // namespace ios::engine
