// Group normalization: the channels are split into `groups` consecutive groups, and each sample's group
// is normalized over its channels and pixels together, then scaled and shifted per channel:
//   y[c, p] = (x[c, p] - mean_g) / sqrt(var_g + eps) * scale[c] + shift[c],   g = c / (C / groups)
// groups == C is InstanceNormalization; groups == 1 normalizes the whole sample (PoolFormer's GroupNorm(1)).
// Uncentered (center = false), the mean is not taken from the output, x[c, p] / sqrt(var_g + eps): the
// division by the group standard deviation of EvoNorm-S0.
// Its parameters are a step's weight (scale) and bias (shift), C values each.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct GroupNormAttrs {
  static constexpr const char* kType = "group_norm";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  int groups = 1;
  float eps = 1e-5f;
  bool center = true;
  IOS_MEMBERWISE_EQUAL(GroupNormAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const { return ParamSizes{size_t(in.c), size_t(in.c), 1}; }
  void write(OpWriter& w) const;
  static Expected<GroupNormAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
