#include "frontends/onnx/onnx_import.h"

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
#include "frontends/onnx/onnx_patterns.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ir/auto_blocks.h"

namespace ios::onnx_import {

namespace {

using ir::NodeId;

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
};

Status bad(const std::string& msg) { return error(ErrorCode::kInvalidArgument, msg); }

class Importer {
 public:
  Importer(const onnx::GraphProto& graph, int opset, std::string base_dir)
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

  // One handler per op type.
  Status conv(const onnx::NodeProto& n);
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
  Expected<bool> shuffle_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape);
  Expected<bool> group_view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape);
  Status instance_norm(const onnx::NodeProto& n);
  Status subtract(const onnx::NodeProto& n);
  Status prelu(const onnx::NodeProto& n);
  Status group_norm(const onnx::NodeProto& n);
  Status emit_group_norm(const onnx::NodeProto& n, const Activation& x, int groups, float eps, std::vector<float> scale,
                         std::vector<float> shift);

  Status activation(const onnx::NodeProto& n, ir::Act act);
  Status pool(const onnx::NodeProto& n, ir::PoolKind kind);
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
  Expected<const Constant*> const_input(const onnx::NodeProto& n, int i) const;
  Expected<const Constant*> optional_const(const onnx::NodeProto& n, int i) const;
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
  NodeId foldable(const Activation& a, bool per_channel) const;
  std::string unique_name(const std::string& wanted);
  Expected<std::vector<float>> per_channel(const Constant& c, const Activation& x, int channels) const;

  const onnx::GraphProto& graph_;
  std::vector<onnx::NodeProto> nodes_;  // the graph's nodes, exporters' activation patterns rewritten
  const int opset_;
  const std::string base_dir_;
  ir::Graph g_;
  ir::Weights w_;
  std::unordered_map<std::string, Constant> consts_;
  std::unordered_map<std::string, Activation> acts_;
  std::unordered_map<std::string, int> uses_;  // readers of each tensor name (the graph output counts)
  std::vector<int> pending_;                   // per IR node: reads still to come through any tensor
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;  // per base name: the next "_k" to try (from 2)
  std::map<std::string, int> counts_;                 // what was folded / dropped, for the notes
  int64_t batch_ = 1;                                 // the input's declared batch where fixed: what Shape reports
};

const std::map<std::string, Importer::Handler>& Importer::handlers() {
  static const std::map<std::string, Handler> table = {
      {"Conv", &Importer::conv},
      {"BatchNormalization", &Importer::batch_norm},
      {"Relu", &Importer::relu},
      {"Sigmoid", &Importer::sigmoid},
      {"Tanh", &Importer::tanh},
      {"Clip", &Importer::clip},
      {"HardSigmoid", &Importer::hard_sigmoid},
      {"HardSwish", &Importer::hard_swish},
      {"Swish", &Importer::swish},
      {"Gelu", &Importer::gelu},
      {"Elu", &Importer::elu},
      {"Softplus", &Importer::softplus},
      {"Mish", &Importer::mish},
      {"Softsign", &Importer::softsign},
      {"LeakyRelu", &Importer::leaky_relu},
      {"MaxPool", &Importer::max_pool},
      {"AveragePool", &Importer::avg_pool},
      {"GlobalMaxPool", &Importer::global_max_pool},
      {"GlobalAveragePool", &Importer::global_avg_pool},
      {"Concat", &Importer::concat},
      {"ReduceMean", &Importer::reduce},
      {"Slice", &Importer::slice},
      {"Cast", &Importer::cast},
      {"Shape", &Importer::constant_only},
      {"Gather", &Importer::constant_only},
      {"Unsqueeze", &Importer::constant_only},
      {"Squeeze", &Importer::constant_only},
      {"Range", &Importer::constant_only},
      {"ConstantOfShape", &Importer::constant_only},
      // Evaluated at import where their inputs are constants (onnx_fold.h): shape and weight arithmetic.
      {"Ceil", &Importer::constant_only},
      {"Floor", &Importer::constant_only},
      {"Neg", &Importer::constant_only},
      {"Abs", &Importer::constant_only},
      {"Sqrt", &Importer::constant_only},
      {"Reciprocal", &Importer::constant_only},
      {"Pow", &Importer::constant_only},
      {"Max", &Importer::constant_only},
      {"Min", &Importer::constant_only},
      {"ReduceSum", &Importer::constant_only},
      {"Sub", &Importer::sub_div},
      {"Div", &Importer::sub_div},
      {"Split", &Importer::split},
      {"ReduceMax", &Importer::reduce},
      {"Add", &Importer::add},
      {"Sum", &Importer::add},
      {"Mul", &Importer::mul},
      {"Flatten", &Importer::flatten},
      {"Reshape", &Importer::reshape},
      {"Gemm", &Importer::gemm},
      {"MatMul", &Importer::matmul},
      {"Dropout", &Importer::pass_through},
      {"Identity", &Importer::pass_through},
      {"Constant", &Importer::constant},
      {"Resize", &Importer::resize},
      {"Upsample", &Importer::resize},
      {"Transpose", &Importer::transpose},
      {"LayerNormalization", &Importer::layer_norm},
      {"InstanceNormalization", &Importer::instance_norm},
      {"PRelu", &Importer::prelu},
      {"GroupNormalization", &Importer::group_norm},
      {"Pad", &Importer::pad},
  };
  return table;
}

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, int opset) {
  return "node '" + n.name() + "' (" + (default_domain(n.domain()) ? "" : n.domain() + ".") + n.op_type() + ", opset " +
         std::to_string(opset) + ")";
}

// ---------------------------------------------------------------------------------------------------
// Tensors of a node

int Importer::uses(const std::string& name) const {
  auto it = uses_.find(name);
  return it == uses_.end() ? 0 : it->second;
}

Expected<const Activation*> Importer::act_input(const onnx::NodeProto& n, int i) const {
  ASSIGN_OR_RETURN(const Activation* a, layout_act_input(n, i));
  RETURN_ERROR_IF(a->channels_last, ErrorCode::kInvalidArgument,
                  "input " + std::to_string(i) + " ('" + n.input(i) +
                      "') is channels-last (after Transpose(0,2,3,1)); this op is supported on NCHW tensors only");
  return a;
}

Expected<const Activation*> Importer::layout_act_input(const onnx::NodeProto& n, int i) const {
  ASSIGN_OR_RETURN(const Activation* a, any_act_input(n, i));
  RETURN_ERROR_IF(a->shuffle_groups != 0, ErrorCode::kInvalidArgument,
                  "input " + std::to_string(i) + " ('" + n.input(i) + "') is a 5-D view (N, " +
                      std::to_string(a->shuffle_groups) +
                      ", C/g, H, W); only a channel shuffle (Reshape, Transpose(0,2,1,3,4), Reshape) may read it");
  RETURN_ERROR_IF(a->norm_groups != 0, ErrorCode::kInvalidArgument,
                  "input " + std::to_string(i) + " ('" + n.input(i) + "') is a 3-D view (N, " +
                      std::to_string(a->norm_groups) +
                      ", -1); only a group normalization (Reshape, InstanceNormalization, Reshape back) may read it");
  return a;
}

