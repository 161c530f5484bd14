#include "runtime/stage_marginals.h"

#include <algorithm>

#include "common/wall_clock.h"
#include "scheduler/plan.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

Expected<StageMarginals> time_stage_marginals(const ir::Graph& g, const ir::Weights& w,
                                              const std::vector<sched::Stage>& stages, const ExecutorOptions& options,
                                              const MarginalOptions& marginal) {
  RETURN_ERROR_IF(marginal.rounds < 1, ErrorCode::kInvalidArgument, "stage marginals need at least one round");
  ExecutorOptions shared = options;
  if (!shared.store) shared.store = std::make_shared<DeviceStore>();
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> whole, Executor::create(g, w, sched::compile_stages(stages), shared));
  std::vector<std::unique_ptr<Executor>> without;
  for (size_t k = 0; k < stages.size(); ++k) {
    ASSIGN_OR_RETURN(auto exec, Executor::create(g, w, sched::compile_stages_without(stages, k), shared));
    without.push_back(std::move(exec));
  }
  const auto start = WallClock::now();
  if (marginal.on_round) marginal.on_round(0, 0);
  // Interleaved, so that a drift of the GPU between rounds moves the whole network and its variants alike.
  std::vector<double> network;
  std::vector<std::vector<double>> differences(stages.size());
  for (int round = 0; round < marginal.rounds; ++round) {
    ASSIGN_OR_RETURN(Timing full, whole->time(marginal.timing));
    network.push_back(full.median_ms);
    for (size_t k = 0; k < stages.size(); ++k) {
      ASSIGN_OR_RETURN(Timing less, without[k]->time(marginal.timing));
      differences[k].push_back(full.median_ms - less.median_ms);
    }
    if (marginal.on_round) marginal.on_round(round + 1, seconds_since(start));
  }
  StageMarginals out;
  out.network_ms = sched::median_of(network);
  for (const std::vector<double>& d : differences) {
    const auto [lo, hi] = std::minmax_element(d.begin(), d.end());
    out.stages.push_back(StageMarginal{sched::median_of(d), *hi - *lo});
  }
  return out;
}

}  // namespace ios::rt
