// IOS's dynamic programming over the endings of a block part:
//   dp[s] = min over endings T of s of dp[s - T] + latency(T)
// where s is the predecessor-closed set of ops not yet scheduled. An ending is either a set of
// concurrent groups (at most `s` groups of at most `r` ops, each group a weakly connected, successor-
// closed piece of s) or a merge of sibling convolutions that are sinks of s.
#pragma once

#include <cstdint>
#include <functional>

#include "scheduler/cost_model.h"
#include "scheduler/live_memory.h"
#include "scheduler/schedule.h"

namespace ios::sched {

enum class DpMode { kParallel, kMerge, kBoth };

struct DpOptions {
  DpMode mode = DpMode::kBoth;
  int r = 3;                // max ops per group
  int s = 8;                // max groups per stage
  int max_part_size = 100;  // blocks without explicit parts are cut into chunks of this size
  int batch = 1;
  // Skip costing a concurrent ending whose floor (its groups' ops timed alone) cannot beat the best
  // ending found so far. Exact when the cost model never prices a stage under that floor.
  bool bound_pruning = true;
  // With bound_pruning: also floor a concurrent stage by the settled figures of the same stage without
  // some of its groups, and a merged convolution by its slowest convolution alone. Exact when adding
  // work to a stage never makes it faster; measured figures carry noise, so near-ties may go otherwise.
  bool measured_floors = true;
  // With bound_pruning: tell the cost model, for each stage asked, the figure past which it loses to the
  // best ending so far (CostModel::limited_stage_latencies_ms). A measuring model then stops timing a
  // stage whose rounds are all past it at its minimum rounds, spread or not. The stage's figure, kept in
  // the stage cache, is then its median at the minimum rounds.
  bool limited_timing = true;
  // (state, ending) pairs one part may consider. The DP is exponential in a part's width; a part past
  // the budget is split in two halves (in topological order) and each half solved alone, which is
  // counted in DpStats::budget_splits and noted in the schedule. Real networks stay far below it
  // (NasNet's whole search: 4.5M).
  int64_t max_transitions = 2'000'000;
  // Live activations a stage may reach, as a multiple of the sequential schedule's peak (LiveMemoryModel);
  // endings past it are skipped. 0: no limit. Concurrency costs memory: without a limit the measured
  // search's RandWire schedule needed 1.98x the sequential schedule's activations.
  double memory_budget = 1.5;
  // Stages asked of the cost model at once: a state's next candidates in the order the DP costs them,
  // while their floors are under the best ending so far. A measuring model times them in one pass over
  // the GPU. Some may then be pruned by a better ending among them: they were costed for nothing, and
  // the DP's answer is the same as with 1.
  int stage_batch = 8;
  // States of one size (ops left) solved side by side, from the smallest up: each round, every one of them
  // asks for its next stages (up to stage_batch, each pruned by its own bound as alone) and all go to the
  // model in one request. 0: every state of a size at once; 1: one state at a time. A measuring model then
  // times hundreds of stages a pass instead of two, and workers lent to the search get larger shares
  // (RandWire fp32 on 4 x H200: 317 requests against 21158, the search 12.6 s against 14.3).
  // With the same figures the DP's answer is the same either way; floors may prune a little differently.
  int states_together = 0;
  // Called on the thread solving the part after each size of states, with the share of the part's
  // states solved so far (0-1): progress inside a part that runs for many seconds.
  std::function<void(double)> on_progress;
  // With a model that screens (CostModel::screens), a stage is first given a screening figure, trusted to
  // within this fraction plus screen_margin_ms either way; only stages whose figure could still win are
  // then settled, and the DP chooses among settled figures only. 0: every stage is settled at once.
  double screen_margin = 0;
  double screen_margin_ms = 0.002;
};

struct DpStats {
  int64_t states = 0;
  int64_t transitions = 0;     // (state, ending) pairs considered
  int64_t stages_costed = 0;   // distinct stages whose latency was asked of the cost model
  int64_t cost_requests = 0;   // requests they were asked in (DpOptions::stage_batch)
  int64_t stages_settled = 0;  // of stages_costed, screened first and then settled (DpOptions::screen_margin)
  double latency_ms = 0;       // the optimum, summed over parts
  int64_t budget_splits = 0;   // parts split because they went past DpOptions::max_transitions
  int64_t memory_skipped = 0;  // endings skipped because they went past DpOptions::memory_budget
};

// Splits a block into the parts the DP optimises separately (explicit parts, or chunks).
std::vector<std::vector<ir::NodeId>> block_parts(const ir::Graph& g, size_t block, int max_part_size);

// Optimises one part; appends its stages to `out`. `memory` (over every part of the graph, in search
// order) enforces DpOptions::memory_budget; without it the search has no memory limit.
Status optimize_part(const ir::Graph& g, const std::vector<ir::NodeId>& part, const DpOptions& options,
                     CostModel& model, std::vector<Stage>& out, DpStats& stats,
                     const LiveMemoryModel* memory = nullptr);

// Every part of every block, in the order the search solves them.
std::vector<std::vector<ir::NodeId>> all_parts(const ir::Graph& g, int max_part_size);

Expected<BlockSchedule> optimize_block(const ir::Graph& g, size_t block, const DpOptions& options, CostModel& model,
                                       DpStats& stats);

// Every ending of `remaining` (a predecessor-closed subset of the part) that the DP considers, in the
// DP's order. Exposed so tests can check the enumeration against brute force.
std::vector<Stage> enumerate_endings(const ir::Graph& g, const std::vector<ir::NodeId>& part,
                                     const std::vector<ir::NodeId>& remaining, const DpOptions& options);

}  // namespace ios::sched
