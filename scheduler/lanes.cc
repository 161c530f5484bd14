#include "scheduler/lanes.h"

#include <algorithm>
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

void run_chunks(const std::vector<Chunk>& chunks, const std::function<void(size_t, Chunk)>& body) {
  std::vector<std::thread> others;
  for (size_t k = 1; k < chunks.size(); ++k) others.emplace_back([&, k] { body(k, chunks[k]); });
  if (!chunks.empty()) body(0, chunks[0]);
  for (std::thread& t : others) t.join();
}

Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& lanes,
                                                       const std::vector<std::vector<Stage>>& segments, int batch) {
  using Answer = std::vector<double>;
  ASSIGN_OR_RETURN(std::vector<Answer> answers,
                   spread_over<Answer>(lanes, segments.size(), [&](CostModel& m, Chunk c) -> Expected<Answer> {
                     const std::vector<std::vector<Stage>> some(segments.begin() + std::ptrdiff_t(c.begin),
                                                                segments.begin() + std::ptrdiff_t(c.end));
                     ASSIGN_OR_RETURN(Answer ms, m.segment_latencies_ms(g, some, batch));
                     RETURN_ERROR_IF(ms.size() != some.size(), ErrorCode::kRuntimeError,
                                     m.name() + " cost model answered " + std::to_string(ms.size()) +
                                         " latencies for " + std::to_string(some.size()) + " segments");
                     return ms;
                   }));
  Answer out;
  for (const Answer& a : answers) out.insert(out.end(), a.begin(), a.end());
  return out;
}

}  // namespace ios::sched
