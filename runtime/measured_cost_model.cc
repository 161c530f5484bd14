#include "runtime/measured_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/limits.h"
#include "common/wall_clock.h"
#include "runtime/stage_timer.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"

namespace ios::rt {

MeasuredCostModel::MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context)
    : MeasuredCostModel(std::make_shared<const ir::Weights>(ir::make_weights(g)), params, std::move(context)) {
  calibration_->workers = 1;
}

MeasuredCostModel::MeasuredCostModel(std::shared_ptr<const ir::Weights> weights, Params params,
                                     std::shared_ptr<Context> context)
    : weights_(std::move(weights)),
      params_(params),
      context_(std::move(context)),
      store_(std::make_shared<DeviceStore>()) {
  // An L2 size the device does not give counts as none: every replay's weights cold, what a network
  // larger than any L2 meets.
  const Expected<size_t> l2 = context_->l2_bytes();
  params_.rule = params_.rule.for_footprint(int64_t(weights_->parameter_count() * params_.config.element_bytes()),
                                            l2 ? int64_t(*l2) : 0);
}

MeasuredCostModel::MeasuredCostModel(const MeasuredCostModel& first, Params params, std::shared_ptr<Context> context)
    : MeasuredCostModel(first.weights_, params, std::move(context)) {
  calibration_ = first.calibration_;
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  ++calibration_->workers;
}

MeasuredCostModel::~MeasuredCostModel() {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  --calibration_->workers;
}

std::string MeasuredCostModel::timing_device() const { return "cuda:" + std::to_string(context_->device()); }

Expected<TimingStream::Boundary> MeasuredCostModel::measured_boundary() {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  if (!calibration_->boundary) {
    const auto start = WallClock::now();
    ASSIGN_OR_RETURN(calibration_->boundary, context_->timing_stream()->stage_boundary());
    calibration_->seconds += seconds_since(start);
  }
  return *calibration_->boundary;
}

Expected<double> MeasuredCostModel::cold_share_for(const ir::Graph& g, int batch, TimingStream::Boundary boundary) {
  Calibration& cal = *calibration_;
  std::unique_lock<std::mutex> lock(cal.mutex);
  if (!cal.shares.count(batch) && !cal.failed.count(batch) && !cal.jobs.count(batch))
    cal.jobs.emplace(batch, deal_calibration(g));
  const std::string own_device = timing_device();
  while (!cal.shares.count(batch) && !cal.failed.count(batch)) {
    CalibrationJob& job = cal.jobs.at(batch);  // erased only once it ended and no worker times a slot of it
    const std::optional<size_t> slot = job.pick(own_device);
    if (!slot) {
      cal.changed.wait(lock);
      continue;
    }
    job.devices[*slot].push_back(own_device);
    ++job.running;
    lock.unlock();
    sched::NetworkBuild network_build;
    const Expected<ShareCalibration> figures = time_ops(g, job.ops[*slot], batch, boundary, *slot == 0, network_build);
    lock.lock();
    --job.running;
    if (*slot == 0 && !job.done[0]) job.network_build = network_build;
    finish_slot(batch, job, *slot, figures);
  }
  if (auto failed = cal.failed.find(batch); failed != cal.failed.end()) return failed->second;
  return cal.shares.at(batch).share;
}

std::optional<size_t> MeasuredCostModel::CalibrationJob::pick(const std::string& device) const {
  for (size_t s = 0; s < devices.size(); ++s)
    if (devices[s].empty()) return s;
  for (size_t s = 0; s < devices.size(); ++s)
    if (!done[s] && devices[s].size() == 1 && devices[s][0] != device) return s;
  return std::nullopt;
}

MeasuredCostModel::CalibrationJob MeasuredCostModel::deal_calibration(const ir::Graph& g) const {
  const size_t workers = calibration_->workers;
  const size_t chunks = workers > 1 ? kCalibrationChunksPerWorker * workers : 1;
  const std::vector<sched::Stage> stages = sched::all_stages(sched::sequential_schedule(g));
  CalibrationJob job;
  job.ops.resize(std::min(chunks, std::max<size_t>(stages.size(), 1)));
  for (size_t i = 0; i < stages.size(); ++i) job.ops[i % job.ops.size()].push_back(stages[i]);
  job.slot_seconds.assign(job.ops.size(), 0.0);
  job.devices.assign(job.ops.size(), {});
  job.done.assign(job.ops.size(), false);
  return job;
}

