// ONNX handlers of the windowed ops: convolution, transposed convolution and pooling, with their padding.
#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

// A max pooling's fill for pads it cannot take itself: below any activation, finite as PadAttrs requires.
constexpr float kLowestPad = -3.0e38f;

// ONNX pads (begin/end per axis, or auto_pad) for a window of extent `k` and stride `s`. Asymmetric pads
// are made symmetric where that gives the same windows (the extra end cells are never read).
Expected<Pads> resolve_pads(const Attributes& at, const ir::Shape& in, const std::array<int, 2>& k,
                            const std::array<int, 2>& s, bool ceil_mode) {
  ASSIGN_OR_RETURN(std::string auto_pad, at.get_string("auto_pad", "NOTSET"));
  std::array<int64_t, 4> p{0, 0, 0, 0};
  const std::array<int, 2> extent{in.h, in.w};
  RETURN_ERROR_IF(auto_pad != "NOTSET" && at.has("pads"), ErrorCode::kInvalidArgument,
                  "attributes 'auto_pad' (" + auto_pad + ") and 'pads' are both given; ONNX allows only one");
  if (auto_pad == "NOTSET") {
    ASSIGN_OR_RETURN(auto pads, at.get_ints("pads", {0, 0, 0, 0}));
    RETURN_ERROR_IF(pads.size() != 4, ErrorCode::kInvalidArgument,
                    "attribute 'pads' must have 4 values (2-D), got " + std::to_string(pads.size()));
    std::copy(pads.begin(), pads.end(), p.begin());
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const int64_t out = (extent[d] + s[d] - 1) / s[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * s[d] + k[d] - extent[d]);
      p[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      p[d + 2] = total - p[d];
    }
  } else if (auto_pad != "VALID") {
    return bad("attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  for (int64_t v : p)
    RETURN_ERROR_IF(v < 0 || v > limits::kMaxPadding, ErrorCode::kInvalidArgument,
                    "attribute 'pads' must be in [0, " + std::to_string(limits::kMaxPadding) + "]");
  for (int d = 0; d < 2; ++d) {
    auto floor_out = [&](int64_t total) { return (extent[d] + total - k[d]) / s[d]; };
    if (!ceil_mode && floor_out(p[d] + p[d + 2]) == floor_out(2 * p[d])) p[d + 2] = p[d];
  }
  return Pads{int(p[0]), int(p[1]), int(p[2]), int(p[3])};
}

// The input of a windowed op whose pads are not symmetric: a Pad step filling with `fill` (the op then
// pads nothing), as the TorchScript exporter writes TensorFlow's "same" padding and the dynamo exporter
// folds into the op's pads. Symmetric pads stay the op's own.
Expected<ir::Inputs> Importer::padded_input(const onnx::NodeProto& n, const Activation& x, Pads& p, float fill) {
  if (p.symmetric()) return x.terms;
  ir::PadAttrs a;
  a.top = p.top, a.left = p.left, a.bottom = p.bottom, a.right = p.right;
  a.value = fill;
  ++counts_["asymmetric pads of a convolution or pooling run as a Pad op before it"];
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name() + "/pad", a, x.terms));
  p = Pads{};
  return ir::Inputs{ir::Term{v}};
}

Expected<std::array<int, 2>> pair_attr(const Attributes& at, const std::string& name, std::vector<int64_t> fallback) {
  ASSIGN_OR_RETURN(auto v, at.get_ints(name, fallback));
  RETURN_ERROR_IF(
      v.size() != 2, ErrorCode::kInvalidArgument,
      "attribute '" + name + "' must have 2 values (only 2-D ops are supported), got " + std::to_string(v.size()));
  for (int64_t x : v)
    RETURN_ERROR_IF(x < 1 || x > limits::kMaxWindow, ErrorCode::kInvalidArgument,
                    "attribute '" + name + "' must be in [1, " + std::to_string(limits::kMaxWindow) + "]");
  return std::array<int, 2>{int(v[0]), int(v[1])};
}

