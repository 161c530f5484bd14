#include "ir/ops/channel_conv.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

namespace {
// ECA's kernels are 3 to 9 taps; a limit keeps the kernel's loop and its parameter short.
constexpr int kMaxTaps = 255;
}  // namespace

Expected<Shape> ChannelConvAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("kernel", kernel, kMaxTaps));
  RETURN_ERROR_IF(
      pad < 0 || pad >= kernel, ErrorCode::kInvalidGraph,
      "field 'pad' = " + std::to_string(pad) + " must be in [0, kernel - 1 = " + std::to_string(kernel - 1) + "]");
  return in;
}

NodeCost ChannelConvAttrs::cost(const Shape& in, const Shape& out) const {
  NodeCost c = op_check::pointwise(in, out, 2.0 * kernel);
  c.bytes += 4.0 * (kernel + 1);
  return c;
}

void ChannelConvAttrs::write(OpWriter& w) const { w.set("kernel", kernel).set("pad", pad).set("bias", bias); }

Expected<ChannelConvAttrs> ChannelConvAttrs::read(const OpReader& r) {
  ChannelConvAttrs a;
  ASSIGN_OR_RETURN(a.kernel, r.integer("kernel", 1, kMaxTaps));
  ASSIGN_OR_RETURN(a.pad, r.integer("pad", 0, kMaxTaps - 1));
  ASSIGN_OR_RETURN(a.bias, r.boolean("bias", false));
  return a;
}

}  // namespace ios::ir
