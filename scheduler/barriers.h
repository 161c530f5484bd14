// Which stage barriers dataflow execution keeps. IOS's DP prices each stage alone, behind a barrier;
// without barriers a stage's launches overlap its neighbours', which fills idle SMs or slows the
// kernels beside them (a stage tuned behind barriers can lose 5 % end to end). A second DP over the
// schedule's stages (all blocks, in order) cuts them into segments of at most `max_segment` stages,
// each priced by the cost model as one dataflow graph (CostModel::segment_latencies_ms):
//   best[i] = min over 1 <= k <= max_segment of best[i - k] + segment(stages i-k .. i-1)
// and keeps a barrier at every cut. Like IOS's DP it assumes barriers make segments independent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/schedule.h"

namespace ios::sched {

struct BarrierOptions {
  int max_segment = 4;  // stages per segment; 1 keeps every barrier
  int batch = 1;
  // A segment of several stages is chosen only when it wins with its latency raised by this fraction:
  // the DP picks the segments whose timings came out low, and a stage's timing moves by a few percent
  // from one pass over the GPU to the next (experiments/RESULTS.md), so small predicted gains are noise.
  double margin = 0;
};

struct BarrierPlacement {
  std::vector<int> barriers;  // Schedule::dataflow_barriers
  double dataflow_ms = 0;     // the sum of the chosen segments
  double barriers_ms = 0;     // the same with a barrier before every stage (segments of one stage)
  int64_t segments = 0;       // segments asked of the cost model
  // Every cut left without a barrier, with what keeping its barrier would add to the chosen segment's
  // latency (its two halves' sum minus the segment's): the gain the DP expects from leaving it out.
  // Largest first (then earliest).
  std::vector<std::pair<int, double>> removed;
};

// The segment length callers use unless told otherwise: only a measuring model sees what a segment
// without barriers costs (the default CostModel::segment_latencies_ms sums its stages), so 0 (no
// barriers placed) for any other.
int default_dataflow_segment(const std::string& cost_model_name);

// A staged schedule's barriers for dataflow execution. Ties keep the barrier.
Expected<BarrierPlacement> place_barriers(const ir::Graph& g, const Schedule& s, CostModel& model,
                                          const BarrierOptions& options);
// The same with the segments timed on every device of `models` (sched::one_per_device, the first model's
// device first): the search's workers, idle once the DP is done.
Expected<BarrierPlacement> place_barriers(const ir::Graph& g, const Schedule& s, const std::vector<CostModel*>& models,
                                          const BarrierOptions& options);

// The segment DP prices each segment alone; inside the network a segment without barriers also overlaps
// (and slows) the stages around it, so its choice can lose to keeping every barrier (Inception V3:
// 1.03x staged). refine_barriers checks it on the whole network (CostModel::network_latencies_ms) by
// local search from the set with every barrier. The first pass compares that set with the DP's, with
// none (a segment may overlap a neighbour the DP's segments cannot reach), and with every set one
// barrier away among the first `max_toggles` cuts the DP left out (largest expected gain first). Later
// passes compare the current set with the sets one barrier away from it and with all the improving
// toggles of the pass before at once. It moves to the fastest set when that beats the current one by
// more than `threshold` (relative), else stops: a barrier goes only where the whole network runs
// measurably faster without it.
struct RefineOptions {
  // Each pass times up to max_toggles + 3 whole networks (the first: current, DP's, none; later: current, combined).
  int passes = 2;  // 0: the DP's set unchanged
  int max_toggles = 8;
  double threshold = 0.005;
  int batch = 1;
};

struct BarrierRefinement {
  std::vector<int> barriers;
  double measured_ms = 0;       // the chosen set, in its last comparison (0: nothing compared)
  double every_barrier_ms = 0;  // the set with every barrier, in the first pass
  double placed_ms = 0;         // the DP's set, in the first pass
  int passes = 0;               // passes run
  int64_t sets_timed = 0;       // barrier sets asked of the cost model
  double seconds = 0;           // wall time, building and timing the sets
};

Expected<BarrierRefinement> refine_barriers(const ir::Graph& g, const Schedule& s, CostModel& model,
                                            const BarrierPlacement& placed, const RefineOptions& options);
// The same with each pass's sets spread over the devices of `models` (sched::spread_network_latencies: every
// device also times the current set, which the others are compared with).
Expected<BarrierRefinement> refine_barriers(const ir::Graph& g, const Schedule& s,
                                            const std::vector<CostModel*>& models, const BarrierPlacement& placed,
                                            const RefineOptions& options);

}  // namespace ios::sched
