// ONNX handlers of spatial and layout ops: Resize, Pad, the channel shuffle, channels-last blocks
// (Transpose, LayerNormalization, MatMul), and group normalization's views.
#include <algorithm>

#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

namespace {

Expected<ir::ResizeCoord> resize_coord(const std::string& s) {
  if (s == "half_pixel") return ir::ResizeCoord::kHalfPixel;
  if (s == "pytorch_half_pixel") return ir::ResizeCoord::kPytorchHalfPixel;
  if (s == "align_corners") return ir::ResizeCoord::kAlignCorners;
  if (s == "asymmetric") return ir::ResizeCoord::kAsymmetric;
  return bad("attribute 'coordinate_transformation_mode' = '" + s +
             "' is not supported (half_pixel, pytorch_half_pixel, align_corners and asymmetric are)");
}

Expected<ir::ResizeRound> resize_round(const std::string& s) {
  if (s == "round_prefer_floor") return ir::ResizeRound::kRoundPreferFloor;
  if (s == "round_prefer_ceil") return ir::ResizeRound::kRoundPreferCeil;
  if (s == "floor") return ir::ResizeRound::kFloor;
  if (s == "ceil") return ir::ResizeRound::kCeil;
  return bad("attribute 'nearest_mode' has unknown value '" + s + "'");
}

// An output size as a Resize states it (sizes) or implies it (floor(in * scale)), range-checked.
Expected<int> resize_extent(double value, const char* axis) {
  RETURN_ERROR_IF(!(value >= 1 && value <= limits::kMaxSpatial), ErrorCode::kInvalidArgument,
                  std::string("output ") + axis + " must be in [1, " + std::to_string(limits::kMaxSpatial) + "]");
  return int(value);
}

}  // namespace

// Resize (X, roi, scales, sizes) and Upsample (X, scales): nearest or linear over H and W. Upsample's
// coordinates are asymmetric and its nearest rounds down.
Status Importer::resize(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  RETURN_IF_ERROR(only_first_output_used(n));
  const Attributes at(n);
  const bool legacy = n.op_type() == "Upsample";  // the importer reads opset 11 and later
  ir::ResizeAttrs r;
  ASSIGN_OR_RETURN(std::string mode, at.get_string("mode", "nearest"));
  if (mode == "nearest") {
    r.mode = ir::ResizeMode::kNearest;
  } else if (mode == "linear" || (legacy && mode == "bilinear")) {
    r.mode = ir::ResizeMode::kLinear;
  } else {
    return bad("attribute 'mode' = '" + mode + "' is not supported (nearest and linear are)");
  }
  std::vector<int64_t> axes;
  if (legacy) {
    r.coord = ir::ResizeCoord::kAsymmetric;
    r.round = ir::ResizeRound::kFloor;
  } else {
    ASSIGN_OR_RETURN(std::string coord, at.get_string("coordinate_transformation_mode", "half_pixel"));
    ASSIGN_OR_RETURN(r.coord, resize_coord(coord));
    ASSIGN_OR_RETURN(std::string round, at.get_string("nearest_mode", "round_prefer_floor"));
    ASSIGN_OR_RETURN(r.round, resize_round(round));
    ASSIGN_OR_RETURN(std::string policy, at.get_string("keep_aspect_ratio_policy", "stretch"));
    RETURN_ERROR_IF(policy != "stretch", ErrorCode::kInvalidArgument,
                    "attribute 'keep_aspect_ratio_policy' = '" + policy + "' is not supported (stretch is)");
    ASSIGN_OR_RETURN(axes, at.get_ints("axes", {}));
    const bool h_and_w = axes == std::vector<int64_t>{2, 3} || axes == std::vector<int64_t>{-2, -1};
    RETURN_ERROR_IF(!axes.empty() && !h_and_w, ErrorCode::kInvalidArgument,
                    "attribute 'axes' must name H and W ([2, 3]) where given");
  }
  const size_t rank = axes.empty() ? 4 : 2;
  ASSIGN_OR_RETURN(const Constant* scales, optional_const(n, legacy ? 1 : 2));
  ASSIGN_OR_RETURN(const Constant* sizes, legacy ? Expected<const Constant*>(nullptr) : optional_const(n, 3));
  const ir::Shape in = shape_of(x->terms);
  if (sizes) {
    const auto& v = sizes->ints;
    RETURN_ERROR_IF(v.size() != rank, ErrorCode::kInvalidArgument,
                    "input 'sizes' must have " + std::to_string(rank) + " values");
    RETURN_ERROR_IF(rank == 4 && (v[0] != batch_ || v[1] != in.c), ErrorCode::kInvalidArgument,
                    "input 'sizes' may resize only H and W");
    ASSIGN_OR_RETURN(r.out_h, resize_extent(double(v[rank - 2]), "height"));
    ASSIGN_OR_RETURN(r.out_w, resize_extent(double(v[rank - 1]), "width"));
  } else if (scales) {
    const auto& v = scales->floats;
    RETURN_ERROR_IF(v.size() != rank, ErrorCode::kInvalidArgument,
                    "input 'scales' must have " + std::to_string(rank) + " values");
    RETURN_ERROR_IF(rank == 4 && (v[0] != 1.f || v[1] != 1.f), ErrorCode::kInvalidArgument,
                    "input 'scales' may resize only H and W");
    const double sh = v[rank - 2], sw = v[rank - 1];
    RETURN_ERROR_IF(!(sh > 0 && sw > 0 && sh <= limits::kMaxSpatial && sw <= limits::kMaxSpatial),
                    ErrorCode::kInvalidArgument, "input 'scales' must be positive and finite");
    ASSIGN_OR_RETURN(r.out_h, resize_extent(std::floor(in.h * sh), "height"));
    ASSIGN_OR_RETURN(r.out_w, resize_extent(std::floor(in.w * sw), "width"));
    r.scale_h = sh, r.scale_w = sw;
  } else {
    return bad("neither 'scales' nor 'sizes' is given");
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), r, x->terms));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

