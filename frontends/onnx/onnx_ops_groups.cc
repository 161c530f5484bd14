// ONNX handlers over groups of channels: the 5-D (N, g, C/g, H, W) views of split attention. SKNet stacks
// its paths (Unsqueeze on axis 1, Concat), ResNeSt reshapes one convolution's output into its radix groups;
// both sum the groups, pool, compute per-channel logits, take a softmax across the groups, weight each group
// by its share (Mul of two views) and sum the groups again. In the IR a view is the tensor's channels, a
// softmax across groups is one channel_softmax step, and a sum over groups is one term of channel slices.
#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

bool Importer::group_view(const Activation& x) const {
  return x.shuffle_groups != 0 && !x.shuffle_swapped && x.dims.empty() && x.expand_h == 0;
}

// Softmax along one axis where that axis splits the channels into groups: the channels of a 4-D tensor (or
// of a flattened pooled one), the groups of a 5-D view, the groups of a view of a pooled tensor.
Status Importer::softmax(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  RETURN_ERROR_IF(x->norm_groups != 0 || x->shuffle_swapped || x->expand_h != 0, ErrorCode::kInvalidArgument,
                  "a softmax of this view of input 0 is not supported");
  const ir::Shape s = shape_of(x->terms);
  std::vector<int64_t> dims;
  if (group_view(*x)) {
    dims = {batch_, x->shuffle_groups, s.c / x->shuffle_groups, s.h, s.w};
  } else if (x->channels_last) {
    dims = {batch_, s.h, s.w, s.c};
  } else {
    dims = view_dims(*x);
  }
  const int64_t rank = int64_t(dims.size());
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", opset_ >= 13 ? -1 : 1));
  RETURN_ERROR_IF(
      axis < -rank || axis >= rank, ErrorCode::kInvalidArgument,
      "attribute 'axis' = " + std::to_string(axis) + " is outside the " + std::to_string(rank) + " dimensions");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 1; i < axis; ++i) outer *= dims[size_t(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= dims[size_t(i)];
  // Before opset 13 the axes from `axis` on are one flattened axis: the same softmax where they are 1.
  RETURN_ERROR_IF(opset_ < 13 && inner != 1 && !x->channels_last, ErrorCode::kInvalidArgument,
                  "before opset 13 a softmax normalizes every axis from 'axis' on; supported only where those after "
                  "it are 1");
  const int64_t groups = dims[size_t(axis)], plane = int64_t(s.h) * s.w;
  const bool over_channels = x->channels_last ? axis == 3 : (outer == 1 && inner % plane == 0 && axis >= 1);
  RETURN_ERROR_IF(!over_channels, ErrorCode::kInvalidArgument,
                  "only a softmax over the channels or over groups of channels is supported, not over axis " +
                      std::to_string(axis) + " of " + std::to_string(rank));
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ChannelSoftmaxAttrs{int(groups)}, x->terms));
  Activation out = *x;
  out.terms = {{v}};
  define(n.output(0), std::move(out));
  return Status::ok();
}

// ReduceSum over the groups of a 5-D view: the sum of its channel slices. Of constants it is folded earlier.
Status Importer::reduce_sum(const onnx::NodeProto& n) {
  if (consts_.count(n.input(0))) return constant_only(n);
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_input(n, 1));
  ASSIGN_OR_RETURN(int64_t keepdims, Attributes(n).get_int("keepdims", 1));
  RETURN_ERROR_IF(!group_view(*x) || axes.size() != 1 || (axes[0] != 1 && axes[0] != -4), ErrorCode::kInvalidArgument,
                  "only a sum over the groups (axis 1) of a 5-D (N, g, C/g, H, W) view is supported");
  const int g = x->shuffle_groups, per = shape_of(x->terms).c / g;
  ASSIGN_OR_RETURN(ir::Term all, one_term(*x, n.name() + "/in"));
  ir::Term sum;
  for (const ir::Value& v : all)
    for (int k = 0; k < g; ++k) sum.push_back(v.slice(k * per, (k + 1) * per));
  consume(*x);
  Activation out{{sum}};
  if (keepdims != 0) out.shuffle_groups = 1;  // (N, 1, C/g, H, W)
  if (uses(n.output(0)) > 1) {                // read by several: summed once
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::IdentityAttrs{}, {sum}));
    out.terms = {{v}};
  }
  define(n.output(0), std::move(out));
  ++counts_["sums over groups of a 5-D view read as sums of channel slices"];
  return Status::ok();
}

// Unsqueeze on axis 1 of a 4-D tensor: a 5-D view of one group, which Concat on axis 1 stacks (torch.stack).
Expected<bool> Importer::stack_view(const onnx::NodeProto& n, const Activation& x) {
  if (n.op_type() != "Unsqueeze" || x.flat || x.channels_last || x.shuffle_groups != 0 || x.norm_groups != 0 ||
      !x.dims.empty() || x.expand_h != 0)
    return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_input(n, 1));
  if (axes != std::vector<int64_t>{1} && axes != std::vector<int64_t>{-4}) return false;
  Activation out = x;
  out.shuffle_groups = 1;
  consume(x);
  define(n.output(0), std::move(out));
  return true;
}

// Concat on axis 1 of 5-D views of equal group sizes: their groups in order.
Status Importer::concat_groups(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 1));
  RETURN_ERROR_IF(axis != 1 && axis != -4, ErrorCode::kInvalidArgument,
                  "5-D views are concatenated only on their groups (axis 1)");
  Activation out;
  std::optional<ir::Shape> per;
  for (int i = 0; i < n.input_size(); ++i) {
    ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, i));
    RETURN_ERROR_IF(!group_view(*x), ErrorCode::kInvalidArgument,
                    "input " + std::to_string(i) + " is not a 5-D (N, g, C/g, H, W) view like input 0");
    const ir::Shape s = shape_of(x->terms);
    const ir::Shape group{s.c / x->shuffle_groups, s.h, s.w};
    RETURN_ERROR_IF(per && !(group == *per), ErrorCode::kInvalidArgument,
                    "concatenates groups of " + per->to_string() + " and " + group.to_string());
    per = group;
    out.shuffle_groups += x->shuffle_groups;
    out.terms.insert(out.terms.end(), x->terms.begin(), x->terms.end());
  }
  for (int i = 0; i < n.input_size(); ++i) consume(acts_.at(n.input(i)));
  define(n.output(0), std::move(out));
  return Status::ok();
}

}  // namespace ios::onnx_import::detail
