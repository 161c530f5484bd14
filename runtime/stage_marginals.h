// Each stage's cost inside the staged network, without a tracer: the network's latency less that of the
// network without the stage (sched::compile_stages_without). A stage's figure, timed alone, can then be
// set beside what the stage adds to the network it runs in (`ios optimize --stage-marginals`).
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"
#include "runtime/executor.h"
#include "scheduler/schedule.h"

namespace ios::rt {

struct StageMarginal {
  double in_network_ms = 0;  // the median over rounds of the network's latency less the network's without it
  double spread_ms = 0;      // the largest less the smallest of those differences
};

struct StageMarginals {
  double network_ms = 0;  // the whole network, the median of its rounds
  std::vector<StageMarginal> stages;
};

struct MarginalOptions {
  int rounds = 7;                        // passes over the whole network and each network less one stage, in turn
  TimingOptions timing{3, 0, 20, 0, 5};  // per network per round: samples of back-to-back replays
  // Once the networks are built (0 rounds done), then after each round: rounds done and the seconds since
  // the first began (a progress line's ETA).
  std::function<void(int, double)> on_round;
};

// The staged networks built on `options` (their context, and so their kernels), on one DeviceStore unless
// `options` names one: `w` uploaded once, one arena for all (they run one at a time).
Expected<StageMarginals> time_stage_marginals(const ir::Graph& g, const ir::Weights& w,
                                              const std::vector<sched::Stage>& stages, const ExecutorOptions& options,
                                              const MarginalOptions& marginal = {});

}  // namespace ios::rt