// Pad (opset 11+: data, pads, constant_value, axes) of H and W: constant, reflect or edge.
Status Importer::pad(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  ASSIGN_OR_RETURN(std::string mode, Attributes(n).get_string("mode", "constant"));
  ir::PadAttrs a;
  if (mode == "constant") {
    a.mode = ir::PadMode::kConstant;
  } else if (mode == "reflect") {
    a.mode = ir::PadMode::kReflect;
  } else if (mode == "edge") {
    a.mode = ir::PadMode::kEdge;
  } else {
    return bad("attribute 'mode' = '" + mode + "' is not supported (constant, reflect and edge are)");
  }
  ASSIGN_OR_RETURN(const Constant* pads, const_input(n, 1));
  std::vector<int64_t> axes = {0, 1, 2, 3};
  if (has_input(n, 3)) {
    ASSIGN_OR_RETURN(const Constant* given, const_input(n, 3));
    axes = given->ints;
    for (int64_t& ax : axes) ax = ax < 0 ? ax + 4 : ax;
  }
  const auto& p = pads->ints;
  RETURN_ERROR_IF(p.size() != 2 * axes.size(), ErrorCode::kInvalidArgument,
                  "input 'pads' must hold a begin and an end per axis");
  std::array<int64_t, 4> begin{}, end{};
  for (size_t i = 0; i < axes.size(); ++i) {
    RETURN_ERROR_IF(axes[i] < 0 || axes[i] > 3, ErrorCode::kInvalidArgument, "input 'axes' names an axis past 4-D");
    begin[size_t(axes[i])] = p[i], end[size_t(axes[i])] = p[i + axes.size()];
  }
  RETURN_ERROR_IF(begin[0] || end[0] || begin[1] || end[1], ErrorCode::kInvalidArgument,
                  "pads batch or channels; only H and W are supported");
  for (int64_t v : {begin[2], begin[3], end[2], end[3]})
    RETURN_ERROR_IF(
        v < -limits::kMaxPadding || v > limits::kMaxPadding, ErrorCode::kInvalidArgument,
        "pads must be in [-" + std::to_string(limits::kMaxPadding) + ", " + std::to_string(limits::kMaxPadding) + "]");
  a.top = int(begin[2]), a.left = int(begin[3]), a.bottom = int(end[2]), a.right = int(end[3]);
  if (has_input(n, 2) && a.mode == ir::PadMode::kConstant) {
    ASSIGN_OR_RETURN(const Constant* value, const_input(n, 2));
    RETURN_ERROR_IF(value->floats.size() != 1 || std::isnan(value->floats[0]), ErrorCode::kInvalidArgument,
                    "input 'constant_value' must be one value, not NaN");
    // An infinite value (-inf before a max pooling: NASNet's asymmetric pool padding) is the largest finite
    // float of its sign, which a max reads the same (fp16 rounds it back to infinity); graph files hold
    // finite numbers only.
    a.value = std::clamp(value->floats[0], -3.0e38f, 3.0e38f);
  }
  consume(*x);
  if (pad_folds(n, a)) {
    ++counts_["zero Pads taken into the next convolution's padding"];
    Activation padded{x->terms};
    padded.conv_pad = Pads{a.top, a.left, a.bottom, a.right};
    define(n.output(0), std::move(padded));
    return Status::ok();
  }
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), a, x->terms));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

