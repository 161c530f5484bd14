#include "scheduler/live_memory.h"

#include <algorithm>
#include <utility>

namespace ios::sched {

namespace {

// What an op needs beside its inputs and output while it runs, as the memory plan allocates it.
int64_t scratch_elements(const ir::Node& n) {
  int64_t total = 0;
  const bool sums = std::any_of(n.inputs.begin(), n.inputs.end(), [](const ir::Term& t) { return t.size() > 1; });
  if (sums && !n.is<ir::IdentityAttrs>()) total += n.input_shape.numel();
  for (size_t s = 0; s + 1 < n.step_shapes.size(); ++s) total += n.step_shapes[s].numel();
  return total;
}

}  // namespace

LiveMemoryModel::LiveMemoryModel(const ir::Graph& g, const std::vector<std::vector<ir::NodeId>>& parts)
    : part_of_(g.nodes.size(), -1),
      elements_(g.nodes.size(), 0),
      scratch_(g.nodes.size(), 0),
      consumers_(g.consumers()),
      output_(g.output()) {
  for (size_t p = 0; p < parts.size(); ++p)
    for (ir::NodeId id : parts[p]) part_of_[size_t(id)] = static_cast<int>(p);
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    elements_[v] = g.nodes[v].output_shape.numel();
    scratch_[v] = scratch_elements(g.nodes[v]);
  }

  // The sequential walk: a value is live from its own step to its last reader's (the output to the end).
  std::vector<ir::NodeId> order(g.nodes.size());
  for (size_t v = 0; v < order.size(); ++v) order[v] = static_cast<ir::NodeId>(v);
  std::sort(order.begin(), order.end(), [&](ir::NodeId a, ir::NodeId b) {
    return std::pair(part_of_[size_t(a)], a) < std::pair(part_of_[size_t(b)], b);
  });
  std::vector<size_t> step(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) step[size_t(order[i])] = i;
  std::vector<int64_t> delta(order.size() + 1, 0);
  for (size_t v = 0; v < order.size(); ++v) {
    size_t last = is_output(ir::NodeId(v)) ? order.size() - 1 : step[v];
    for (ir::NodeId c : consumers_[v]) last = std::max(last, step[size_t(c)]);
    delta[step[v]] += elements_[v] + scratch_[v];
    delta[step[v] + 1] -= scratch_[v];
    delta[last + 1] -= elements_[v];
  }
  int64_t live = 0;
  for (size_t i = 0; i < order.size(); ++i) sequential_peak_ = std::max(sequential_peak_, live += delta[i]);
}

bool LiveMemoryModel::runs_before(ir::NodeId a, ir::NodeId first) const {
  return std::pair(part_of_[size_t(a)], a) < std::pair(part_of_[size_t(first)], first);
}

}  // namespace ios::sched
