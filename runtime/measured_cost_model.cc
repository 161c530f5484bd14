#include "runtime/measured_cost_model.h"

#include "scheduler/plan.h"

namespace ios::rt {

MeasuredCostModel::MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context)
    : weights_(ir::make_weights(g)), params_(params), context_(std::move(context)) {}

Expected<double> MeasuredCostModel::stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) {
  ExecutorOptions options;
  options.config = params_.config;
  options.config.batch = batch;
  options.use_graph = true;
  options.context = context_;
  ASSIGN_OR_RETURN(auto exec, Executor::create(g, weights_, sched::compile_stages({stage}), options));
  ++measurements_;
  return exec->time_batched(params_.warmup, params_.number, params_.repeat);
}

}  // namespace ios::rt
