#include "cli/session.h"

#include <filesystem>

#ifdef IOS_WITH_RUNTIME
#include "runtime/executor.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#endif

namespace ios::cli {

int fail(const Status& s) {
  std::fprintf(stderr, "ios: error: %s\n", s.to_string().c_str());
  return 1;
}

#ifdef IOS_WITH_RUNTIME
// One context per process: streams, handles and the convolution kernels (tuned once, persisted).
Expected<std::shared_ptr<ios::rt::Context>> make_context(const ios::ExecConfig& config, const std::string& engine,
                                                         const std::string& kernel_cache, bool verbose) {
  auto e = ios::rt::parse_conv_engine(engine);
  if (!e) return e.status();
  ios::rt::ContextOptions co;
  co.dtype = config.dtype;
  co.math = config.math;
  co.conv_engine = *e;
  co.kernel_cache_path = kernel_cache == "none" ? "" : kernel_cache;
  co.verbose = verbose;
  return ios::rt::Context::create(co);
}
#endif

// `auto` picks the measured model where a GPU runtime and a GPU exist, else the analytic one.
Expected<std::unique_ptr<ios::sched::CostModel>> make_cost_model(const Graph& g, std::string kind,
                                                                 const ios::ExecConfig& config,
                                                                 const ios::sched::StageTimingRule& rule,
                                                                 const std::function<ContextPtr()>& context) {
#ifdef IOS_WITH_RUNTIME
  if (kind == "auto") kind = ios::rt::gpu_available() ? "measured" : "analytic";
  if (kind == "measured") {
    if (Status s = ios::rt::require_gpu(); !s) return s.with_context("--cost-model measured");
    ContextPtr ctx = context();
    if (!ctx) return ctx.status();
    ios::rt::MeasuredCostModel::Params params;
    params.config = config;
    params.rule = rule;
    return std::unique_ptr<ios::sched::CostModel>(new ios::rt::MeasuredCostModel(g, params, *ctx));
  }
#else
  if (kind == "auto") kind = "analytic";
  if (kind == "measured")
    return ios::error(ios::ErrorCode::kUnavailable,
                      "--cost-model measured needs the GPU runtime, which this build does not include");
#endif
  if (kind == "analytic") return std::unique_ptr<ios::sched::CostModel>(new ios::sched::AnalyticCostModel());
  return ios::error(ios::ErrorCode::kInvalidArgument,
                    "--cost-model must be analytic, measured or auto, got '" + kind + "'");
}

Expected<Session> make_session(const OptimizeArgs& a) {
  const std::string writes = a.concat_writes == "auto" ? "in-place" : a.concat_writes;
  auto config = ios::make_exec_config(a.precision, a.layout, a.options.batch, writes);
  if (!config) return config.status();
  Session s;
  s.config = *config;
  s.args = &a;
  return s;
}

std::string display_name(const OptimizeArgs& a, ios::sched::Policy p) {
  std::string name = ios::sched::policy_display_name(p);
  const bool dp = p == ios::sched::Policy::kDpBoth || p == ios::sched::Policy::kDpParallel;
  if (dp && (a.options.r != 3 || a.options.s != 8))
    name += "(r=" + std::to_string(a.options.r) + ", s=" + std::to_string(a.options.s) + ")";
  return name;
}

// Opara orders launches by each op's shared memory: measured with CUPTI where there is a GPU (and
// the cost model is not forced to the analytic one), else estimated (noted in the schedule).
Status attach_opara_profile(const Graph& g, OptimizeArgs& a, Session& session) {
  if (a.options.policy != ios::sched::Policy::kOpara || a.cost_model == "analytic") return Status::ok();
#ifdef IOS_WITH_RUNTIME
  if (!ios::rt::gpu_available()) return Status::ok();
  auto ctx = session.context();
  if (!ctx) return ctx.status();
  ios::rt::ExecutorOptions eo;
  eo.config = session.config;
  eo.context = *ctx;
  auto profile = ios::rt::measure_resource_profile(g, ios::ir::make_weights(g), eo);
  if (!profile) return profile.status().with_context("Opara's CUPTI profile");
  a.options.profile = *profile;
#endif
  return Status::ok();
}

int dataflow_segment(const OptimizeArgs& a, const ios::sched::CostModel& model) {
  return a.dataflow_segment >= 0 ? a.dataflow_segment : ios::sched::default_dataflow_segment(model.name());
}

}  // namespace ios::cli
