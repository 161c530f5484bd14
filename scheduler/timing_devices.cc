#include "scheduler/timing_devices.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace ios::sched {

std::vector<CostModel*> one_per_device(const std::vector<CostModel*>& models) {
  std::vector<CostModel*> out;
  std::set<std::string> seen;
  for (CostModel* m : models) {
    const std::string device = timing_device(*m);
    if (device.empty() || seen.insert(device).second) out.push_back(m);
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

namespace {

// answer(k) for every k in [0, n): the first on the calling thread, the others on threads of their own.
void on_threads(size_t n, const std::function<void(size_t)>& answer) {
  std::vector<std::thread> others;
  for (size_t k = 1; k < n; ++k) others.emplace_back(answer, k);
  if (n > 0) answer(0);
  for (std::thread& t : others) t.join();
}

// Device k's answer to a request of `asked` items, or the first failed or short answer's error.
Expected<std::vector<std::vector<double>>> answers_of(
    const std::vector<CostModel*>& devices, std::vector<std::optional<Expected<std::vector<double>>>>& answers,
    const std::vector<size_t>& asked, const std::string& what) {
  std::vector<std::vector<double>> out;
  for (size_t k = 0; k < answers.size(); ++k) {
    if (!*answers[k]) return answers[k]->status();
    RETURN_ERROR_IF((*answers[k])->size() != asked[k], ErrorCode::kRuntimeError,
                    devices[k]->name() + " cost model answered " + std::to_string((*answers[k])->size()) +
                        " latencies for " + std::to_string(asked[k]) + " " + what);
    out.push_back(std::move(**answers[k]));
  }
  return out;
}

}  // namespace

Expected<std::vector<double>> spread_segment_latencies(const ir::Graph& g, const std::vector<CostModel*>& devices,
                                                       const std::vector<std::vector<Stage>>& segments, int batch) {
  const std::vector<Chunk> chunks = chunks_of(segments.size(), devices.size());
  std::vector<std::optional<Expected<std::vector<double>>>> answers(chunks.size());
  std::vector<size_t> asked;
  for (const Chunk& c : chunks) asked.push_back(c.size());
  on_threads(chunks.size(), [&](size_t k) {
    const std::vector<std::vector<Stage>> some(segments.begin() + std::ptrdiff_t(chunks[k].begin),
                                               segments.begin() + std::ptrdiff_t(chunks[k].end));
    answers[k].emplace(devices[k]->segment_latencies_ms(g, some, batch));
  });
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> by_device, answers_of(devices, answers, asked, "segments"));
  std::vector<double> out;
  for (const std::vector<double>& ms : by_device) out.insert(out.end(), ms.begin(), ms.end());
  return out;
}

Expected<std::vector<double>> spread_network_latencies(const ir::Graph& g, const Schedule& s,
                                                       const std::vector<CostModel*>& devices,
                                                       const std::vector<std::vector<int>>& sets, int batch) {
  if (sets.empty()) return std::vector<double>{};
  std::vector<std::vector<std::vector<int>>> requests;  // by device: sets[0], then its chunk of the others
  for (const Chunk& c : chunks_of(sets.size() - 1, devices.size())) {
    requests.push_back({sets[0]});
    requests.back().insert(requests.back().end(), sets.begin() + std::ptrdiff_t(1 + c.begin),
                           sets.begin() + std::ptrdiff_t(1 + c.end));
  }
  if (requests.empty()) requests.push_back({sets[0]});
  std::vector<std::optional<Expected<std::vector<double>>>> answers(requests.size());
  std::vector<size_t> asked;
  for (const auto& r : requests) asked.push_back(r.size());
  on_threads(requests.size(),
             [&](size_t k) { answers[k].emplace(devices[k]->network_latencies_ms(g, s, requests[k], batch)); });
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> by_device, answers_of(devices, answers, asked, "barrier sets"));
  const double reference = by_device[0][0];
  std::vector<double> out{reference};
  for (const std::vector<double>& ms : by_device) {
    const double scale = ms[0] > 0 ? reference / ms[0] : 1.0;
    for (size_t i = 1; i < ms.size(); ++i) out.push_back(ms[i] * scale);
  }
  return out;
}

}  // namespace ios::sched
