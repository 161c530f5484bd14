// A 1-D convolution along the channel axis, the same taps at every pixel: ECA's gate, a Conv1d of one
// input and one output channel run over the pooled channel vector (timm's EcaModule, ECA-Net):
//   y[c, p] = bias + sum_t w[t] * x[c + t - pad, p],   terms outside [0, C) read as zero.
// `pad` taps lie before the channel and kernel - 1 - pad after it, so the output has the input's channels.
// Its parameters are a step's weight (kernel values) and, with `bias`, one bias value.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ChannelConvAttrs {
  static constexpr const char* kType = "channel_conv";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  int kernel = 3;
  int pad = 1;
  bool bias = false;
  IOS_MEMBERWISE_EQUAL(ChannelConvAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape&) const { return ParamSizes{size_t(kernel), bias ? 1u : 0u, size_t(kernel)}; }
  void write(OpWriter& w) const;
  static Expected<ChannelConvAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
