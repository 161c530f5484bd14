// SqueezeNet v1.0 with complex bypass as IOS defines it (12 blocks, 50 ops, input 3x224x224).
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

namespace {

// squeeze 1x1 -> [3x3, 1x1] expand -> concat, summed with the bypass (a 1x1 conv when the channel
// counts differ).
Value fire(GraphBuilder& g, Value v, int squeeze, int expand) {
  g.begin_block();
  Value s = g.conv(v, Conv(squeeze));
  Value e3 = g.conv(s, Conv(expand).kernel(3).pad(1));
  Value e1 = g.conv(s, Conv(expand));
  Value expanded = g.identity(cat({e3, e1}));
  Value bypass = v.channels() == 2 * expand ? v : g.conv(v, Conv(2 * expand));
  Value out = g.identity(add({expanded, bypass}));
  g.end_block(out);
  return out;
}

Value max_pool_block(GraphBuilder& g, Value v) {
  g.begin_block();
  v = g.pool(v, MaxPool(3).stride(2));
  g.end_block(v);
  return v;
}

}  // namespace

Expected<Graph> squeezenet() {
  GraphBuilder g("squeezenet", {3, 224, 224});
  g.begin_block();
  Value v = g.conv(g.input(), Conv(96).kernel(7).stride(2).pad(3));
  v = g.pool(v, MaxPool(3).stride(2));
  g.end_block(v);
  v = fire(g, v, 16, 64);
  v = fire(g, v, 16, 64);
  v = fire(g, v, 32, 128);
  v = max_pool_block(g, v);
  v = fire(g, v, 32, 128);
  v = fire(g, v, 48, 192);
  v = fire(g, v, 48, 192);
  v = fire(g, v, 64, 256);
  v = max_pool_block(g, v);
  v = fire(g, v, 64, 256);
  g.begin_block();
  v = g.conv(v, Conv(1000));
  g.end_block(g.pool(v, GlobalAvgPool()));
  return g.build();
}

}  // namespace ios::models
