#include "scheduler/lanes.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace ios::sched {

std::vector<CostModel*> one_per_lane(const std::vector<CostModel*>& models) {
  std::vector<CostModel*> out;
  std::set<std::string> seen;
  for (CostModel* m : models) {
    const std::string lane = m->lane();
    if (lane.empty() || seen.insert(lane).second) out.push_back(m);
  }
  return out;
}

std::vector<Chunk> chunks_of(size_t n, size_t models) {
  const size_t k = std::min(n, models);
  std::vector<Chunk> out;
  size_t begin = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t size = n / k + (i < n % k ? 1 : 0);
    out.push_back(Chunk{begin, begin + size});
    begin += size;
  }
  return out;
}

Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& lanes,
                                                       const std::vector<std::vector<Stage>>& segments, int batch) {
  const std::vector<Chunk> chunks = chunks_of(segments.size(), lanes.size());
  std::vector<std::optional<Expected<std::vector<double>>>> answers(chunks.size());
  auto answer = [&](size_t k) {
    const std::vector<std::vector<Stage>> some(segments.begin() + std::ptrdiff_t(chunks[k].begin),
                                               segments.begin() + std::ptrdiff_t(chunks[k].end));
    answers[k].emplace(lanes[k]->segment_latencies_ms(g, some, batch));
  };
  std::vector<std::thread> others;
  for (size_t k = 1; k < chunks.size(); ++k) others.emplace_back(answer, k);
  if (!chunks.empty()) answer(0);
  for (std::thread& t : others) t.join();
  std::vector<double> out;
  for (size_t k = 0; k < chunks.size(); ++k) {
    if (!*answers[k]) return answers[k]->status();
    const std::vector<double>& ms = **answers[k];
    RETURN_ERROR_IF(ms.size() != chunks[k].size(), ErrorCode::kRuntimeError,
                    lanes[k]->name() + " cost model answered " + std::to_string(ms.size()) + " latencies for " +
                        std::to_string(chunks[k].size()) + " segments");
    out.insert(out.end(), ms.begin(), ms.end());
  }
  return out;
}

}  // namespace ios::sched