void MeasuredCostModel::finish_slot(int batch, CalibrationJob& job, size_t slot,
                                    const Expected<ShareCalibration>& figures) {
  Calibration& cal = *calibration_;
  if (job.done[slot]) {  // a second worker's figures, or the first's after a second
    if (job.finished == job.ops.size() && job.running == 0) cal.jobs.erase(batch);
    return;
  }
  job.done[slot] = true;
  job.slot_seconds[slot] = seconds_since(job.start);
  if (!figures && job.failure.is_ok()) job.failure = figures.status();
  if (figures) {
    job.sums.ops_warm_ms += figures->ops_warm_ms;
    job.sums.ops_cold_ms += figures->ops_cold_ms;
    job.sums.ops += figures->ops;
    if (slot == 0)
      job.sums.network_ms = figures->network_ms, job.sums.prefetched_network_ms = figures->prefetched_network_ms;
  }
  if (++job.finished < job.ops.size()) return;
  if (!job.failure.is_ok()) {
    cal.failed.emplace(batch, job.failure);
  } else {
    ShareCalibration c = job.sums;
    const double gap = c.ops_cold_ms - c.ops_warm_ms;
    if (gap > kMinColdGap * c.ops_warm_ms) c.share = std::clamp((c.network_ms - c.ops_warm_ms) / gap, 0.0, 1.0);
    cal.shares[batch] = c;
  }
  cal.seconds += seconds_since(job.start);
  cal.slot_seconds = job.slot_seconds;
  cal.network_build = job.network_build;
  if (job.running == 0) cal.jobs.erase(batch);
  cal.changed.notify_all();
}

Expected<MeasuredCostModel::ShareCalibration> MeasuredCostModel::time_ops(const ir::Graph& g,
                                                                          const std::vector<sched::Stage>& stages,
                                                                          int batch, TimingStream::Boundary boundary,
                                                                          bool networks,
                                                                          sched::NetworkBuild& network_build) {
  CHECK_CUDA(cudaSetDevice(context_->device()));
  std::vector<Pending> ops;
  for (const sched::Stage& stage : stages) ops.push_back(Pending{sched::compile_stages({stage}), nullptr, {}});
  // The network as it may run: without prefetching, and with it where the rule says the schedule may.
  const int timed_networks = !networks ? 0 : params_.rule.prefetch_ahead > 0 ? 2 : 1;
  if (timed_networks > 0) {
    const sched::Schedule sequential = sched::sequential_schedule(g);
    const auto build_start = WallClock::now();
    ASSIGN_OR_RETURN(sched::ExecutionPlan whole, sched::compile_plan(g, sequential));
    for (int prefetch = 0; prefetch < timed_networks; ++prefetch) {
      ExecutorOptions options = executor_options(batch);
      options.prefetch_ahead = prefetch ? params_.rule.prefetch_ahead : 0;
      ASSIGN_OR_RETURN(std::unique_ptr<Executor> network, Executor::create(g, *weights_, whole, options));
      network_build.parts += network->build_times();
      ops.push_back(Pending{{}, std::move(network), {}});
    }
    network_build.seconds = seconds_since(build_start);
    context_->stop_tuning_companions();  // they compiled for this build; the timing below is not to share the GPU
  }
  sched::StageTimingRule rule = params_.rule;
  rule.l2 = sched::L2Timing::kWarm;
  ASSIGN_OR_RETURN(Timed warm, run_timer(g, std::move(ops), batch, rule, 0, boundary));
  ShareCalibration c;
  if (timed_networks > 0) {
    c.network_ms = *std::min_element(warm.medians.end() - timed_networks, warm.medians.end());
    if (timed_networks == 2) c.prefetched_network_ms = warm.medians.back();
  }
  warm.executors.resize(warm.executors.size() - size_t(timed_networks));
  std::vector<Pending> again;
  c.ops = int(warm.executors.size());
  for (size_t i = 0; i < warm.executors.size(); ++i) {
    c.ops_warm_ms += warm.medians[i];
    again.push_back(Pending{{}, std::move(warm.executors[i]), {}});
  }
  if (again.empty()) return c;
  rule.l2 = sched::L2Timing::kColdWeights;
  ASSIGN_OR_RETURN(Timed cold, run_timer(g, std::move(again), batch, rule, 0, boundary));
  for (double ms : cold.medians) c.ops_cold_ms += ms;
  return c;
}

