#include "ir/ops/conv.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

Expected<Shape> ConvAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("out_channels", out_channels, limits::kMaxChannels));
  RETURN_IF_ERROR(op_check::pair("kernel", kh, kw, 1, limits::kMaxWindow));
  RETURN_IF_ERROR(op_check::pair("stride", sh, sw, 1, limits::kMaxWindow));
  RETURN_IF_ERROR(op_check::pair("padding", ph, pw, 0, limits::kMaxPadding));
  RETURN_IF_ERROR(op_check::pair("dilation", dh, dw, 1, limits::kMaxWindow));
  RETURN_ERROR_IF(groups <= 0 || in.c % groups != 0 || out_channels % groups != 0, ErrorCode::kInvalidGraph,
                  "field 'groups' = " + std::to_string(groups) + " must divide input channels (" +
                      std::to_string(in.c) + ") and out_channels (" + std::to_string(out_channels) + ")");
  Shape out{out_channels, op_check::window_output(in.h, kh, sh, ph, dh, false),
            op_check::window_output(in.w, kw, sw, pw, dw, false)};
  RETURN_ERROR_IF(out.h <= 0 || out.w <= 0, ErrorCode::kInvalidGraph,
                  "kernel larger than the padded input " + in.to_string());
  const int64_t parameters = int64_t{out_channels} * (in.c / groups) * kh * kw;
  RETURN_ERROR_IF(parameters > limits::kMaxNodeParameters, ErrorCode::kInvalidGraph,
                  std::to_string(parameters) + " weights exceed the limit of " +
                      std::to_string(limits::kMaxNodeParameters) + " per op");
  return out;
}

NodeCost ConvAttrs::cost(const Shape& in, const Shape& out) const {
  const double macs_per_out = double(in.c / groups) * kh * kw;
  const double params = double(out_channels) * macs_per_out + (has_bias ? out_channels : 0);
  return NodeCost{2.0 * static_cast<double>(out.numel()) * macs_per_out,
                  4.0 * static_cast<double>(in.numel() + out.numel()) + 4.0 * params, 1};
}

ParamSizes ConvAttrs::params(const Shape& in) const {
  const size_t fan_in = static_cast<size_t>(in.c / groups) * kh * kw;
  return ParamSizes{fan_in * out_channels, has_bias ? size_t(out_channels) : 0, fan_in};
}

// Every attribute is written, defaults included, so the text is also a complete key.
void ConvAttrs::write(OpWriter& w) const {
  w.set("out_channels", out_channels)
      .set_pair("kernel", kh, kw)
      .set_pair("stride", sh, sw)
      .set_pair("padding", ph, pw)
      .set_pair("dilation", dh, dw)
      .set("groups", groups)
      .set("bias", has_bias)
      .set_act("act", activation);
}

Expected<ConvAttrs> ConvAttrs::read(const OpReader& r) {
  ConvAttrs c;
  ASSIGN_OR_RETURN(c.out_channels, r.integer("out_channels", 1, limits::kMaxChannels));
  ASSIGN_OR_RETURN(auto k, r.pair("kernel", {1, 1}, true, 1, limits::kMaxWindow));
  ASSIGN_OR_RETURN(auto s, r.pair("stride", {1, 1}, false, 1, limits::kMaxWindow));
  ASSIGN_OR_RETURN(auto p, r.pair("padding", {0, 0}, false, 0, limits::kMaxPadding));
  ASSIGN_OR_RETURN(auto d, r.pair("dilation", {1, 1}, false, 1, limits::kMaxWindow));
  c.kernel(k.first, k.second).stride(s.first, s.second).pad(p.first, p.second).dilation(d.first, d.second);
  if (r.has("groups")) {
    ASSIGN_OR_RETURN(c.groups, r.integer("groups", 1, limits::kMaxChannels));
  }
  ASSIGN_OR_RETURN(c.activation, r.act("act", Act::kRelu));
  ASSIGN_OR_RETURN(c.has_bias, r.boolean("bias", true));
  return c;
}

}  // namespace ios::ir
