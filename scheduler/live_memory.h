// Activation memory as the DP budgets it. While a stage runs, a value is live when it is being written
// or something not yet finished still reads it (a later op, a later part, the network's output), and
// each running op also holds its scratch (a gathered sum of inputs, the intermediate steps of a
// sequential op); the stage's memory is the sum of the live elements. This is the memory plan's arena
// without its in-place concatenations, fused sums, reuse rounding and alignment, and it depends only on the ops done
// before the stage and the stage itself, so the DP can reject an ending that goes past a budget without knowing the
// rest of the schedule. The budget is a multiple of the sequential schedule's peak under the same model; the sequential
// order itself stays within it, so every part keeps a schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ios::sched {

class LiveMemoryModel {
 public:
  // `parts`: every op in the order the search solves them (the parts of each block, block by block).
  LiveMemoryModel(const ir::Graph& g, const std::vector<std::vector<ir::NodeId>>& parts);

  // Peak live elements (batch 1) of the schedule that runs the parts in order, each op alone in id order.
  int64_t sequential_peak() const { return sequential_peak_; }

  // Whether op `a` runs before a (sub)part whose first op is `first` in the order above. A part split
  // in halves keeps the rule: halves are cut in id order.
  bool runs_before(ir::NodeId a, ir::NodeId first) const;

  int64_t elements(ir::NodeId v) const { return elements_[size_t(v)]; }
  int64_t scratch(ir::NodeId v) const { return scratch_[size_t(v)]; }  // while the op runs
  const std::vector<ir::NodeId>& consumers(ir::NodeId v) const { return consumers_[size_t(v)]; }
  bool is_output(ir::NodeId v) const { return v == output_; }
  size_t nodes() const { return elements_.size(); }

 private:
  std::vector<int> part_of_;  // per node: its part's position; -1 for the graph input
  std::vector<int64_t> elements_, scratch_;
  std::vector<std::vector<ir::NodeId>> consumers_;
  ir::NodeId output_ = 0;
  int64_t sequential_peak_ = 0;
};

}  // namespace ios::sched