Status Importer::conv(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Constant* w, const_input(n, 1));
  if (w->dims.size() == 3) {
    ASSIGN_OR_RETURN(const Activation* view, element_act_input(n, 0));
    return channel_conv(n, *view, *w);
  }
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  RETURN_ERROR_IF(w->dims.size() != 4, ErrorCode::kInvalidArgument,
                  "only 2-D convolutions are supported (weight of rank " + std::to_string(w->dims.size()) + ")");
  const Attributes at(n);
  const ir::Shape in = shape_of(x->terms);
  ASSIGN_OR_RETURN(int64_t group, at.get_int("group", 1));
  // group is bounded before the product, which could otherwise overflow.
  RETURN_ERROR_IF(group < 1 || group > in.c || w->dims[1] * group != in.c, ErrorCode::kInvalidArgument,
                  "weight of " + std::to_string(w->dims[1]) + " input channels x group " + std::to_string(group) +
                      " does not match the input's " + std::to_string(in.c) + " channels");
  const std::vector<int64_t> kernel{w->dims[2], w->dims[3]};
  ASSIGN_OR_RETURN(auto k, pair_attr(at, "kernel_shape", kernel));
  RETURN_ERROR_IF(k[0] != kernel[0] || k[1] != kernel[1], ErrorCode::kInvalidArgument,
                  "attribute 'kernel_shape' does not match the weight's shape");
  ASSIGN_OR_RETURN(auto s, pair_attr(at, "strides", {1, 1}));
  ASSIGN_OR_RETURN(auto d, pair_attr(at, "dilations", {1, 1}));
  ASSIGN_OR_RETURN(Pads p, resolve_pads(at, in, {d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1}, s, false));
  p.top += x->conv_pad.top, p.left += x->conv_pad.left, p.bottom += x->conv_pad.bottom, p.right += x->conv_pad.right;
  const int64_t out_channels = w->dims[0];
  ir::ParamTensor params{take_floats(n, 1), {}};
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* b, const_input(n, 2));
    RETURN_ERROR_IF(
        b->numel() != out_channels, ErrorCode::kInvalidArgument,
        "bias has " + std::to_string(b->numel()) + " values for " + std::to_string(out_channels) + " outputs");
    params.bias = b->floats;
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Inputs input, padded_input(n, *x, p, 0.f));
  const ir::ConvAttrs attrs = ir::Conv(int(out_channels))
                                  .kernel(k[0], k[1])
                                  .stride(s[0], s[1])
                                  .dilation(d[0], d[1])
                                  .pad(p.top, p.left)
                                  .grouped(int(group))
                                  .bias(has_input(n, 2))
                                  .act(ir::Act::kNone);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, std::move(input), std::move(params)));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

namespace {

// ConvTranspose's weight (C_in, C_out/g, kh, kw) as the weight of the convolution whose output, moved to
// space in blocks of s (channel-major: (oc, rh, rw)), is the transposed convolution's uncropped output:
// output pixel q*s + r gathers input pixel q - j through tap j*s + r, so phase r is a convolution over
// `taps` = ceil(k/s) input pixels with the kernel's taps r, s + r, ... reversed (zero past the kernel).
std::vector<float> phase_weights(const Constant& w, int group, int s, std::array<int, 2> taps) {
  const int64_t in_c = w.dims[0], out_per_group = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const int64_t in_per_group = in_c / group, out_c = out_per_group * group;
  std::vector<float> out(size_t(out_c * s * s * in_per_group * taps[0] * taps[1]), 0.f);
  size_t k = 0;
  for (int64_t oc = 0; oc < out_c; ++oc)
    for (int rh = 0; rh < s; ++rh)
      for (int rw = 0; rw < s; ++rw)
        for (int64_t ic = 0; ic < in_per_group; ++ic)
          for (int a = 0; a < taps[0]; ++a)
            for (int b = 0; b < taps[1]; ++b, ++k) {
              const int64_t y = int64_t(taps[0] - 1 - a) * s + rh, x = int64_t(taps[1] - 1 - b) * s + rw;
              const int64_t src_ic = oc / out_per_group * in_per_group + ic;
              if (y < kh && x < kw)
                out[k] = w.floats[size_t(((src_ic * out_per_group + oc % out_per_group) * kh + y) * kw + x)];
            }
  return out;
}

}  // namespace

