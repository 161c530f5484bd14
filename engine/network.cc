#include "engine/network.h"

#include "frontends/onnx/onnx_import.h"
#include "ir/json_io.h"

namespace ios::engine {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

NetworkSource network_source(const std::string& path_or_name) {
  NetworkSource source;
  if (ends_with(path_or_name, ".onnx")) {
    source.onnx_file = path_or_name;
  } else if (ends_with(path_or_name, ".json")) {
    source.graph_file = path_or_name;
  } else {
    source.model = path_or_name;
  }
  return source;
}

Expected<Network> open_network(const NetworkSource& source) {
  const int given = !source.model.empty() + !source.graph_file.empty() + !source.onnx_file.empty();
  RETURN_ERROR_IF(given == 0, ErrorCode::kInvalidArgument, "give a model name, a graph file or an ONNX file");
  RETURN_ERROR_IF(given > 1, ErrorCode::kInvalidArgument,
                  "give only one of a model name, a graph file and an ONNX file");
  RETURN_ERROR_IF(!source.onnx_file.empty() && !source.weights_file.empty(), ErrorCode::kInvalidArgument,
                  "an ONNX file brings its own weights: a weights file goes with a model name or a graph file");
  Network n;
  if (!source.onnx_file.empty()) {
    ASSIGN_OR_RETURN(onnx_import::ImportedModel imported, onnx_import::import_file(source.onnx_file));
    n.graph = std::move(imported.graph);
    n.own_weights = std::move(imported.weights);
    n.notes = std::move(imported.notes);
    return n;
  }
  if (!source.graph_file.empty()) {
    ASSIGN_OR_RETURN(n.graph, ir::load_graph(source.graph_file));
  } else {
    ASSIGN_OR_RETURN(n.graph, models::build_model(source.model, source.options));
  }
  if (!source.weights_file.empty()) {
    ASSIGN_OR_RETURN(ir::Weights w, ir::load_weights(n.graph, source.weights_file));
    n.own_weights = std::move(w);
  }
  return n;
}

}  // namespace ios::engine
