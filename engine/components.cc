#include "engine/components.h"

#ifdef IOS_WITH_RUNTIME
#include "runtime/context.h"
#include "runtime/device.h"
#include "runtime/measured_cost_model.h"
#endif

namespace ios::engine {

bool gpu_present() {
#ifdef IOS_WITH_RUNTIME
  return rt::gpu_available();
#else
  return false;
#endif
}

GpuContext make_gpu_context(const ExecConfig& config, const std::string& conv_engine, bool own_kernels,
                            const std::string& kernel_cache, bool verbose) {
#ifdef IOS_WITH_RUNTIME
  ASSIGN_OR_RETURN(rt::ConvEngine engine, rt::parse_conv_engine(conv_engine));
  rt::ContextOptions co;
  co.dtype = config.dtype;
  co.math = config.math;
  co.conv_engine = engine;
  co.own_kernels = own_kernels;
  co.kernel_cache_path = kernel_cache == "none" ? "" : kernel_cache;
  co.verbose = verbose;
  return rt::Context::create(co);
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
}

Expected<std::unique_ptr<sched::CostModel>> make_cost_model(const ir::Graph& g, std::string kind,
                                                            const ExecConfig& config,
                                                            const sched::StageTimingRule& rule,
                                                            const std::function<GpuContext()>& context) {
  if (kind == "auto") kind = gpu_present() ? "measured" : "analytic";
  if (kind == "measured") {
#ifdef IOS_WITH_RUNTIME
    if (Status s = rt::require_gpu(); !s) return s.with_context("--cost-model measured");
    GpuContext ctx = context();
    if (!ctx) return ctx.status();
    rt::MeasuredCostModel::Params params;
    params.config = config;
    params.rule = rule;
    return std::unique_ptr<sched::CostModel>(new rt::MeasuredCostModel(g, params, *ctx));
#else
    return error(ErrorCode::kUnavailable,
                 "--cost-model measured needs the GPU runtime, which this build does not include");
#endif
  }
  if (kind == "analytic") return std::unique_ptr<sched::CostModel>(new sched::AnalyticCostModel());
  return error(ErrorCode::kInvalidArgument, "--cost-model must be analytic, measured or auto, got '" + kind + "'");
}

}  // namespace ios::engine