// ConvTranspose as a convolution, a move of its output's s x s blocks to space, and a crop (a Pad with negative
// pads): the sub-pixel form, whose convolution cuDNN runs like any other. Equal strides, no dilation.
Status Importer::conv_transpose(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  ASSIGN_OR_RETURN(const Constant* w, const_input(n, 1));
  RETURN_ERROR_IF(
      w->dims.size() != 4, ErrorCode::kInvalidArgument,
      "only 2-D transposed convolutions are supported (weight of rank " + std::to_string(w->dims.size()) + ")");
  const Attributes at(n);
  const ir::Shape in = shape_of(x->terms);
  ASSIGN_OR_RETURN(int64_t group, at.get_int("group", 1));
  RETURN_ERROR_IF(group < 1 || group > in.c || w->dims[0] != in.c || in.c % group != 0, ErrorCode::kInvalidArgument,
                  "weight of " + std::to_string(w->dims[0]) + " input channels in " + std::to_string(group) +
                      " groups does not match the input's " + std::to_string(in.c) + " channels");
  ASSIGN_OR_RETURN(auto k, pair_attr(at, "kernel_shape", {w->dims[2], w->dims[3]}));
  RETURN_ERROR_IF(k[0] != w->dims[2] || k[1] != w->dims[3], ErrorCode::kInvalidArgument,
                  "attribute 'kernel_shape' does not match the weight's shape");
  ASSIGN_OR_RETURN(auto st, pair_attr(at, "strides", {1, 1}));
  ASSIGN_OR_RETURN(auto d, pair_attr(at, "dilations", {1, 1}));
  RETURN_ERROR_IF(d[0] != 1 || d[1] != 1 || st[0] != st[1], ErrorCode::kInvalidArgument,
                  "a transposed convolution is supported with equal strides and no dilation");
  ASSIGN_OR_RETURN(std::string auto_pad, at.get_string("auto_pad", "NOTSET"));
  RETURN_ERROR_IF(auto_pad != "NOTSET" || at.has("output_shape"), ErrorCode::kInvalidArgument,
                  "attributes 'auto_pad' and 'output_shape' are not supported; give 'pads' and 'output_padding'");
  ASSIGN_OR_RETURN(auto pads, at.get_ints("pads", {0, 0, 0, 0}));
  ASSIGN_OR_RETURN(auto extra, at.get_ints("output_padding", {0, 0}));
  RETURN_ERROR_IF(pads.size() != 4 || extra.size() != 2, ErrorCode::kInvalidArgument,
                  "attributes 'pads' and 'output_padding' must have 4 and 2 values (2-D)");
  for (int64_t v : pads)
    RETURN_ERROR_IF(v < 0 || v > limits::kMaxPadding, ErrorCode::kInvalidArgument,
                    "attribute 'pads' must be in [0, " + std::to_string(limits::kMaxPadding) + "]");
  const int s = st[0];
  // A stride within the kernel keeps the phase weights under 4x the weight (s * ceil(k / s) < 2k), so a
  // file's declared stride cannot make the importer allocate past the data it holds.
  RETURN_ERROR_IF(s > k[0] || s > k[1], ErrorCode::kInvalidArgument,
                  "a stride larger than the kernel (output pixels no tap reaches) is not supported");
  for (int64_t v : extra)
    RETURN_ERROR_IF(v < 0 || v >= s, ErrorCode::kInvalidArgument, "attribute 'output_padding' must be in [0, stride)");
  const std::array<int, 2> extent{in.h, in.w}, taps{(k[0] + s - 1) / s, (k[1] + s - 1) / s};
  // Per axis: the convolution's padding, and the crop of its blocked output to the ONNX output's extent.
  std::array<int, 2> conv_pad{}, crop_begin{}, crop_end{};
  for (int a = 0; a < 2; ++a) {
    const int64_t out = int64_t(extent[a] - 1) * s + k[a] - pads[a] - pads[a + 2] + extra[a];
    RETURN_ERROR_IF(out < 1 || out > limits::kMaxSpatial, ErrorCode::kInvalidArgument,
                    "the output's extent along axis " + std::to_string(a + 2) + " would be " + std::to_string(out));
    // Output padding past the blocked output's end: pad the convolution by whole blocks more.
    const int64_t short_by = std::max<int64_t>(0, out + pads[a] - int64_t(extent[a] + taps[a] - 1) * s);
    const int64_t more = (short_by + s - 1) / s;
    conv_pad[a] = taps[a] - 1 + int(more);
    crop_begin[a] = int(pads[a] + more * s);
    crop_end[a] = int(int64_t(extent[a] + taps[a] - 1 + 2 * more) * s - crop_begin[a] - out);
  }
  const int64_t out_channels = w->dims[1] * group;
  RETURN_ERROR_IF(out_channels * s * s > limits::kMaxChannels, ErrorCode::kInvalidArgument,
                  "the transposed convolution's blocked form needs more than the limit of " +
                      std::to_string(limits::kMaxChannels) + " channels");
  ir::ParamTensor params{phase_weights(*w, int(group), s, taps), {}};
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* b, const_input(n, 2));
    RETURN_ERROR_IF(
        b->numel() != out_channels, ErrorCode::kInvalidArgument,
        "bias has " + std::to_string(b->numel()) + " values for " + std::to_string(out_channels) + " outputs");
    for (float v : b->floats) params.bias.insert(params.bias.end(), size_t(s) * s, v);
  }
  const ir::ConvAttrs conv = ir::Conv(int(out_channels) * s * s)
                                 .kernel(taps[0], taps[1])
                                 .pad(conv_pad[0], conv_pad[1])
                                 .grouped(int(group))
                                 .bias(has_input(n, 2))
                                 .act(ir::Act::kNone);
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name() + "/phases", conv, x->terms, std::move(params)));
  const FoldTarget phases{v.node, s * s};
  ASSIGN_OR_RETURN(
      v, emit(n.name() + "/to_space", ir::SpaceDepthAttrs{false, s, ir::BlockOrder::kCrd}, ir::Inputs{ir::Term{v}}));
  if (crop_begin != std::array<int, 2>{} || crop_end != std::array<int, 2>{}) {
    ir::PadAttrs crop;
    crop.top = -crop_begin[0], crop.left = -crop_begin[1], crop.bottom = -crop_end[0], crop.right = -crop_end[1];
    ASSIGN_OR_RETURN(v, emit(n.name(), crop, ir::Inputs{ir::Term{v}}));
  }
  transposed_[v.node] = phases;
  ++counts_["transposed convolutions run as a convolution, a block move to space and a crop"];
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

