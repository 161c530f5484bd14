#include "runtime/measured_cost_model.h"

#include <chrono>

#include "runtime/stage_timer.h"
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
  ASSIGN_OR_RETURN(std::vector<double> ms, stage_latencies_ms(g, {stage}, batch));
  return ms[0];
}

Expected<std::vector<double>> MeasuredCostModel::stage_latencies_ms(const ir::Graph& g,
                                                                    const std::vector<sched::Stage>& stages,
                                                                    int batch) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  CHECK_CUDA(cudaSetDevice(context_->device()));  // the calling thread may have another current device
  ExecutorOptions options;
  options.config = params_.config;
  options.config.batch = batch;
  options.use_graph = true;
  options.context = context_;
  options.store = store_;
  StageTimer timer(params_.rule, context_);
  for (const sched::Stage& stage : stages) {
    const auto start = Clock::now();
    ASSIGN_OR_RETURN(auto exec, Executor::create(g, *weights_, sched::compile_stages({stage}), options));
    stats_.build_seconds += seconds_since(start);
    RETURN_IF_ERROR(timer.add(std::move(exec)));
  }
  const auto waited = Clock::now();
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> rounds, timer.finish());
  stats_.wait_seconds += seconds_since(waited);
  ++stats_.passes;
  std::vector<double> out;
  for (const std::vector<double>& r : rounds) {
    stats_.add(r, params_.rule);
    out.push_back(sched::median_of(r));
  }
  return out;
}

}  // namespace ios::rt
