// ONNX handlers of views of pooled tensors. A (N, C, 1, 1) tensor holds its C values in the same order
// whatever shape it is given, so Reshape, Squeeze, Unsqueeze and order-keeping Transposes of it only
// relabel its dimensions (Activation::dims). ECA's gate is written that way: the pooled channels as a
// (N, 1, C) signal, a Conv1d over it (one channel_conv step), a Sigmoid, a Reshape back to (N, C, 1, 1)
// and an Expand to the full tensor it multiplies.
#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

namespace {

bool pooled(const ir::Shape& s) { return s.h == 1 && s.w == 1; }

}  // namespace

std::vector<int64_t> Importer::view_dims(const Activation& x) const {
  if (!x.dims.empty()) return x.dims;
  const ir::Shape s = shape_of(x.terms);
  if (x.flat) return {batch_, s.numel()};
  return {batch_, s.c, s.h, s.w};
}

bool Importer::relabels(const Activation& x) const {
  return pooled(shape_of(x.terms)) && !x.channels_last && x.shuffle_groups == 0 && x.norm_groups == 0 &&
         x.expand_h == 0;
}

// `x` with the dimensions `dims` (as many values as it has): (N, C, 1, 1) and (N, C) are the plain and the
// flattened tensor again, any other shape a view.
Status Importer::define_view(const onnx::NodeProto& n, const Activation& x, std::vector<int64_t> dims,
                             const ir::Inputs* terms) {
  const int64_t c = shape_of(x.terms).c;
  // At batch 1 a vector of the C values is a view too (the dynamo exporter's as_strided: Reshape to (-1),
  // then a Gather of every index).
  const bool vector = batch_ == 1 && dims.size() == 1 && dims[0] == c;
  RETURN_ERROR_IF(dims.empty() || (dims[0] != batch_ && !vector), ErrorCode::kInvalidArgument,
                  "the view of a pooled (N, " + std::to_string(c) + ", 1, 1) tensor must keep the batch (" +
                      std::to_string(batch_) + ") as its first dimension");
  Activation out{terms ? *terms : x.terms};
  if (dims == std::vector<int64_t>{batch_, c}) {
    out.flat = true;
  } else if (dims != std::vector<int64_t>{batch_, c, 1, 1}) {
    out.dims = std::move(dims);
  }
  consume(x);
  define(n.output(0), std::move(out));
  ++counts_["Reshapes, Squeezes and Unsqueezes of pooled (N, C, 1, 1) tensors kept as views"];
  return Status::ok();
}

// Squeeze and Unsqueeze of a pooled tensor (axes from the attribute before opset 13, the second input
// from it); of constants they are shape arithmetic, folded before the handlers run.
Status Importer::squeeze(const onnx::NodeProto& n) {
  if (consts_.count(n.input(0))) return constant_only(n);
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(bool stacked, stack_view(n, *x));
  if (stacked) return Status::ok();
  RETURN_ERROR_IF(!relabels(*x), ErrorCode::kInvalidArgument,
                  "only a pooled (N, C, 1, 1) tensor (or a view of one) can be squeezed or unsqueezed; input 0 is " +
                      shape_of(x->terms).to_string() + " per sample");
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_input(n, 1));
  std::vector<int64_t> dims = view_dims(*x);
  const bool un = n.op_type() == "Unsqueeze";
  RETURN_ERROR_IF(un && axes.empty(), ErrorCode::kInvalidArgument, "has no axes");
  const int64_t rank = int64_t(dims.size()) + (un ? int64_t(axes.size()) : 0);
  RETURN_ERROR_IF(rank > 8, ErrorCode::kInvalidArgument, "a view of more than 8 dimensions is not supported");
  for (int64_t& a : axes) {
    RETURN_ERROR_IF(a < -rank || a >= rank, ErrorCode::kInvalidArgument,
                    "axis " + std::to_string(a) + " is outside the " + std::to_string(rank) + " dimensions");
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  RETURN_ERROR_IF(std::adjacent_find(axes.begin(), axes.end()) != axes.end(), ErrorCode::kInvalidArgument,
                  "an axis is named twice");
  if (un) {
    for (int64_t a : axes) dims.insert(dims.begin() + a, 1);
  } else if (axes.empty()) {  // every unit dimension but the batch's (which may be 1 too)
    dims.erase(std::remove(dims.begin() + 1, dims.end(), int64_t{1}), dims.end());
  } else {
    for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
      RETURN_ERROR_IF(dims[size_t(*a)] != 1, ErrorCode::kInvalidArgument,
                      "axis " + std::to_string(*a) + " has size " + std::to_string(dims[size_t(*a)]) + ", not 1");
      dims.erase(dims.begin() + *a);
    }
  }
  return define_view(n, *x, std::move(dims));
}

