// The benchmark networks, written in the builder DSL.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::models {

struct ModelOptions {
  // RandWire: read IOS's four graph files from this folder instead of generating graphs.
  std::string randwire_graphs_dir;
  uint64_t randwire_seed = 1;
  // NasNet-A Large as IOS builds it: nasnet_large(stem_filters, filters).
  int nasnet_stem_filters = 96;
  int nasnet_filters = 168;
};

struct ModelInfo {
  std::string name;
  std::string description;
};

const std::vector<ModelInfo>& model_list();
Expected<ir::Graph> build_model(const std::string& name, const ModelOptions& options = {});

Expected<ir::Graph> inception_v3();
Expected<ir::Graph> squeezenet();
Expected<ir::Graph> nasnet(int stem_filters = 96, int filters = 168);
Expected<ir::Graph> randwire(const ModelOptions& options = {});
Expected<ir::Graph> googlenet();
Expected<ir::Graph> densenet121();
Expected<ir::Graph> ios_sample();  // IOS README §3

// RandWire's wiring: a Watts-Strogatz graph (ring lattice of degree k, each edge rewired with
// probability p) made acyclic by pointing every edge from the lower to the higher index.
struct WiringGraph {
  int nodes = 0;
  std::vector<std::pair<int, int>> edges;
};
WiringGraph watts_strogatz(int n, int k, double p, uint64_t seed);
// IOS's graph file format: node count, edge count, then one "u v" per line.
// Limits of a wiring file: IOS's graphs have 32 nodes; these leave room without allowing a huge allocation.
inline constexpr int64_t kMaxWiringNodes = 4096;
inline constexpr size_t kMaxWiringFileBytes = size_t{16} << 20;
Expected<WiringGraph> read_wiring_graph(const std::string& path);
Expected<WiringGraph> parse_wiring_graph(const std::string& text, const std::string& source_name);

}  // namespace ios::models
