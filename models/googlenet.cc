// GoogLeNet with torchvision's topology (BatchNorm folded into conv biases, ceil-mode max pools, the
// 3x3 "5x5" branch torchvision ships), ending in global average pool + fc 1024 -> 1000. Dropout is
// the identity at inference. Input 3x224x224.
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

namespace {

struct InceptionSpec {
  int ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj;
};

Value inception(GraphBuilder& g, Value v, const InceptionSpec& s) {
  g.begin_block();
  Value b1 = g.conv(v, Conv(s.ch1x1));
  Value b2 = g.conv(g.conv(v, Conv(s.ch3x3red)), Conv(s.ch3x3).kernel(3).pad(1));
  Value b3 = g.conv(g.conv(v, Conv(s.ch5x5red)), Conv(s.ch5x5).kernel(3).pad(1));
  Value b4 = g.conv(g.pool(v, MaxPool(3).stride(1).pad(1).ceil()), Conv(s.pool_proj));
  Value out = g.identity(cat({b1, b2, b3, b4}));
  g.end_block(out);
  return out;
}

Value pool_block(GraphBuilder& g, Value v, int kernel) {
  g.begin_block();
  v = g.pool(v, MaxPool(kernel).stride(2).ceil());
  g.end_block(v);
  return v;
}

}  // namespace

Expected<Graph> googlenet() {
  GraphBuilder g("googlenet", {3, 224, 224});
  g.begin_block();
  Value v = g.conv(g.input(), Conv(64).kernel(7).stride(2).pad(3));
  v = g.pool(v, MaxPool(3).stride(2).ceil());
  v = g.conv(v, Conv(64));
  v = g.conv(v, Conv(192).kernel(3).pad(1));
  v = g.pool(v, MaxPool(3).stride(2).ceil());
  g.end_block(v);
  v = inception(g, v, {64, 96, 128, 16, 32, 32});
  v = inception(g, v, {128, 128, 192, 32, 96, 64});
  v = pool_block(g, v, 3);
  v = inception(g, v, {192, 96, 208, 16, 48, 64});
  v = inception(g, v, {160, 112, 224, 24, 64, 64});
  v = inception(g, v, {128, 128, 256, 24, 64, 64});
  v = inception(g, v, {112, 144, 288, 32, 64, 64});
  v = inception(g, v, {256, 160, 320, 32, 128, 128});
  v = pool_block(g, v, 2);
  v = inception(g, v, {256, 160, 320, 32, 128, 128});
  v = inception(g, v, {384, 192, 384, 48, 128, 128});
  g.begin_block();
  v = g.pool(v, GlobalAvgPool());
  g.end_block(g.linear(v, LinearAttrs{1000, true, Act::kNone}));
  return g.build();
}

}  // namespace ios::models
