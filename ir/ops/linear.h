// Fully connected layer over the flattened input (in storage order); the output is out_features x 1 x 1.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct LinearAttrs {
  static constexpr const char* kType = "linear";
  static constexpr OpTraits kTraits{/*memory_bound=*/false, /*writes_strided=*/false};

  int out_features = 0;
  bool has_bias = true;
  Act activation = Act::kNone;
  IOS_MEMBERWISE_EQUAL(LinearAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const;
  void write(OpWriter& w) const;
  static Expected<LinearAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