Status Importer::pool(const onnx::NodeProto& n, ir::PoolKind kind) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  RETURN_IF_ERROR(only_first_output_used(n));
  const Attributes at(n);
  RETURN_ERROR_IF(!at.has("kernel_shape"), ErrorCode::kInvalidArgument, "attribute 'kernel_shape' is missing");
  ASSIGN_OR_RETURN(auto k, pair_attr(at, "kernel_shape", {}));
  ASSIGN_OR_RETURN(auto s, pair_attr(at, "strides", {1, 1}));
  ASSIGN_OR_RETURN(auto d, pair_attr(at, "dilations", {1, 1}));
  RETURN_ERROR_IF((d[0] != 1 || d[1] != 1) && kind != ir::PoolKind::kMax, ErrorCode::kInvalidArgument,
                  "attribute 'dilations' is supported for MaxPool only (PyTorch has no dilated average pooling)");
  ASSIGN_OR_RETURN(int64_t ceil_mode, at.get_int("ceil_mode", 0));
  ASSIGN_OR_RETURN(int64_t include_pad, at.get_int("count_include_pad", 0));
  const ir::Shape in = shape_of(x->terms);
  ASSIGN_OR_RETURN(Pads p, resolve_pads(at, in, {d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1}, s, ceil_mode != 0));
  // Padded cells never win a max (the lowest finite float; fp16 rounds it to -inf) and count as zeros in
  // an average that includes them; an average that excludes them, or ceil mode, needs the op's own pads.
  RETURN_ERROR_IF(!p.symmetric() && (ceil_mode != 0 || (kind == ir::PoolKind::kAvg && include_pad == 0)),
                  ErrorCode::kInvalidArgument,
                  "asymmetric pads (" + std::to_string(p.top) + "," + std::to_string(p.left) + " before, " +
                      std::to_string(p.bottom) + "," + std::to_string(p.right) +
                      " after) are supported for max pooling and for average pooling with count_include_pad=1, "
                      "without ceil_mode");
  consume(*x);
  ASSIGN_OR_RETURN(ir::Inputs input, padded_input(n, *x, p, kind == ir::PoolKind::kMax ? kLowestPad : 0.f));
  ir::PoolAttrs attrs;
  attrs.kind = kind;
  attrs.kernel(k[0], k[1]).stride(s[0], s[1]).pad(p.top, p.left).dilation(d[0], d[1]);
  attrs.ceil(ceil_mode != 0).include_pad(include_pad != 0);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, std::move(input)));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

Status Importer::global_pool(const onnx::NodeProto& n, ir::PoolKind kind) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  ir::PoolAttrs attrs;
  attrs.kind = kind;
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, x->terms));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

}  // namespace ios::onnx_import::detail
