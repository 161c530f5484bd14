#include "scheduler/barriers.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>

#include "scheduler/timing_devices.h"

namespace ios::sched {

namespace {
// Sums of the same latencies added in another order differ in the last bits: that is a tie.
constexpr double kTie = 1e-9;
}  // namespace

int default_dataflow_segment(const std::string& cost_model_name) {
  return cost_model_name == "measured" ? BarrierOptions{}.max_segment : 0;
}

Expected<BarrierPlacement> place_barriers(const ir::Graph& g, const Schedule& s, CostModel& model,
                                          const BarrierOptions& options) {
  return place_barriers(g, s, std::vector<CostModel*>{&model}, options);
}

Expected<BarrierPlacement> place_barriers(const ir::Graph& g, const Schedule& s, const std::vector<CostModel*>& models,
                                          const BarrierOptions& options) {
  RETURN_ERROR_IF(s.is_stream_level(), ErrorCode::kInvalidArgument,
                  "dataflow barriers are placed between stages; a stream-level schedule has none");
  RETURN_ERROR_IF(options.max_segment < 1, ErrorCode::kInvalidArgument, "--dataflow-segment must be at least 1");
  RETURN_ERROR_IF(!(options.margin >= 0 && options.margin < 1), ErrorCode::kInvalidArgument,
                  "--dataflow-margin must be in [0, 1)");
  const std::vector<Stage> stages = all_stages(s);
  const size_t n = stages.size(), longest = size_t(options.max_segment);
  // Every segment the DP may use, asked in one request: a measuring model times them in one pass (one
  // pass per device).
  std::vector<std::vector<Stage>> segments;
  std::vector<std::pair<size_t, size_t>> span;  // [first, end) of each
  for (size_t end = 1; end <= n; ++end)
    for (size_t k = 1; k <= std::min(longest, end); ++k) {
      segments.emplace_back(stages.begin() + std::ptrdiff_t(end - k), stages.begin() + std::ptrdiff_t(end));
      span.emplace_back(end - k, end);
    }
  ASSIGN_OR_RETURN(std::vector<double> ms,
                   spread_segment_latencies(g, one_per_device(models), segments, options.batch));

  BarrierPlacement out;
  out.segments = int64_t(segments.size());
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());  // with the margin
  std::vector<double> predicted(n + 1, 0);                                   // without it
  std::vector<size_t> cut(n + 1, 0);  // where the last segment of best[end] starts
  std::map<std::pair<size_t, size_t>, double> segment_ms;
  best[0] = 0;
  // Segments come by end, then by length: shorter first, so ties keep the barrier.
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto [first, end] = span[i];
    segment_ms[span[i]] = ms[i];
    if (end - first == 1) out.barriers_ms += ms[i];
    const double priced = end - first == 1 ? ms[i] : ms[i] * (1 + options.margin);
    if (best[first] + priced < best[end] * (1 - kTie)) {
      best[end] = best[first] + priced;
      predicted[end] = predicted[first] + ms[i];
      cut[end] = first;
    }
  }
  out.dataflow_ms = predicted[n];
  for (size_t end = n; end > 0; end = cut[end]) {
    if (cut[end] > 0) out.barriers.push_back(int(cut[end]));
    const double whole = segment_ms.at({cut[end], end});
    for (size_t c = cut[end] + 1; c < end; ++c)
      out.removed.emplace_back(int(c), segment_ms.at({cut[end], c}) + segment_ms.at({c, end}) - whole);
  }
  std::reverse(out.barriers.begin(), out.barriers.end());
  std::sort(out.removed.begin(), out.removed.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

namespace {

std::vector<int> toggled(std::vector<int> barriers, int cut) {
  auto it = std::lower_bound(barriers.begin(), barriers.end(), cut);
  if (it != barriers.end() && *it == cut)
    barriers.erase(it);
  else
    barriers.insert(it, cut);
  return barriers;
}

std::vector<int> every_barrier(int stages) {
  std::vector<int> out;
  for (int c = 1; c < stages; ++c) out.push_back(c);
  return out;
}

}  // namespace

Expected<BarrierRefinement> refine_barriers(const ir::Graph& g, const Schedule& s, CostModel& model,
                                            const BarrierPlacement& placed, const RefineOptions& options) {
  return refine_barriers(g, s, std::vector<CostModel*>{&model}, placed, options);
}

Expected<BarrierRefinement> refine_barriers(const ir::Graph& g, const Schedule& s,
                                            const std::vector<CostModel*>& models, const BarrierPlacement& placed,
                                            const RefineOptions& options) {
  RETURN_ERROR_IF(options.passes < 0, ErrorCode::kInvalidArgument, "--dataflow-refine must be 0 or more");
  RETURN_ERROR_IF(options.max_toggles < 1, ErrorCode::kInvalidArgument, "refine: max_toggles must be at least 1");
  RETURN_ERROR_IF(!(options.threshold >= 0 && options.threshold < 1), ErrorCode::kInvalidArgument,
                  "refine: threshold must be in [0, 1)");
  BarrierRefinement out;
  out.barriers = placed.barriers;
  if (options.passes == 0 || placed.removed.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<CostModel*> devices = one_per_device(models);
  std::vector<int> cuts;  // the cuts the search may toggle: those the DP left out, most promising first
  for (const auto& [cut, gain] : placed.removed)
    if (cuts.size() < size_t(options.max_toggles)) cuts.push_back(cut);
  // From every barrier (the staged schedule's order): a barrier goes only where the network proves it.
  out.barriers = every_barrier(s.stage_count());
  std::vector<int> combined;  // every improving toggle of the pass before, at once (empty: none)
  for (int pass = 0; pass < options.passes; ++pass) {
    std::vector<std::vector<int>> sets{out.barriers};
    if (pass == 0) {
      sets.push_back(placed.barriers);
      if (!placed.barriers.empty()) sets.push_back({});  // else the DP's set is already the one without barriers
    }
    if (!combined.empty() && combined != out.barriers) sets.push_back(combined);
    const size_t first_toggle = sets.size();
    for (int c : cuts) sets.push_back(toggled(out.barriers, c));
    ASSIGN_OR_RETURN(std::vector<double> ms, spread_network_latencies(g, s, devices, sets, options.batch));
    out.sets_timed += int64_t(sets.size());
    out.passes = pass + 1;
    out.measured_ms = ms[0];
    if (pass == 0) out.every_barrier_ms = ms[0], out.placed_ms = ms[1];
    const double beat = ms[0] * (1 - options.threshold);
    combined = out.barriers;
    int improving = 0;
    for (size_t i = first_toggle; i < sets.size(); ++i)
      if (ms[i] < beat) combined = toggled(combined, cuts[i - first_toggle]), ++improving;
    if (improving < 2) combined.clear();
    const size_t best = size_t(std::min_element(ms.begin(), ms.end()) - ms.begin());
    if (!(ms[best] < beat)) break;
    out.barriers = sets[best];
    out.measured_ms = ms[best];
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace ios::sched