std::optional<MeasuredCostModel::ShareCalibration> MeasuredCostModel::cold_share(int batch) const {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  auto it = calibration_->shares.find(batch);
  if (it == calibration_->shares.end()) return std::nullopt;
  return it->second;
}

std::optional<TimingStream::Boundary> MeasuredCostModel::stage_boundary() const {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  return calibration_->boundary;
}

namespace {

constexpr const char* kBoundaryName = "stage_boundary_ms";  // TimingStream::Boundary::graph_ms
constexpr const char* kEventName = "stage_event_ms";        // TimingStream::Boundary::event_ms
// The names of one batch's share calibration and where each value lives.
std::vector<std::pair<std::string, double MeasuredCostModel::ShareCalibration::*>> share_fields(int batch) {
  const std::string b = "b" + std::to_string(batch) + "|";
  return {{b + "share", &MeasuredCostModel::ShareCalibration::share},
          {b + "ops_warm_ms", &MeasuredCostModel::ShareCalibration::ops_warm_ms},
          {b + "ops_cold_ms", &MeasuredCostModel::ShareCalibration::ops_cold_ms},
          {b + "network_ms", &MeasuredCostModel::ShareCalibration::network_ms},
          {b + "prefetched_network_ms", &MeasuredCostModel::ShareCalibration::prefetched_network_ms}};
}

}  // namespace

sched::CalibrationTime MeasuredCostModel::calibration_time() const {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  return sched::CalibrationTime{calibration_->seconds, calibration_->slot_seconds, calibration_->network_build};
}

std::map<std::string, double> MeasuredCostModel::calibration() const {
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  std::map<std::string, double> out;
  if (calibration_->boundary) {
    out[kBoundaryName] = calibration_->boundary->graph_ms;
    out[kEventName] = calibration_->boundary->event_ms;
  }
  for (const auto& [batch, c] : calibration_->shares)
    for (const auto& [name, field] : share_fields(batch)) out[name] = c.*field;
  return out;
}

