// ONNX handlers of the network ops: convolution, normalization folded into it, activations, pooling,
// reductions, and dense layers.
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
  ir::ParamTensor params{w->floats, {}};
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* b, const_input(n, 2));
    RETURN_ERROR_IF(
        b->numel() != w->dims[0], ErrorCode::kInvalidArgument,
        "bias has " + std::to_string(b->numel()) + " values for " + std::to_string(w->dims[0]) + " outputs");
    params.bias = b->floats;
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Inputs input, padded_input(n, *x, p, 0.f));
  const ir::ConvAttrs attrs = ir::Conv(int(w->dims[0]))
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
  ASSIGN_OR_RETURN(
      v, emit(n.name() + "/to_space", ir::SpaceDepthAttrs{false, s, ir::BlockOrder::kCrd}, ir::Inputs{ir::Term{v}}));
  if (crop_begin != std::array<int, 2>{} || crop_end != std::array<int, 2>{}) {
    ir::PadAttrs crop;
    crop.top = -crop_begin[0], crop.left = -crop_begin[1], crop.bottom = -crop_end[0], crop.right = -crop_end[1];
    ASSIGN_OR_RETURN(v, emit(n.name(), crop, ir::Inputs{ir::Term{v}}));
  }
  ++counts_["transposed convolutions run as a convolution, a block move to space and a crop"];
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

// y = scale * x + shift per channel: folded into the convolution or linear op before it where it is
// that op's only reader, else a 1x1 depthwise convolution (one multiply-add per element).
Status Importer::channel_affine(const onnx::NodeProto& n, const Activation& x, const std::vector<float>* scale,
                                const std::vector<float>* shift) {
  if (NodeId id = foldable(x, true); id != ir::kNoNode) {
    ir::Node& node = g_.nodes[size_t(id)];
    ir::ParamTensor& p = w_.per_node[size_t(id)][0];
    const int out = node.output_shape.c;
    const size_t per_out = p.weight.size() / size_t(out);
    if (p.bias.empty()) p.bias.assign(size_t(out), 0.f);
    for (int o = 0; o < out; ++o) {
      const float a = scale ? (*scale)[size_t(o)] : 1.f, b = shift ? (*shift)[size_t(o)] : 0.f;
      for (size_t i = 0; i < per_out; ++i) p.weight[size_t(o) * per_out + i] *= a;
      p.bias[size_t(o)] = p.bias[size_t(o)] * a + b;
    }
    std::visit(
        [](auto& attrs) {
          if constexpr (requires { attrs.has_bias; }) attrs.has_bias = true;
        },
        node.op);
    ++counts_[n.op_type() + " folded into the op before it"];
    consume(x);
    define(n.output(0), x);
    return Status::ok();
  }
  RETURN_ERROR_IF(x.flat, ErrorCode::kInvalidArgument,
                  "a per-channel scale or shift of a flattened tensor is supported only right after Gemm / MatMul");
  const int channels = shape_of(x.terms).c;
  ir::ParamTensor p;
  p.weight = scale ? *scale : std::vector<float>(size_t(channels), 1.f);
  if (shift) p.bias = *shift;
  ++counts_[n.op_type() + " run as a 1x1 depthwise convolution (no convolution before it to fold into)"];
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v,
                   emit(n.name(), ir::Conv(channels).grouped(channels).bias(shift != nullptr).act(ir::Act::kNone),
                        x.terms, std::move(p)));
  Activation out{{{v}}};
  out.channels_last = x.channels_last;
  define(n.output(0), std::move(out));
  return Status::ok();
}

