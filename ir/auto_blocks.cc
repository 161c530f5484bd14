#include "ir/auto_blocks.h"

#include <algorithm>

namespace ios::ir {

namespace {

// A node i is a cut when no edge jumps over it: every node before i is read only by nodes up to i.
// With every node on a path to the output, that is exactly "every input-output path passes through
// i", whatever the topological order.
std::vector<NodeId> cut_nodes(const Graph& g) {
  const auto n = static_cast<NodeId>(g.nodes.size());
  std::vector<NodeId> last_reader(g.nodes.size(), 0);
  for (NodeId id = 1; id < n; ++id)
    for (NodeId p : g.producers(id)) last_reader[size_t(p)] = std::max(last_reader[size_t(p)], id);
  std::vector<NodeId> cuts;
  NodeId reach = 0;  // furthest reader of any node before the current one
  for (NodeId id = 1; id < n; ++id) {
    reach = std::max(reach, last_reader[size_t(id - 1)]);
    if (reach <= id) cuts.push_back(id);
  }
  return cuts;
}

}  // namespace

Status assign_blocks(Graph& g) {
  RETURN_ERROR_IF(g.nodes.size() < 2, ErrorCode::kInvalidGraph, "graph '" + g.name + "' has no operators");
  const auto consumers = g.consumers();
  for (NodeId id = 0; id + 1 < static_cast<NodeId>(g.nodes.size()); ++id)
    RETURN_ERROR_IF(consumers[size_t(id)].empty(), ErrorCode::kInvalidGraph,
                    "node '" + g.node(id).name + "' is read by nothing, but only the last node may be the output");
  for (NodeId id = 1; id < static_cast<NodeId>(g.nodes.size()); ++id)
    for (NodeId p : g.producers(id))
      RETURN_ERROR_IF(p >= id, ErrorCode::kInvalidGraph,
                      "node '" + g.node(id).name + "' reads node '" + g.node(p).name + "', which comes after it");
  g.blocks.clear();
  NodeId enter = 0;
  for (NodeId cut : cut_nodes(g)) {
    Block b;
    b.enter = enter;
    for (NodeId m = enter + 1; m < cut; ++m) b.inner.push_back(m);
    b.exit = cut;
    g.blocks.push_back(std::move(b));
    enter = cut;
  }
  return g.validate_and_infer();
}

}  // namespace ios::ir
