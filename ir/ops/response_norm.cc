#include "ir/ops/response_norm.h"

#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> ResponseNormAttrs::infer(const Shape& in) const {
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidGraph, "field 'eps' must be in (0, 1]");
  return in;
}

NodeCost ResponseNormAttrs::cost(const Shape& in, const Shape& out) const {
  NodeCost c = op_check::pointwise(in, out, 5);  // square and sum, then scale, gain and shift
  c.bytes *= 1.5;                                // the norms' pass reads the input once more
  c.bytes += 8.0 * in.c;
  return c;
}

void ResponseNormAttrs::write(OpWriter& w) const { w.set("eps", eps); }

Expected<ResponseNormAttrs> ResponseNormAttrs::read(const OpReader& r) {
  ResponseNormAttrs a;
  ASSIGN_OR_RETURN(double eps, r.number("eps", 1e-6, 1e-30, 1));
  a.eps = float(eps);
  return a;
}

}  // namespace ios::ir