// A Transpose of a pooled tensor that keeps its dimensions larger than 1 in order relabels it.
Expected<bool> Importer::transpose_view(const onnx::NodeProto& n, const Activation& x,
                                        const std::vector<int64_t>& perm) {
  if (!relabels(x) || (x.dims.empty() && !x.flat && perm.size() == 4 && perm != std::vector<int64_t>{0, 1, 2, 3} &&
                       (perm == std::vector<int64_t>{0, 2, 3, 1} || perm == std::vector<int64_t>{0, 3, 1, 2})))
    return false;  // Transposes between NCHW and channels-last keep their meaning
  const std::vector<int64_t> dims = view_dims(x);
  if (perm.size() != dims.size() || perm.empty() || perm[0] != 0) return false;
  std::vector<int64_t> out, kept_order;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(dims.size())) return false;
    out.push_back(dims[size_t(p)]);
    if (dims[size_t(p)] != 1) kept_order.push_back(p);
  }
  if (std::is_sorted(kept_order.begin(), kept_order.end())) {
    RETURN_IF_ERROR(define_view(n, x, std::move(out)));
    return true;
  }
  // Axes of a pooled vector reordered (ResNeSt's rSoftMax: (N, cardinality, radix, C') to (N, radix,
  // cardinality, C')): its channels permuted, as channel slices of the one pooled value.
  ASSIGN_OR_RETURN(ir::Inputs permuted, permuted_channels(x, dims, perm, n.name() + "/in"));
  ++counts_["Transposes of pooled tensors kept as channel slices in the new order"];
  RETURN_IF_ERROR(define_view(n, x, std::move(out), &permuted));
  return true;
}

// The channels of pooled `x`, viewed as `dims` (batch first), in the order of its transpose by `perm`:
// consecutive channels of the source are one slice.
Expected<ir::Inputs> Importer::permuted_channels(const Activation& x, const std::vector<int64_t>& dims,
                                                 const std::vector<int64_t>& perm, const std::string& name) {
  ASSIGN_OR_RETURN(ir::Value v, materialize(x, name));
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 1; --i) stride[i - 1] = stride[i] * dims[i];
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[size_t(p)]);
  std::vector<int64_t> coord(dims.size(), 0);  // the output's multi-index; coord[0] (batch) stays 0
  ir::Inputs terms;
  for (int64_t o = 0; o < v.channels(); ++o) {
    int64_t src = 0;
    for (size_t k = 1; k < perm.size(); ++k) src += coord[k] * stride[size_t(perm[k])];
    ir::Value& last = terms.empty() ? v : terms.back()[0];
    if (!terms.empty() && last.end == v.begin + int(src))
      ++last.end;
    else
      terms.push_back(ir::Term{v.slice(int(src), int(src) + 1)});
    for (size_t k = perm.size(); k-- > 1;) {  // the next output index, last axis fastest
      if (++coord[k] < out_dims[k]) break;
      coord[k] = 0;
    }
  }
  return terms;
}

// Gather on axis 0 of a pooled tensor viewed as one vector, of every index in order: a view of the indices'
// shape (how the dynamo exporter writes as_strided after a pooling). Of constants it is folded earlier.
Status Importer::gather(const onnx::NodeProto& n) {
  if (consts_.count(n.input(0))) return constant_only(n);
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* indices, const_input(n, 1));
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 0));
  const std::vector<int64_t> dims = relabels(*x) ? view_dims(*x) : std::vector<int64_t>{};
  bool in_order = dims.size() == 1 && axis == 0 && int64_t(indices->ints.size()) == dims[0];
  for (size_t i = 0; in_order && i < indices->ints.size(); ++i) in_order = indices->ints[i] == int64_t(i);
  RETURN_ERROR_IF(!in_order, ErrorCode::kInvalidArgument,
                  "a Gather of an activation is supported only as every index in order of a pooled tensor viewed as "
                  "a vector (as_strided); other gathers are supported on constants");
  return define_view(n, *x, indices->dims);
}

