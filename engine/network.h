// A network to build an engine of, from where users keep one: an ONNX file (with its own weights), an IOS
// graph file (with a weights file, or seeded weights), or a built-in model's name. The CLI's --model /
// --graph / --onnx / --weights and the Python package's `ios.build(...)` both open networks here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ir/graph.h"
#include "ir/weights.h"
#include "models/models.h"

namespace ios::engine {

// At most one of model, graph_file and onnx_file; weights_file only with model or graph_file.
struct NetworkSource {
  std::string model;         // a built-in network (`ios models`)
  std::string graph_file;    // IOS's JSON graph format
  std::string onnx_file;     // ONNX opsets 11-21, run with its own weights
  std::string weights_file;  // weights for model / graph_file (`ios import --weights-out`)
  models::ModelOptions options;
};

// "*.onnx": an ONNX file; "*.json": a graph file; anything else: a built-in model's name.
NetworkSource network_source(const std::string& path_or_name);

struct Network {
  ir::Graph graph;
  std::optional<ir::Weights> own_weights;  // the source's (ONNX initializers, a weights file); else seeded
  std::vector<std::string> notes;          // what an import folded or dropped
  // Moves the network's own weights out (an imported model's can be 100 MB), or makes the seeded ones.
  ir::Weights take_weights() { return own_weights ? std::move(*own_weights) : ir::make_weights(graph); }
};

// The graph and the weights the source brings, read and checked.
Expected<Network> open_network(const NetworkSource& source);

}  // namespace ios::engine
