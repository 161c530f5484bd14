// ONNX handlers of the network ops: normalization folded into the convolution before it, activations,
// reductions, and dense layers.
#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

// y = scale * x + shift per channel: folded into the convolution or linear op before it where it is
// that op's only reader, else a 1x1 depthwise convolution (one multiply-add per element).
Status Importer::channel_affine(const onnx::NodeProto& n, const Activation& x, const std::vector<float>* scale,
                                const std::vector<float>* shift) {
  if (const FoldTarget target = foldable(x, true); target.node != ir::kNoNode) {
    ir::Node& node = g_.nodes[size_t(target.node)];
    ir::ParamTensor& p = w_.per_node[size_t(target.node)][0];
    const int out = node.output_shape.c;
    const size_t per_out = p.weight.size() / size_t(out);
    if (p.bias.empty()) p.bias.assign(size_t(out), 0.f);
    for (int o = 0; o < out; ++o) {
      const size_t ch = size_t(o / target.repeat);
      const float a = scale ? (*scale)[ch] : 1.f, b = shift ? (*shift)[ch] : 0.f;
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
  if (const FoldTarget target = foldable(*x, false); target.node != ir::kNoNode) {
    std::visit(
        [act](auto& attrs) {
          if constexpr (requires { attrs.activation; }) attrs.activation = act;
        },
        g_.nodes[size_t(target.node)].op);
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
