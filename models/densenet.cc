// DenseNet-121 with torchvision's topology (growth 32, bottleneck 4 x 32, blocks of 6, 12, 24 and 16
// layers, compression 0.5), BatchNorms folded into the convolution before them where there is one. A
// layer's first BatchNorm + ReLU reads the concatenation of the block input and every earlier layer's
// output and has no convolution before it: it is a per-channel affine (a 1x1 depthwise convolution).
// Each dense block with its transition is one IOS block: only the transition's pool cuts every path.
// Input 3x224x224.
#include "ir/builder.h"
#include "models/models.h"

namespace ios::models {

using namespace ir;

namespace {

constexpr int kGrowth = 32;
constexpr int kBottleneck = 4 * kGrowth;

// BatchNorm + ReLU of a tensor with `channels` channels, folded into nothing: scale and shift per channel.
Value affine_relu(GraphBuilder& g, In in, int channels) {
  return g.conv(std::move(in), Conv(channels).grouped(channels).act(Act::kRelu));
}

int channels_of(const std::vector<Value>& features) {
  int c = 0;
  for (const Value& v : features) c += v.channels();
  return c;
}

// The dense layers of one block; returns every feature the block concatenates (its input, then every
// layer's output).
std::vector<Value> dense_block(GraphBuilder& g, Value input, int layers) {
  std::vector<Value> features = {input};
  for (int i = 0; i < layers; ++i) {
    Value v = affine_relu(g, cat(features), channels_of(features));
    v = g.conv(v, Conv(kBottleneck));
    features.push_back(g.conv(v, Conv(kGrowth).kernel(3).pad(1).bias(false).act(Act::kNone)));
  }
  return features;
}

Value transition(GraphBuilder& g, const std::vector<Value>& features) {
  const int channels = channels_of(features);
  Value v = affine_relu(g, cat(features), channels);
  v = g.conv(v, Conv(channels / 2).bias(false).act(Act::kNone));
  return g.pool(v, AvgPool(2).stride(2));
}

}  // namespace

Expected<Graph> densenet121() {
  GraphBuilder g("densenet121", {3, 224, 224});
  g.begin_block();
  Value v = g.conv(g.input(), Conv(64).kernel(7).stride(2).pad(3));
  v = g.pool(v, MaxPool(3).stride(2).pad(1));
  g.end_block(v);
  for (int layers : {6, 12, 24}) {
    g.begin_block();
    v = transition(g, dense_block(g, v, layers));
    g.end_block(v);
  }
  g.begin_block();
  const std::vector<Value> features = dense_block(g, v, 16);
  v = affine_relu(g, cat(features), channels_of(features));
  g.end_block(v);
  g.begin_block();
  v = g.pool(v, GlobalAvgPool());
  g.end_block(g.linear(v, LinearAttrs{1000, true, Act::kNone}));
  return g.build();
}

}  // namespace ios::models
