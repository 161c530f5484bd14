// Layer normalization over the channels of each pixel, with a per-channel scale and shift (ConvNeXt's
// LayerNorm, which PyTorch applies to channels-last tensors; ONNX LayerNormalization on the last axis):
//   y[c] = (x[c] - mean_c x) / sqrt(var_c x + eps) * scale[c] + shift[c]
// Its parameters are a step's weight (scale) and bias (shift), C values each.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ChannelNormAttrs {
  static constexpr const char* kType = "channel_norm";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  float eps = 1e-5f;
  IOS_MEMBERWISE_EQUAL(ChannelNormAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const { return ParamSizes{size_t(in.c), size_t(in.c), 1}; }
  void write(OpWriter& w) const;
  static Expected<ChannelNormAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
