#include "ir/ops/channel_softmax.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> ChannelSoftmaxAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("groups", groups, limits::kMaxChannels));
  RETURN_ERROR_IF(
      in.c % groups != 0, ErrorCode::kInvalidGraph,
      "field 'groups' = " + std::to_string(groups) + " must divide the input's " + std::to_string(in.c) + " channels");
  return in;
}

NodeCost ChannelSoftmaxAttrs::cost(const Shape& in, const Shape& out) const {
  return op_check::pointwise(in, out, 5);  // max, exp, sum, divide
}

void ChannelSoftmaxAttrs::write(OpWriter& w) const { w.set("groups", groups); }

Expected<ChannelSoftmaxAttrs> ChannelSoftmaxAttrs::read(const OpReader& r) {
  ChannelSoftmaxAttrs a;
  ASSIGN_OR_RETURN(a.groups, r.integer("groups", 1, limits::kMaxChannels));
  return a;
}

}  // namespace ios::ir
