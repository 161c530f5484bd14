// NASNet-A Large (N=6) as IOS builds it: nasnet_large(stem_filters=96, filters=168), batch norm
// removed, one block split into one part per cell, 374 ops, input 3x331x331. IOS's quirks are kept
// for parity: the normal cell leaves x_left out of its concat (3360 output channels instead of 4032),
// stem1 sums its two strided paths where the paper concatenates them, and stem1's fourth output
// term adds c1 where the paper adds c0.
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

namespace {

// Two ReLU-SepConvs; the first keeps the input's channel count.
Value branch_separable(GraphBuilder& g, Value x, int out_channels, int kernel, int stride, int pad) {
  x = g.relu_sep_conv(x, x.channels(), kernel, stride, pad);
  return g.relu_sep_conv(x, out_channels, kernel, 1, pad);
}

Value branch_separable_stem(GraphBuilder& g, Value x, int out_channels, int kernel, int stride, int pad) {
  x = g.relu_sep_conv(x, out_channels, kernel, stride, pad);
  return g.relu_sep_conv(x, out_channels, kernel, 1, pad);
}

PoolAttrs pool3(PoolKind kind, int stride) {
  PoolAttrs p;
  p.kind = kind;
  return p.kernel(3).stride(stride).pad(1);
}

Value stem0(GraphBuilder& g, Value x, int f) {
  Value x1 = g.relu_conv(x, Conv(f));
  Value c0l = branch_separable(g, x1, f, 5, 2, 2);
  Value c0r = branch_separable_stem(g, x, f, 7, 2, 3);
  Value c0 = g.identity(add({c0l, c0r}));
  Value c1l = g.pool(x1, pool3(PoolKind::kMax, 2));
  Value c1r = branch_separable_stem(g, x, f, 7, 2, 3);
  Value c1 = g.identity(add({c1l, c1r}));
  Value c2l = g.pool(x1, pool3(PoolKind::kAvg, 2));
  Value c2r = branch_separable_stem(g, x, f, 5, 2, 2);
  Value c3r = g.pool(c0, pool3(PoolKind::kAvg, 1));
  Value c4l = branch_separable(g, c0, f, 3, 1, 1);
  Value c4r = g.pool(x1, pool3(PoolKind::kMax, 2));
  return g.identity(cat({c1, add({c2l, c2r}), add({c3r, c0}), add({c4l, c4r})}));
}

Value stem1(GraphBuilder& g, Value hp, Value h, int f) {
  Value x_left = g.relu_conv(hp, Conv(f));
  Value xr1 = g.relu_conv(h, Conv(f / 2).stride(2));
  Value xr2 = g.relu_conv(h, Conv(f / 2).stride(2));
  Value x_right = g.identity(add({xr1, xr2}));
  Value c0l = branch_separable(g, x_left, f, 5, 2, 2);
  Value c0r = branch_separable(g, x_right, f, 7, 2, 3);
  Value c0 = g.identity(add({c0l, c0r}));
  Value c1l = g.pool(x_left, pool3(PoolKind::kMax, 2));
  Value c1r = branch_separable(g, x_right, f, 7, 2, 3);
  Value c1 = g.identity(add({c1l, c1r}));
  Value c2l = g.pool(x_left, pool3(PoolKind::kAvg, 2));
  Value c2r = branch_separable(g, x_right, f, 5, 2, 2);
  Value c3r = g.pool(c0, pool3(PoolKind::kAvg, 1));
  Value c4l = branch_separable(g, c0, f, 3, 1, 1);
  Value c4r = g.pool(x_left, pool3(PoolKind::kMax, 2));
  return g.identity(cat({c1, add({c2l, c2r}), add({c3r, c1}), add({c4l, c4r})}));
}

Value first_cell(GraphBuilder& g, Value x, Value x_prev, int left, int right) {
  Value xl1 = g.relu_conv(x_prev, Conv(left).stride(2));
  Value xl2 = g.relu_conv(x_prev, Conv(left).stride(2));
  Value x_left = g.identity(cat({xl1, xl2}));
  Value x_right = g.relu_conv(x, Conv(right));
  Value c0l = branch_separable(g, x_right, right, 5, 1, 2);
  Value c0r = branch_separable(g, x_right, right, 3, 1, 1);
  Value c1l = branch_separable(g, x_left, right, 5, 1, 2);
  Value c1r = branch_separable(g, x_left, right, 3, 1, 1);
  Value c2l = g.pool(x_right, pool3(PoolKind::kAvg, 1));
  Value c3l = g.pool(x_left, pool3(PoolKind::kAvg, 1));
  Value c3r = g.pool(x_left, pool3(PoolKind::kAvg, 1));
  Value c4l = branch_separable(g, x_right, right, 3, 1, 1);
  return g.identity(
      cat({x_left, add({c0l, c0r}), add({c1l, c1r}), add({c2l, x_left}), add({c3l, c3r}), add({c4l, x_right})}));
}

Value normal_cell(GraphBuilder& g, Value x, Value x_prev, int left, int right) {
  Value x_left = g.relu_conv(x_prev, Conv(left));
  Value x_right = g.relu_conv(x, Conv(right));
  Value c0l = branch_separable(g, x_right, right, 5, 1, 2);
  Value c0r = branch_separable(g, x_left, left, 3, 1, 1);
  Value c1l = branch_separable(g, x_left, left, 5, 1, 2);
  Value c1r = branch_separable(g, x_left, left, 3, 1, 1);
  Value c2l = g.pool(x_right, pool3(PoolKind::kAvg, 1));
  Value c3l = g.pool(x_left, pool3(PoolKind::kAvg, 1));
  Value c3r = g.pool(x_left, pool3(PoolKind::kAvg, 1));
  Value c4l = branch_separable(g, x_right, right, 3, 1, 1);
  return g.identity(cat({add({c0l, c0r}), add({c1l, c1r}), add({c2l, x_left}), add({c3l, c3r}), add({c4l, x_right})}));
}

Value reduction_cell(GraphBuilder& g, Value x, Value x_prev, int left, int right) {
  Value x_left = g.relu_conv(x_prev, Conv(left));
  Value x_right = g.relu_conv(x, Conv(right));
  Value c0l = branch_separable(g, x_right, right, 5, 2, 2);
  Value c0r = branch_separable(g, x_left, right, 7, 2, 3);
  Value c0 = g.identity(add({c0l, c0r}));
  Value c1l = g.pool(x_right, pool3(PoolKind::kMax, 2));
  Value c1r = branch_separable(g, x_left, right, 7, 2, 3);
  Value c1 = g.identity(add({c1l, c1r}));
  Value c2l = g.pool(x_right, pool3(PoolKind::kAvg, 2));
  Value c2r = branch_separable(g, x_left, right, 5, 2, 2);
  Value c3r = g.pool(c0, pool3(PoolKind::kAvg, 1));
  Value c4l = branch_separable(g, c0, right, 3, 1, 1);
  Value c4r = g.pool(x_right, pool3(PoolKind::kMax, 2));
  return g.identity(cat({add({c1l, c1r}), add({c2l, c2r}), add({c1, c3r}), add({c4l, c4r})}));
}

}  // namespace

