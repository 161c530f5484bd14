#include "scheduler/barriers.h"

#include <algorithm>
#include <limits>

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
  RETURN_ERROR_IF(s.is_stream_level(), ErrorCode::kInvalidArgument,
                  "dataflow barriers are placed between stages; a stream-level schedule has none");
  RETURN_ERROR_IF(options.max_segment < 1, ErrorCode::kInvalidArgument, "--dataflow-segment must be at least 1");
  RETURN_ERROR_IF(!(options.margin >= 0 && options.margin < 1), ErrorCode::kInvalidArgument,
                  "--dataflow-margin must be in [0, 1)");
  std::vector<Stage> stages;
  for (const BlockSchedule& b : s.blocks) stages.insert(stages.end(), b.stages.begin(), b.stages.end());
  const size_t n = stages.size(), longest = size_t(options.max_segment);
  // Every segment the DP may use, asked in one request: a measuring model times them in one pass.
  std::vector<std::vector<Stage>> segments;
  std::vector<std::pair<size_t, size_t>> span;  // [first, end) of each
  for (size_t end = 1; end <= n; ++end)
    for (size_t k = 1; k <= std::min(longest, end); ++k) {
      segments.emplace_back(stages.begin() + std::ptrdiff_t(end - k), stages.begin() + std::ptrdiff_t(end));
      span.emplace_back(end - k, end);
    }
  ASSIGN_OR_RETURN(std::vector<double> ms, model.segment_latencies_ms(g, segments, options.batch));
  RETURN_ERROR_IF(ms.size() != segments.size(), ErrorCode::kRuntimeError,
                  model.name() + " cost model answered " + std::to_string(ms.size()) + " latencies for " +
                      std::to_string(segments.size()) + " segments");

  BarrierPlacement out;
  out.segments = int64_t(segments.size());
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());  // with the margin
  std::vector<double> predicted(n + 1, 0);                                   // without it
  std::vector<size_t> cut(n + 1, 0);  // where the last segment of best[end] starts
  best[0] = 0;
  // Segments come by end, then by length: shorter first, so ties keep the barrier.
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto [first, end] = span[i];
    if (end - first == 1) out.barriers_ms += ms[i];
    const double priced = end - first == 1 ? ms[i] : ms[i] * (1 + options.margin);
    if (best[first] + priced < best[end] * (1 - kTie)) {
      best[end] = best[first] + priced;
      predicted[end] = predicted[first] + ms[i];
      cut[end] = first;
    }
  }
  out.dataflow_ms = predicted[n];
  for (size_t end = n; end > 0; end = cut[end])
    if (cut[end] > 0) out.barriers.push_back(int(cut[end]));
  std::reverse(out.barriers.begin(), out.barriers.end());
  return out;
}

}  // namespace ios::sched