Status MeasuredCostModel::adopt_calibration(const std::map<std::string, double>& values) {
  std::map<std::string, double> boundary;  // by name, both or neither
  std::map<int, ShareCalibration> shares;
  for (const auto& [name, value] : values) {
    RETURN_ERROR_IF(!(value >= 0 && value <= limits::kMaxLatencyMs), ErrorCode::kInvalidArgument,
                    "calibration value '" + name + "' out of range: " + std::to_string(value));
    if (name == kBoundaryName || name == kEventName) {
      RETURN_ERROR_IF(value > kMaxStageBoundaryMs, ErrorCode::kInvalidArgument,
                      "calibration value '" + name + "' above " + std::to_string(kMaxStageBoundaryMs) + " ms");
      boundary[name] = value;
      continue;
    }
    int batch = 0, used = 0;
    RETURN_ERROR_IF(std::sscanf(name.c_str(), "b%d|%n", &batch, &used) != 1 || used == 0 || batch < 1,
                    ErrorCode::kInvalidArgument, "unknown calibration value '" + name + "'");
    bool known = false;
    for (const auto& [field_name, field] : share_fields(batch))
      if (field_name == name) shares[batch].*field = value, known = true;
    RETURN_ERROR_IF(!known, ErrorCode::kInvalidArgument, "unknown calibration value '" + name + "'");
    RETURN_ERROR_IF(shares[batch].share > 1, ErrorCode::kInvalidArgument,
                    "calibration value '" + name + "' (a share) above 1");
  }
  RETURN_ERROR_IF(boundary.size() == 1, ErrorCode::kInvalidArgument,
                  std::string("calibration values '") + kBoundaryName + "' and '" + kEventName + "' come together");
  std::lock_guard<std::mutex> lock(calibration_->mutex);
  if (!boundary.empty()) calibration_->boundary = TimingStream::Boundary{boundary[kBoundaryName], boundary[kEventName]};
  for (const auto& [batch, c] : shares) calibration_->shares[batch] = c;
  return Status::ok();
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

Expected<std::vector<double>> MeasuredCostModel::limited_stage_latencies_ms(const ir::Graph& g,
                                                                            const std::vector<sched::Stage>& stages,
                                                                            const std::vector<double>& limits,
                                                                            int batch) {
  RETURN_IF_ERROR(check_limits(stages, limits));
  return time_stages(g, stages, batch, params_.rule, false, limits);
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
    pending.push_back(Pending{sched::compile_timed_stages(g, segment, sched::ExecMode::kDataflow), nullptr, {}});
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
  options.lead_kernel = true;  // timed less a graph of the lead kernel alone (measured_boundary)
  return options;
}

Expected<MeasuredCostModel::Timed> MeasuredCostModel::time_executors(const ir::Graph& g, std::vector<Pending> pending,
                                                                     int batch, const sched::StageTimingRule& rule) {
  CHECK_CUDA(cudaSetDevice(context_->device()));  // the calling thread may have another current device
  ASSIGN_OR_RETURN(TimingStream::Boundary boundary, measured_boundary());
  double share = 0;
  if (rule.l2 == sched::L2Timing::kColdShare) {
    ASSIGN_OR_RETURN(share, cold_share_for(g, batch, boundary));
  }
  std::vector<int> prior;
  std::vector<double> limits;
  for (const Pending& p : pending) prior.push_back(int(p.prior.size())), limits.push_back(p.limit);
  ASSIGN_OR_RETURN(Timed out, run_timer(g, std::move(pending), batch, rule, share, boundary));
  ++stats_.passes;
  stats_.replays += out.replays;
  for (size_t i = 0; i < out.rounds.size(); ++i) stats_.add(out.rounds[i], rule, prior[i], limits[i]);
  return out;
}

Expected<MeasuredCostModel::Timed> MeasuredCostModel::run_timer(const ir::Graph& g, std::vector<Pending> pending,
                                                                int batch, const sched::StageTimingRule& rule,
                                                                double share, TimingStream::Boundary boundary) {
  const ExecutorOptions options = executor_options(batch);
  sched::StageTimingRule timing = rule;
  if (timing.l2 == sched::L2Timing::kColdShare && share == 0) timing.l2 = sched::L2Timing::kWarm;
  StageTimer timer(timing, context_, share, boundary);
  for (Pending& p : pending) {
    std::unique_ptr<Executor> exec = std::move(p.kept);
    if (!exec) {
      const auto start = WallClock::now();
      ASSIGN_OR_RETURN(exec, Executor::create(g, *weights_, p.plan, options));
      stats_.build_seconds += seconds_since(start);
      stats_.build_parts += exec->build_times();
    }
    const auto queued = WallClock::now();
    RETURN_IF_ERROR(timer.add(std::move(exec), p.prior, p.limit));
    stats_.queue_seconds += seconds_since(queued);
  }
  const auto waited = WallClock::now();
  Timed out;
  ASSIGN_OR_RETURN(out.rounds, timer.finish());
  stats_.wait_seconds += seconds_since(waited);
  stats_.requeued += timer.requeued();
  stats_.unproven += timer.unproven();
  stats_.max_head_start_ms = std::max(stats_.max_head_start_ms, timer.max_head_start_ms());
  out.replays = timer.replays();
  stats_.gpu_span_seconds += timer.pass_span_ms() * 1e-3;
  for (const std::vector<double>& rounds : out.rounds) out.medians.push_back(sched::median_of(rounds));
  out.executors = timer.take_finished();
  return out;
}

Expected<std::vector<double>> MeasuredCostModel::network_latencies_ms(const ir::Graph& g, const sched::Schedule& s,
                                                                      const std::vector<std::vector<int>>& barrier_sets,
                                                                      int batch) {
  CHECK_CUDA(cudaSetDevice(context_->device()));
  ASSIGN_OR_RETURN(TimingStream::Boundary boundary, measured_boundary());
  std::vector<Pending> pending;
  for (const std::vector<int>& barriers : barrier_sets) {
    sched::Schedule with = s;
    with.dataflow_barriers = barriers;
    ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(g, with, sched::ExecMode::kDataflow));
    pending.push_back(Pending{std::move(plan), nullptr, {}});
  }
  // Warm (the sets share this model's weights and arena, so the one before leaves them in the L2), one
  // round a pass. The first pass, of one replay each, sizes the rounds of the passes after it.
  sched::StageTimingRule rule = params_.rule;
  rule.l2 = sched::L2Timing::kWarm;
  rule.warmup = 0;
  rule.number = rule.min_rounds = rule.max_rounds = 1;
  ASSIGN_OR_RETURN(Timed timed, run_timer(g, std::move(pending), batch, rule, 0, boundary));
  const double longest = *std::max_element(timed.medians.begin(), timed.medians.end());
  rule.number = std::clamp(int(std::ceil(kNetworkRoundMs / std::max(longest, 1e-3))), 2, 100);
  std::vector<std::vector<double>> rounds(barrier_sets.size());
  for (int round = 0; round < kNetworkRounds; ++round) {
    std::vector<Pending> again;
    for (auto& exec : timed.executors) again.push_back(Pending{{}, std::move(exec), {}});
    ASSIGN_OR_RETURN(timed, run_timer(g, std::move(again), batch, rule, 0, boundary));
    for (size_t i = 0; i < rounds.size(); ++i) rounds[i].push_back(timed.medians[i]);
  }
  std::vector<double> out;
  for (const std::vector<double>& r : rounds) out.push_back(sched::median_of(r));
  return out;
}