Expected<const Activation*> Importer::any_act_input(const onnx::NodeProto& n, int i) const {
  RETURN_ERROR_IF(!has_input(n, i), ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " is missing");
  auto it = acts_.find(n.input(i));
  if (it != acts_.end()) return &it->second;
  RETURN_ERROR_IF(
      consts_.count(n.input(i)), ErrorCode::kInvalidArgument,
      "input " + std::to_string(i) + " ('" + n.input(i) + "') is a constant; only activations are supported there");
  return bad("input " + std::to_string(i) + " ('" + n.input(i) + "') is produced by no earlier node");
}

Expected<const Constant*> Importer::const_input(const onnx::NodeProto& n, int i) const {
  RETURN_ERROR_IF(!has_input(n, i), ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " is missing");
  auto it = consts_.find(n.input(i));
  if (it != consts_.end()) return &it->second;
  return bad("input " + std::to_string(i) + " ('" + n.input(i) +
             "') must be a constant (an initializer or a Constant node); here it is computed");
}

Status Importer::only_first_output_used(const onnx::NodeProto& n) const {
  for (int i = 1; i < n.output_size(); ++i)
    RETURN_ERROR_IF(
        !n.output(i).empty() && uses(n.output(i)) > 0, ErrorCode::kInvalidArgument,
        "output " + std::to_string(i) + " ('" + n.output(i) + "') is read, but only the first output is supported");
  return Status::ok();
}

void Importer::define(const std::string& name, Activation a) {
  for (const ir::Term& t : a.terms)
    for (const ir::Value& v : t) pending_[size_t(v.node)] += uses(name);
  acts_[name] = std::move(a);
}

void Importer::consume(const Activation& a) {
  for (const ir::Term& t : a.terms)
    for (const ir::Value& v : t) --pending_[size_t(v.node)];
}

// ---------------------------------------------------------------------------------------------------
// IR construction

// Names are made valid UTF-8 (they end up in JSON files) and unique. Each base name remembers the next
// suffix to try, so a model whose nodes all share one name costs linear time, not quadratic.
std::string Importer::unique_name(const std::string& wanted) {
  const std::string base = wanted.empty() ? "op" + std::to_string(g_.nodes.size()) : to_valid_utf8(wanted);
  std::string name = base;
  for (int& k = next_suffix_.try_emplace(base, 2).first->second; names_.count(name); ++k)
    name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

Expected<ir::Value> Importer::emit(const std::string& name, ir::Op op, ir::Inputs inputs, ir::ParamTensor params) {
  RETURN_ERROR_IF(int64_t(g_.nodes.size()) >= limits::kMaxNodes, ErrorCode::kInvalidArgument,
                  "the model needs more than the limit of " + std::to_string(limits::kMaxNodes) + " graph nodes");
  ir::Node node;
  node.name = unique_name(name);
  node.op = std::move(op);
  node.inputs = std::move(inputs);
  const auto id = static_cast<NodeId>(g_.nodes.size());
  RETURN_IF_ERROR(ir::infer_node(g_, id, node));
  g_.nodes.push_back(std::move(node));
  w_.per_node.push_back({std::move(params)});
  pending_.push_back(0);
  return ir::Value{id, 0, g_.nodes.back().output_shape.c};
}

ir::Shape Importer::shape_of(const ir::Inputs& terms) const {
  const ir::Shape& first = g_.node(terms[0][0].node).output_shape;
  ir::Shape s{0, first.h, first.w};
  for (const ir::Term& t : terms) s.c += t[0].channels();
  return s;
}

// Channels as a per-channel constant sees them: features of a flattened tensor.
int Importer::channels_of(const Activation& a) const {
  const ir::Shape s = shape_of(a.terms);
  return a.flat ? int(s.numel()) : s.c;
}

// One value: the activation itself where it is one, else a copy node that sums and concatenates it.
Expected<ir::Value> Importer::materialize(const Activation& a, const std::string& name) {
  if (a.terms.size() == 1 && a.terms[0].size() == 1) return a.terms[0][0];
  ++counts_["sums or concats computed once by a copy node (several readers, or the graph output)"];
  return emit(name, ir::IdentityAttrs{}, a.terms);
}

Expected<ir::Term> Importer::one_term(const Activation& a, const std::string& name) {
  if (a.terms.size() == 1) return a.terms[0];
  ASSIGN_OR_RETURN(ir::Value v, materialize(a, name));
  return ir::Term{v};
}

// The convolution or linear node that is exactly this activation and has no other reader, with no
// activation yet: a per-channel scale/shift or an activation after it can be folded into it. A
// normalization's per-channel scale and shift take a per-channel scale/shift after it too (GroupNorm's
// weight and bias, which PyTorch exports as a Mul and an Add after the normalization).
NodeId Importer::foldable(const Activation& a, bool per_channel) const {
  if (a.terms.size() != 1 || a.terms[0].size() != 1) return ir::kNoNode;
  const ir::Value v = a.terms[0][0];
  const ir::Node& n = g_.node(v.node);
  if (v.begin != 0 || v.end != n.output_shape.c || pending_[size_t(v.node)] != 1) return ir::kNoNode;
  // A flattened convolution output has C*H*W features: a per-feature scale or shift is per channel only
  // when H = W = 1.
  if (per_channel && a.flat && n.output_shape.h * n.output_shape.w != 1) return ir::kNoNode;
  if (const auto* c = std::get_if<ir::ConvAttrs>(&n.op)) return c->activation == ir::Act::kNone ? v.node : ir::kNoNode;
  if (const auto* l = std::get_if<ir::LinearAttrs>(&n.op))
    return l->activation == ir::Act::kNone ? v.node : ir::kNoNode;
  if (per_channel &&
      (std::holds_alternative<ir::GroupNormAttrs>(n.op) || std::holds_alternative<ir::ChannelNormAttrs>(n.op)))
    return v.node;
  return ir::kNoNode;
}

// A constant that broadcasts per channel against `x` ((N, C, H, W), or (N, F) when flat), as C values.
Expected<std::vector<float>> Importer::per_channel(const Constant& c, const Activation& x, int channels) const {
  const size_t rank = x.flat ? 2 : 4;
  const size_t channel_axis = x.channels_last ? 3 : 1;
  RETURN_ERROR_IF(c.dims.size() > rank, ErrorCode::kInvalidArgument,
                  "a constant of rank " + std::to_string(c.dims.size()) + " does not broadcast against the activation");
  // Right-aligned, as NumPy broadcasting: every dimension but the channel one (index 1) must be 1.
  bool channel_wise = false;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    const size_t axis = rank - c.dims.size() + i;
    const int64_t d = c.dims[i];
    if (d == 1) continue;
    RETURN_ERROR_IF(
        axis != channel_axis || d != channels, ErrorCode::kInvalidArgument,
        "a constant of shape [" +
            [&] {
              std::string s;
              for (int64_t e : c.dims) s += (s.empty() ? "" : ",") + std::to_string(e);
              return s;
            }() +
            "] is not per channel (" + std::to_string(channels) +
            " channels); only per-channel and scalar constants are supported");
    channel_wise = true;
  }
  if (channel_wise) return c.floats;
  return std::vector<float>(size_t(channels), c.floats.empty() ? 0.f : c.floats[0]);
}

