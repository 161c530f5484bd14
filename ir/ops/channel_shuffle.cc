#include "ir/ops/channel_shuffle.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> ChannelShuffleAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("groups", groups, limits::kMaxChannels));
  RETURN_ERROR_IF(
      in.c % groups != 0, ErrorCode::kInvalidGraph,
      "field 'groups' = " + std::to_string(groups) + " must divide the input's " + std::to_string(in.c) + " channels");
  return in;
}

void ChannelShuffleAttrs::write(OpWriter& w) const { w.set("groups", groups); }

Expected<ChannelShuffleAttrs> ChannelShuffleAttrs::read(const OpReader& r) {
  ChannelShuffleAttrs s;
  ASSIGN_OR_RETURN(s.groups, r.integer("groups", 1, limits::kMaxChannels));
  return s;
}

}  // namespace ios::ir
