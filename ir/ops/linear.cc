#include "ir/ops/linear.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> LinearAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("out_features", out_features, limits::kMaxChannels));
  RETURN_ERROR_IF(out_features * in.numel() > limits::kMaxNodeParameters, ErrorCode::kInvalidGraph,
                  "weights exceed the limit of " + std::to_string(limits::kMaxNodeParameters) + " per op");
  return Shape{out_features, 1, 1};
}

NodeCost LinearAttrs::cost(const Shape& in, const Shape& out) const {
  const auto fan_in = static_cast<double>(in.numel());
  const double params = double(out_features) * fan_in + (has_bias ? out_features : 0);
  return NodeCost{2.0 * double(out_features) * fan_in,
                  4.0 * static_cast<double>(in.numel() + out.numel()) + 4.0 * params, 1};
}

ParamSizes LinearAttrs::params(const Shape& in) const {
  const auto fan_in = static_cast<size_t>(in.numel());
  return ParamSizes{fan_in * out_features, has_bias ? size_t(out_features) : 0, fan_in};
}

void LinearAttrs::write(OpWriter& w) const {
  w.set("out_features", out_features).set("bias", has_bias).set_act("act", activation);
}

Expected<LinearAttrs> LinearAttrs::read(const OpReader& r) {
  LinearAttrs l;
  ASSIGN_OR_RETURN(l.out_features, r.integer("out_features", 1, limits::kMaxChannels));
  ASSIGN_OR_RETURN(l.activation, r.act("act", Act::kNone));
  ASSIGN_OR_RETURN(l.has_bias, r.boolean("bias", true));
  return l;
}

}  // namespace ios::ir
