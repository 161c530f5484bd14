// An activation applied on its own (one row of the table in ir/activation.h), element by element.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ActivationAttrs {
  static constexpr const char* kType = "activation";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/false};

  Act activation = Act::kRelu;
  IOS_MEMBERWISE_EQUAL(ActivationAttrs)

  Expected<Shape> infer(const Shape& in) const { return in; }
  NodeCost cost(const Shape& in, const Shape& out) const { return op_check::pointwise(in, out, 1); }
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<ActivationAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
