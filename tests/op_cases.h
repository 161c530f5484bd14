// Generated GPU test cases, one small graph per op kind x attribute variant and per activation (alone and fused
// into a convolution), in the style of ggml's test-backend-ops. Shapes are odd on purpose: 6 input channels
// (not a multiple of 8) and 7 x 9 pixels. The GPU test (tests/gpu_ops_test.cc, `GpuOp`) runs each case in
// every precision and layout at batch 1 and 3, named so one can be filtered:
//   ios_gpu_tests --gtest_filter='Ops/GpuOp.*/Hardswish*fp16*'
// The CPU test (tests/ops_test.cc, `OpCases`) fails where an op kind or activation has no case.
#pragma once

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "activation_cases.h"
#include "ir/builder.h"

namespace ios::testing {

struct OpGraphCase {
  std::string name;  // letters and digits only: part of a test name
  std::function<ir::Graph()> build;
};

// "hardswish" -> "HardSwish"-like names: the first letter upper case, others kept.
inline std::string case_name(std::string s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      up = true;
      continue;
    }
    out += up ? char(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

inline std::vector<OpGraphCase> op_graph_cases() {
  using namespace ir;
  const Shape in{6, 7, 9};
  auto one = [in](std::string name, std::function<Value(GraphBuilder&, Value)> body) {
    return OpGraphCase{name, [in, name, body] {
                         GraphBuilder b(name, in);
                         b.begin_block();
                         b.end_block(body(b, b.input()));
                         return *b.build();
                       }};
  };
  // Shapes large enough for a kernel's other path: pixels split over blocks, channels over a warp's lanes.
  auto at = [](std::string name, Shape shape, std::function<Value(GraphBuilder&, Value)> body) {
    return OpGraphCase{name, [shape, name, body] {
                         GraphBuilder b(name, shape);
                         b.begin_block();
                         b.end_block(body(b, b.input()));
                         return *b.build();
                       }};
  };
  auto resize = [](ResizeMode mode, ResizeCoord coord, int h, int w) {
    ResizeAttrs r;
    r.mode = mode, r.coord = coord, r.out_h = h, r.out_w = w;
    return r;
  };
  std::vector<OpGraphCase> cases = {
      one("Conv3x3", [](GraphBuilder& b, Value x) { return b.conv(x, Conv(10).kernel(3).pad(1)); }),
      one("ConvStridedAsymmetric",
          [](GraphBuilder& b, Value x) { return b.conv(x, Conv(5).kernel(1, 3).stride(2, 1).pad(0, 1)); }),
      one("ConvDilated", [](GraphBuilder& b, Value x) { return b.conv(x, Conv(8).kernel(3).pad(2).dilation(2, 2)); }),
      one("ConvGrouped", [](GraphBuilder& b, Value x) { return b.conv(x, Conv(9).kernel(3).pad(1).grouped(3)); }),
      one("ConvDepthwise5x5",
          [](GraphBuilder& b, Value x) { return b.conv(x, Conv(6).kernel(5).pad(2).grouped(6).act(Act::kNone)); }),
      one("ConvOnASlice", [](GraphBuilder& b, Value x) { return b.conv(x.slice(1, 4), Conv(4).kernel(1)); }),
      one("MaxPoolCeil", [](GraphBuilder& b, Value x) { return b.pool(x, MaxPool(3).stride(2).pad(1).ceil()); }),
      one("MaxPoolDilated",
          [](GraphBuilder& b, Value x) { return b.pool(x, MaxPool(3).stride(2).pad(2).dilation(2, 3)); }),
      one("AvgPoolExcludingPad",
          [](GraphBuilder& b, Value x) { return b.pool(x, AvgPool(3).stride(2).pad(1).include_pad(false)); }),
      one("GlobalAvgPool", [](GraphBuilder& b, Value x) { return b.pool(x, GlobalAvgPool()); }),
      one("GlobalMaxPool", [](GraphBuilder& b, Value x) { return b.pool(x, GlobalMaxPool()); }),
      at("GlobalAvgPoolOfManyPixels", Shape{37, 45, 47},
         [](GraphBuilder& b, Value x) { return b.pool(x, GlobalAvgPool()); }),
      at("GlobalMaxPoolOfManyPixels", Shape{37, 45, 47},
         [](GraphBuilder& b, Value x) { return b.pool(x, GlobalMaxPool()); }),
      one("Linear",
          [](GraphBuilder& b, Value x) {
            return b.linear(b.pool(x, GlobalAvgPool()), LinearAttrs{7, true});
          }),
      one("LinearOfAFeatureMap",
          [](GraphBuilder& b, Value x) {
            return b.linear(x, LinearAttrs{5, false, Act::kRelu});
          }),
      one("ElementAdd",
          [](GraphBuilder& b, Value x) {
            return b.element({b.conv(x, Conv(6).kernel(1)), x}, ElementOp::kAdd);
          }),
      one("ElementMul",
          [](GraphBuilder& b, Value x) {
            return b.element({b.conv(x, Conv(6).kernel(1)), x}, ElementOp::kMul);
          }),
      one("GatedMul",
          [](GraphBuilder& b, Value x) {
            Value gate = b.activation(b.conv(b.pool(x, GlobalAvgPool()), Conv(6).kernel(1)), Act::kSigmoid);
            return b.element({x, gate}, ElementOp::kMul);
          }),
      one("IdentityOfSlicesAndSums",
          [](GraphBuilder& b, Value x) {
            Value c = b.conv(x, Conv(6).kernel(1));
            return b.identity(cat({add({c.slice(0, 3), x.slice(2, 5)}), x.slice(0, 1)}));
          }),
      one("SepConv", [](GraphBuilder& b, Value x) { return b.sep_conv(x, 7, 3, 1, 1); }),
      one("ResizeNearest",
          [&](GraphBuilder& b, Value x) {
            return b.step(x, resize(ResizeMode::kNearest, ResizeCoord::kAsymmetric, 14, 18));
          }),
      one("ResizeLinearHalfPixel",
          [&](GraphBuilder& b, Value x) {
            return b.step(x, resize(ResizeMode::kLinear, ResizeCoord::kHalfPixel, 11, 5));
          }),
      one("ResizeLinearAlignCorners",
          [&](GraphBuilder& b, Value x) {
            return b.step(x, resize(ResizeMode::kLinear, ResizeCoord::kAlignCorners, 13, 17));
          }),
      one("ChannelShuffle", [](GraphBuilder& b, Value x) { return b.step(x, ChannelShuffleAttrs{3}); }),
      one("ChannelNorm", [](GraphBuilder& b, Value x) { return b.step(x, ChannelNormAttrs{1e-6f}); }),
      at("ChannelNormOfManyChannels", Shape{70, 5, 3},
         [](GraphBuilder& b, Value x) { return b.step(x, ChannelNormAttrs{1e-6f}); }),
      one("SpaceToDepth",  // 7 x 9 padded to 8 x 10, then blocks of 2 into channels
          [](GraphBuilder& b, Value x) {
            Value padded = b.step(x, PadAttrs{PadMode::kConstant, 1, 0, 0, 1, 0.f});
            return b.step(padded, SpaceDepthAttrs{true, 2, BlockOrder::kDcr});
          }),
      one("DepthToSpaceCrd",  // PyTorch's pixel shuffle of 18 channels by blocks of 3
          [](GraphBuilder& b, Value x) {
            return b.step(b.conv(x, Conv(18).act(Act::kNone)), SpaceDepthAttrs{false, 3, BlockOrder::kCrd});
          }),
      one("PadReflect",
          [](GraphBuilder& b, Value x) {
            return b.step(x, PadAttrs{PadMode::kReflect, 2, 1, 0, 3, 0.f});
          }),
      one("PadEdge",
          [](GraphBuilder& b, Value x) {
            return b.step(x, PadAttrs{PadMode::kEdge, 1, 0, 2, 1, 0.f});
          }),
      one("PadCrop",  // negative pads: a row off the top, three columns off the right, two columns of 0 on the left
          [](GraphBuilder& b, Value x) {
            return b.step(x, PadAttrs{PadMode::kConstant, -1, 2, 0, -3, 0.f});
          }),
      one("PadConstant",
          [](GraphBuilder& b, Value x) {
            return b.step(x, PadAttrs{PadMode::kConstant, 0, 1, 1, 0, -0.5f});
          }),
      one("GroupNorm",
          [](GraphBuilder& b, Value x) {
            return b.step(x, GroupNormAttrs{2, 1e-5f});
          }),
      one("InstanceNorm",
          [](GraphBuilder& b, Value x) {
            return b.step(x, GroupNormAttrs{6, 1e-5f});
          }),
      one("GroupNormOfOneGroup",
          [](GraphBuilder& b, Value x) {
            return b.step(x, GroupNormAttrs{1, 1e-5f});
          }),
      one("GroupNormUncentered",  // EvoNorm-S0's division by the group standard deviation
          [](GraphBuilder& b, Value x) {
            return b.step(x, GroupNormAttrs{2, 1e-5f, false});
          }),
      one("PRelu", [](GraphBuilder& b, Value x) { return b.step(x, PReluAttrs{}); }),
      one("ChannelConv",
          [](GraphBuilder& b, Value x) {
            return b.step(x, ChannelConvAttrs{3, 1, false});
          }),
      one("ChannelConvOffCentreWithBias",
          [](GraphBuilder& b, Value x) {
            return b.step(x, ChannelConvAttrs{5, 1, true});
          }),
      one("ChannelSoftmax", [](GraphBuilder& b, Value x) { return b.step(x, ChannelSoftmaxAttrs{6}); }),
      one("ChannelSoftmaxOfGroups", [](GraphBuilder& b, Value x) { return b.step(x, ChannelSoftmaxAttrs{3}); }),
      one("ChannelSoftmaxOfPooledGroups",  // split attention's weights
          [](GraphBuilder& b, Value x) { return b.step(b.pool(x, GlobalAvgPool()), ChannelSoftmaxAttrs{2}); }),
      one("ResponseNorm", [](GraphBuilder& b, Value x) { return b.step(x, ResponseNormAttrs{1e-6f}); }),
      at("ResponseNormOfManyPixels", Shape{37, 45, 47},
         [](GraphBuilder& b, Value x) { return b.step(x, ResponseNormAttrs{1e-6f}); }),
      one("ChannelConvOfPooledChannels",  // ECA's gate
          [](GraphBuilder& b, Value x) {
            return b.activation(b.step(b.pool(x, GlobalAvgPool()), ChannelConvAttrs{5, 2, false}), Act::kSigmoid);
          }),
  };
  for (const ActivationCase& c : activation_cases()) {
    const Act act = c.act;
    const std::string name = case_name(act_name(act));
    cases.push_back(one(name, [c](GraphBuilder& b, Value x) { return b.activation(in_domain(c, b, x), c.act); }));
    if (c.positive_only) continue;  // a convolution's output is of either sign
    cases.push_back(one(name + "FusedIntoConv",
                        [act](GraphBuilder& b, Value x) { return b.conv(x, Conv(8).kernel(3).pad(1).act(act)); }));
  }
  return cases;
}

}  // namespace ios::testing