// A zero Pad whose one reader is a 2-D convolution with explicit pads (auto_pad would size its padding by the
// padded input) is that convolution's padding: the convolution pads the unpadded tensor itself.
bool Importer::pad_folds(const onnx::NodeProto& n, const ir::PadAttrs& a) const {
  if (a.mode != ir::PadMode::kConstant || a.value != 0.f || a.top < 0 || a.left < 0 || a.bottom < 0 || a.right < 0)
    return false;
  auto readers = readers_.find(n.output(0));
  if (uses(n.output(0)) != 1 || readers == readers_.end() || readers->second.size() != 1) return false;
  const onnx::NodeProto& r = nodes_[size_t(readers->second[0])];
  if (r.op_type() != "Conv" || !default_domain(r) || r.input_size() < 2 || r.input(0) != n.output(0)) return false;
  auto w = consts_.find(r.input(1));
  Expected<std::string> auto_pad = Attributes(r).get_string("auto_pad", "NOTSET");
  return w != consts_.end() && w->second.dims.size() == 4 && auto_pad && *auto_pad == "NOTSET";
}

// DepthToSpace (mode DCR or CRD) and SpaceToDepth (block-major channels) of an NCHW tensor.
Status Importer::depth_space(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  const Attributes at(n);
  RETURN_ERROR_IF(!at.has("blocksize"), ErrorCode::kInvalidArgument, "attribute 'blocksize' is missing");
  ASSIGN_OR_RETURN(int64_t block, at.get_int("blocksize", 0));
  RETURN_ERROR_IF(block < 1 || block > limits::kMaxWindow, ErrorCode::kInvalidArgument,
                  "attribute 'blocksize' must be in [1, " + std::to_string(limits::kMaxWindow) + "]");
  ir::SpaceDepthAttrs a;
  a.to_depth = n.op_type() == "SpaceToDepth";
  a.block = int(block);
  if (!a.to_depth) {
    ASSIGN_OR_RETURN(std::string mode, at.get_string("mode", "DCR"));
    RETURN_ERROR_IF(mode != "DCR" && mode != "CRD", ErrorCode::kInvalidArgument,
                    "attribute 'mode' must be DCR or CRD, got '" + to_valid_utf8(mode) + "'");
    a.order = mode == "CRD" ? ir::BlockOrder::kCrd : ir::BlockOrder::kDcr;
  }
  return emit_block_move(n, *x, a);
}

Status Importer::emit_block_move(const onnx::NodeProto& n, const Activation& x, const ir::SpaceDepthAttrs& a) {
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), a, x.terms));
  define(n.output(0), Activation{{{v}}});
  return Status::ok();
}

