// The DP's stage latency measured on the GPU the way the stage will run: the stage alone, captured
// in a CUDA graph (groups on their own streams, joined by events), replayed in rounds until the
// timing rule is satisfied (sched::StageTimingRule); the latency is the median round. Every stage
// executor is built on one DeviceStore, so weights are uploaded once per network and configuration
// and no stage allocates or frees device memory. Stages asked together are timed in one pass
// (StageTimer): the GPU replays one while the host builds the next. Models on sibling contexts (one per
// search worker on a GPU) share its TimingLane: their stages are timed one after another while their
// threads build stages side by side.
#pragma once

#include <deque>
#include <map>
#include <optional>

#include "ir/weights.h"
#include "runtime/device_store.h"
#include "runtime/executor.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

class MeasuredCostModel : public sched::CostModel {
 public:
  struct Params {
    sched::StageTimingRule rule;
    ExecConfig config;  // its batch is replaced by each query's
  };
  // `context` (shared with the executors that will run the schedule) must match config's dtype/math;
  // its device is the one measured on.
  MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context);
  // The same with weights another model already made (one set for every device of a search).
  MeasuredCostModel(std::shared_ptr<const ir::Weights> weights, Params params, std::shared_ptr<Context> context);
  std::string name() const override { return "measured"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) override;
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                   int batch) override;
  // One round after the warm-up (the rule's first round, no stop rule). The latest screened stages keep
  // their executors: settling one of them later reuses it, its screening round counted as the first.
  bool screens() const override { return true; }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                    int batch) override;
  // Each segment's stages as one dataflow graph (no barriers between them), timed like a stage.
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<sched::Stage>>& segments,
                                                     int batch) override;
  // Each barrier set's whole-network dataflow graph, built on this model's store, replayed back to back
  // as `ios run` replays it (no L2 flush): kNetworkRounds rounds over all sets in turn, each of enough
  // replays (at least 2) for kNetworkRoundMs; a set's latency is its median round.
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const sched::Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override;
  size_t measurements() const { return size_t(stats_.stages); }
  const sched::StageTimingStats& stats() const { return stats_; }
  const sched::StageTimingRule& rule() const { return params_.rule; }
  const std::shared_ptr<const ir::Weights>& weights() const { return weights_; }  // seeded, timing only
  // The share of the network's weights (at the configured precision) that the device's L2 cannot hold:
  // 1 - L2 / weight bytes, at least 0. Under sched::L2Timing::kColdShare a round's cold replay counts
  // this much; where it is 0 (the weights fit) stages are timed warm. Known once a stage was timed.
  std::optional<double> cold_share() const { return cold_share_ < 0 ? std::nullopt : std::optional(cold_share_); }

 private:
  std::shared_ptr<const ir::Weights> weights_;
  Params params_;
  std::shared_ptr<Context> context_;  // one set of streams, handles and kernels for every stage timed
  std::shared_ptr<DeviceStore> store_;
  double cold_share_ = -1;  // not known yet
  Expected<double> find_cold_share();
  // Executors on this model's context and store, built for timing only (their arena is not zeroed).
  ExecutorOptions executor_options(int batch) const;
  struct Pending {  // what to time: a plan to build, or an executor kept from screening and its rounds
    sched::ExecutionPlan plan;
    std::unique_ptr<Executor> kept;
    std::vector<double> prior;
  };
  struct Timed {
    std::vector<std::vector<double>> rounds;
    std::vector<double> medians;
    std::vector<std::unique_ptr<Executor>> executors;
  };
  // One pass of the StageTimer over `pending`, in order.
  Expected<Timed> time_executors(const ir::Graph& g, std::vector<Pending> pending, int batch,
                                 const sched::StageTimingRule& rule);
  Expected<std::vector<double>> time_stages(const ir::Graph& g, const std::vector<sched::Stage>& stages, int batch,
                                            const sched::StageTimingRule& rule, bool screening);
  struct Screened {  // a screened stage's executor and round
    std::unique_ptr<Executor> exec;
    double round_ms = 0;
  };
  static constexpr int kNetworkRounds = 3;
  static constexpr double kNetworkRoundMs = 10;
  static constexpr size_t kScreenedKept = 512;  // settled right after screening: the DP settles per state
  std::map<std::string, Screened> screened_;    // by stage_key
  std::deque<std::string> screened_order_;      // oldest first
  sched::StageTimingStats stats_;
};

}  // namespace ios::rt