Status Importer::batch_norm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t training, at.get_int("training_mode", 0));
  RETURN_ERROR_IF(training != 0, ErrorCode::kInvalidArgument, "training_mode = 1 is not inference");
  RETURN_IF_ERROR(only_first_output_used(n));
  ASSIGN_OR_RETURN(float eps, at.get_float("epsilon", 1e-5f));
  const int channels = channels_of(*x);
  std::array<const Constant*, 4> c{};  // scale, bias, mean, var
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(c[size_t(i)], const_input(n, i + 1));
    RETURN_ERROR_IF(c[size_t(i)]->numel() != channels, ErrorCode::kInvalidArgument,
                    "input " + std::to_string(i + 1) + " has " + std::to_string(c[size_t(i)]->numel()) +
                        " values for " + std::to_string(channels) + " channels");
  }
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (size_t ch = 0; ch < size_t(channels); ++ch) {
    RETURN_ERROR_IF(!(c[3]->floats[ch] + eps > 0.f), ErrorCode::kInvalidArgument,
                    "variance + epsilon is " + std::to_string(c[3]->floats[ch] + eps) + " at channel " +
                        std::to_string(ch) + "; it must be positive");
    scale[ch] = c[0]->floats[ch] / std::sqrt(c[3]->floats[ch] + eps);
    shift[ch] = c[1]->floats[ch] - c[2]->floats[ch] * scale[ch];
  }
  return channel_affine(n, *x, &scale, &shift);
}

Status Importer::activation(const onnx::NodeProto& n, ir::Act act) {
  ASSIGN_OR_RETURN(const Activation* x, element_act_input(n, 0));
  if (NodeId id = foldable(*x, false); id != ir::kNoNode) {
    std::visit(
        [act](auto& attrs) {
          if constexpr (requires { attrs.activation; }) attrs.activation = act;
        },
        g_.nodes[size_t(id)].op);
    ++counts_[n.op_type() + " fused into the op before it"];
    consume(*x);
    define(n.output(0), *x);
    return Status::ok();
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ActivationAttrs{act}, x->terms));
  Activation out{{{v}}, x->flat};
  out.channels_last = x->channels_last;
  out.dims = x->dims;
  define(n.output(0), std::move(out));
  return Status::ok();
}

// Clip(0, 6) is relu6 and Clip(0, inf) relu; other bounds are not an activation the IR has.
Status Importer::clip(const onnx::NodeProto& n) {
  float lo = -INFINITY, hi = INFINITY;
  if (opset_ >= 11) {
    for (int i : {1, 2}) {
      if (!has_input(n, i)) continue;
      ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
      RETURN_ERROR_IF(c->numel() != 1, ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " must be a scalar");
      (i == 1 ? lo : hi) = c->floats[0];
    }
  } else {
    const Attributes at(n);
    ASSIGN_OR_RETURN(lo, at.get_float("min", -INFINITY));
    ASSIGN_OR_RETURN(hi, at.get_float("max", INFINITY));
  }
  if (lo == 0.f && hi == 6.f) return activation(n, ir::Act::kRelu6);
  if (lo == 0.f && std::isinf(hi) && hi > 0) return activation(n, ir::Act::kRelu);
  return bad("Clip(min " + std::to_string(lo) + ", max " + std::to_string(hi) +
             ") is not supported: only Clip(0, 6) (relu6) and Clip(0, inf) (relu)");
}

// An attribute that must have the value the activation table's row was written for.
Status require_float(const Attributes& at, const std::string& name, float fallback, float wanted, const char* why) {
  ASSIGN_OR_RETURN(float v, at.get_float(name, fallback));
  RETURN_ERROR_IF(std::fabs(v - wanted) > 1e-6f * std::max(1.f, std::fabs(wanted)), ErrorCode::kInvalidArgument,
                  "attribute '" + name + "' is " + std::to_string(v) + "; only " + std::to_string(wanted) + " (" + why +
                      ") is supported");
  return Status::ok();
}

// HardSigmoid(alpha 1/6, beta 1/2): PyTorch's hardsigmoid, and the gate of hard-swish.
Status Importer::hard_sigmoid(const onnx::NodeProto& n) {
  const Attributes at(n);
  RETURN_IF_ERROR(require_float(at, "alpha", 0.2f, 1.f / 6.f, "PyTorch's hardsigmoid"));
  RETURN_IF_ERROR(require_float(at, "beta", 0.5f, 0.5f, "PyTorch's hardsigmoid"));
  return activation(n, ir::Act::kHardSigmoid);
}

// Swish(alpha 1) = x * sigmoid(x): SiLU (also what x * Sigmoid(x) is rewritten to, onnx_patterns.h).
Status Importer::swish(const onnx::NodeProto& n) {
  RETURN_IF_ERROR(require_float(Attributes(n), "alpha", 1.f, 1.f, "SiLU"));
  return activation(n, ir::Act::kSilu);
}