namespace {

// ONNX Reshape's target for an input of dimensions `in`: 0 copies the input's dimension there, -1 takes
// what is left.
Expected<std::vector<int64_t>> reshape_target(const std::vector<int64_t>& in, std::vector<int64_t> shape) {
  int64_t total = 1;
  for (int64_t d : in) total *= d;  // each within the IR's limits: no overflow
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      RETURN_ERROR_IF(i >= in.size(), ErrorCode::kInvalidArgument, "shape copies a dimension the input lacks");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      RETURN_ERROR_IF(inferred >= 0, ErrorCode::kInvalidArgument, "shape has two -1 dimensions");
      inferred = int(i);
      continue;
    }
    RETURN_ERROR_IF(shape[i] < 1 || shape[i] > total / known, ErrorCode::kInvalidArgument,
                    "shape does not fit the input's " + std::to_string(total) + " elements");
    known *= shape[i];
  }
  if (inferred >= 0) {
    RETURN_ERROR_IF(total % known != 0, ErrorCode::kInvalidArgument, "shape does not divide the input");
    shape[size_t(inferred)] = total / known;
  } else {
    RETURN_ERROR_IF(known != total, ErrorCode::kInvalidArgument,
                    "shape does not fit the input's " + std::to_string(total) + " elements");
  }
  return shape;
}

// allowzero = 1 (the dynamo exporter's) reads a 0 as a zero-size axis; without a 0 it changes nothing.
Status check_allow_zero(const onnx::NodeProto& n, const Constant& shape) {
  ASSIGN_OR_RETURN(int64_t allow_zero, Attributes(n).get_int("allowzero", 0));
  RETURN_ERROR_IF(allow_zero != 0 && std::count(shape.ints.begin(), shape.ints.end(), 0) > 0,
                  ErrorCode::kInvalidArgument, "attribute 'allowzero' = 1 with a 0 in the shape is not supported");
  return Status::ok();
}

}  // namespace

// The Reshapes of ShuffleNet's channel shuffle: (N, C, H, W) -> (N, g, C/g, H, W) starts one, and the
// reshape back after Transpose(0,2,1,3,4) is one ChannelShuffle node. False: not a shuffle's reshape.
Expected<bool> Importer::shuffle_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape) {
  // A view of a pooled tensor (the dynamo exporter's softmax over ResNeSt's radix) keeps its values in order:
  // reshaped to 5-D it is a group view as the plain tensor would be.
  const bool pooled_view = !x.dims.empty() && relabels(x);
  if (x.flat || x.channels_last || (!x.dims.empty() && !pooled_view) ||
      (x.shuffle_groups == 0 && shape.ints.size() != 5))
    return false;
  RETURN_IF_ERROR(check_allow_zero(n, shape));
  const ir::Shape s = shape_of(x.terms);
  const int g = x.shuffle_groups;
  const std::vector<int64_t> dims = pooled_view         ? x.dims
                                    : g == 0            ? std::vector<int64_t>{batch_, s.c, s.h, s.w}
                                    : x.shuffle_swapped ? std::vector<int64_t>{batch_, s.c / g, g, s.h, s.w}
                                                        : std::vector<int64_t>{batch_, g, s.c / g, s.h, s.w};
  ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target(dims, shape.ints));
  Activation out = x;
  if (g == 0) {
    if (pooled_view && (t[0] != batch_ || t[3] != 1 || t[4] != 1)) return false;  // another view of it
    RETURN_ERROR_IF(t[0] != batch_ || t[3] != s.h || t[4] != s.w, ErrorCode::kInvalidArgument,
                    "a reshape to 5-D is supported only as a channel shuffle's (N, g, C/g, H, W)");
    out.shuffle_groups = int(t[1]);
    out.shuffle_swapped = false;
    out.dims = {};
    consume(x);
    define(n.output(0), std::move(out));
    return true;
  }
  const std::vector<int64_t> plain{batch_, s.c, s.h, s.w};
  RETURN_ERROR_IF(t != plain, ErrorCode::kInvalidArgument,
                  "a 5-D view is supported only reshaped back to (N, C, H, W)");
  consume(x);
  out.shuffle_groups = 0;
  if (x.shuffle_swapped) {
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ChannelShuffleAttrs{g}, x.terms));
    out = Activation{{{v}}};
    ++counts_["channel shuffles (Reshape, Transpose, Reshape) imported as one op"];
  }
  define(n.output(0), std::move(out));
  return true;
}

