// Parametric ReLU with one slope per channel (ONNX PRelu, torch.nn.PReLU; a single shared slope is C equal
// values): y[c] = x[c] >= 0 ? x[c] : slope[c] * x[c]. The slopes are the step's weight, C values.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct PReluAttrs {
  static constexpr const char* kType = "prelu";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};
  IOS_MEMBERWISE_EQUAL(PReluAttrs)

  Expected<Shape> infer(const Shape& in) const { return in; }
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const { return ParamSizes{size_t(in.c), 0, 1}; }
  void write(OpWriter&) const {}
  static Expected<PReluAttrs> read(const OpReader&) { return PReluAttrs{}; }
};

}  // namespace ios::ir
