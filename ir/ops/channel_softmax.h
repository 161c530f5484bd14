// Softmax across groups of channels at each pixel: the channels are `groups` consecutive groups of
// C / groups, and each position within a group is normalized across the groups:
//   y[k * G + i, p] = exp(x[k * G + i, p]) / sum_j exp(x[j * G + i, p]),   G = C / groups
// groups == C is a softmax over the channels (ONNX Softmax on axis 1, a classifier's probabilities);
// fewer groups are split attention's softmax across its paths (ResNeSt's radix, SKNet's kernels).
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ChannelSoftmaxAttrs {
  static constexpr const char* kType = "channel_softmax";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  int groups = 1;
  IOS_MEMBERWISE_EQUAL(ChannelSoftmaxAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<ChannelSoftmaxAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