Expected<Graph> nasnet(int stem_filters, int filters) {
  RETURN_ERROR_IF(stem_filters <= 0 || filters <= 0 || filters % 4 != 0, ErrorCode::kInvalidArgument,
                  "nasnet: filters must be a positive multiple of 4 and stem_filters positive");
  GraphBuilder g("nasnet", {3, 331, 331});
  g.begin_block();
  // Each cell is one part of the block, as IOS's get_parts splits it.
  auto cell = [&](Value v) { g.end_part(); return v; };
  const int f = filters;
  Value v1 = cell(g.conv(g.input(), Conv(stem_filters).kernel(3).stride(2).act(Act::kNone)));
  Value v2 = cell(stem0(g, v1, f / 4));
  Value v3 = cell(stem1(g, v2, v1, f / 2));
  std::vector<Value> v = {v1, v2, v3};  // v[i] = output i+1
  auto out = [&](int i) { return v[static_cast<size_t>(i - 1)]; };
  v.push_back(cell(first_cell(g, out(3), out(2), f / 2, f)));
  for (int i = 0; i < 5; ++i) v.push_back(cell(normal_cell(g, v.back(), v[v.size() - 2], f, f)));
  v.push_back(cell(reduction_cell(g, out(9), out(8), 2 * f, 2 * f)));
  v.push_back(cell(first_cell(g, out(10), out(8), f, 2 * f)));
  for (int i = 0; i < 5; ++i) v.push_back(cell(normal_cell(g, v.back(), v[v.size() - 2], 2 * f, 2 * f)));
  v.push_back(cell(reduction_cell(g, out(16), out(15), 4 * f, 4 * f)));
  v.push_back(cell(first_cell(g, out(17), out(15), 2 * f, 4 * f)));
  for (int i = 0; i < 5; ++i) v.push_back(cell(normal_cell(g, v.back(), v[v.size() - 2], 4 * f, 4 * f)));
  Value relu = cell(g.relu(v.back()));
  g.end_block(g.pool(relu, GlobalAvgPool()));
  return g.build();
}

}  // namespace ios::models
