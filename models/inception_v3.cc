// Inception V3 exactly as IOS defines it (13 blocks, 119 ops, input 3x299x299). It matches
// torchvision's topology with BatchNorm folded into conv biases, minus the final dropout + fc.
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

namespace {

Value front(GraphBuilder& g, Value v) {
  g.begin_block();
  v = g.conv(v, Conv(32).kernel(3).stride(2));
  v = g.conv(v, Conv(32).kernel(3));
  v = g.conv(v, Conv(64).kernel(3).pad(1));
  v = g.pool(v, MaxPool(3).stride(2));
  v = g.conv(v, Conv(80));
  v = g.conv(v, Conv(192).kernel(3));
  v = g.pool(v, MaxPool(3).stride(2));
  g.end_block(v);
  return v;
}

Value block_a(GraphBuilder& g, Value v, int pool_features) {
  g.begin_block();
  Value b1 = g.conv(v, Conv(64));
  Value b5 = g.conv(g.conv(v, Conv(48)), Conv(64).kernel(5).pad(2));
  Value b3 = g.conv(v, Conv(64));
  b3 = g.conv(b3, Conv(96).kernel(3).pad(1));
  b3 = g.conv(b3, Conv(96).kernel(3).pad(1));
  Value bp = g.conv(g.pool(v, AvgPool(3).pad(1)), Conv(pool_features));
  Value out = g.identity(cat({b1, b5, b3, bp}));
  g.end_block(out);
  return out;
}

Value block_b(GraphBuilder& g, Value v) {
  g.begin_block();
  Value b3 = g.conv(v, Conv(384).kernel(3).stride(2));
  Value bd = g.conv(v, Conv(64));
  bd = g.conv(bd, Conv(96).kernel(3).pad(1));
  bd = g.conv(bd, Conv(96).kernel(3).stride(2));
  Value bp = g.pool(v, MaxPool(3).stride(2));
  Value out = g.identity(cat({b3, bd, bp}));
  g.end_block(out);
  return out;
}

Value block_c(GraphBuilder& g, Value v, int c7) {
  g.begin_block();
  Value b1 = g.conv(v, Conv(192));
  Value b7 = g.conv(v, Conv(c7));
  b7 = g.conv(b7, Conv(c7).kernel(1, 7).pad(0, 3));
  b7 = g.conv(b7, Conv(192).kernel(7, 1).pad(3, 0));
  Value bd = g.conv(v, Conv(c7));
  bd = g.conv(bd, Conv(c7).kernel(7, 1).pad(3, 0));
  bd = g.conv(bd, Conv(c7).kernel(1, 7).pad(0, 3));
  bd = g.conv(bd, Conv(c7).kernel(7, 1).pad(3, 0));
  bd = g.conv(bd, Conv(192).kernel(1, 7).pad(0, 3));
  Value bp = g.conv(g.pool(v, AvgPool(3).pad(1)), Conv(192));
  Value out = g.identity(cat({b1, b7, bd, bp}));
  g.end_block(out);
  return out;
}

Value block_d(GraphBuilder& g, Value v) {
  g.begin_block();
  Value b3 = g.conv(g.conv(v, Conv(192)), Conv(320).kernel(3).stride(2));
  Value b7 = g.conv(v, Conv(192));
  b7 = g.conv(b7, Conv(192).kernel(1, 7).pad(0, 3));
  b7 = g.conv(b7, Conv(192).kernel(7, 1).pad(3, 0));
  b7 = g.conv(b7, Conv(192).kernel(3).stride(2));
  Value bp = g.pool(v, MaxPool(3).stride(2));
  Value out = g.identity(cat({b3, b7, bp}));
  g.end_block(out);
  return out;
}

Value block_e(GraphBuilder& g, Value v) {
  g.begin_block();
  Value b1 = g.conv(v, Conv(320));
  Value b3 = g.conv(v, Conv(384));
  Value b3a = g.conv(b3, Conv(384).kernel(1, 3).pad(0, 1));
  Value b3b = g.conv(b3, Conv(384).kernel(3, 1).pad(1, 0));
  Value bd = g.conv(v, Conv(448));
  bd = g.conv(bd, Conv(384).kernel(3).pad(1));
  Value bda = g.conv(bd, Conv(384).kernel(1, 3).pad(0, 1));
  Value bdb = g.conv(bd, Conv(384).kernel(3, 1).pad(1, 0));
  Value bp = g.conv(g.pool(v, AvgPool(3).pad(1)), Conv(192));
  Value out = g.identity(cat({b1, b3a, b3b, bda, bdb, bp}));
  g.end_block(out);
  return out;
}

}  // namespace

Expected<Graph> inception_v3() {
  GraphBuilder g("inception_v3", {3, 299, 299});
  Value v = front(g, g.input());
  for (int f : {32, 64, 64}) v = block_a(g, v, f);
  v = block_b(g, v);
  for (int c7 : {128, 160, 160, 192}) v = block_c(g, v, c7);
  v = block_d(g, v);
  v = block_e(g, v);
  v = block_e(g, v);
  g.begin_block();
  g.end_block(g.pool(v, GlobalAvgPool()));
  return g.build();
}

}  // namespace ios::models
