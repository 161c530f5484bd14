// Small golden graphs shared by the tests: a diamond, an Inception-style block, a fire module, merged
// concatenation terms, a dense block and the Opara paper's worked example.
#pragma once

#include <map>
#include <vector>

#include "ir/builder.h"

namespace ios::testing {

// input -> a, b (two 3x3 convs) -> concat.
inline ir::Graph diamond(int channels = 8, int size = 8) {
  ir::GraphBuilder g("diamond", {channels, size, size});
  g.begin_block();
  ir::Value a = g.conv(g.input(), ir::Conv(channels).kernel(3).pad(1));
  ir::Value b = g.conv(g.input(), ir::Conv(channels).kernel(3).pad(1));
  g.end_block(g.identity(ir::cat({a, b})));
  return *g.build();
}

// Inception-A-like block: 1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; avgpool -> 1x1; concat.
inline ir::Graph inception_block(int channels = 16, int size = 9) {
  ir::GraphBuilder g("inception_block", {channels, size, size});
  g.begin_block();
  ir::Value v = g.input();
  ir::Value b1 = g.conv(v, ir::Conv(8));
  ir::Value b2 = g.conv(g.conv(v, ir::Conv(6)), ir::Conv(8).kernel(3).pad(1));
  ir::Value b3 = g.conv(v, ir::Conv(6));
  b3 = g.conv(b3, ir::Conv(8).kernel(3).pad(1));
  b3 = g.conv(b3, ir::Conv(8).kernel(3).pad(1));
  ir::Value b4 = g.conv(g.pool(v, ir::AvgPool(3).pad(1)), ir::Conv(4));
  g.end_block(g.identity(ir::cat({b1, b2, b3, b4})));
  return *g.build();
}

// SqueezeNet fire module with a conv bypass: squeeze -> [3x3, 1x1] -> concat + bypass.
inline ir::Graph fire_module(int channels = 12, int size = 7) {
  ir::GraphBuilder g("fire", {channels, size, size});
  g.begin_block();
  ir::Value v = g.input();
  ir::Value s = g.conv(v, ir::Conv(4));
  ir::Value e3 = g.conv(s, ir::Conv(8).kernel(3).pad(1));
  ir::Value e1 = g.conv(s, ir::Conv(8));
  ir::Value cat = g.identity(ir::cat({e3, e1}));
  ir::Value bypass = g.conv(v, ir::Conv(16));
  g.end_block(g.identity(ir::add({cat, bypass})));
  return *g.build();
}

// Four sibling 1x1 convolutions: nodes 1 and 2 are the terms of one concatenation in their order, 4 and 3
// of another (the order reversed); the two concatenations are summed.
inline ir::Graph merged_terms(int channels = 16, int size = 8) {
  ir::GraphBuilder g("merged_terms", {channels, size, size});
  g.begin_block();
  std::vector<ir::Value> c;
  for (int i = 0; i < 4; ++i) c.push_back(g.conv(g.input(), ir::Conv(channels)));
  const ir::Value in_order = g.identity(ir::cat({c[0], c[1]}));
  const ir::Value reversed = g.identity(ir::cat({c[3], c[2]}));
  g.end_block(g.identity(ir::add({in_order, reversed})));
  return *g.build();
}

// DenseNet-style block: a stem conv, then `layers` convs each reading the concatenation of the stem's
// output and every earlier layer's output, closed by a conv over the whole concatenation.
inline ir::Graph dense_block(int layers = 4, int growth = 8, int channels = 8, int size = 6) {
  ir::GraphBuilder g("dense_block", {channels, size, size});
  g.begin_block();
  std::vector<ir::Value> features = {g.conv(g.input(), ir::Conv(channels).kernel(3).pad(1))};
  for (int i = 0; i < layers; ++i) features.push_back(g.conv(ir::cat(features), ir::Conv(growth).kernel(3).pad(1)));
  g.end_block(g.conv(ir::cat(features), ir::Conv(channels)));
  return *g.build();
}

// The worked example of the Opara paper's appendix (opara.md §2), node 1 being the input.
inline ir::Graph opara_example() {
  ir::GraphBuilder g("opara_example", {4, 4, 4});
  g.begin_block();
  std::map<int, ir::Value> v;
  v[1] = g.input();
  v[2] = g.relu(v[1]);
  v[3] = g.relu(v[1]);
  v[4] = g.relu(v[1]);
  v[5] = g.relu(v[2]);
  v[6] = g.relu(v[3]);
  v[7] = g.relu(v[5]);
  v[8] = g.identity(ir::add({v[6], v[4]}));
  v[9] = g.relu(v[7]);
  v[10] = g.relu(v[7]);
  v[11] = g.relu(v[8]);
  v[12] = g.relu(v[8]);
  v[13] = g.identity(ir::add({v[9], v[10], v[11], v[12]}));
  g.end_block(v[13]);
  return *g.build();
}

}  // namespace ios::testing