// ---------------------------------------------------------------------------------------------------
// Handlers

struct Pads {
  int h = 0, w = 0;
};

// ONNX pads (begin/end per axis, or auto_pad) as the IR's symmetric padding. Asymmetric pads are kept
// when they give the same windows as the symmetric begin padding (the extra end cells are never read).
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
  Pads out;
  for (int d = 0; d < 2; ++d) {
    const int64_t b = p[d], e = p[d + 2];
    RETURN_ERROR_IF(b < 0 || e < 0 || b > limits::kMaxPadding || e > limits::kMaxPadding, ErrorCode::kInvalidArgument,
                    "attribute 'pads' must be in [0, " + std::to_string(limits::kMaxPadding) + "]");
    auto floor_out = [&](int64_t total) { return (extent[d] + total - k[d]) / s[d]; };
    RETURN_ERROR_IF(b != e && (ceil_mode || floor_out(b + e) != floor_out(2 * b)), ErrorCode::kInvalidArgument,
                    "asymmetric pads (" + std::to_string(b) + " before, " + std::to_string(e) + " after, axis " +
                        std::to_string(d + 2) +
                        ") change the output; only pads equal to a symmetric padding are supported");
    (d == 0 ? out.h : out.w) = static_cast<int>(b);
  }
  return out;
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
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  ASSIGN_OR_RETURN(const Constant* w, const_input(n, 1));
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
  const ir::ConvAttrs attrs = ir::Conv(int(w->dims[0]))
                                  .kernel(k[0], k[1])
                                  .stride(s[0], s[1])
                                  .dilation(d[0], d[1])
                                  .pad(p.h, p.w)
                                  .grouped(int(group))
                                  .bias(has_input(n, 2))
                                  .act(ir::Act::kNone);
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, x->terms, std::move(params)));
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
  ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, 0));
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

// PyTorch's default slope (timm's CSP and Darknet nets); the table has no other.
Status Importer::leaky_relu(const onnx::NodeProto& n) {
  RETURN_IF_ERROR(require_float(Attributes(n), "alpha", 0.01f, 0.01f, "PyTorch's default"));
  return activation(n, ir::Act::kLeakyRelu);
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
  ir::PoolAttrs attrs;
  attrs.kind = kind;
  attrs.kernel(k[0], k[1]).stride(s[0], s[1]).pad(p.h, p.w).ceil(ceil_mode != 0).include_pad(include_pad != 0);
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), attrs, x->terms));
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

// Channels [lo, hi) of an activation: the IR's values are channel slices already, so a slice is a view
// (each summed value narrowed, terms outside the range left out) and costs no copy.
Activation channel_slice(const Activation& a, int lo, int hi) {
  Activation out;
  int offset = 0;
  for (const ir::Term& term : a.terms) {
    const int c = term[0].channels(), b = std::max(lo, offset), e = std::min(hi, offset + c);
    if (b < e) {
      ir::Term t;
      for (const ir::Value& v : term) t.push_back(v.slice(b - offset, e - offset));
      out.terms.push_back(std::move(t));
    }
    offset += c;
  }
  return out;
}

// ONNX's clamping of a slice bound on an axis of `dim` elements (step 1).
int64_t clamp_bound(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return std::clamp<int64_t>(v, 0, dim);
}

// Slice of channels (axis 1), step 1, as a view; the other axes only whole.
Status Importer::slice(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "slices a flattened tensor; only channel slices are supported");
  const ir::Shape shape = shape_of(x->terms);
  const std::array<int64_t, 4> dims{int64_t(limits::kMaxBatch), shape.c, shape.h, shape.w};
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    for (auto [i, out] : {std::pair{1, &starts}, {2, &ends}, {3, &axes}, {4, &steps}}) {
      if (!has_input(n, i)) continue;
      ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
      RETURN_ERROR_IF(c->ints.size() != size_t(c->numel()), ErrorCode::kInvalidArgument,
                      "input " + std::to_string(i) + " must hold integers");
      *out = c->ints;
    }
  } else {
    const Attributes at(n);
    ASSIGN_OR_RETURN(starts, at.get_ints("starts", {}));
    ASSIGN_OR_RETURN(ends, at.get_ints("ends", {}));
    ASSIGN_OR_RETURN(axes, at.get_ints("axes", {}));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  RETURN_ERROR_IF(starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size(),
                  ErrorCode::kInvalidArgument, "starts, ends, axes and steps must have one value per sliced axis");
  int64_t lo = 0, hi = shape.c;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + 4 : axes[i];
    RETURN_ERROR_IF(axis < 0 || axis > 3, ErrorCode::kInvalidArgument,
                    "axis " + std::to_string(axes[i]) + " of a 4-D tensor");
    RETURN_ERROR_IF(steps[i] != 1, ErrorCode::kInvalidArgument, "only step 1 is supported");
    const int64_t b = clamp_bound(starts[i], dims[size_t(axis)]), e = clamp_bound(ends[i], dims[size_t(axis)]);
    if (axis == 1) {
      lo = b, hi = e;
      continue;
    }
    RETURN_ERROR_IF(b != 0 || e != dims[size_t(axis)], ErrorCode::kInvalidArgument,
                    "slicing axis " + std::to_string(axis) + " is not supported; only channels (axis 1)");
  }
  RETURN_ERROR_IF(lo >= hi, ErrorCode::kInvalidArgument,
                  "the channel slice [" + std::to_string(lo) + ", " + std::to_string(hi) + ") is empty");
  consume(*x);
  define(n.output(0), channel_slice(*x, int(lo), int(hi)));
  ++counts_["Slice of channels read as a view"];
  return Status::ok();
}

