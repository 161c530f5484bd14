// Moves b x b blocks of pixels between space and channels. To depth (ONNX SpaceToDepth, PyTorch
// PixelUnshuffle, TResNet's stem): (C, H, W) -> (C*b*b, H/b, W/b). To space (ONNX DepthToSpace, PyTorch
// PixelShuffle): (C*b*b, H, W) -> (C, H*b, W*b). The channels of the deep side are ordered block-major
// ("dcr": (by*b + bx)*C + c, ONNX's SpaceToDepth and DepthToSpace's default) or channel-major ("crd":
// c*b*b + by*b + bx, PyTorch's pixel shuffles).
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

enum class BlockOrder : uint8_t { kDcr, kCrd };

struct SpaceDepthAttrs {
  static constexpr const char* kType = "space_depth";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  bool to_depth = true;
  int block = 2;
  BlockOrder order = BlockOrder::kDcr;
  IOS_MEMBERWISE_EQUAL(SpaceDepthAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const { return op_check::pointwise(in, out, 0); }
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<SpaceDepthAttrs> read(const OpReader& r);
};

struct BlockSource {
  int c, y, x;
};

// The input element output (c, y, x) reads; `shallow_c` is the channel count of the spatial side (the
// input's to depth, the output's to space).
IOS_HOST_DEVICE inline BlockSource space_depth_source(const SpaceDepthAttrs& a, int shallow_c, int c, int y, int x) {
  const int b = a.block;
  if (a.to_depth) {
    const int cell = a.order == BlockOrder::kCrd ? c % (b * b) : c / shallow_c;
    const int ch = a.order == BlockOrder::kCrd ? c / (b * b) : c % shallow_c;
    return BlockSource{ch, y * b + cell / b, x * b + cell % b};
  }
  const int cell = (y % b) * b + x % b;
  return BlockSource{a.order == BlockOrder::kCrd ? c * b * b + cell : cell * shallow_c + c, y / b, x / b};
}

}  // namespace ios::ir
