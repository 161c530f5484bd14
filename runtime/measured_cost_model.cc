#include "runtime/measured_cost_model.h"

#include <chrono>

#include "scheduler/plan.h"

namespace ios::rt {

MeasuredCostModel::MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context)
    : MeasuredCostModel(std::make_shared<const ir::Weights>(ir::make_weights(g)), params, std::move(context)) {}

MeasuredCostModel::MeasuredCostModel(std::shared_ptr<const ir::Weights> weights, Params params,
                                     std::shared_ptr<Context> context)
    : weights_(std::move(weights)),
      params_(params),
      context_(std::move(context)),
      store_(std::make_shared<DeviceStore>()) {}

Expected<double> MeasuredCostModel::stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  CHECK_CUDA(cudaSetDevice(context_->device()));  // the calling thread may have another current device
  ExecutorOptions options;
  options.config = params_.config;
  options.config.batch = batch;
  options.use_graph = true;
  options.context = context_;
  options.store = store_;
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(auto exec, Executor::create(g, *weights_, sched::compile_stages({stage}), options));
  const double build_s = seconds_since(start);
  const auto timed = Clock::now();
  ASSIGN_OR_RETURN(std::vector<double> rounds, exec->time_rounds(params_.rule));
  stats_.add(rounds, params_.rule, build_s, seconds_since(timed));
  return sched::median_of(rounds);
}

}  // namespace ios::rt
