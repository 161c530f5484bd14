#include "frontends/onnx/onnx_import.h"

#include "frontends/onnx/importer.h"

namespace ios::onnx_import {
namespace detail {

const std::map<std::string, Importer::Handler>& Importer::handlers() {
  static const std::map<std::string, Handler> table = {
      {"Conv", &Importer::conv},
      {"ConvTranspose", &Importer::conv_transpose},
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
      {"Gather", &Importer::gather},
      {"Unsqueeze", &Importer::squeeze},
      {"Squeeze", &Importer::squeeze},
      {"Expand", &Importer::expand},
      {"Range", &Importer::constant_only},
      {"ConstantOfShape", &Importer::constant_only},
      {"Equal", &Importer::constant_only},
      {"Where", &Importer::constant_only},
      // Evaluated at import where their inputs are constants (onnx_fold.h): shape and weight arithmetic.
      {"Ceil", &Importer::constant_only},
      {"Floor", &Importer::constant_only},
      {"Neg", &Importer::constant_only},
      {"Abs", &Importer::constant_only},
      {"Sqrt", &Importer::sqrt},
      {"Reciprocal", &Importer::reciprocal},
      {"Pow", &Importer::pow},
      {"Max", &Importer::max},
      {"Min", &Importer::constant_only},
      {"ReduceProd", &Importer::constant_only},
      {"ReduceSum", &Importer::reduce_sum},
      {"Softmax", &Importer::softmax},
      {kResponseNormOp, &Importer::response_norm},
      {kBlockMoveOp, &Importer::block_move},
      {kGroupStdDivideOp, &Importer::group_std_divide},
      {"DepthToSpace", &Importer::depth_space},
      {"SpaceToDepth", &Importer::depth_space},
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
  ASSIGN_OR_RETURN(const Activation* a, element_act_input(n, i));
  RETURN_ERROR_IF(!a->dims.empty(), ErrorCode::kInvalidArgument,
                  "input " + std::to_string(i) + " ('" + n.input(i) + "') is a " + std::to_string(a->dims.size()) +
                      "-D view of a pooled tensor; only views, a 1-D convolution over channels and element-wise "
                      "activations read it (reshape it back to (N, C, 1, 1))");
  return a;
}

Expected<const Activation*> Importer::expanded_or_act_input(const onnx::NodeProto& n, int i) const {
  ASSIGN_OR_RETURN(const Activation* a, any_act_input(n, i));
  if (a->expand_h != 0 || group_view(*a)) return a;
  return act_input(n, i);
}

Expected<const Activation*> Importer::element_act_input(const onnx::NodeProto& n, int i) const {
  ASSIGN_OR_RETURN(const Activation* a, any_act_input(n, i));
  RETURN_ERROR_IF(a->expand_h != 0, ErrorCode::kInvalidArgument,
                  "input " + std::to_string(i) + " ('" + n.input(i) +
                      "') is an Expand of a pooled tensor; only an element-wise product (Mul) reads it");
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

std::vector<float> Importer::take_floats(const onnx::NodeProto& n, int i) {
  Constant& c = consts_.at(n.input(i));
  if (uses(n.input(i)) == 1) return std::move(c.floats);
  return c.floats;
}

Expected<std::vector<int64_t>> Importer::axes_input(const onnx::NodeProto& n, int i, const char* attr) const {
  if (!has_input(n, i)) return Attributes(n).get_ints(attr, {});
  ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
  return c->ints;
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
  for (const ir::Term& t : node.inputs)
    for (const ir::Value& v : t) read_[size_t(v.node)] = true;
  g_.nodes.push_back(std::move(node));
  w_.per_node.push_back({std::move(params)});
  pending_.push_back(0);
  read_.push_back(false);
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
// weight and bias, which PyTorch exports as a Mul and an Add after the normalization). A transposed
// convolution's block move and crop commute with both, so they fold into its phases convolution.
Importer::FoldTarget Importer::foldable(const Activation& a, bool per_channel) const {
  if (a.terms.size() != 1 || a.terms[0].size() != 1) return {};
  const ir::Value v = a.terms[0][0];
  const ir::Node& n = g_.node(v.node);
  // A node another op already reads keeps its output: folding into it would change what that op read.
  if (v.begin != 0 || v.end != n.output_shape.c || pending_[size_t(v.node)] != 1 || read_[size_t(v.node)]) return {};
  if (auto it = transposed_.find(v.node); it != transposed_.end()) {
    const auto& phases = std::get<ir::ConvAttrs>(g_.node(it->second.node).op);
    return phases.activation == ir::Act::kNone ? it->second : FoldTarget{};
  }
  // A flattened convolution output has C*H*W features: a per-feature scale or shift is per channel only
  // when H = W = 1.
  if (per_channel && a.flat && n.output_shape.h * n.output_shape.w != 1) return {};
  if (const auto* c = std::get_if<ir::ConvAttrs>(&n.op))
    return c->activation == ir::Act::kNone ? FoldTarget{v.node} : FoldTarget{};
  if (const auto* l = std::get_if<ir::LinearAttrs>(&n.op))
    return l->activation == ir::Act::kNone ? FoldTarget{v.node} : FoldTarget{};
  if (per_channel &&
      (std::holds_alternative<ir::GroupNormAttrs>(n.op) || std::holds_alternative<ir::ChannelNormAttrs>(n.op) ||
       std::holds_alternative<ir::ResponseNormAttrs>(n.op)))
    return FoldTarget{v.node};
  return {};
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
// Handlers of no op family (the others: onnx_ops_window.cc, onnx_ops_nn.cc, onnx_ops_tensor.cc,
// onnx_ops_layout.cc, onnx_ops_view.cc, onnx_ops_groups.cc)

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

// An optional constant input: null where it is absent or empty (exporters pass "" or a 0-element tensor
// for "not given").
Expected<const Constant*> Importer::optional_const(const onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) return nullptr;
  ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
  return c->numel() > 0 ? c : nullptr;
}

Status Importer::read_initializers() {
  RETURN_ERROR_IF(graph_.sparse_initializer_size() > 0, ErrorCode::kInvalidArgument,
                  "sparse initializers are not supported");
  for (auto& t : *graph_.mutable_initializer()) {
    ASSIGN_OR_RETURN(Constant c, read_tensor(t, base_dir_));
    consts_[t.name()] = std::move(c);
    // The file's copy is not read again: releasing it keeps a large model's weights in memory once.
    std::string().swap(*t.mutable_raw_data());
    google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
    google::protobuf::RepeatedField<double>().Swap(t.mutable_double_data());
    google::protobuf::RepeatedField<int64_t>().Swap(t.mutable_int64_data());
    google::protobuf::RepeatedField<int32_t>().Swap(t.mutable_int32_data());
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
  read_.push_back(false);
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
  std::unordered_map<std::string, std::vector<int>>& readers = readers_;
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

std::optional<Constant> Importer::constant_node_value(const std::string& name) const {
  for (const auto& n : graph_.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1 || n.output(0) != name) continue;
    const Attributes at(n);
    if (const onnx::TensorProto* t = at.get_tensor("value")) {
      auto c = read_tensor(*t, base_dir_);
      return c ? std::optional<Constant>(std::move(*c)) : std::nullopt;
    }
    if (auto f = at.get_float("value_float", NAN); f && at.has("value_float")) return Constant{{}, {*f}, {}};
    return std::nullopt;
  }
  return std::nullopt;
}

// A constant scalar by name, from an initializer or a Constant node (the patterns' operands).
std::optional<float> Importer::scalar(const std::string& name) const {
  auto one = [](const Constant& c) { return c.floats.size() == 1 ? std::optional<float>(c.floats[0]) : std::nullopt; };
  if (auto it = consts_.find(name); it != consts_.end()) return one(it->second);  // read in place: may be a weight
  const std::optional<Constant> c = constant_node_value(name);
  return c ? one(*c) : std::nullopt;
}

// An integer constant's values by name (the patterns' shapes and axes).
std::optional<std::vector<int64_t>> Importer::integers(const std::string& name) const {
  auto ints = [](const Constant& c) {
    return c.ints.size() == c.floats.size() ? std::optional<std::vector<int64_t>>(c.ints) : std::nullopt;
  };
  if (auto it = consts_.find(name); it != consts_.end()) return ints(it->second);
  const std::optional<Constant> c = constant_node_value(name);
  return c ? ints(*c) : std::nullopt;
}

// Weights after folding: a NaN or infinity (from the file, or a fold such as a huge scale) would make a
// weights file the loader refuses, so it is named here instead.
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
      graph_, [this](const std::string& name) { return scalar(name); },
      [this](const std::string& name) { return integers(name); }, counts_);
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

}  // namespace detail

namespace {

using detail::bad;
using detail::Importer;

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
  for (const auto& [op, handler] : Importer::handlers())
    if (op.rfind("ios::", 0) != 0) ops.push_back(op);  // not the importer's own ops, which patterns write
  ops.push_back("ReduceL2 (in global response normalization)");
  return ops;
}

namespace {

Expected<onnx::ModelProto> parse_model(const std::string& bytes) {
  onnx::ModelProto model;
  RETURN_ERROR_IF(!model.ParseFromString(bytes), ErrorCode::kInvalidArgument,
                  "not an ONNX model (the protobuf does not parse as a ModelProto)");
  RETURN_ERROR_IF(!model.has_graph(), ErrorCode::kInvalidArgument, "the model has no graph");
  return model;
}

Expected<ImportedModel> import_model(onnx::ModelProto& model, const std::string& name, const std::string& base_dir) {
  ASSIGN_OR_RETURN(int opset, default_opset(model));
  Importer importer(*model.mutable_graph(), opset, base_dir);
  return importer.run(name);
}

}  // namespace

Expected<ImportedModel> import_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, parse_model(bytes));
  return import_model(model, name, base_dir);
}

Expected<ImportedModel> import_file(const std::string& path) {
  const std::filesystem::path p(path);
  Expected<ImportedModel> m = [&]() -> Expected<ImportedModel> {
    ASSIGN_OR_RETURN(std::string bytes, read_file(path, size_t{2} << 30));  // protobuf's own limit
    ASSIGN_OR_RETURN(onnx::ModelProto model, parse_model(bytes));
    std::string().swap(bytes);  // the parsed model holds what is still needed
    return import_model(model, p.stem().string(), p.parent_path().string());
  }();
  if (!m) return m.status().with_context(path);
  return m;
}

}  // namespace ios::onnx_import
