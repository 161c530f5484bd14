// Graph files in IOS's JSON format: {name, input, blocks: [{enter_name, enter_node, inner_nodes,
// exit_node, stages}]}. Extensions of ours are extra fields that IOS ignores (dilation, bias,
// ceil_mode, linear ops, parts, weight_seed). The `stages` of a block belong to the scheduler and are
// skipped here.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ir/graph.h"

namespace ios::ir {

// The one serialization of op attributes, with every field: graph files write it, and stage signatures
// and kernel-cache keys (ir::attrs_key) are built from it, so a new attribute reaches all three at once.
nlohmann::json attrs_to_json(const SubOp& step);
nlohmann::json attrs_to_json(const Op& op);

nlohmann::json graph_to_json(const Graph& g);
Expected<Graph> graph_from_json(const nlohmann::json& j);

Expected<Graph> load_graph(const std::string& path);
Status save_graph(const Graph& g, const std::string& path);

// Graphviz rendering: one cluster per block, edges labelled with channel slices when partial.
std::string graph_to_dot(const Graph& g);

}  // namespace ios::ir
