#include "scheduler/dp.h"

#include <algorithm>

#include "scheduler/part_dp.h"

namespace ios::sched {

using namespace dp_detail;

std::vector<std::vector<ir::NodeId>> block_parts(const ir::Graph& g, size_t block, int max_part_size) {
  const ir::Block& blk = g.blocks[block];
  if (!blk.parts.empty()) return blk.parts;
  std::vector<std::vector<ir::NodeId>> parts;
  const auto members = blk.members();
  const size_t size = static_cast<size_t>(std::clamp(max_part_size, 1, kMaxPart));
  for (size_t i = 0; i < members.size(); i += size)
    parts.emplace_back(members.begin() + static_cast<std::ptrdiff_t>(i),
                       members.begin() + static_cast<std::ptrdiff_t>(std::min(members.size(), i + size)));
  return parts;
}

std::vector<std::vector<ir::NodeId>> all_parts(const ir::Graph& g, int max_part_size) {
  std::vector<std::vector<ir::NodeId>> parts;
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (auto& part : block_parts(g, b, max_part_size)) parts.push_back(std::move(part));
  return parts;
}

Status optimize_part(const ir::Graph& g, const std::vector<ir::NodeId>& part, const DpOptions& options,
                     CostModel& model, std::vector<Stage>& out, DpStats& stats, const LiveMemoryModel* memory) {
  RETURN_ERROR_IF(options.r < 1 || options.s < 1, ErrorCode::kInvalidArgument, "--r and --s must be at least 1");
  RETURN_ERROR_IF(
      part.size() > static_cast<size_t>(kMaxPart), ErrorCode::kInvalidArgument,
      "a part has " + std::to_string(part.size()) + " ops; the DP handles at most 128 (lower --max-part-size)");
  std::vector<Stage> stages;
  Status solved = PartDp(g, part, options, &model, &stats, memory).solve(stages);
  if (solved.code() == ErrorCode::kBudgetExceeded && part.size() > 1) {
    // Halves of a topological order: the first is closed under predecessors, so each can be solved alone.
    std::vector<ir::NodeId> sorted = part;
    std::sort(sorted.begin(), sorted.end());
    const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    ++stats.budget_splits;
    DpOptions first = options, second = options;  // each half reports half of the part's progress
    if (options.on_progress) {
      first.on_progress = [&options](double share) { options.on_progress(share / 2); };
      second.on_progress = [&options](double share) { options.on_progress(0.5 + share / 2); };
    }
    RETURN_IF_ERROR(optimize_part(g, {sorted.begin(), middle}, first, model, out, stats, memory));
    return optimize_part(g, {middle, sorted.end()}, second, model, out, stats, memory);
  }
  RETURN_IF_ERROR(solved);
  out.insert(out.end(), stages.begin(), stages.end());
  return Status::ok();
}

Expected<BlockSchedule> optimize_block(const ir::Graph& g, size_t block, const DpOptions& options, CostModel& model,
                                       DpStats& stats) {
  BlockSchedule bs;
  const LiveMemoryModel memory(g, all_parts(g, options.max_part_size));
  for (const auto& part : block_parts(g, block, options.max_part_size))
    RETURN_IF_ERROR(optimize_part(g, part, options, model, bs.stages, stats, &memory));
  return bs;
}

std::vector<Stage> enumerate_endings(const ir::Graph& g, const std::vector<ir::NodeId>& part,
                                     const std::vector<ir::NodeId>& remaining, const DpOptions& options) {
  DpStats stats;
  PartDp dp(g, part, options, nullptr, &stats);
  std::vector<Stage> out;
  for (const auto& [t, merge] : dp.endings(dp.mask_of(remaining))) out.push_back(dp.to_stage(t, merge));
  return out;
}

}  // namespace ios::sched
