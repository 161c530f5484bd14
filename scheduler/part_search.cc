#include "scheduler/part_search.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/wall_clock.h"

namespace ios::sched {

namespace {

struct PartJob {
  size_t block = 0;
  std::vector<ir::NodeId> ops;  // sorted
  int copy_of = -1;             // an earlier job with the same signature
  std::vector<Stage> stages;
  DpStats stats;
  Status status;
  bool done = false;
  PartTiming timing;
};

void add_stats(DpStats& into, const DpStats& s) {
  into.states += s.states;
  into.transitions += s.transitions;
  into.stages_costed += s.stages_costed;
  into.cost_requests += s.cost_requests;
  into.stages_settled += s.stages_settled;
  into.latency_ms += s.latency_ms;
  into.budget_splits += s.budget_splits;
  into.memory_skipped += s.memory_skipped;
}

// The copy's stages: op k of the original (in sorted order) becomes op k of the copy.
std::vector<Stage> map_stages(const PartJob& original, const std::vector<ir::NodeId>& copy) {
  std::map<ir::NodeId, ir::NodeId> to;
  for (size_t k = 0; k < copy.size(); ++k) to[original.ops[k]] = copy[k];
  std::vector<Stage> out = original.stages;
  for (Stage& st : out)
    for (auto& group : st.groups)
      for (ir::NodeId& id : group) id = to.at(id);
  return out;
}

// In search order (LiveMemoryModel's order of parts).
std::vector<PartJob> make_jobs(const ir::Graph& g, const DpOptions& dp, bool reuse_parts) {
  const OpKeys keys = op_keys(g);
  std::vector<PartJob> jobs;
  std::map<std::string, int> first_with;
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (auto& ops : block_parts(g, b, dp.max_part_size)) {
      PartJob job;
      job.block = b;
      job.ops = std::move(ops);
      std::sort(job.ops.begin(), job.ops.end());
      if (reuse_parts) {
        auto [it, fresh] = first_with.emplace(part_signature(g, keys, job.ops), int(jobs.size()));
        if (!fresh) job.copy_of = it->second;
      }
      jobs.push_back(std::move(job));
    }
  return jobs;
}

// Reports parts as they complete, in job order (a copy counts as done with its original), and the parts
// being searched by the share of their states solved (`shares`, by job).
class ProgressReporter {
 public:
  ProgressReporter(const std::vector<PartJob>& jobs, std::function<void(const SearchProgress&)> on_part)
      : reported_(jobs.size(), false), on_part_(std::move(on_part)) {
    progress_.parts_total = jobs.size();
    for (const PartJob& j : jobs) progress_.ops_total += j.ops.size();
    if (on_part_) on_part_(progress_);  // the totals, before any part is done
  }

  void report(const std::vector<PartJob>& jobs, const std::vector<std::atomic<double>>& shares) {
    bool told = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const PartJob& root = jobs[jobs[i].copy_of < 0 ? i : size_t(jobs[i].copy_of)];
      if (reported_[i] || !root.done || !root.status.is_ok()) continue;
      reported_[i] = true;
      ++progress_.parts_done;
      progress_.ops_done += jobs[i].ops.size();
      if (jobs[i].copy_of >= 0) {
        ++progress_.parts_reused;
      } else {
        add_stats(progress_.stats, jobs[i].stats);
      }
      progress_.ops_running = running(jobs, shares);
      if (on_part_) on_part_(progress_);
      told = true;
    }
    const double now = running(jobs, shares);
    if (now == progress_.ops_running) return;
    progress_.ops_running = now;
    if (!told && on_part_) on_part_(progress_);
  }

 private:
  // The parts searched but not reported yet, by the share of their states solved: it only grows until a
  // part is reported, when its ops move to ops_done whole.
  double running(const std::vector<PartJob>& jobs, const std::vector<std::atomic<double>>& shares) const {
    double sum = 0;
    for (size_t i = 0; i < jobs.size(); ++i)
      if (jobs[i].copy_of < 0 && !reported_[i]) sum += double(jobs[i].ops.size()) * shares[i].load();
    return sum;
  }