Status Importer::gelu(const onnx::NodeProto& n) {
  const Expected<std::string> approximate = Attributes(n).get_string("approximate", "none");
  if (!approximate) return approximate.status();
  if (*approximate == "none") return activation(n, ir::Act::kGelu);
  if (*approximate == "tanh") return activation(n, ir::Act::kGeluTanh);
  return bad("attribute 'approximate' must be none or tanh, got '" + to_valid_utf8(*approximate) + "'");
}

Status Importer::elu(const onnx::NodeProto& n) {
  RETURN_IF_ERROR(require_float(Attributes(n), "alpha", 1.f, 1.f, "the default"));
  return activation(n, ir::Act::kElu);
}

// PyTorch's default slope (timm's CSP and Darknet nets) is the table's activation, fused into the producer;
// any other slope (TResNet's 1e-3) is a PRelu of that slope on every channel.
Status Importer::leaky_relu(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(float alpha, Attributes(n).get_float("alpha", 0.01f));
  if (alpha == 0.01f) return activation(n, ir::Act::kLeakyRelu);
  RETURN_ERROR_IF(!std::isfinite(alpha), ErrorCode::kInvalidArgument, "attribute 'alpha' must be finite");
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D tensor");
  return emit_prelu(n, *x, std::vector<float>(size_t(channels_of(*x)), alpha));
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
  RETURN_ERROR_IF(d[0] != 1 || d[1] != 1, ErrorCode::kInvalidArgument, "dilated pooling is not supported");
  ASSIGN_OR_RETURN(int64_t ceil_mode, at.get_int("ceil_mode", 0));
  ASSIGN_OR_RETURN(int64_t include_pad, at.get_int("count_include_pad", 0));
  const ir::Shape in = shape_of(x->terms);
  ASSIGN_OR_RETURN(Pads p, resolve_pads(at, in, k, s, ceil_mode != 0));
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
  attrs.kernel(k[0], k[1]).stride(s[0], s[1]).pad(p.top, p.left).ceil(ceil_mode != 0).include_pad(include_pad != 0);
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

// PRelu: a slope per channel, or one for all (repeated over the channels).
Status Importer::prelu(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D tensor");
  ASSIGN_OR_RETURN(const Constant* slope, const_input(n, 1));
  const int channels = channels_of(*x);
  std::vector<float> slopes;
  if (slope->numel() == 1) {
    slopes.assign(size_t(channels), slope->floats.at(0));
  } else {
    ASSIGN_OR_RETURN(slopes, per_channel(*slope, *x, channels));
  }
  return emit_prelu(n, *x, std::move(slopes));
}

Status Importer::emit_prelu(const onnx::NodeProto& n, const Activation& x, std::vector<float> slopes) {
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::PReluAttrs{}, x.terms, ir::ParamTensor{std::move(slopes), {}}));
  Activation out{{{v}}};
  out.channels_last = x.channels_last;
  define(n.output(0), std::move(out));
  return Status::ok();
}

// ReduceMean / ReduceMax over H and W: a global pool; without keepdims the result is (batch, C), as a
// Flatten after it would give. Axes come from the attribute (opset < 18) or the second input (18+).
Status Importer::reduce(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  const Attributes at(n);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_input(n, 1));
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  RETURN_ERROR_IF(axes != std::vector<int64_t>({2, 3}), ErrorCode::kInvalidArgument,
                  "only a reduction over the spatial axes (2, 3) is supported");
  ASSIGN_OR_RETURN(int64_t keepdims, at.get_int("keepdims", 1));
  ir::PoolAttrs attrs;
  attrs.kind = n.op_type() == "ReduceMean" ? ir::PoolKind::kGlobalAvg : ir::PoolKind::kGlobalMax;
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, x->terms));
  define(n.output(0), Activation{{{v}}, keepdims == 0});
  return Status::ok();
}

