// The ONNX importer's internals, shared by its files: the activation as the importer tracks it, and the
// Importer, whose handlers (one per op type) live in onnx_ops_*.cc by family. Not installed.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/file_io.h"
#include "common/limits.h"
#include "common/tensor_file.h"
#include "common/utf8.h"
#include "frontends/onnx/onnx_fold.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/onnx_patterns.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ir/auto_blocks.h"

namespace ios::onnx_import::detail {

using ir::NodeId;

// Padding before and after each spatial axis of a convolution or pooling, as ONNX gives it.
struct Pads {
  int top = 0, left = 0, bottom = 0, right = 0;
  bool symmetric() const { return top == bottom && left == right; }
  bool none() const { return top == 0 && left == 0 && bottom == 0 && right == 0; }
};

// An activation tensor as the IR reads it: terms concatenated on channels, each a sum of values.
// Sums and concats stay lazy until an op needs one node (the IR reads them in its inputs).
struct Activation {
  ir::Inputs terms;
  bool flat = false;  // after Flatten / Reshape to (N, C*H*W): only Gemm / MatMul and element ops read it
  // A channel shuffle in progress: the tensor viewed as (N, g, C/g, H, W) by a Reshape (groups = g), then
  // with g and C/g swapped by a Transpose (swapped). Only those and the Reshape back to 4-D read it.
  int shuffle_groups = 0;
  bool shuffle_swapped = false;
  // After Transpose(0,2,3,1): the same values read as (N, H, W, C), as PyTorch's channels-last blocks
  // (ConvNeXt) write them. Ops on the last axis are ops on channels; Transpose(0,3,1,2) returns.
  bool channels_last = false;
  // A group normalization in progress: the tensor viewed as (N, g, C/g*H*W) by a Reshape (PyTorch's GroupNorm
  // export: Reshape, InstanceNormalization, Reshape back). Only those read it.
  int norm_groups = 0;
  // A pooled (N, C, 1, 1) tensor given other dimensions, its values in the same order: ECA's (N, 1, C)
  // (onnx_ops_view.cc). Empty: (N, C, H, W), or (N, features) when flat. Only views, the 1-D convolution
  // over channels and element-wise activations read it.
  std::vector<int64_t> dims = {};
  // An Expand of a pooled tensor to (N, C, expand_h, expand_w): only an element-wise product reads it, as
  // a per-channel factor.
  int expand_h = 0, expand_w = 0;
  // A zero Pad of these terms whose one reader is a convolution: that convolution pads them itself
  // (Importer::pad_folds), so the padded copy is never made.
  Pads conv_pad = {};
};

inline Status bad(const std::string& msg) { return error(ErrorCode::kInvalidArgument, msg); }

// The (in, out) or (out, in) matrix as the IR's row-major [out][in] (onnx_ops_nn.cc).
std::vector<float> as_out_by_in(const Constant& m, bool transposed);

class Importer {
 public:
  Importer(onnx::GraphProto& graph, int opset, std::string base_dir)
      : graph_(graph), opset_(opset), base_dir_(std::move(base_dir)) {}

  Expected<ImportedModel> run(const std::string& name);

  using Handler = Status (Importer::*)(const onnx::NodeProto&);
  static const std::map<std::string, Handler>& handlers();

 private:
  // Graph-level steps.
  Status read_initializers();
  Status read_input();
  Expected<std::vector<const onnx::NodeProto*>> live_nodes_in_order();
  Status finish_output();
  Status check_finite_parameters() const;
  std::optional<float> scalar(const std::string& name) const;
  std::optional<std::vector<int64_t>> integers(const std::string& name) const;
  // The value of the Constant node writing `name`, before the nodes are imported (the patterns' operands).
  std::optional<Constant> constant_node_value(const std::string& name) const;

