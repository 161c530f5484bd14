// Global response normalization (ConvNeXt V2's GRN): each channel's L2 norm over the pixels, divided by the
// mean of those norms over the channels, gains the channel; then a per-channel scale and shift:
//   y[c, p] = x[c, p] * g[c] / (mean_c' g[c'] + eps) * scale[c] + shift[c],   g[c] = sqrt(sum_p x[c, p]^2)
// (GRN's residual, + x, is a sum the importer keeps outside the op). The scale and shift are the step's
// weight and bias, C values each.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

struct ResponseNormAttrs {
  static constexpr const char* kType = "response_norm";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  float eps = 1e-6f;
  IOS_MEMBERWISE_EQUAL(ResponseNormAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const { return ParamSizes{size_t(in.c), size_t(in.c), 1}; }
  void write(OpWriter& w) const;
  static Expected<ResponseNormAttrs> read(const OpReader& r);
};

}  // namespace ios::ir
