// Work after the DP that every GPU of a search may share (the dataflow segments that barriers are placed
// by): the search's cost models, one per timing lane, each answering a contiguous chunk of the requests on
// a thread of its own. The DP's workers have finished by then, so each model is used by one thread at a
// time.
#pragma once

#include <functional>
#include <optional>
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

// Calls body(k, chunks[k]) for every chunk, the first on the calling thread, the others on threads of
// their own; returns when all are done.
void run_chunks(const std::vector<Chunk>& chunks, const std::function<void(size_t, Chunk)>& body);

// fn(model, chunk) for each chunk of [0, n) (chunks_of), model k answering chunk k, in parallel; the
// answers in chunk order, or the first chunk's error.
template <class T>
Expected<std::vector<T>> spread_over(const std::vector<CostModel*>& models, size_t n,
                                     const std::function<Expected<T>(CostModel&, Chunk)>& fn) {
  const std::vector<Chunk> chunks = chunks_of(n, models.size());
  std::vector<std::optional<Expected<T>>> answers(chunks.size());
  run_chunks(chunks, [&](size_t k, Chunk c) { answers[k].emplace(fn(*models[k], c)); });
  std::vector<T> out;
  for (auto& a : answers) {
    if (!*a) return a->status();
    out.push_back(std::move(**a));
  }
  return out;
}

// Each segment's latency (CostModel::segment_latencies_ms), the segments spread over the lanes.
Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& lanes,
                                                       const std::vector<std::vector<Stage>>& segments, int batch);

}  // namespace ios::sched