// Split along channels into views; sizes from the 'split' input (opset 13+) or attribute, else equal
// parts (num_outputs, opset 18, or the number of outputs).
Status Importer::split(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "splits a flattened tensor; only channel splits are supported");
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t axis, at.get_int("axis", 0));
  RETURN_ERROR_IF(axis != 1 && axis != -3, ErrorCode::kInvalidArgument,
                  "axis " + std::to_string(axis) + ": only splits along channels (axis 1) are supported");
  const int channels = shape_of(x->terms).c;
  std::vector<int64_t> sizes;
  if (opset_ >= 13 && has_input(n, 1)) {
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1));
    sizes = c->ints;
  } else if (opset_ < 13) {
    ASSIGN_OR_RETURN(sizes, at.get_ints("split", {}));
  }
  const int64_t parts = n.output_size();
  if (sizes.empty()) {  // equal parts, the last one smaller where they do not divide (opset 18)
    const int64_t each = (channels + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::min<int64_t>(each, channels - k * each));
  }
  RETURN_ERROR_IF(int64_t(sizes.size()) != parts, ErrorCode::kInvalidArgument,
                  std::to_string(sizes.size()) + " split sizes for " + std::to_string(parts) + " outputs");
  int64_t total = 0;
  for (int64_t v : sizes) {
    RETURN_ERROR_IF(v <= 0 || v > channels, ErrorCode::kInvalidArgument,
                    "split size " + std::to_string(v) + " is not in [1, " + std::to_string(channels) + "]");
    total += v;
  }
  RETURN_ERROR_IF(
      total != channels, ErrorCode::kInvalidArgument,
      "split sizes add up to " + std::to_string(total) + ", the input has " + std::to_string(channels) + " channels");
  consume(*x);
  int64_t offset = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    if (!n.output(k).empty()) define(n.output(k), channel_slice(*x, int(offset), int(offset + sizes[size_t(k)])));
    offset += sizes[size_t(k)];
  }
  ++counts_["Split along channels read as views"];
  return Status::ok();
}

// Shape arithmetic (onnx_fold.h): Shape of an activation from its static shape, and any foldable node whose
// inputs are all constants, evaluated into a constant.
Expected<bool> Importer::try_fold(const onnx::NodeProto& n) {
  if (n.op_type() == "Shape" && has_input(n, 0) && acts_.count(n.input(0))) {
    const Activation& x = acts_.at(n.input(0));
    const ir::Shape s = shape_of(x.terms);
    std::vector<int64_t> dims =
        x.flat ? std::vector<int64_t>{batch_, s.numel()} : std::vector<int64_t>{batch_, s.c, s.h, s.w};
    const Attributes at(n);
    ASSIGN_OR_RETURN(int64_t start, at.get_int("start", 0));
    ASSIGN_OR_RETURN(int64_t end, at.get_int("end", int64_t(dims.size())));
    const auto rank = int64_t(dims.size());
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    dims = std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end));
    Constant c;
    c.dims = {int64_t(dims.size())};
    c.ints = dims;
    for (int64_t d : dims) c.floats.push_back(float(d));
    consume(x);
    consts_[n.output(0)] = std::move(c);
    ++counts_["nodes of shape arithmetic evaluated at import"];
    return true;
  }
  if (!is_foldable_op(n.op_type())) return false;
  std::vector<const Constant*> inputs;
  bool all_constant = n.input_size() > 0;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = consts_.find(n.input(i));
    all_constant = all_constant && it != consts_.end();
    inputs.push_back(it == consts_.end() ? nullptr : &it->second);
  }
  if (!all_constant) return false;
  RETURN_IF_ERROR(only_first_output_used(n));
  ASSIGN_OR_RETURN(Constant c, fold_node(n, inputs, opset_));
  consts_[n.output(0)] = std::move(c);
  ++counts_["nodes of shape arithmetic evaluated at import"];
  return true;
}

Status Importer::constant_only(const onnx::NodeProto& n) {
  for (int i = 0; i < n.input_size(); ++i)
    RETURN_ERROR_IF(has_input(n, i) && !consts_.count(n.input(i)), ErrorCode::kInvalidArgument,
                    "input " + std::to_string(i) + " ('" + n.input(i) + "') is computed; " + n.op_type() +
                        " is supported only on constants (shape arithmetic, evaluated at import)");
  return bad("has no inputs");
}

// An activation minus or divided by a per-channel constant (input normalization, (x - mean) / std): a
// per-channel shift or scale. Shape arithmetic on constants folds before this.
Status Importer::sub_div(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument, "needs two inputs");
  if (n.op_type() == "Sub" && !consts_.count(n.input(0)) && !consts_.count(n.input(1))) return subtract(n);
  RETURN_ERROR_IF(!consts_.count(n.input(1)), ErrorCode::kInvalidArgument,
                  n.op_type() + " is supported with an activation first and a per-channel or scalar constant second");
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1));
  ASSIGN_OR_RETURN(std::vector<float> v, per_channel(*c, *x, channels_of(*x)));
  if (n.op_type() == "Sub") {
    for (float& f : v) f = -f;
    return channel_affine(n, *x, nullptr, &v);
  }
  for (float& f : v) {
    RETURN_ERROR_IF(f == 0.f, ErrorCode::kInvalidArgument, "divides by zero");
    f = 1.f / f;
  }
  return channel_affine(n, *x, &v, nullptr);
}

// a - b of two activations of one shape (PoolFormer's pool(x) - x): b negated by a per-channel affine of -1,
// then summed with a as the IR sums terms.
Status Importer::subtract(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* a, act_input(n, 0));
  ASSIGN_OR_RETURN(const Activation* b, act_input(n, 1));
  const ir::Shape sa = shape_of(a->terms), sb = shape_of(b->terms);
  RETURN_ERROR_IF(a->flat || b->flat || !(sa == sb), ErrorCode::kInvalidArgument,
                  "subtracts tensors of shapes " + sa.to_string() + " and " + sb.to_string() +
                      "; between activations only 4-D tensors of one shape are supported");
  ASSIGN_OR_RETURN(ir::Term ta, one_term(*a, n.name() + "/in0"));
  ASSIGN_OR_RETURN(ir::Term tb, one_term(*b, n.name() + "/in1"));
  consume(*a);
  consume(*b);
  ir::ParamTensor negate{std::vector<float>(size_t(sb.c), -1.f), {}};
  ASSIGN_OR_RETURN(ir::Value neg,
                   emit(n.name() + "/negate", ir::Conv(sb.c).grouped(sb.c).bias(false).act(ir::Act::kNone), {tb},
                        std::move(negate)));
  ta.push_back(neg);
  ++counts_["Sub of two activations run as a sum with the second negated"];
  if (uses(n.output(0)) > 1) {
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::IdentityAttrs{}, {ta}));
    define(n.output(0), Activation{{{v}}});
    return Status::ok();
  }
  define(n.output(0), Activation{{ta}});
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
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::PReluAttrs{}, x->terms, ir::ParamTensor{std::move(slopes), {}}));
  Activation out{{{v}}};
  out.channels_last = x->channels_last;
  define(n.output(0), std::move(out));
  return Status::ok();
}

