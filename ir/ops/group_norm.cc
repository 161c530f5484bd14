#include "ir/ops/group_norm.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> GroupNormAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("groups", groups, limits::kMaxChannels));
  RETURN_ERROR_IF(
      in.c % groups != 0, ErrorCode::kInvalidGraph,
      "field 'groups' = " + std::to_string(groups) + " must divide the input's " + std::to_string(in.c) + " channels");
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidGraph, "field 'eps' must be in (0, 1]");
  return in;
}

NodeCost GroupNormAttrs::cost(const Shape& in, const Shape& out) const {
  NodeCost c = op_check::pointwise(in, out, 8);  // mean, variance, normalize, scale and shift
  c.bytes *= 1.5;                                // the statistics pass reads the input once more
  c.bytes += 8.0 * in.c;
  c.kernels = 2;
  return c;
}

void GroupNormAttrs::write(OpWriter& w) const {
  w.set("groups", groups);
  w.set("eps", eps);
  if (!center) w.set("center", false);  // written only where set: the graph files of centered norms read as before
}

Expected<GroupNormAttrs> GroupNormAttrs::read(const OpReader& r) {
  GroupNormAttrs a;
  ASSIGN_OR_RETURN(a.groups, r.integer("groups", 1, limits::kMaxChannels));
  ASSIGN_OR_RETURN(double eps, r.number("eps", 1e-5, 1e-30, 1));
  a.eps = float(eps);
  ASSIGN_OR_RETURN(a.center, r.boolean("center", true));
  return a;
}

}  // namespace ios::ir
