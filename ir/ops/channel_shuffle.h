// ShuffleNet's channel shuffle: channels viewed as groups x (C / groups), transposed, and flattened
// again (ONNX: Reshape -> Transpose -> Reshape). Output channel c reads input channel shuffle_source(c).
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ChannelShuffleAttrs {
  static constexpr const char* kType = "channel_shuffle";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  int groups = 1;
  IOS_MEMBERWISE_EQUAL(ChannelShuffleAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const { return op_check::pointwise(in, out, 0); }
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<ChannelShuffleAttrs> read(const OpReader& r);
};

IOS_HOST_DEVICE inline int shuffle_source(int c, int channels, int groups) {
  return (c % groups) * (channels / groups) + c / groups;
}

}  // namespace ios::ir