// The Reshape to 6-D, Transpose and Reshape to 4-D of kBlockMoveOp (onnx_patterns.h): a move of b x b blocks
// between space and channels where the 6-D view and the permutation are one of the four the block orders give.
Status Importer::block_move(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  ASSIGN_OR_RETURN(const Constant* view_shape, const_input(n, 1));
  ASSIGN_OR_RETURN(const Constant* back_shape, const_input(n, 2));
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, Attributes(n).get_ints("perm", {}));
  RETURN_IF_ERROR(check_allow_zero(n, *view_shape));
  RETURN_IF_ERROR(check_allow_zero(n, *back_shape));
  const ir::Shape s = shape_of(x->terms);
  const int64_t N = batch_, C = s.c, H = s.h, W = s.w;
  ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target({N, C, H, W}, view_shape->ints));
  using P = std::vector<int64_t>;
  std::optional<ir::SpaceDepthAttrs> move;
  auto accept = [&](bool to_depth, int64_t b, ir::BlockOrder order) {
    if (b >= 1 && b <= limits::kMaxWindow) move = ir::SpaceDepthAttrs{to_depth, int(b), order};
  };
  if (t.size() == 6 && t[0] == N) {
    const int64_t b = t[3];
    if (t == P{N, C, H / b, b, W / b, b} && perm == P{0, 3, 5, 1, 2, 4}) accept(true, b, ir::BlockOrder::kDcr);
    if (t == P{N, C, H / b, b, W / b, b} && perm == P{0, 1, 3, 5, 2, 4}) accept(true, b, ir::BlockOrder::kCrd);
    if (t == P{N, t[1], t[1], C / (t[1] * t[1]), H, W} && perm == P{0, 3, 4, 1, 5, 2})
      accept(false, t[1], ir::BlockOrder::kDcr);
    if (t == P{N, t[1], t[2], t[2], H, W} && t[1] * t[2] * t[2] == C && perm == P{0, 1, 4, 2, 5, 3})
      accept(false, t[2], ir::BlockOrder::kCrd);
  }
  RETURN_ERROR_IF(!move, ErrorCode::kInvalidArgument,
                  "a Reshape to 6-D, Transpose and Reshape is supported only as a move of b x b pixel blocks between "
                  "space and channels (SpaceToDepth, DepthToSpace, PyTorch's pixel shuffles)");
  ASSIGN_OR_RETURN(ir::Shape out, move->infer(s));
  std::vector<int64_t> moved(6);
  for (size_t i = 0; i < 6; ++i) moved[i] = t[size_t(perm[i])];
  ASSIGN_OR_RETURN(std::vector<int64_t> back, reshape_target(moved, back_shape->ints));
  RETURN_ERROR_IF(back != P({N, out.c, out.h, out.w}), ErrorCode::kInvalidArgument,
                  "the block move's last Reshape must give (N, " + std::to_string(out.c) + ", " +
                      std::to_string(out.h) + ", " + std::to_string(out.w) + ")");
  ++counts_["moves of pixel blocks between space and channels (Reshape, Transpose, Reshape) imported as one op"];
  return emit_block_move(n, *x, *move);
}

// A Reshape of a pooled (N, C, 1, 1) tensor, or of a view of one, to any shape that keeps the batch first:
// a view (onnx_ops_view.cc). False: not a pooled tensor.
Expected<bool> Importer::view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape) {
  if (!relabels(x)) return false;
  RETURN_IF_ERROR(check_allow_zero(n, shape));
  RETURN_ERROR_IF(shape.ints.size() > 8, ErrorCode::kInvalidArgument,
                  "a view of more than 8 dimensions is not supported");
  ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target(view_dims(x), shape.ints));
  if (t.empty() || (t[0] != batch_ && !(batch_ == 1 && t.size() == 1)))
    return false;  // the flattening Reshapes name what is supported
  RETURN_IF_ERROR(define_view(n, x, std::move(t)));
  return true;
}

