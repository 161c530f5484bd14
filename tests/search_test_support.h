// What the search test files share: a deterministic stage latency shaped like a GPU's, and cost models that
// count, record or batch what the DP asks of them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "models/models.h"
#include "scheduler/idle_workers.h"
#include "scheduler/part_search.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

namespace ios::sched {

// A deterministic latency shaped like a GPU's that depends on what the stage computes, never on op
// ids: identical cells get identical costs, as on a GPU.
inline double signature_latency(const ir::Graph& g, const Stage& st) {
  auto work = [&](ir::NodeId id) { return 1e-3 + g.cost(id).flops * 1e-12; };
  double longest = 0, total = 0;
  for (const auto& group : st.groups) {
    double t = 0;
    for (ir::NodeId id : group) t += work(id);
    longest = std::max(longest, t);
    total += t;
  }
  if (st.kind == StageKind::kMerge) return 2e-3 + 0.8 * total;
  return 2e-3 + longest + 5e-4 * double(st.groups.size());
}

inline std::vector<std::vector<std::vector<ir::NodeId>>> stage_lists(const Schedule& s) {
  std::vector<std::vector<std::vector<ir::NodeId>>> out;
  for (const auto& b : s.blocks)
    for (const auto& st : b.stages) out.push_back(st.groups);
  return out;
}

// Counts every stage it is asked to cost, from any thread, and sleeps a little so workers overlap.
class CountingModel : public CostModel {
 public:
  explicit CountingModel(const ir::Graph& g) : keys_(op_keys(g)) {}
  std::string name() const override { return "counting"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    std::this_thread::yield();  // lets the workers interleave
    std::string signature = stage_signature(g, keys_, st);
    std::lock_guard<std::mutex> lock(mutex_);
    asked_.push_back(std::move(signature));
    return signature_latency(g, st);
  }
  std::vector<std::string> asked() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return asked_;
  }

 private:
  OpKeys keys_;
  mutable std::mutex mutex_;
  std::vector<std::string> asked_;
};

struct WorkerRun {
  Expected<OptimizeResult> result;
  std::vector<std::string> asked;
};

inline WorkerRun search_with_workers(const ir::Graph& g, int workers) {
  std::vector<std::unique_ptr<CountingModel>> inner;
  for (int i = 0; i < workers; ++i) inner.push_back(std::make_unique<CountingModel>(g));
  StageCache cache(*inner[0], "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (int i = 1; i < workers; ++i) {
    views.push_back(cache.worker(*inner[size_t(i)]));
    o.extra_models.push_back(views.back().get());
  }
  WorkerRun run{optimize(g, o, cache), {}};
  for (const auto& m : inner) {
    auto a = m->asked();
    run.asked.insert(run.asked.end(), a.begin(), a.end());
  }
  return run;
}

// Records the size and the stages of every request; latencies from signature_latency.
class BatchRecordingModel : public CostModel {
 public:
  std::string name() const override { return "batch-recording"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    requests.push_back({st});
    return signature_latency(g, st);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages, int) override {
    if (fail_next) {
      fail_next = false;
      return error(ErrorCode::kRuntimeError, "the GPU timed out");
    }
    requests.push_back(stages);
    std::vector<double> out;
    for (const Stage& st : stages) out.push_back(signature_latency(g, st));
    return out;
  }
  std::vector<std::vector<Stage>> requests;
  bool fail_next = false;
};

// The largest request that is not the single-op floors.
inline size_t largest_request(const std::vector<std::vector<Stage>>& requests) {
  size_t largest = 0;
  for (const auto& request : requests) {
    const bool floors = std::all_of(request.begin(), request.end(),
                                    [](const Stage& st) { return st.groups.size() == 1 && st.ops().size() == 1; });
    if (!floors) largest = std::max(largest, request.size());
  }
  return largest;
}

}  // namespace ios::sched