  std::vector<bool> reported_;
  std::function<void(const SearchProgress&)> on_part_;
  SearchProgress progress_;
};

// Each worker's rank among the workers of its device (Measurement::timing_device; a model without one is a device of
// its own), and the number of devices.
std::pair<std::vector<size_t>, size_t> device_ranks(const std::vector<CostModel*>& models) {
  std::map<std::string, size_t> seen;
  std::vector<size_t> rank;
  size_t devices = 0;
  for (CostModel* m : models) {
    const std::string device = timing_device(*m);
    const size_t r = device.empty() ? 0 : seen[device]++;
    rank.push_back(r);
    devices += r == 0;
  }
  return {rank, devices};
}

// Solves the jobs that are not copies on one thread per model, largest first; progress is reported
// from the calling thread. Where there are no more parts than workers, each worker gets one part at most
// and where it runs decides its speed: the parts go one to each device before any device gets a second (two
// large parts on one GPU take turns timing while another GPU idles: RandWire fp32 on 4 x H200, 3 parts of
// 33 ops, 17.1 and 16.2 s on the two workers of one GPU, 13.2 s on a third). With more parts the queue
// balances the devices, and the first parts go to the workers ready first, on the first GPU, which the
// calibration's network warmed up (NasNet fp32, 19 parts: spreading them made the search 4 % slower).
Status solve_jobs(const ir::Graph& g, const PartSearchOptions& options, const std::vector<CostModel*>& models,
                  std::vector<PartJob>& jobs) {
  const LiveMemoryModel memory(g, all_parts(g, options.dp.max_part_size));
  std::vector<size_t> queue;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].copy_of < 0) queue.push_back(i);
  std::stable_sort(queue.begin(), queue.end(),
                   [&](size_t a, size_t b) { return jobs[a].ops.size() > jobs[b].ops.size(); });
  std::mutex mutex;  // guards the counters and every job's status and done flag
  std::condition_variable changed, taken;
  size_t next = 0, completed = 0;
  size_t progressed = 0;  // progress reports of the parts being searched (DpOptions::on_progress)
  bool failed = false;
  const std::pair<std::vector<size_t>, size_t> ranks = device_ranks(models);
  const std::vector<size_t>& rank = ranks.first;
  const size_t devices = ranks.second;
  const bool spread = queue.size() <= models.size();
  auto take = [&](size_t worker) -> std::optional<size_t> {
    std::unique_lock<std::mutex> lock(mutex);
    // Spreading, a device's r-th worker starts once r parts a device are taken (or all are).
    const size_t turn = spread ? std::min(queue.size(), rank[worker] * devices) : 0;
    taken.wait(lock, [&] { return failed || next >= turn; });
    if (failed || next == queue.size()) return std::nullopt;
    const size_t job = queue[next++];
    taken.notify_all();
    return job;
  };
  const auto start = WallClock::now();
  std::vector<std::atomic<double>> shares(jobs.size());  // by job: the share of its states solved
  ProgressReporter reporter(jobs, options.on_part);
  auto solve = [&](size_t i, size_t worker, CostModel& model) {
    PartJob& job = jobs[i];
    std::vector<Stage> stages;
    DpStats stats;
    job.timing = PartTiming{worker, job.ops.size(), seconds_since(start), 0};
    DpOptions dp = options.dp;
    dp.on_progress = [&, i](double share) {
      shares[i] = share;
      if (models.size() == 1) return reporter.report(jobs, shares);  // this is the calling thread
      std::lock_guard<std::mutex> lock(mutex);
      ++progressed;
      changed.notify_all();
    };
    Status s = optimize_part(g, job.ops, dp, model, stages, stats, &memory);
    job.timing.end_s = seconds_since(start);
    std::lock_guard<std::mutex> lock(mutex);
    job.stages = std::move(stages);
    job.stats = stats;
    job.status = std::move(s);
    job.done = true;
    failed = failed || !job.status.is_ok();
    ++completed;
    changed.notify_all();
    taken.notify_all();  // a failure releases the workers waiting for their turn
  };
  if (models.size() == 1) {
    while (std::optional<size_t> i = take(0)) {
      solve(*i, 0, *models[0]);
      reporter.report(jobs, shares);
    }
  } else {
    std::vector<std::thread> workers;
    if (options.idle_workers) options.idle_workers->open();
    for (size_t w = 0; w < models.size(); ++w)
      workers.emplace_back([&, w] {
        while (std::optional<size_t> i = take(w)) solve(*i, w, *models[w]);
        if (options.idle_workers) options.idle_workers->serve(w);
      });
    size_t seen = 0, progress_seen = 0;
    for (bool all = queue.empty(); !all;) {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return completed != seen || progressed != progress_seen; });
      seen = completed;
      progress_seen = progressed;
      all = completed == queue.size() || failed;
      reporter.report(jobs, shares);
    }
    if (options.idle_workers) options.idle_workers->close();
    for (std::thread& t : workers) t.join();
  }
  for (const PartJob& j : jobs)
    if (!j.status.is_ok()) return j.status;
  return Status::ok();
}

}  // namespace

