// Work after the DP that every GPU of a search may share (the dataflow segments that barriers are placed
// by, the barrier sets they are refined by): the search's cost models, one per timing stream, each answering
// a contiguous chunk of the requests on a thread of its own. The DP's workers have finished by then, so
// each model is used by one thread at a time.
#pragma once

#include <vector>

#include "scheduler/cost_model.h"

namespace ios::sched {

// The first model of each device (Measurement::timing_device), in order; a model without a device is one of its own.
std::vector<CostModel*> one_per_device(const std::vector<CostModel*>& models);

struct Chunk {
  size_t begin = 0, end = 0;  // [begin, end)
  size_t size() const { return end - begin; }
};
// [0, n) cut in contiguous chunks, one per model (fewer when n is smaller), sizes differing by one at most.
std::vector<Chunk> chunks_of(size_t n, size_t models);

// Each segment's latency (CostModel::segment_latencies_ms): device k times chunk k of the segments (chunks_of),
// the first on the calling thread, the others on threads of their own. The first chunk's error wins.
Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& devices,
                                                       const std::vector<std::vector<Stage>>& segments, int batch);

// Each barrier set's whole-network latency (CostModel::network_latencies_ms), compared with sets[0]: device k
// times sets[0] beside chunk k of the others (chunks_of), as one request, and its figures are scaled by
// the first device's figure for sets[0] over its own, so that each set counts by its ratio to sets[0] timed
// on the same GPU in the same rounds (GPUs of one model still differ by a few percent). One device: one
// request of every set, unscaled. The first chunk's error wins.
Expected<std::vector<double>> spread_network_latencies(const ir::Graph& g, const Schedule& s,
                                                       const std::vector<CostModel*>& devices,
                                                       const std::vector<std::vector<int>>& sets, int batch);

}  // namespace ios::sched