// Expand of a pooled (N, C, 1, 1) tensor to (N, C, H, W): the IR multiplies by a C x 1 x 1 factor without
// one, so it stays a marked factor that only an element-wise product reads.
Status Importer::expand(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* shape, const_input(n, 1));
  const ir::Shape s = shape_of(x->terms);
  const std::vector<int64_t> dims = view_dims(*x);
  std::vector<int64_t> target = shape->ints;
  RETURN_ERROR_IF(x->shuffle_groups != 0 || x->norm_groups != 0 || x->channels_last || x->flat || !x->dims.empty() ||
                      target.size() > 4,
                  ErrorCode::kInvalidArgument, "only an Expand of a 4-D (N, C, H, W) tensor is supported");
  target.insert(target.begin(), 4 - target.size(), 1);
  std::vector<int64_t> out(4);
  for (size_t i = 0; i < 4; ++i) {
    RETURN_ERROR_IF(target[i] != 1 && dims[i] != 1 && target[i] != dims[i], ErrorCode::kInvalidArgument,
                    "shape does not broadcast from the input's " + s.to_string());
    out[i] = dims[i] == 1 ? target[i] : dims[i];
  }
  RETURN_ERROR_IF(out[0] != batch_ || out[1] != s.c, ErrorCode::kInvalidArgument,
                  "only an Expand over H and W is supported (batch and channels kept)");
  RETURN_ERROR_IF(out[2] > limits::kMaxSpatial || out[3] > limits::kMaxSpatial, ErrorCode::kInvalidArgument,
                  "shape exceeds the spatial limit");
  Activation e = *x;
  if (out[2] != s.h || out[3] != s.w) {
    RETURN_ERROR_IF(!pooled(s), ErrorCode::kInvalidArgument,
                    "only a pooled (N, C, 1, 1) tensor can be expanded over H and W, not " + s.to_string());
    e.expand_h = int(out[2]);
    e.expand_w = int(out[3]);
  }
  consume(*x);
  define(n.output(0), std::move(e));
  return Status::ok();
}

// A Conv1d over a (N, 1, C) view of pooled channels, one input and one output channel: ECA's gate.
Status Importer::channel_conv(const onnx::NodeProto& n, const Activation& x, const Constant& w) {
  const int64_t c = shape_of(x.terms).c;
  RETURN_ERROR_IF(
      x.dims != std::vector<int64_t>({batch_, 1, c}) || w.dims.size() != 3 || w.dims[0] != 1 || w.dims[1] != 1,
      ErrorCode::kInvalidArgument,
      "a 1-D convolution is supported over the (N, 1, C) view of pooled channels with one input and one "
      "output channel (ECA)");
  const Attributes at(n);
  const int64_t k = w.dims[2];
  ASSIGN_OR_RETURN(auto kernel, at.get_ints("kernel_shape", {k}));
  ASSIGN_OR_RETURN(auto strides, at.get_ints("strides", {1}));
  ASSIGN_OR_RETURN(auto dilations, at.get_ints("dilations", {1}));
  ASSIGN_OR_RETURN(int64_t group, at.get_int("group", 1));
  ASSIGN_OR_RETURN(auto pads, at.get_ints("pads", {0, 0}));
  ASSIGN_OR_RETURN(std::string auto_pad, at.get_string("auto_pad", "NOTSET"));
  RETURN_ERROR_IF(kernel != std::vector<int64_t>{k} || strides != std::vector<int64_t>{1} ||
                      dilations != std::vector<int64_t>{1} || group != 1 || auto_pad != "NOTSET",
                  ErrorCode::kInvalidArgument,
                  "a 1-D convolution over channels is supported with stride 1, dilation 1, group 1 and explicit pads");
  RETURN_ERROR_IF(
      pads.size() != 2 || pads[0] < 0 || pads[1] < 0 || pads[0] + pads[1] != k - 1, ErrorCode::kInvalidArgument,
      "attribute 'pads' of a 1-D convolution over channels must add up to kernel - 1 = " + std::to_string(k - 1) +
          " (the output keeps the channels)");
  ir::ParamTensor params{w.floats, {}};
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* b, const_input(n, 2));
    RETURN_ERROR_IF(b->numel() != 1, ErrorCode::kInvalidArgument, "bias must hold one value");
    params.bias = b->floats;
  }
  const ir::ChannelConvAttrs attrs{int(k), int(pads[0]), has_input(n, 2)};
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, x.terms, std::move(params)));
  Activation out{{{v}}};
  out.dims = x.dims;
  define(n.output(0), std::move(out));
  ++counts_["1-D convolutions over pooled channels (ECA) imported as channel_conv"];
  return Status::ok();
}

}  // namespace ios::onnx_import::detail