double WorkerLoad::idle_s() const {
  double idle = 0;
  for (double b : busy_s) idle += span_s - b;
  return idle;
}

std::string WorkerLoad::summary() const {
  std::string busy;
  char text[200];
  for (double b : busy_s) {
    std::snprintf(text, sizeof text, "%s%.1f", busy.empty() ? "" : ", ", b);
    busy += text;
  }
  std::snprintf(text, sizeof text,
                "%zu workers over %.1f s, busy %s s; the last part (%zu ops, worker %zu) ran %.1f-%.1f s",
                busy_s.size(), span_s, busy.c_str(), last.ops, last.worker, last.start_s, last.end_s);
  return text;
}

WorkerLoad worker_load(const std::vector<PartTiming>& timeline, size_t workers) {
  WorkerLoad load;
  load.busy_s.assign(workers, 0.0);
  for (const PartTiming& t : timeline) {
    if (t.worker < workers) load.busy_s[t.worker] += t.end_s - t.start_s;
    if (t.end_s >= load.span_s) load.span_s = t.end_s, load.last = t;
  }
  return load;
}

std::string part_signature(const ir::Graph& g, const OpKeys& op_keys, const std::vector<ir::NodeId>& part) {
  // One group holding the whole part: its ops in order, their attributes, shapes and wiring.
  return stage_signature(g, op_keys, Stage{StageKind::kConcurrent, {part}});
}

Expected<PartSearchResult> search_parts(const ir::Graph& g, const PartSearchOptions& options,
                                        const std::vector<CostModel*>& models) {
  RETURN_ERROR_IF(models.empty(), ErrorCode::kInvalidArgument, "the search needs at least one cost model");
  RETURN_ERROR_IF(options.idle_workers && options.idle_workers->size() != models.size(), ErrorCode::kInvalidArgument,
                  "idle workers: " + std::to_string(options.idle_workers->size()) + " models pooled for " +
                      std::to_string(models.size()) + " workers");
  std::vector<PartJob> jobs = make_jobs(g, options.dp, options.reuse_parts);
  RETURN_IF_ERROR(solve_jobs(g, options, models, jobs));
  PartSearchResult r;
  r.blocks.resize(g.blocks.size());
  r.parts = jobs.size();
  for (const PartJob& job : jobs) {
    const bool copy = job.copy_of >= 0;
    const PartJob& root = copy ? jobs[size_t(job.copy_of)] : job;
    const std::vector<Stage> stages = copy ? map_stages(root, job.ops) : job.stages;
    auto& out = r.blocks[job.block].stages;
    out.insert(out.end(), stages.begin(), stages.end());
    r.parts_reused += copy;
    if (!copy) r.timeline.push_back(job.timing);
    if (copy) {
      r.stats.latency_ms += root.stats.latency_ms;
    } else {
      add_stats(r.stats, job.stats);
    }
  }
  return r;
}

}  // namespace ios::sched