// Cast of an activation to float is the activation itself (the IR computes in float); other casts of
// activations are not supported (casts of constants fold).
Status Importer::cast(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(int64_t to, Attributes(n).get_int("to", 0));
  RETURN_ERROR_IF(to != onnx::TensorProto::FLOAT, ErrorCode::kInvalidArgument,
                  "casts an activation to type " + std::to_string(to) + "; only a cast to float is supported");
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  consume(*x);
  define(n.output(0), *x);
  ++counts_["Cast to float dropped"];
  return Status::ok();
}

// ReduceMean / ReduceMax over H and W: a global pool; without keepdims the result is (batch, C), as a
// Flatten after it would give. Axes come from the attribute (opset < 18) or the second input (18+).
Status Importer::reduce(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "reads a flattened tensor");
  const Attributes at(n);
  std::vector<int64_t> axes;
  if (has_input(n, 1)) {
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1));
    axes = c->ints;
  } else {
    ASSIGN_OR_RETURN(axes, at.get_ints("axes", {}));
  }
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

Status Importer::concat(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 1));
  Activation out;
  for (int i = 0; i < n.input_size(); ++i) {
    ASSIGN_OR_RETURN(const Activation* x, act_input(n, i));
    const bool channel_axis = x->flat ? (axis == 1 || axis == -1) : (axis == 1 || axis == -3);
    RETURN_ERROR_IF(
        !channel_axis, ErrorCode::kInvalidArgument,
        "axis " + std::to_string(axis) + " is not the channel axis; only channel concatenation is supported");
    RETURN_ERROR_IF(i > 0 && x->flat != out.flat, ErrorCode::kInvalidArgument,
                    "concatenates flattened and unflattened tensors");
    out.flat = x->flat;
    out.terms.insert(out.terms.end(), x->terms.begin(), x->terms.end());
  }
  RETURN_ERROR_IF(out.terms.empty(), ErrorCode::kInvalidArgument, "has no inputs");
  for (int i = 0; i < n.input_size(); ++i) consume(acts_.at(n.input(i)));
  ++counts_["Concat read in place by its consumers"];
  define(n.output(0), std::move(out));
  return Status::ok();
}

// Add / Sum of activations of one shape: one summed term, read by the consumer (a node of its own
// only when several ops read it, so it is summed once). A constant operand is a per-channel shift.
Status Importer::add(const onnx::NodeProto& n) {
  if (n.op_type() == "Add" && n.input_size() == 2 && (consts_.count(n.input(0)) || consts_.count(n.input(1)))) {
    const int a = consts_.count(n.input(0)) ? 1 : 0;
    ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, a));
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1 - a));
    ASSIGN_OR_RETURN(auto shift, per_channel(*c, *x, channels_of(*x)));
    return channel_affine(n, *x, nullptr, &shift);
  }
  ir::Term sum;
  std::optional<ir::Shape> shape;
  bool flat = false;
  for (int i = 0; i < n.input_size(); ++i) {
    ASSIGN_OR_RETURN(const Activation* x, act_input(n, i));
    const ir::Shape s = shape_of(x->terms);
    RETURN_ERROR_IF(shape && !(s == *shape), ErrorCode::kInvalidArgument,
                    "adds tensors of shapes " + shape->to_string() + " and " + s.to_string() +
                        "; broadcasting between activations is not supported");
    RETURN_ERROR_IF(shape && x->flat != flat, ErrorCode::kInvalidArgument,
                    "adds a flattened (batch, features) tensor and a 4-D one");
    shape = s;
    flat = x->flat;
    ASSIGN_OR_RETURN(ir::Term t, one_term(*x, n.name() + "/in" + std::to_string(i)));
    sum.insert(sum.end(), t.begin(), t.end());
  }
  RETURN_ERROR_IF(sum.empty(), ErrorCode::kInvalidArgument, "has no inputs");
  for (int i = 0; i < n.input_size(); ++i) consume(acts_.at(n.input(i)));
  if (uses(n.output(0)) > 1) {
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::IdentityAttrs{}, {sum}));
    define(n.output(0), Activation{{{v}}, flat});
    return Status::ok();
  }
  define(n.output(0), Activation{{sum}, flat});
  return Status::ok();
}

Status Importer::mul(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument, "needs two inputs");
  if (consts_.count(n.input(0)) || consts_.count(n.input(1))) {
    const int a = consts_.count(n.input(0)) ? 1 : 0;
    ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, a));
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1 - a));
    ASSIGN_OR_RETURN(auto scale, per_channel(*c, *x, channels_of(*x)));
    return channel_affine(n, *x, &scale, nullptr);
  }
  ASSIGN_OR_RETURN(const Activation* a, act_input(n, 0));
  ASSIGN_OR_RETURN(const Activation* b, act_input(n, 1));
  RETURN_ERROR_IF(a->flat != b->flat, ErrorCode::kInvalidArgument,
                  "multiplies a flattened (batch, features) tensor and a 4-D one");
  // A C x 1 x 1 gate (squeeze-excite) multiplies the full tensor per channel; the IR takes it second.
  if (!a->flat && ir::broadcasts(shape_of(a->terms), shape_of(b->terms))) std::swap(a, b);
  const ir::Shape sa = shape_of(a->terms), sb = shape_of(b->terms);
  RETURN_ERROR_IF(!(sa == sb) && (a->flat || !ir::broadcasts(sb, sa)), ErrorCode::kInvalidArgument,
                  "multiplies tensors of shapes " + sa.to_string() + " and " + sb.to_string() +
                      "; between activations only equal shapes and a C x 1 x 1 factor are supported");
  ASSIGN_OR_RETURN(ir::Term ta, one_term(*a, n.name() + "/in0"));
  ASSIGN_OR_RETURN(ir::Term tb, one_term(*b, n.name() + "/in1"));
  consume(*a);
  consume(*b);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ElementAttrs{ir::ElementOp::kMul}, {ta, tb}));
  define(n.output(0), Activation{{{v}}, a->flat});
  return Status::ok();
}

Status Importer::flatten(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 1));
  RETURN_ERROR_IF(axis != 1 && !(axis == -3 && !x->flat), ErrorCode::kInvalidArgument,
                  "axis " + std::to_string(axis) + ": only flattening to (batch, features) is supported");
  consume(*x);
  define(n.output(0), Activation{x->terms, true});
  return Status::ok();
}

// The reshape that flattens to (batch, features), as models write before a classifier, and the two of a
// channel shuffle.
Status Importer::reshape(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* any, any_act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* shape, const_input(n, 1));
  ASSIGN_OR_RETURN(bool shuffled, shuffle_reshape(n, *any, *shape));
  if (shuffled) return Status::ok();
  ASSIGN_OR_RETURN(bool grouped, group_view_reshape(n, *any, *shape));
  if (grouped) return Status::ok();
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  const int64_t features = shape_of(x->terms).numel();
  const auto& v = shape->ints;
  const bool flattens = v.size() == 2 && (v[0] == 0 || v[0] == -1 || v[0] == 1) && (v[1] == -1 || v[1] == features) &&
                        !(v[0] == -1 && v[1] == -1);
  RETURN_ERROR_IF(!flattens, ErrorCode::kInvalidArgument,
                  "only a reshape to (batch, " + std::to_string(features) + ") is supported");
  consume(*x);
  define(n.output(0), Activation{x->terms, true});
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

