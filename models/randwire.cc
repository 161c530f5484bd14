// RandWire-WS, regular regime, C = 154, input 3x224x224, as IOS builds it: a 3x3/2 stem conv, four
// random stages (16, 32, 32, 32 nodes; 154/308/616/1232 channels), then relu -> 1x1 1280 -> global
// pool. Every node is a ReLU-SepConv of the sum of its predecessors; sources take the stage input
// with stride 2; the stage output is the sum of the sinks. Nodes are created in the order of Kahn's
// algorithm with a LIFO stack, as IOS does.
#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

WiringGraph watts_strogatz(int n, int k, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // mt19937_64's output is fixed by the standard; mapping it by hand keeps graphs identical everywhere.
  auto unit = [&] { return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0); };
  std::vector<std::vector<bool>> adj(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n), false));
  auto link = [&](int a, int b, bool on) { adj[size_t(a)][size_t(b)] = adj[size_t(b)][size_t(a)] = on; };
  for (int i = 0; i < n; ++i)
    for (int j = 1; j <= k / 2; ++j) link(i, (i + j) % n, true);
  for (int j = 1; j <= k / 2; ++j)
    for (int i = 0; i < n; ++i) {
      const int old = (i + j) % n;
      if (unit() >= p || !adj[size_t(i)][size_t(old)]) continue;
      std::vector<int> candidates;
      for (int t = 0; t < n; ++t)
        if (t != i && !adj[size_t(i)][size_t(t)]) candidates.push_back(t);
      if (candidates.empty()) continue;
      const int target = candidates[static_cast<size_t>(rng() % candidates.size())];
      link(i, old, false);
      link(i, target, true);
    }
  WiringGraph w;
  w.nodes = n;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (adj[size_t(a)][size_t(b)]) w.edges.emplace_back(a, b);
  return w;
}

Expected<WiringGraph> read_wiring_graph(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, read_file(path, kMaxWiringFileBytes));
  return parse_wiring_graph(text, path);
}

Expected<WiringGraph> parse_wiring_graph(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  auto fail = [&](const std::string& where, const std::string& msg) {
    return error(ErrorCode::kInvalidArgument, path + ": " + where + ": " + msg);
  };
  WiringGraph w;
  int64_t nodes = 0, edges = 0;
  if (!(in >> nodes >> edges)) return fail("line 1-2", "expected the node count and the edge count");
  if (nodes < 1 || nodes > kMaxWiringNodes)
    return fail("line 1",
                "node count " + std::to_string(nodes) + " is outside [1, " + std::to_string(kMaxWiringNodes) + "]");
  if (edges < 0 || edges > nodes * (nodes - 1) / 2)
    return fail("line 2",
                "edge count " + std::to_string(edges) + " is more than " + std::to_string(nodes) + " nodes can have");
  w.nodes = static_cast<int>(nodes);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t i = 0; i < edges; ++i) {
    const std::string line = "line " + std::to_string(i + 3);
    int64_t u = 0, v = 0;
    if (!(in >> u >> v)) return fail(line, "expected an edge 'u v'");
    if (u < 0 || v < 0 || u >= nodes || v >= nodes || u == v)
      return fail(line, "edge " + std::to_string(u) + " " + std::to_string(v) + " is out of range or a self loop");
    // A repeated edge would sum the same value twice into its target.
    if (!seen.insert(std::minmax(u, v)).second)
      return fail(line, "edge " + std::to_string(u) + " " + std::to_string(v) + " is given twice");
    w.edges.emplace_back(static_cast<int>(u), static_cast<int>(v));
  }
  std::string rest;
  if (in >> rest) return fail("after the edges", "unexpected text '" + rest.substr(0, 32) + "'");
  return w;
}

namespace {

Expected<Value> stage(GraphBuilder& g, Value input, int channels, const WiringGraph& w) {
  const auto n = static_cast<size_t>(w.nodes);
  std::vector<int> indeg(n, 0), outdeg(n, 0);
  std::vector<std::vector<int>> outs(n), ins(n);
  for (auto [u, v] : w.edges) {
    ++indeg[size_t(v)], ++outdeg[size_t(u)];
    outs[size_t(u)].push_back(v);
    ins[size_t(v)].push_back(u);
  }
  g.begin_block();
  std::vector<std::optional<Value>> out(n);
  std::vector<int> stack;
  for (int u = 0; u < w.nodes; ++u)
    if (indeg[size_t(u)] == 0) stack.push_back(u);
  size_t created = 0;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    if (ins[size_t(u)].empty()) {
      out[size_t(u)] = g.relu_sep_conv(input, channels, 3, 2, 1);
    } else {
      std::vector<Value> preds;
      for (int p : ins[size_t(u)]) preds.push_back(*out[size_t(p)]);
      out[size_t(u)] = g.relu_sep_conv(add(preds), channels, 3, 1, 1);
    }
    ++created;
    for (int v : outs[size_t(u)])
      if (--indeg[size_t(v)] == 0) stack.push_back(v);
  }
  RETURN_ERROR_IF(created != n, ErrorCode::kInvalidArgument, "RandWire wiring graph is cyclic");
  std::vector<Value> sinks;
  for (size_t u = 0; u < n; ++u)
    if (outdeg[u] == 0) sinks.push_back(*out[u]);
  Value result = g.identity(add(sinks));
  g.end_block(result);
  return result;
}

}  // namespace

Expected<Graph> randwire(const ModelOptions& options) {
  const int kChannels = 154;
  const int sizes[4] = {16, 32, 32, 32};
  static const char* kIosFiles[4] = {"ws-16-4-0.75-2.txt", "ws-32-4-0.75-3.txt", "ws-32-4-0.75-4.txt",
                                     "ws-32-4-0.75-5.txt"};
  std::vector<WiringGraph> wiring;
  for (int s = 0; s < 4; ++s) {
    if (options.randwire_graphs_dir.empty()) {
      wiring.push_back(watts_strogatz(sizes[s], 4, 0.75, options.randwire_seed * 16 + uint64_t(s)));
    } else {
      ASSIGN_OR_RETURN(WiringGraph w, read_wiring_graph(options.randwire_graphs_dir + "/" + kIosFiles[s]));
      wiring.push_back(std::move(w));
    }
  }
  GraphBuilder g("randwire", {3, 224, 224});
  g.begin_block();
  Value v = g.conv(g.input(), Conv(kChannels / 2).kernel(3).stride(2).pad(1).act(Act::kNone));
  g.end_block(v);
  for (int s = 0; s < 4; ++s) {
    ASSIGN_OR_RETURN(v, stage(g, v, kChannels << s, wiring[size_t(s)]));
  }
  g.begin_block();
  v = g.conv(g.relu(v), Conv(1280).act(Act::kNone));
  g.end_block(g.pool(v, GlobalAvgPool()));
  return g.build();
}

}  // namespace ios::models