Expected<std::vector<double>> MeasuredCostModel::time_stages(const ir::Graph& g,
                                                             const std::vector<sched::Stage>& stages, int batch,
                                                             const sched::StageTimingRule& rule, bool screening,
                                                             const std::vector<double>& limits) {
  std::vector<Pending> pending;
  for (const sched::Stage& stage : stages) {
    if (auto kept = screened_.find(stage_key(g, stage, batch)); kept != screened_.end() && kept->second.exec) {
      pending.push_back(Pending{{}, std::move(kept->second.exec), {kept->second.round_ms}});
      ++stats_.reused_screened;
    } else {
      pending.push_back(Pending{sched::compile_timed_stages(g, {stage}, sched::ExecMode::kStaged), nullptr, {}});
    }
    if (!limits.empty()) pending.back().limit = limits[pending.size() - 1];
  }
  const std::vector<ReaderCharge> charges = queue_reader_charges(g, stages, batch, pending);
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
  std::vector<double> out(timed.medians.begin(), timed.medians.begin() + long(stages.size()));
  for (const ReaderCharge& c : charges) out[c.stage] += reader_charge_ms(c, batch, g, timed.medians);
  return out;
}

std::vector<MeasuredCostModel::ReaderCharge> MeasuredCostModel::queue_reader_charges(
    const ir::Graph& g, const std::vector<sched::Stage>& stages, int batch, std::vector<Pending>& pending) {
  std::vector<ReaderCharge> charges;
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::vector<ir::NodeId> readers = sched::merged_output_readers(g, stages[i]);
    if (readers.empty()) continue;
    ReaderCharge c{i, pending.size(), readers, {}};
    pending.push_back(Pending{sched::compile_merge_with_readers(g, stages[i], readers), nullptr, {}});
    for (ir::NodeId r : readers) {
      const sched::Stage alone{sched::StageKind::kConcurrent, {{r}}};
      if (reader_alone_ms_.count(stage_key(g, alone, batch))) continue;
      c.alone.emplace_back(r, pending.size());
      pending.push_back(Pending{sched::compile_timed_stages(g, {alone}, sched::ExecMode::kStaged), nullptr, {}});
    }
    charges.push_back(std::move(c));
  }
  return charges;
}

double MeasuredCostModel::reader_charge_ms(const ReaderCharge& c, int batch, const ir::Graph& g,
                                           const std::vector<double>& medians) {
  for (const auto& [reader, index] : c.alone)
    reader_alone_ms_[stage_key(g, sched::Stage{sched::StageKind::kConcurrent, {{reader}}}, batch)] = medians[index];
  double readers_alone = 0;
  for (ir::NodeId r : c.readers)
    readers_alone += reader_alone_ms_.at(stage_key(g, sched::Stage{sched::StageKind::kConcurrent, {{r}}}, batch));
  return std::max(0.0, medians[c.with_readers] - medians[c.stage] - readers_alone);
}

}  // namespace ios::rt