// Dropout (inference) and Identity: the output is the input.
Status Importer::pass_through(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(!has_input(n, 0), ErrorCode::kInvalidArgument, "input 0 is missing");
  RETURN_IF_ERROR(only_first_output_used(n));
  if (n.op_type() == "Dropout" && has_input(n, 2)) {
    ASSIGN_OR_RETURN(const Constant* training, const_input(n, 2));
    RETURN_ERROR_IF(training->numel() != 1 || training->floats[0] != 0.f, ErrorCode::kInvalidArgument,
                    "training_mode = true is not inference");
  }
  ++counts_[n.op_type() + " dropped"];
  if (auto c = consts_.find(n.input(0)); c != consts_.end()) {
    consts_[n.output(0)] = c->second;
    return Status::ok();
  }
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  consume(*x);
  define(n.output(0), *x);
  return Status::ok();
}

Status Importer::constant(const onnx::NodeProto& n) {
  const Attributes at(n);
  Constant c;
  if (const onnx::TensorProto* t = at.get_tensor("value")) {
    ASSIGN_OR_RETURN(c, read_tensor(*t, base_dir_));
  } else if (at.has("value_float")) {
    ASSIGN_OR_RETURN(float f, at.get_float("value_float", 0.f));
    c.floats = {f};
  } else if (at.has("value_int")) {
    ASSIGN_OR_RETURN(int64_t i, at.get_int("value_int", 0));
    c.ints = {i};
    c.floats = {float(i)};
  } else if (at.has("value_ints")) {
    ASSIGN_OR_RETURN(c.ints, at.get_ints("value_ints", {}));
    c.dims = {int64_t(c.ints.size())};
    for (int64_t i : c.ints) c.floats.push_back(float(i));
  } else {
    return bad("only the value, value_float, value_int and value_ints forms are supported");
  }
  consts_[n.output(0)] = std::move(c);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Resizing and channel shuffles

// An optional constant input: null where it is absent or empty (exporters pass "" or a 0-element tensor
// for "not given").
Expected<const Constant*> Importer::optional_const(const onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) return nullptr;
  ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
  return c->numel() > 0 ? c : nullptr;
}

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
    RETURN_ERROR_IF(v < 0 || v > limits::kMaxPadding, ErrorCode::kInvalidArgument,
                    "pads must be in [0, " + std::to_string(limits::kMaxPadding) + "] (negative pads crop)");
  a.top = int(begin[2]), a.left = int(begin[3]), a.bottom = int(end[2]), a.right = int(end[3]);
  if (has_input(n, 2) && a.mode == ir::PadMode::kConstant) {
    ASSIGN_OR_RETURN(const Constant* value, const_input(n, 2));
    RETURN_ERROR_IF(value->floats.size() != 1 || !std::isfinite(value->floats[0]), ErrorCode::kInvalidArgument,
                    "input 'constant_value' must be one finite value");
    a.value = value->floats[0];
  }
  consume(*x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), a, x->terms));
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

}  // namespace

// The Reshapes of ShuffleNet's channel shuffle: (N, C, H, W) -> (N, g, C/g, H, W) starts one, and the
// reshape back after Transpose(0,2,1,3,4) is one ChannelShuffle node. False: not a shuffle's reshape.
Expected<bool> Importer::shuffle_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape) {
  if (x.flat || x.channels_last || (x.shuffle_groups == 0 && shape.ints.size() != 5)) return false;
  ASSIGN_OR_RETURN(int64_t allow_zero, Attributes(n).get_int("allowzero", 0));
  // allowzero = 1 (the dynamo exporter's) reads a 0 as a zero-size axis; without a 0 it changes nothing.
  RETURN_ERROR_IF(allow_zero != 0 && std::count(shape.ints.begin(), shape.ints.end(), 0) > 0,
                  ErrorCode::kInvalidArgument, "attribute 'allowzero' = 1 with a 0 in the shape is not supported");
  const ir::Shape s = shape_of(x.terms);
  const int g = x.shuffle_groups;
  const std::vector<int64_t> dims = g == 0              ? std::vector<int64_t>{batch_, s.c, s.h, s.w}
                                    : x.shuffle_swapped ? std::vector<int64_t>{batch_, s.c / g, g, s.h, s.w}
                                                        : std::vector<int64_t>{batch_, g, s.c / g, s.h, s.w};
  ASSIGN_OR_RETURN(std::vector<int64_t> t, reshape_target(dims, shape.ints));
  Activation out = x;
  if (g == 0) {
    RETURN_ERROR_IF(t[0] != batch_ || t[3] != s.h || t[4] != s.w, ErrorCode::kInvalidArgument,
                    "a reshape to 5-D is supported only as a channel shuffle's (N, g, C/g, H, W)");
    out.shuffle_groups = int(t[1]);
    out.shuffle_swapped = false;
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

// The Reshapes around a group normalization as PyTorch exports GroupNorm: (N, C, H, W) -> (N, g, -1) starts a
// view that InstanceNormalization normalizes per group, and the reshape back to (N, C, H, W) ends it. False:
// not such a reshape.
Expected<bool> Importer::group_view_reshape(const onnx::NodeProto& n, const Activation& x, const Constant& shape) {
  if (x.flat || x.channels_last || x.shuffle_groups != 0) return false;
  if (x.norm_groups == 0 && shape.ints.size() != 3) return false;
  ASSIGN_OR_RETURN(int64_t allow_zero, Attributes(n).get_int("allowzero", 0));
  RETURN_ERROR_IF(allow_zero != 0 && std::count(shape.ints.begin(), shape.ints.end(), 0) > 0,
                  ErrorCode::kInvalidArgument, "attribute 'allowzero' = 1 with a 0 in the shape is not supported");
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
  if (any->norm_groups == 0) {
    ASSIGN_OR_RETURN(x, act_input(n, 0));
  }
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "input 0 must be a 4-D (N, C, H, W) tensor");
  ASSIGN_OR_RETURN(float eps, Attributes(n).get_float("epsilon", 1e-5f));
  const int channels = shape_of(x->terms).c;
  const int groups = x->norm_groups != 0 ? x->norm_groups : channels;
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
  if (per == channels) {
    RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidArgument, "attribute 'epsilon' must be in (0, 1]");
    consume(*x);
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::GroupNormAttrs{int(groups), eps}, x->terms,
                                       ir::ParamTensor{scale->floats, shift->floats}));
    define(n.output(0), Activation{{{v}}});
    return Status::ok();
  }
  return emit_group_norm(n, *x, int(groups), eps, scale->floats, shift->floats);
}