  // One handler per op type.
  Status conv(const onnx::NodeProto& n);
  Status conv_transpose(const onnx::NodeProto& n);
  Status emit_prelu(const onnx::NodeProto& n, const Activation& x, std::vector<float> slopes);
  Status batch_norm(const onnx::NodeProto& n);
  Status relu(const onnx::NodeProto& n) { return activation(n, ir::Act::kRelu); }
  Status sigmoid(const onnx::NodeProto& n) { return activation(n, ir::Act::kSigmoid); }
  Status tanh(const onnx::NodeProto& n) { return activation(n, ir::Act::kTanh); }
  Status clip(const onnx::NodeProto& n);
  Status hard_sigmoid(const onnx::NodeProto& n);
  Status hard_swish(const onnx::NodeProto& n) { return activation(n, ir::Act::kHardSwish); }
  Status swish(const onnx::NodeProto& n);
  Status gelu(const onnx::NodeProto& n);
  Status elu(const onnx::NodeProto& n);
  Status softplus(const onnx::NodeProto& n) { return activation(n, ir::Act::kSoftplus); }
  Status mish(const onnx::NodeProto& n) { return activation(n, ir::Act::kMish); }
  Status softsign(const onnx::NodeProto& n) { return activation(n, ir::Act::kSoftsign); }
  Status leaky_relu(const onnx::NodeProto& n);
  Status sqrt(const onnx::NodeProto& n) { return activation(n, ir::Act::kSqrt); }
  Status reciprocal(const onnx::NodeProto& n) { return activation(n, ir::Act::kReciprocal); }
  Status max(const onnx::NodeProto& n);
  Status pow(const onnx::NodeProto& n);
  Status group_std_divide(const onnx::NodeProto& n);
  Status max_pool(const onnx::NodeProto& n) { return pool(n, ir::PoolKind::kMax); }
  Status avg_pool(const onnx::NodeProto& n) { return pool(n, ir::PoolKind::kAvg); }
  Status global_max_pool(const onnx::NodeProto& n) { return global_pool(n, ir::PoolKind::kGlobalMax); }
  Status global_avg_pool(const onnx::NodeProto& n) { return global_pool(n, ir::PoolKind::kGlobalAvg); }
  Status concat(const onnx::NodeProto& n);
  Status reduce(const onnx::NodeProto& n);
  Status slice(const onnx::NodeProto& n);
  Status cast(const onnx::NodeProto& n);
  Status constant_only(const onnx::NodeProto& n);
  Status sub_div(const onnx::NodeProto& n);
  Expected<bool> try_fold(const onnx::NodeProto& n);
  Status split(const onnx::NodeProto& n);
  Status add(const onnx::NodeProto& n);
  Status mul(const onnx::NodeProto& n);
  Status flatten(const onnx::NodeProto& n);
  Status reshape(const onnx::NodeProto& n);
  Status gemm(const onnx::NodeProto& n);
  Status matmul(const onnx::NodeProto& n);
  Status pointwise_matmul(const onnx::NodeProto& n, const Activation& x);
  Status pass_through(const onnx::NodeProto& n);
  Status constant(const onnx::NodeProto& n);
  Status resize(const onnx::NodeProto& n);
  Status transpose(const onnx::NodeProto& n);
  Status layer_norm(const onnx::NodeProto& n);
  Status pad(const onnx::NodeProto& n);
  bool pad_folds(const onnx::NodeProto& n, const ir::PadAttrs& a) const;
  Status depth_space(const onnx::NodeProto& n);
  Status block_move(const onnx::NodeProto& n);
  Status emit_block_move(const onnx::NodeProto& n, const Activation& x, const ir::SpaceDepthAttrs& a);
  Expected<bool> shuffle_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape);
  Expected<bool> group_view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape);
  Status instance_norm(const onnx::NodeProto& n);
  Status subtract(const onnx::NodeProto& n);
  Status divide_constant(const onnx::NodeProto& n);
  // `n` imported as `steps`, nodes of simpler ops run through their handlers in order; the caller wires them
  // from n's inputs to its output, every tensor between them read once, by a later step.
  Status import_as(std::vector<onnx::NodeProto> steps);
  // A tensor name no tensor of the model has, for a constant or step output made by the importer.
  std::string fresh_tensor(const std::string& base);
  Status prelu(const onnx::NodeProto& n);
  Status group_norm(const onnx::NodeProto& n);
  Status response_norm(const onnx::NodeProto& n);
  Status squeeze(const onnx::NodeProto& n);
  Status softmax(const onnx::NodeProto& n);
  Status reduce_sum(const onnx::NodeProto& n);
  Expected<bool> stack_view(const onnx::NodeProto& n, const Activation& x);
  Status concat_groups(const onnx::NodeProto& n);
  bool group_view(const Activation& x) const;  // a 5-D (N, g, C/g, H, W) view, groups in order
  Status expand(const onnx::NodeProto& n);
  Status gather(const onnx::NodeProto& n);
  Expected<bool> view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape);
  Expected<bool> transpose_view(const onnx::NodeProto& n, const Activation& x, const std::vector<int64_t>& perm);
  Status channel_conv(const onnx::NodeProto& n, const Activation& x, const Constant& w);
  // `terms`: the view's values where they are not x's (a permutation of its channels).
  Status define_view(const onnx::NodeProto& n, const Activation& x, std::vector<int64_t> dims,
                     const ir::Inputs* terms = nullptr);
  Expected<ir::Inputs> permuted_channels(const Activation& x, const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& perm, const std::string& name);
  std::vector<int64_t> view_dims(const Activation& x) const;
  bool relabels(const Activation& x) const;  // a pooled tensor, or a view of one, that views may relabel
  Status emit_group_norm(const onnx::NodeProto& n, const Activation& x, int groups, float eps, std::vector<float> scale,
                         std::vector<float> shift, bool center = true);

  Status activation(const onnx::NodeProto& n, ir::Act act);
  Status pool(const onnx::NodeProto& n, ir::PoolKind kind);
  Expected<ir::Inputs> padded_input(const onnx::NodeProto& n, const Activation& x, Pads& p, float fill);
  Status global_pool(const onnx::NodeProto& n, ir::PoolKind kind);
  Status needs_flat(const Activation& x) const;
  Status linear(const onnx::NodeProto& n, const Activation& x, std::vector<float> weight, int out,
                const std::vector<float>* bias);
  Status channel_affine(const onnx::NodeProto& n, const Activation& x, const std::vector<float>* scale,
                        const std::vector<float>* shift);

  // Inputs and outputs of a node.
  bool has_input(const onnx::NodeProto& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  Expected<const Activation*> act_input(const onnx::NodeProto& n, int i) const;
  // Also a channel shuffle's 5-D view and a channels-last tensor, which act_input refuses.
  Expected<const Activation*> any_act_input(const onnx::NodeProto& n, int i) const;
  // Also a channels-last tensor: for the ops that act on each element or on the channel axis.
  Expected<const Activation*> layout_act_input(const onnx::NodeProto& n, int i) const;
  // Also an Expand of a pooled tensor and a 5-D group view: for the element-wise product, which reads the
  // first as a per-channel factor and multiplies two views of the same groups.
  Expected<const Activation*> expanded_or_act_input(const onnx::NodeProto& n, int i) const;
  // Also a view of a pooled tensor: for the ops that act on each element.
  Expected<const Activation*> element_act_input(const onnx::NodeProto& n, int i) const;
  Expected<const Constant*> const_input(const onnx::NodeProto& n, int i) const;
  // Input i's values: moved out of the constant where this node is its only reader, else copied.
  std::vector<float> take_floats(const onnx::NodeProto& n, int i);
  Expected<const Constant*> optional_const(const onnx::NodeProto& n, int i) const;
  // A reduction's or view's axes: constant input `i` where the node has it (the later opsets), else the
  // attribute `attr`.
  Expected<std::vector<int64_t>> axes_input(const onnx::NodeProto& n, int i, const char* attr = "axes") const;
  Status only_first_output_used(const onnx::NodeProto& n) const;
  void define(const std::string& name, Activation a);
  void consume(const Activation& a);
  int uses(const std::string& name) const;

  // IR construction.
  Expected<ir::Value> emit(const std::string& name, ir::Op op, ir::Inputs inputs, ir::ParamTensor params = {});
  Expected<ir::Value> materialize(const Activation& a, const std::string& name);
  Expected<ir::Term> one_term(const Activation& a, const std::string& name);
  ir::Shape shape_of(const ir::Inputs& terms) const;
  int channels_of(const Activation& a) const;
  // per_channel: what folds is a per-channel scale or shift (else an elementwise activation).
  struct FoldTarget {
    NodeId node = ir::kNoNode;
    int repeat = 1;  // output channels of `node` per channel of the folded value
  };
  FoldTarget foldable(const Activation& a, bool per_channel) const;
  std::string unique_name(const std::string& wanted);
  Expected<std::vector<float>> per_channel(const Constant& c, const Activation& x, int channels) const;

  onnx::GraphProto& graph_;             // its initializers' data released as they are read into consts_
  std::vector<onnx::NodeProto> nodes_;  // the graph's nodes, exporters' activation patterns rewritten
  const int opset_;
  const std::string base_dir_;
  ir::Graph g_;
  ir::Weights w_;
  std::unordered_map<std::string, Constant> consts_;
  std::unordered_map<std::string, Activation> acts_;
  std::unordered_map<std::string, int> uses_;                  // readers of each tensor name (the graph output counts)
  std::unordered_map<std::string, std::vector<int>> readers_;  // the nodes_ indices reading each node output
  std::vector<int> pending_;                                   // per IR node: reads still to come through any tensor
  std::vector<bool> read_;  // per IR node: an emitted node reads it (it can no longer change)
  // Per IR node ending a transposed convolution (its block move or crop): its phases convolution, whose
  // s*s output channels per channel take what folds into the transposed convolution.
  std::unordered_map<NodeId, FoldTarget> transposed_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;  // per base name: the next "_k" to try (from 2)
  std::map<std::string, int> counts_;                 // what was folded / dropped, for the notes
  int64_t batch_ = 1;                                 // the input's declared batch where fixed: what Shape reports
};

}  // namespace ios::onnx_import::detail
