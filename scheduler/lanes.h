// Work after the DP that every GPU of a search may share (the dataflow segments that barriers are placed
// by, the barrier sets they are refined by): the search's cost models, one per timing lane, each answering
// a contiguous chunk of the requests on a thread of its own. The DP's workers have finished by then, so
// each model is used by one thread at a time.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "scheduler/cost_model.h"

namespace ios::sched {

// The first model of each lane (CostModel::lane), in order; a model without a lane is one of its own.
std::vector<CostModel*> one_per_lane(const std::vector<CostModel*>& models);

struct Chunk {
  size_t begin = 0, end = 0;  // [begin, end)
  size_t size() const { return end - begin; }
};
// [0, n) cut in contiguous chunks, one per model (fewer when n is smaller), sizes differing by one at most.
std::vector<Chunk> chunks_of(size_t n, size_t models);

// Each segment's latency (CostModel::segment_latencies_ms): lane k times chunk k of the segments (chunks_of),
// the first on the calling thread, the others on threads of their own. The first chunk's error wins.
Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& lanes,
                                                       const std::vector<std::vector<Stage>>& segments, int batch);

// Each barrier set's whole-network latency (CostModel::network_latencies_ms), compared with sets[0]: lane k
// times sets[0] beside chunk k of the others (chunks_of), as one request, and its figures are scaled by
// the first lane's figure for sets[0] over its own, so that each set counts by its ratio to sets[0] timed
// on the same GPU in the same rounds (GPUs of one model still differ by a few percent). One lane: one
// request of every set, unscaled. The first chunk's error wins.
Expected<std::vector<double>> spread_network_latencies(const ir::Graph& g, const Schedule& s,
                                                       const std::vector<CostModel*>& lanes,
                                                       const std::vector<std::vector<int>>& sets, int batch);

// The cost models of a search's workers that have no part left to solve, lent to those still solving
// one: at the end of a search on several GPUs the last parts ran on one or two GPUs while the others idled
// for up to a second (NasNet on 4 x H200, experiments/RESULTS.md, session 32). Thread-safe.
class LanePool {
 public:
  void lend(CostModel* model);  // its worker is done: the model stays lent until the pool is gone
  // Up to `at_most` lent models, each taken until given back.
  std::vector<CostModel*> borrow(size_t at_most);
  void give_back(const std::vector<CostModel*>& models);

 private:
  std::mutex mutex_;
  std::vector<CostModel*> idle_;
};

// A worker's cost model that times each request of several stages on its own model and the models lent
// to `pool` meanwhile, a contiguous chunk each (chunks_of), side by side; everything else goes to its own.
// A request is answered in order, as its own model would answer it (up to measurement noise: the figures
// of a stage may come from another GPU of the same model, as they do for another worker's parts).
class PoolingModel : public CostModel {
 public:
  PoolingModel(CostModel& own, LanePool& pool) : own_(own), pool_(pool) {}
  std::string name() const override { return own_.name(); }
  std::string lane() const override { return own_.lane(); }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) override {
    return own_.stage_latency_ms(g, stage, batch);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                   int batch) override;
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           const std::vector<double>& limits, int batch) override;
  // Screening keeps the screened stages' executors in the model that screened them: not spread.
  bool screens() const override { return own_.screens(); }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                    int batch) override {
    return own_.screen_latencies_ms(g, stages, batch);
  }
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<Stage>>& segments,
                                                     int batch) override {
    return own_.segment_latencies_ms(g, segments, batch);
  }
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override {
    return own_.network_latencies_ms(g, s, barrier_sets, batch);
  }
  std::map<std::string, double> calibration() const override { return own_.calibration(); }
  Status adopt_calibration(const std::map<std::string, double>& values) override {
    return own_.adopt_calibration(values);
  }

 private:
  // fn(model, chunk) over [0, n) on this model and the lent ones; the answers in order.
  Expected<std::vector<double>> spread(size_t n,
                                       const std::function<Expected<std::vector<double>>(CostModel&, Chunk)>& fn);
  CostModel& own_;
  LanePool& pool_;
};

}  // namespace ios::sched