// One group_norm node; `scale` and `shift` hold one value per group, repeated here over its channels.
Status Importer::emit_group_norm(const onnx::NodeProto& n, const Activation& x, int groups, float eps,
                                 std::vector<float> scale, std::vector<float> shift) {
  RETURN_ERROR_IF(!(eps > 0.f && eps <= 1.f), ErrorCode::kInvalidArgument, "attribute 'epsilon' must be in (0, 1]");
  const int channels = shape_of(x.terms).c;
  const int per_group = channels / groups;
  ir::ParamTensor p;
  for (int c = 0; c < channels; ++c) {
    p.weight.push_back(scale[size_t(c / per_group)]);
    p.bias.push_back(shift[size_t(c / per_group)]);
  }
  consume(x);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::GroupNormAttrs{groups, eps}, x.terms, std::move(p)));
  Activation out{{{v}}};
  out.norm_groups = x.norm_groups;
  define(n.output(0), std::move(out));
  ++counts_[x.norm_groups != 0 ? "group normalizations (Reshape, InstanceNormalization, Reshape) imported as one op"
                               : "InstanceNormalizations imported as group normalizations of one channel a group"];
  return Status::ok();
}

// Transpose is supported where it swaps the groups of a channel shuffle's 5-D view, and between NCHW and
// channels-last (N, H, W, C), which changes how later ops read the axes, not the values.
Status Importer::transpose(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, any_act_input(n, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, Attributes(n).get_ints("perm", {}));
  const std::vector<int64_t> swap_groups{0, 2, 1, 3, 4}, to_last{0, 2, 3, 1}, to_first{0, 3, 1, 2};
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

// ---------------------------------------------------------------------------------------------------
// The graph

Status Importer::read_initializers() {
  RETURN_ERROR_IF(graph_.sparse_initializer_size() > 0, ErrorCode::kInvalidArgument,
                  "sparse initializers are not supported");
  for (const auto& t : graph_.initializer()) {
    ASSIGN_OR_RETURN(Constant c, read_tensor(t, base_dir_));
    consts_[t.name()] = std::move(c);
  }
  return Status::ok();
}

Status Importer::read_input() {
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : graph_.input())
    if (!consts_.count(in.name())) inputs.push_back(&in);
  RETURN_ERROR_IF(
      inputs.size() != 1, ErrorCode::kInvalidArgument,
      "the graph has " + std::to_string(inputs.size()) + " inputs that are not initializers; exactly one is supported");
  const onnx::ValueInfoProto& in = *inputs[0];
  const std::string where = "graph input '" + in.name() + "'";
  RETURN_ERROR_IF(!in.type().has_tensor_type() || in.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT,
                  ErrorCode::kInvalidArgument, where + " must be a float tensor");
  const auto& dims = in.type().tensor_type().shape().dim();
  RETURN_ERROR_IF(dims.size() != 4, ErrorCode::kInvalidArgument,
                  where + " must be 4-D (N, C, H, W), it has " + std::to_string(dims.size()) + " dimensions");
  if (dims[0].has_dim_value() && dims[0].dim_value() > 0) batch_ = dims[0].dim_value();
  std::array<int64_t, 3> chw{};
  for (int i = 1; i < 4; ++i) {
    RETURN_ERROR_IF(!dims[i].has_dim_value() || dims[i].dim_value() <= 0 || dims[i].dim_value() > limits::kMaxSpatial,
                    ErrorCode::kInvalidArgument,
                    where + ": dimension " + std::to_string(i) + " must be a fixed size in [1, " +
                        std::to_string(limits::kMaxSpatial) + "] (only the batch may vary)");
    chw[size_t(i - 1)] = dims[i].dim_value();
  }
  ir::Node node;
  node.name = unique_name(in.name());
  node.op = ir::InputAttrs{ir::Shape{int(chw[0]), int(chw[1]), int(chw[2])}};
  RETURN_IF_ERROR(ir::infer_node(g_, 0, node));
  g_.nodes.push_back(std::move(node));
  w_.per_node.push_back({ir::ParamTensor{}});
  pending_.push_back(0);
  define(in.name(), Activation{{{ir::Value{0, 0, int(chw[0])}}}});
  return Status::ok();
}

// The nodes the graph output depends on, in a topological order that keeps the file's order where it
// can. Unsupported ops are reported here, all of them at once.
Expected<std::vector<const onnx::NodeProto*>> Importer::live_nodes_in_order() {
  RETURN_ERROR_IF(graph_.output_size() != 1, ErrorCode::kInvalidArgument,
                  "the graph has " + std::to_string(graph_.output_size()) + " outputs; exactly one is supported");
  // Every tensor has one definition: an initializer, a graph input or one node's output (ONNX's SSA rule).
  std::unordered_map<std::string, int> producer;
  std::set<std::string> graph_inputs;
  for (const auto& in : graph_.input()) graph_inputs.insert(in.name());
  for (int i = 0; i < int(nodes_.size()); ++i)
    for (const auto& out : nodes_[size_t(i)].output()) {
      if (out.empty()) continue;
      RETURN_ERROR_IF(consts_.count(out) || graph_inputs.count(out), ErrorCode::kInvalidArgument,
                      node_label(nodes_[size_t(i)], opset_) + " writes '" + out +
                          "', which is already an initializer or a graph input");
      const auto [it, fresh] = producer.emplace(out, i);
      RETURN_ERROR_IF(!fresh, ErrorCode::kInvalidArgument,
                      node_label(nodes_[size_t(i)], opset_) + " writes '" + out + "', which " +
                          node_label(nodes_[size_t(it->second)], opset_) + " writes too");
    }
  std::vector<bool> live(size_t(int(nodes_.size())), false);
  std::vector<std::string> stack{graph_.output(0).name()};
  while (!stack.empty()) {
    auto it = producer.find(stack.back());
    stack.pop_back();
    if (it == producer.end() || live[size_t(it->second)]) continue;
    live[size_t(it->second)] = true;
    for (const auto& in : nodes_[size_t(it->second)].input()) stack.push_back(in);
  }
  const auto dead = std::count(live.begin(), live.end(), false);
  if (dead > 0) counts_["nodes dropped that do not lead to the graph output"] += int(dead);

  std::string unsupported;
  for (int i = 0; i < int(nodes_.size()); ++i) {
    const auto& n = nodes_[size_t(i)];
    if (live[size_t(i)] && (!default_domain(n.domain()) || !handlers().count(n.op_type())))
      unsupported += "\n  " + node_label(n, opset_);
  }
  RETURN_ERROR_IF(!unsupported.empty(), ErrorCode::kInvalidArgument,
                  "unsupported operators (supported: see `ios import --list-ops`):" + unsupported);

  // Kahn's algorithm, lowest file position first. Reads are counted here, before any tensor is defined,
  // so that define() knows every tensor's readers.
  std::vector<int> waiting(size_t(int(nodes_.size())), 0);
  std::unordered_map<std::string, std::vector<int>> readers;
  for (int i = 0; i < int(nodes_.size()); ++i) {
    if (!live[size_t(i)]) continue;
    for (const auto& in : nodes_[size_t(i)].input()) {
      if (in.empty()) continue;
      ++uses_[in];
      if (producer.count(in)) {
        ++waiting[size_t(i)];
        readers[in].push_back(i);
      } else if (!consts_.count(in) && !graph_inputs.count(in)) {
        return bad(node_label(nodes_[size_t(i)], opset_) + " reads '" + in +
                   "', which no node, initializer or input provides");
      }
    }
  }
  ++uses_[graph_.output(0).name()];
  std::set<int> ready;
  for (int i = 0; i < int(nodes_.size()); ++i)
    if (live[size_t(i)] && waiting[size_t(i)] == 0) ready.insert(i);
  std::vector<const onnx::NodeProto*> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(&nodes_[size_t(i)]);
    for (const auto& out : nodes_[size_t(i)].output())
      for (int r : readers[out])
        if (--waiting[size_t(r)] == 0) ready.insert(r);
  }
  RETURN_ERROR_IF(order.size() != size_t(std::count(live.begin(), live.end(), true)), ErrorCode::kInvalidArgument,
                  "the graph has a cycle");
  return order;
}

