// The scheduling policies behind `--opt`, all over one CostModel.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "scheduler/barriers.h"
#include "scheduler/cost_model.h"
#include "scheduler/dp.h"
#include "scheduler/opara.h"
#include "scheduler/part_search.h"
#include "scheduler/schedule.h"

namespace ios::sched {

enum class Policy { kSequential, kGreedy, kDpMerge, kDpParallel, kDpBoth, kOpara };

// Accepts sequential, greedy, dp_merge, dp_parallel, dp_parallel_merge / ios-both, opara (and the
// IOS-Merge / IOS-Parallel display names). The error lists the accepted names.
Expected<Policy> parse_policy(const std::string& name);
std::string policy_flag_name(Policy p);     // dp_parallel_merge, ...
std::string policy_display_name(Policy p);  // IOS-Both, ... (IOS's log names)
// IOS's dynamic programs (merge, parallel, both): the policies that search stages and spread over workers.
inline bool is_dp(Policy p) { return p == Policy::kDpBoth || p == Policy::kDpParallel || p == Policy::kDpMerge; }

struct OptimizeOptions {
  Policy policy = Policy::kDpBoth;
  int r = 3, s = 8;
  int max_part_size = 100;
  int batch = 1;
  int greedy_max_streams = 10;
  bool bound_pruning = true;                              // DP: see DpOptions::bound_pruning
  bool measured_floors = DpOptions{}.measured_floors;     // DP: see DpOptions::measured_floors
  bool limited_timing = DpOptions{}.limited_timing;       // DP: see DpOptions::limited_timing
  std::optional<ResourceProfile> profile;                 // Opara; estimated when absent
  int64_t max_transitions = DpOptions{}.max_transitions;  // DP: per part, see DpOptions
  bool reuse_parts = true;                                // DP: see PartSearchOptions
  double memory_budget = DpOptions{}.memory_budget;       // DP: see DpOptions
  int stage_batch = DpOptions{}.stage_batch;              // DP: see DpOptions
  int states_together = DpOptions{}.states_together;      // DP: see DpOptions
  double screen_margin = DpOptions{}.screen_margin;       // DP: see DpOptions
  // Staged schedules: place_barriers with segments of up to this many stages, for dataflow execution
  // (Schedule::dataflow_barriers). 0: none placed, dataflow execution keeps no barrier.
  int dataflow_segment = 0;
  double dataflow_margin = BarrierOptions{}.margin;  // see BarrierOptions
  int dataflow_refine = RefineOptions{}.passes;      // passes of refine_barriers (0: the segment DP's set)
  // DP: after every part, for progress reporting.
  std::function<void(const SearchProgress&)> on_part;
  // DP: more cost models (one per extra GPU), each used by one more worker thread that solves parts; after
  // the DP, those on other devices (GPUs) time a share of the dataflow segments and barrier sets.
  std::vector<CostModel*> extra_models;
  // DP: the measuring models of the model's and the extra models' workers, pooled in that order, so that
  // workers without parts left time stages for the others (see PartSearchOptions). Null: not lent.
  IdleWorkers* idle_workers = nullptr;
};

struct OptimizeResult {
  Schedule schedule;
  DpStats stats;
  size_t parts = 0, parts_reused = 0;  // DP: parts searched, and parts that took an identical part's solution
  std::vector<PartTiming> timeline;    // DP: when each searched part ran, on which worker
  // Wall seconds of the search's steps: the policy (the DP's parts), dataflow barriers (placed and
  // refined), the final estimate.
  double policy_seconds = 0, barrier_seconds = 0, estimate_seconds = 0;
};

Schedule sequential_schedule(const ir::Graph& g);
Schedule greedy_schedule(const ir::Graph& g, int max_streams);

Expected<OptimizeResult> optimize(const ir::Graph& g, const OptimizeOptions& options, CostModel& model);

// Latency of a schedule under a cost model: the sum of its stages; for stream-level schedules a
// contention-free simulation of the streams with every op costed alone.
Expected<double> estimate_latency_ms(const ir::Graph& g, const Schedule& s, CostModel& model, int batch);

}  // namespace ios::sched