// The Reshapes around a group normalization as PyTorch exports GroupNorm: (N, C, H, W) -> (N, g, -1) starts a
// view that InstanceNormalization normalizes per group, and the reshape back to (N, C, H, W) ends it. False:
// not such a reshape.
Expected<bool> Importer::group_view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape) {
  if (x.flat || x.channels_last || x.shuffle_groups != 0 || !x.dims.empty()) return false;
  if (x.norm_groups == 0 && shape.ints.size() != 3) return false;
  RETURN_IF_ERROR(check_allow_zero(n, shape));
  const ir::Shape s = shape_of(x.terms);
  const std::vector<int64_t> plain{batch_, s.c, s.h, s.w};
  Activation out = x;
  if (x.norm_groups == 0) {
    ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target(plain, shape.ints));
    RETURN_ERROR_IF(t[0] != batch_ || t[1] < 1 || s.c % t[1] != 0, ErrorCode::kInvalidArgument,
                    "a reshape to 3-D is supported only as a group normalization's (N, g, -1), g dividing the " +
                        std::to_string(s.c) + " channels");
    out.norm_groups = int(t[1]);
  } else {
    const int g = x.norm_groups;
    ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target({batch_, g, int64_t(s.c / g) * s.h * s.w}, shape.ints));
    RETURN_ERROR_IF(t != plain, ErrorCode::kInvalidArgument,
                    "a 3-D view (N, g, -1) is supported only reshaped back to (N, C, H, W)");
    out.norm_groups = 0;
  }
  consume(x);
  define(n.output(0), std::move(out));
  return true;
}

// InstanceNormalization of an (N, C, H, W) tensor normalizes each channel: a group normalization of C
// groups. Of a group view (N, g, -1) it normalizes each group: PyTorch's GroupNorm export.
Status Importer::instance_norm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* any, any_act_input(n, 0));
  const Activation* x = any;
  // A (N, g, C/g) view of a pooled tensor is a group view too.
  const bool pooled_groups = any->dims.size() == 3 && any->expand_h == 0;
  if (any->norm_groups == 0 && !pooled_groups) {
    ASSIGN_OR_RETURN(x, act_input(n, 0));
  }
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D (N, C, H, W) tensor");
  ASSIGN_OR_RETURN(float eps, Attributes(n).get_float("epsilon", 1e-5f));
  const int channels = shape_of(x->terms).c;
  const int groups = x->norm_groups != 0 ? x->norm_groups : pooled_groups ? int(x->dims[1]) : channels;
  ASSIGN_OR_RETURN(const Constant* scale, const_input(n, 1));
  ASSIGN_OR_RETURN(const Constant* shift, const_input(n, 2));
  for (const Constant* c : {scale, shift})
    RETURN_ERROR_IF(c->dims.size() != 1 || c->dims[0] != groups, ErrorCode::kInvalidArgument,
                    "inputs 1 and 2 (scale and B) must hold " + std::to_string(groups) + " values, one per " +
                        (x->norm_groups != 0 ? "group" : "channel"));
  return emit_group_norm(n, *x, groups, eps, scale->floats, shift->floats);
}

