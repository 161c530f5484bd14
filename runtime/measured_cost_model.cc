#include "runtime/measured_cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>

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

Expected<double> MeasuredCostModel::find_cold_share() {
  if (cold_share_ < 0) {
    ASSIGN_OR_RETURN(size_t l2, context_->l2_bytes());
    const double weight_bytes = double(weights_->parameter_count()) * double(params_.config.element_bytes());
    cold_share_ = weight_bytes > double(l2) ? 1.0 - double(l2) / weight_bytes : 0.0;
  }
  return cold_share_;
}

Expected<double> MeasuredCostModel::stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) {
  ASSIGN_OR_RETURN(std::vector<double> ms, stage_latencies_ms(g, {stage}, batch));
  return ms[0];
}

Expected<std::vector<double>> MeasuredCostModel::stage_latencies_ms(const ir::Graph& g,
                                                                    const std::vector<sched::Stage>& stages,
                                                                    int batch) {
  return time_stages(g, stages, batch, params_.rule, false);
}

Expected<std::vector<double>> MeasuredCostModel::screen_latencies_ms(const ir::Graph& g,
                                                                     const std::vector<sched::Stage>& stages,
                                                                     int batch) {
  sched::StageTimingRule once = params_.rule;
  once.min_rounds = once.max_rounds = 1;
  stats_.screened += static_cast<int64_t>(stages.size());
  return time_stages(g, stages, batch, once, true);
}

namespace {

// A stage of one graph and batch: its kind and groups (the retained executors belong to one graph).
std::string stage_key(const ir::Graph& g, const sched::Stage& stage, int batch) {
  std::string key = g.name + "|" + std::to_string(batch) + (stage.kind == sched::StageKind::kMerge ? "|m" : "|c");
  for (const auto& group : stage.groups) {
    key += '/';
    for (ir::NodeId id : group) key += std::to_string(id) + ",";
  }
  return key;
}

}  // namespace

Expected<std::vector<double>> MeasuredCostModel::segment_latencies_ms(
    const ir::Graph& g, const std::vector<std::vector<sched::Stage>>& segments, int batch) {
  std::vector<Pending> pending;
  for (const auto& segment : segments)
    pending.push_back(Pending{sched::compile_dataflow_stages(g, segment), nullptr, {}});
  ASSIGN_OR_RETURN(Timed timed, time_executors(g, std::move(pending), batch, params_.rule));
  return timed.medians;
}

ExecutorOptions MeasuredCostModel::executor_options(int batch) const {
  ExecutorOptions options;
  options.config = params_.config;
  options.config.batch = batch;
  options.use_graph = true;
  options.context = context_;
  options.store = store_;
  options.zero_arena = false;
  return options;
}

Expected<MeasuredCostModel::Timed> MeasuredCostModel::time_executors(const ir::Graph& g, std::vector<Pending> pending,
                                                                     int batch, const sched::StageTimingRule& rule) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  CHECK_CUDA(cudaSetDevice(context_->device()));  // the calling thread may have another current device
  const ExecutorOptions options = executor_options(batch);
  ASSIGN_OR_RETURN(double share, find_cold_share());
  sched::StageTimingRule timing = rule;
  if (timing.l2 == sched::L2Timing::kColdShare && share == 0) timing.l2 = sched::L2Timing::kWarm;
  StageTimer timer(timing, context_, share);
  for (Pending& p : pending) {
    std::unique_ptr<Executor> exec = std::move(p.kept);
    if (!exec) {
      const auto start = Clock::now();
      ASSIGN_OR_RETURN(exec, Executor::create(g, *weights_, p.plan, options));
      stats_.build_seconds += seconds_since(start);
      stats_.build_parts += exec->build_times();
    }
    const auto queued = Clock::now();
    RETURN_IF_ERROR(timer.add(std::move(exec), p.prior));
    stats_.queue_seconds += seconds_since(queued);
  }
  const auto waited = Clock::now();
  Timed out;
  ASSIGN_OR_RETURN(out.rounds, timer.finish());
  stats_.wait_seconds += seconds_since(waited);
  stats_.requeued += timer.requeued();
  ++stats_.passes;
  for (size_t i = 0; i < out.rounds.size(); ++i) {
    stats_.add(out.rounds[i], rule, int(pending[i].prior.size()));
    out.medians.push_back(sched::median_of(out.rounds[i]));
  }
  out.executors = timer.take_finished();
  return out;
}

Expected<std::vector<double>> MeasuredCostModel::network_latencies_ms(const ir::Graph& g, const sched::Schedule& s,
                                                                      const std::vector<std::vector<int>>& barrier_sets,
                                                                      int batch) {
  CHECK_CUDA(cudaSetDevice(context_->device()));
  const ExecutorOptions options = executor_options(batch);
  std::vector<std::unique_ptr<Executor>> executors;
  for (const std::vector<int>& barriers : barrier_sets) {
    sched::Schedule with = s;
    with.dataflow_barriers = barriers;
    ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(g, with, sched::ExecMode::kDataflow));
    ASSIGN_OR_RETURN(auto exec, Executor::create(g, *weights_, plan, options));
    executors.push_back(std::move(exec));
  }
  std::vector<int> replays;  // per round, from a first rough figure
  for (auto& exec : executors) {
    ASSIGN_OR_RETURN(Timing rough, exec->time(TimingOptions{1, 0, 2, 0}));
    replays.push_back(std::clamp(int(std::ceil(kNetworkRoundMs / std::max(rough.median_ms, 1e-3))), 2, 100));
  }
  std::vector<std::vector<double>> rounds(executors.size());
  for (int round = 0; round < kNetworkRounds; ++round)
    for (size_t i = 0; i < executors.size(); ++i) {
      // No warm-up: the sets share this model's weights and arena, so the one before left them warm.
      ASSIGN_OR_RETURN(Timing t, executors[i]->time(TimingOptions{0, 0, replays[i], 0}));
      rounds[i].push_back(t.median_ms);
    }
  std::vector<double> out;
  for (const std::vector<double>& r : rounds) out.push_back(sched::median_of(r));
  return out;
}

Expected<std::vector<double>> MeasuredCostModel::time_stages(const ir::Graph& g,
                                                             const std::vector<sched::Stage>& stages, int batch,
                                                             const sched::StageTimingRule& rule, bool screening) {
  std::vector<Pending> pending;
  for (const sched::Stage& stage : stages) {
    if (auto kept = screened_.find(stage_key(g, stage, batch)); kept != screened_.end() && kept->second.exec) {
      pending.push_back(Pending{{}, std::move(kept->second.exec), {kept->second.round_ms}});
      ++stats_.reused_screened;
    } else {
      pending.push_back(Pending{sched::compile_stages({stage}), nullptr, {}});
    }
  }
  ASSIGN_OR_RETURN(Timed timed, time_executors(g, std::move(pending), batch, rule));
  for (size_t i = 0; i < stages.size(); ++i) {
    if (!screening) continue;  // a settled stage's entry, if any, keeps no executor until it leaves
    const std::string key = stage_key(g, stages[i], batch);
    if (screened_.insert_or_assign(key, Screened{std::move(timed.executors[i]), timed.rounds[i].front()}).second)
      screened_order_.push_back(key);
  }
  while (screened_order_.size() > kScreenedKept) {
    screened_.erase(screened_order_.front());
    screened_order_.pop_front();
  }
  return timed.medians;
}

}  // namespace ios::rt
