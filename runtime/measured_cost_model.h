// The DP's stage latency measured on the GPU the way the stage will run: the stage alone, captured
// in a CUDA graph (groups on their own streams, joined by events), `number` replays between two
// events, the median over `repeat` such means, after `warmup` replays (IOS's 2/6/6 by default).
#pragma once

#include "ir/weights.h"
#include "runtime/executor.h"
#include "scheduler/cost_model.h"

namespace ios::rt {

class MeasuredCostModel : public sched::CostModel {
 public:
  struct Params {
    int warmup = 2, number = 6, repeat = 6;
    ExecConfig config;  // its batch is replaced by each query's
  };
  // `context` (shared with the executors that will run the schedule) must match config's dtype/math.
  MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context);
  std::string name() const override { return "measured"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) override;
  size_t measurements() const { return measurements_; }

 private:
  ir::Weights weights_;
  Params params_;
  std::shared_ptr<Context> context_;  // one set of streams, handles and kernels for every stage timed
  size_t measurements_ = 0;
};

}  // namespace ios::rt