// GroupNormalization (opset 18): scale and bias per group before opset 21, per channel from it.
Status Importer::group_norm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D (N, C, H, W) tensor");
  const Attributes at(n);
  ASSIGN_OR_RETURN(float eps, at.get_float("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(int64_t groups, at.get_int("num_groups", 0));
  const int channels = shape_of(x->terms).c;
  RETURN_ERROR_IF(groups < 1 || groups > channels || channels % groups != 0, ErrorCode::kInvalidArgument,
                  "attribute 'num_groups' = " + std::to_string(groups) + " must divide the input's " +
                      std::to_string(channels) + " channels");
  const int64_t per = opset_ >= 21 ? channels : groups;
  ASSIGN_OR_RETURN(const Constant* scale, const_input(n, 1));
  ASSIGN_OR_RETURN(const Constant* shift, const_input(n, 2));
  for (const Constant* c : {scale, shift})
    RETURN_ERROR_IF(c->dims.size() != 1 || c->dims[0] != per, ErrorCode::kInvalidArgument,
                    "inputs 1 and 2 (scale and bias) must hold " + std::to_string(per) + " values at opset " +
                        std::to_string(opset_));
  return emit_group_norm(n, *x, int(groups), eps, scale->floats, shift->floats);
}

// ConvNeXt V2's global response normalization, rewritten from its pattern (onnx_patterns.h): norms over H and
// W, their mean over the channels. The scale, shift and residual after it fold in or sum as usual.
Status Importer::response_norm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D tensor");
  const Attributes at(n);
  auto axes = [&](const char* attr, int input) -> Expected<std::vector<int64_t>> {
    ASSIGN_OR_RETURN(std::vector<int64_t> a, axes_input(n, input, attr));
    for (int64_t& v : a) v = v < 0 ? v + 4 : v;
    std::sort(a.begin(), a.end());
    return a;
  };
  ASSIGN_OR_RETURN(std::vector<int64_t> spatial, axes("spatial_axes", 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> channel, axes("channel_axes", 2));
  const std::vector<int64_t> want_spatial = x->channels_last ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2, 3};
  const std::vector<int64_t> want_channel{x->channels_last ? 3 : 1};
  RETURN_ERROR_IF(spatial != want_spatial || channel != want_channel, ErrorCode::kInvalidArgument,
                  "a global response normalization (ReduceL2, ReduceMean, Div, Mul) is supported with the norm over H "
                  "and W and its mean over the channels");
  ASSIGN_OR_RETURN(float eps, at.get_float("epsilon", 1e-6f));
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidArgument, "epsilon must be in (0, 1]");
  const size_t channels = size_t(channels_of(*x));
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v,
                   emit(n.name(), ir::ResponseNormAttrs{eps}, x->terms,
                        ir::ParamTensor{std::vector<float>(channels, 1.f), std::vector<float>(channels, 0.f)}));
  Activation out{{{v}}};
  out.channels_last = x->channels_last;
  define(n.output(0), std::move(out));
  return Status::ok();
}

// One group_norm node. `scale` and `shift` hold one value per channel, or one per group, repeated here over
// the group's channels.
Status Importer::emit_group_norm(const onnx::NodeProto& n, const Activation& x, int groups, float eps,
                                 std::vector<float> scale, std::vector<float> shift, bool center) {
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidArgument, "attribute 'epsilon' must be in (0, 1]");
  const int channels = shape_of(x.terms).c;
  const int per_value = scale.size() == size_t(channels) ? 1 : channels / groups;
  ir::ParamTensor p;
  for (int c = 0; c < channels; ++c) {
    p.weight.push_back(scale[size_t(c / per_value)]);
    p.bias.push_back(shift[size_t(c / per_value)]);
  }
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::GroupNormAttrs{groups, eps, center}, x.terms, std::move(p)));
  Activation out{{{v}}};
  out.norm_groups = x.norm_groups;
  out.dims = x.dims;
  define(n.output(0), std::move(out));
  if (center)
    ++counts_[x.norm_groups != 0 || !x.dims.empty()
                  ? "group normalizations (Reshape, InstanceNormalization, Reshape) imported as one op"
                  : n.op_type() + " imported as a group normalization"];
  return Status::ok();
}

// x / (the standard deviation of x's channel group), the patterns' kGroupStdDivideOp (EvoNorm-S0): a group
// normalization that does not subtract the mean, of scale 1 and shift 0.
Status Importer::group_std_divide(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D (N, C, H, W) tensor");
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t groups, at.get_int("groups", 1));
  ASSIGN_OR_RETURN(float eps, at.get_float("epsilon", 1e-5f));
  const int channels = channels_of(*x);
  RETURN_ERROR_IF(groups < 1 || groups > channels || channels % groups != 0, ErrorCode::kInvalidArgument,
                  "views " + std::to_string(channels) + " channels as " + std::to_string(groups) +
                      " groups, which do not divide them");
  return emit_group_norm(n, *x, int(groups), eps, std::vector<float>(size_t(channels), 1.f),
                         std::vector<float>(size_t(channels), 0.f), false);
}