// Gemm and MatMul read (batch, features): a 4-D input would multiply along its width instead.
Status Importer::needs_flat(const Activation& x) const {
  RETURN_ERROR_IF(!x.flat, ErrorCode::kInvalidArgument,
                  "input 0 is a 4-D tensor " + shape_of(x.terms).to_string() +
                      "; only (batch, features) is supported here (Flatten or Reshape it first)");
  return Status::ok();
}

Status Importer::linear(const onnx::NodeProto& n, const Activation& x, std::vector<float> weight, int out,
                        const std::vector<float>* bias) {
  ir::ParamTensor p{std::move(weight), bias ? *bias : std::vector<float>{}};
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v,
                   emit(n.name(), ir::LinearAttrs{out, bias != nullptr, ir::Act::kNone}, x.terms, std::move(p)));
  define(n.output(0), Activation{{{v}}, true});
  return Status::ok();
}

// The (in, out) or (out, in) matrix as the IR's row-major [out][in].
std::vector<float> as_out_by_in(const Constant& m, bool transposed) {
  if (!transposed) return m.floats;
  const auto in = size_t(m.dims[0]), out = size_t(m.dims[1]);
  std::vector<float> w(in * out);
  for (size_t i = 0; i < in; ++i)
    for (size_t o = 0; o < out; ++o) w[o * in + i] = m.floats[i * out + o];
  return w;
}

Status Importer::gemm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* b, const_input(n, 1));
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t trans_a, at.get_int("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, at.get_int("transB", 0));
  ASSIGN_OR_RETURN(float alpha, at.get_float("alpha", 1.f));
  ASSIGN_OR_RETURN(float beta, at.get_float("beta", 1.f));
  RETURN_ERROR_IF(trans_a != 0, ErrorCode::kInvalidArgument, "transA = 1 is not supported");
  RETURN_IF_ERROR(needs_flat(*x));
  RETURN_ERROR_IF(b->dims.size() != 2, ErrorCode::kInvalidArgument, "input 1 must be a matrix");
  const int64_t in = shape_of(x->terms).numel();
  const int64_t k = trans_b ? b->dims[1] : b->dims[0], out = trans_b ? b->dims[0] : b->dims[1];
  RETURN_ERROR_IF(k != in, ErrorCode::kInvalidArgument,
                  "matrix has " + std::to_string(k) + " rows for " + std::to_string(in) + " input features");
  std::vector<float> weight = as_out_by_in(*b, trans_b == 0);
  for (float& v : weight) v *= alpha;
  std::optional<std::vector<float>> bias;
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 2));
    // C broadcasts to (batch, out): shapes [], [1], [out], [1, 1] and [1, out] do; [out, 1] would be per sample.
    const auto& d = c->dims;
    const bool broadcasts = (d.empty() || (d.size() == 1 && (d[0] == 1 || d[0] == out)) ||
                             (d.size() == 2 && d[0] == 1 && (d[1] == 1 || d[1] == out)));
    RETURN_ERROR_IF(!broadcasts, ErrorCode::kInvalidArgument,
                    "bias of shape " + shape_text(d) + " does not broadcast to (batch, " + std::to_string(out) +
                        "); it must be [" + std::to_string(out) + "], [1, " + std::to_string(out) + "] or a scalar");
    bias = c->numel() == 1 ? std::vector<float>(size_t(out), c->floats[0]) : c->floats;
    for (float& v : *bias) v *= beta;
  }
  return linear(n, *x, std::move(weight), int(out), bias ? &*bias : nullptr);
}

Status Importer::matmul(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
  if (x->channels_last) return pointwise_matmul(n, *x);
  RETURN_IF_ERROR(needs_flat(*x));
  ASSIGN_OR_RETURN(const Constant* b, const_input(n, 1));
  RETURN_ERROR_IF(b->dims.size() != 2, ErrorCode::kInvalidArgument, "input 1 must be a matrix");
  const int64_t in = shape_of(x->terms).numel();
  RETURN_ERROR_IF(b->dims[0] != in, ErrorCode::kInvalidArgument,
                  "matrix has " + std::to_string(b->dims[0]) + " rows for " + std::to_string(in) + " input features");
  return linear(n, *x, as_out_by_in(*b, true), int(b->dims[1]), nullptr);
}

}  // namespace ios::onnx_import::detail
