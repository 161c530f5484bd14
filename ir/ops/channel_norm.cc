#include "ir/ops/channel_norm.h"

#include <cmath>

#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> ChannelNormAttrs::infer(const Shape& in) const {
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidGraph, "field 'eps' must be in (0, 1]");
  return in;
}

NodeCost ChannelNormAttrs::cost(const Shape& in, const Shape& out) const {
  NodeCost c = op_check::pointwise(in, out, 8);  // mean, variance, normalize, scale and shift
  c.bytes += 8.0 * in.c;
  return c;
}

void ChannelNormAttrs::write(OpWriter& w) const { w.set("eps", eps); }

Expected<ChannelNormAttrs> ChannelNormAttrs::read(const OpReader& r) {
  ChannelNormAttrs a;
  ASSIGN_OR_RETURN(double eps, r.number("eps", 1e-5, 1e-30, 1));
  a.eps = float(eps);
  return a;
}

}  // namespace ios::ir