// Transpose is supported where it swaps the groups of a channel shuffle's 5-D view, and between NCHW and
// channels-last (N, H, W, C), which changes how later ops read the axes, not the values.
Status Importer::transpose(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, Attributes(n).get_ints("perm", {}));
  const std::vector<int64_t> swap_groups{0, 2, 1, 3, 4}, to_last{0, 2, 3, 1}, to_first{0, 3, 1, 2};
  ASSIGN_OR_RETURN(bool viewed, transpose_view(n, *x, perm));
  if (viewed) return Status::ok();
  Activation out = *x;
  if (x->shuffle_groups != 0 && perm == swap_groups) {
    out.shuffle_swapped = !out.shuffle_swapped;
  } else if (x->shuffle_groups == 0 && x->norm_groups == 0 && !x->flat &&
             perm == (x->channels_last ? to_first : to_last)) {
    out.channels_last = !x->channels_last;
    ++counts_["Transposes between NCHW and channels-last dropped (later ops read the axes accordingly)"];
  } else {
    return bad(
        "only Transpose(0,2,3,1) and (0,3,1,2) between NCHW and channels-last, and the Transpose(0,2,1,3,4) "
        "of a channel shuffle (Reshape to (N, g, C/g, H, W), Transpose, Reshape back) are supported");
  }
  consume(*x);
  define(n.output(0), std::move(out));
  return Status::ok();
}

// LayerNormalization over the channels of a channels-last tensor (its last axis): ConvNeXt's LayerNorm.
Status Importer::layer_norm(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
  RETURN_IF_ERROR(only_first_output_used(n));
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t axis, at.get_int("axis", -1));
  ASSIGN_OR_RETURN(float eps, at.get_float("epsilon", 1e-5f));
  RETURN_ERROR_IF(x->flat || !x->channels_last || (axis != -1 && axis != 3), ErrorCode::kInvalidArgument,
                  "only a normalization over the channels of a channels-last tensor (after Transpose(0,2,3,1), "
                  "axis -1) is supported");
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidArgument, "attribute 'epsilon' must be in (0, 1]");
  const int channels = channels_of(*x);
  ir::ParamTensor p;
  ASSIGN_OR_RETURN(const Constant* scale, const_input(n, 1));
  ASSIGN_OR_RETURN(p.weight, per_channel(*scale, *x, channels));
  p.bias.assign(size_t(channels), 0.f);
  if (has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* shift, const_input(n, 2));
    ASSIGN_OR_RETURN(p.bias, per_channel(*shift, *x, channels));
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ChannelNormAttrs{eps}, x->terms, std::move(p)));
  Activation out{{{v}}};
  out.channels_last = true;
  define(n.output(0), std::move(out));
  return Status::ok();
}

// MatMul of a channels-last tensor by a constant C x K matrix: a 1x1 convolution (ConvNeXt's pointwise MLP,
// nn.Linear applied to (N, H, W, C)).
Status Importer::pointwise_matmul(const onnx::NodeProto& n, const Activation& x) {
  ASSIGN_OR_RETURN(const Constant* b, const_input(n, 1));
  const int channels = channels_of(x);
  RETURN_ERROR_IF(b->dims.size() != 2 || b->dims[0] != channels, ErrorCode::kInvalidArgument,
                  "input 1 must be a matrix of " + std::to_string(channels) + " rows (the channels)");
  RETURN_ERROR_IF(b->dims[1] < 1 || b->dims[1] > limits::kMaxChannels, ErrorCode::kInvalidArgument,
                  "input 1 has more columns than the limit of " + std::to_string(limits::kMaxChannels) + " channels");
  const int out_channels = int(b->dims[1]);
  ir::ParamTensor p{as_out_by_in(*b, true), {}};
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v,
                   emit(n.name(), ir::Conv(out_channels).act(ir::Act::kNone).bias(false), x.terms, std::move(p)));
  Activation out{{{v}}};
  out.channels_last = true;
  ++counts_["MatMuls of channels-last tensors run as 1x1 convolutions"];
  define(n.output(0), std::move(out));
  return Status::ok();
}

}  // namespace ios::onnx_import::detail