Status Importer::finish_output() {
  const std::string& name = graph_.output(0).name();
  auto it = acts_.find(name);
  RETURN_ERROR_IF(it == acts_.end(), ErrorCode::kInvalidArgument,
                  "graph output '" + name + "' is a constant or produced by no node");
  RETURN_ERROR_IF(it->second.channels_last || it->second.shuffle_groups != 0, ErrorCode::kInvalidArgument,
                  "graph output '" + name + "' is channels-last or a 5-D view; only NCHW outputs are supported");
  ASSIGN_OR_RETURN(ir::Value v, materialize(it->second, name));
  const bool whole_last =
      v.node == NodeId(g_.nodes.size()) - 1 && v.begin == 0 && v.end == g_.nodes.back().output_shape.c;
  if (!whole_last) {  // a slice, or an earlier node: the output must be the last node, whole
    ++counts_["graph output copied into a node of its own"];
    ASSIGN_OR_RETURN(v, emit(name, ir::IdentityAttrs{}, {{v}}));
  }
  return Status::ok();
}

// Weights after folding: a NaN or infinity (from the file, or a fold such as a huge scale) would make a
// weights file the loader refuses, so it is named here instead.
// A constant scalar by name, from an initializer or a Constant node (the patterns' operands).
std::optional<float> Importer::scalar(const std::string& name) const {
  if (auto it = consts_.find(name); it != consts_.end())
    return it->second.floats.size() == 1 ? std::optional<float>(it->second.floats[0]) : std::nullopt;
  for (const auto& n : graph_.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1 || n.output(0) != name) continue;
    const Attributes at(n);
    if (const onnx::TensorProto* t = at.get_tensor("value")) {
      auto c = read_tensor(*t, base_dir_);
      return c && c->floats.size() == 1 ? std::optional<float>(c->floats[0]) : std::nullopt;
    }
    if (auto f = at.get_float("value_float", NAN); f && at.has("value_float")) return *f;
    return std::nullopt;
  }
  return std::nullopt;
}

Status Importer::check_finite_parameters() const {
  for (size_t id = 0; id < w_.per_node.size(); ++id)
    for (const ir::ParamTensor& p : w_.per_node[id])
      for (const auto* v : {&p.weight, &p.bias})
        for (size_t i = 0; i < v->size(); ++i)
          RETURN_ERROR_IF(!std::isfinite((*v)[i]), ErrorCode::kInvalidArgument,
                          "node '" + g_.nodes[id].name + "': its " + (v == &p.weight ? "weight" : "bias") + " holds " +
                              std::to_string((*v)[i]) + " at element " + std::to_string(i) +
                              " (after folding); weights must be finite");
  return Status::ok();
}

Expected<ImportedModel> Importer::run(const std::string& name) {
  g_.name = to_valid_utf8(name);
  RETURN_IF_ERROR(read_initializers());
  nodes_ = rewrite_patterns(
      graph_, [this](const std::string& name) { return scalar(name); }, counts_);
  ASSIGN_OR_RETURN(auto order, live_nodes_in_order());
  RETURN_IF_ERROR(read_input());
  for (const onnx::NodeProto* n : order) {
    RETURN_ERROR_IF(n->output_size() < 1 || n->output(0).empty(), ErrorCode::kInvalidArgument,
                    node_label(*n, opset_) + " has no output");
    Expected<bool> folded = try_fold(*n);
    if (!folded) return folded.status().with_context(node_label(*n, opset_));
    if (*folded) continue;
    const Status s = (this->*handlers().at(n->op_type()))(*n);
    if (!s) return s.with_context(node_label(*n, opset_));
  }
  RETURN_IF_ERROR(finish_output());
  RETURN_IF_ERROR(check_finite_parameters());
  RETURN_IF_ERROR(ir::assign_blocks(g_).with_context("deriving IOS blocks"));
  ImportedModel m;
  m.graph = std::move(g_);
  m.weights = std::move(w_);
  m.opset = opset_;
  for (const auto& [what, count] : counts_) m.notes.push_back(std::to_string(count) + " x " + what);
  return m;
}

Expected<int> default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (default_domain(o.domain())) {
      RETURN_ERROR_IF(o.version() < kMinOpset || o.version() > kMaxOpset, ErrorCode::kInvalidArgument,
                      "opset " + std::to_string(o.version()) + " is outside the supported " +
                          std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset));
      return int(o.version());
    }
  return bad("the model imports no default-domain opset");
}

}  // namespace

std::vector<std::string> supported_ops() {
  std::vector<std::string> ops;
  for (const auto& [op, handler] : Importer::handlers()) ops.push_back(op);
  return ops;
}

Expected<ImportedModel> import_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir) {
  onnx::ModelProto model;
  RETURN_ERROR_IF(!model.ParseFromString(bytes), ErrorCode::kInvalidArgument,
                  "not an ONNX model (the protobuf does not parse as a ModelProto)");
  RETURN_ERROR_IF(!model.has_graph(), ErrorCode::kInvalidArgument, "the model has no graph");
  ASSIGN_OR_RETURN(int opset, default_opset(model));
  Importer importer(model.graph(), opset, base_dir);
  return importer.run(name);
}

Expected<ImportedModel> import_file(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, read_file(path, size_t{2} << 30));  // protobuf's own limit
  const std::filesystem::path p(path);
  auto m = import_bytes(bytes, p.stem().string(), p.parent_path().string());
  if (!m) return m.status().with_context(path);
  return m;
}

}  // namespace ios::onnx_import
