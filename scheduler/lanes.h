// Work after the DP that every GPU of a search may share (the dataflow segments that barriers are placed
// by): the search's cost models, one per timing lane, each answering a contiguous chunk of the requests on
// a thread of its own. The DP's workers have finished by then, so each model is used by one thread at a
// time.
#pragma once

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

}  // namespace ios::sched
