// The IR: a Graph of Nodes grouped into Blocks, following IOS's semantics.
//
// A node's input is a list of *terms*; the Values of one term are summed element-wise and the terms
// are concatenated on channels (so `identity` is an add or a concat). A Value is the channel slice
// [begin, end) of a node's output. Shapes are CHW; the batch size is a run-time argument.
// Nodes are stored in creation order, which is a topological order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/status.h"
#include "ir/activation.h"

namespace ios::ir {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

struct Shape {
  int c = 0, h = 0, w = 0;
  int64_t numel() const { return int64_t{c} * h * w; }
  bool operator==(const Shape&) const = default;
  std::string to_string() const;
};

enum class PoolKind : uint8_t { kMax, kAvg, kGlobalMax, kGlobalAvg };
enum class ElementOp : uint8_t { kAdd, kMul };

// A term of shape `factor` multiplies one of shape `full` per channel: C x 1 x 1 against C x H x W (a
// squeeze-excite gate). Element-wise products allow such factors after their first term.
inline bool broadcasts(const Shape& factor, const Shape& full) {
  return factor.c == full.c && factor.h == 1 && factor.w == 1 && !(factor == full);
}

const char* act_name(Act act);  // the table's name (ir/activation.h): identity, relu, sigmoid, ...
const char* pool_kind_name(PoolKind kind);
std::optional<Act> parse_act(const std::string& s);
std::optional<PoolKind> parse_pool_kind(const std::string& s);

// Attributes are plain data with fluent setters, so networks read like IOS's builder:
//   Conv(64).kernel(3).stride(2).pad(1).act(Act::kNone)
struct ConvAttrs {
  int out_channels = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int groups = 1;
  bool has_bias = true;
  Act activation = Act::kRelu;  // IOS's builder default

  ConvAttrs& kernel(int h, int w) { kh = h, kw = w; return *this; }
  ConvAttrs& kernel(int k) { return kernel(k, k); }
  ConvAttrs& stride(int h, int w) { sh = h, sw = w; return *this; }
  ConvAttrs& stride(int s) { return stride(s, s); }
  ConvAttrs& pad(int h, int w) { ph = h, pw = w; return *this; }
  ConvAttrs& pad(int p) { return pad(p, p); }
  ConvAttrs& dilation(int h, int w) { dh = h, dw = w; return *this; }
  ConvAttrs& grouped(int g) { groups = g; return *this; }
  ConvAttrs& bias(bool b) { has_bias = b; return *this; }
  ConvAttrs& act(Act a) { activation = a; return *this; }
  bool operator==(const ConvAttrs&) const = default;
};
inline ConvAttrs Conv(int out_channels) { ConvAttrs a; a.out_channels = out_channels; return a; }

struct PoolAttrs {
  PoolKind kind = PoolKind::kMax;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool ceil_mode = false;  // PyTorch's ceil_mode (GoogLeNet); IOS always floors
  bool count_include_pad = true;  // average: padded cells count in the divisor (PyTorch's default, ONNX's not)

  PoolAttrs& kernel(int h, int w) { kh = h, kw = w; return *this; }
  PoolAttrs& kernel(int k) { return kernel(k, k); }
  PoolAttrs& stride(int h, int w) { sh = h, sw = w; return *this; }
  PoolAttrs& stride(int s) { return stride(s, s); }
  PoolAttrs& pad(int h, int w) { ph = h, pw = w; return *this; }
  PoolAttrs& pad(int p) { return pad(p, p); }
  PoolAttrs& ceil(bool c = true) { ceil_mode = c; return *this; }
  PoolAttrs& include_pad(bool i) { count_include_pad = i; return *this; }
  bool is_global() const { return kind == PoolKind::kGlobalMax || kind == PoolKind::kGlobalAvg; }
  bool operator==(const PoolAttrs&) const = default;
};
inline PoolAttrs MaxPool(int k) { PoolAttrs a; a.kind = PoolKind::kMax; return a.kernel(k); }
inline PoolAttrs AvgPool(int k) { PoolAttrs a; a.kind = PoolKind::kAvg; return a.kernel(k); }
inline PoolAttrs GlobalAvgPool() { PoolAttrs a; a.kind = PoolKind::kGlobalAvg; return a; }
inline PoolAttrs GlobalMaxPool() { PoolAttrs a; a.kind = PoolKind::kGlobalMax; return a; }

struct ActivationAttrs {
  Act activation = Act::kRelu;
  bool operator==(const ActivationAttrs&) const = default;
};

// Fully connected layer over the flattened CHW input; output shape is (out_features, 1, 1).
struct LinearAttrs {
  int out_features = 0;
  bool has_bias = true;
  Act activation = Act::kNone;
  bool operator==(const LinearAttrs&) const = default;
};

struct InputAttrs {
  Shape shape;
  bool operator==(const InputAttrs&) const = default;
};
struct IdentityAttrs {
  bool operator==(const IdentityAttrs&) const = default;
};
// Combines its terms element-wise (instead of concatenating them); all terms have one shape.
struct ElementAttrs {
  ElementOp op = ElementOp::kAdd;
  bool operator==(const ElementAttrs&) const = default;
};

// A step of a composite operator: runs on the previous step's output.
using SubOp = std::variant<ConvAttrs, PoolAttrs, ActivationAttrs, LinearAttrs>;

// Several operators run back to back as one scheduling unit (SepConv, ReluConv, ...).
struct SequentialAttrs {
  std::vector<SubOp> steps;
  bool operator==(const SequentialAttrs&) const = default;
};

using Op = std::variant<InputAttrs, ConvAttrs, PoolAttrs, IdentityAttrs, ElementAttrs, ActivationAttrs,
                        SequentialAttrs, LinearAttrs>;

// One kind per alternative of Op, in the same order: Node::kind() is the variant index.
enum class OpKind : uint8_t { kInput, kConv, kPool, kIdentity, kElement, kActivation, kSequential, kLinear };
inline constexpr size_t kOpKindCount = 8;
static_assert(std::variant_size_v<Op> == kOpKindCount,
              "an op was added to ir::Op: add its OpKind, then follow the compiler to every visit");
static_assert(std::is_same_v<std::variant_alternative_t<size_t(OpKind::kConv), Op>, ConvAttrs> &&
                  std::is_same_v<std::variant_alternative_t<size_t(OpKind::kSequential), Op>, SequentialAttrs> &&
                  std::is_same_v<std::variant_alternative_t<size_t(OpKind::kLinear), Op>, LinearAttrs>,
              "OpKind and ir::Op list the ops in different orders");
const char* op_kind_name(OpKind kind);

// The op as one step (conv, pool, activation, linear); nullopt for the kinds that are not one.
std::optional<SubOp> as_step(const Op& op);

// The op's attributes as compact text of their one serialization (json_io.h: attrs_to_json); stage
// signatures and kernel-cache keys are made from it.
std::string attrs_key(const Op& op);

struct Value {
  NodeId node = kNoNode;
  int begin = 0, end = 0;
  int channels() const { return end - begin; }
  Value slice(int b, int e) const { return Value{node, begin + b, begin + e}; }
  bool operator==(const Value&) const = default;
  auto operator<=>(const Value&) const = default;
};

using Term = std::vector<Value>;  // summed element-wise
using Inputs = std::vector<Term>;  // concatenated on channels

struct Node {
  std::string name;
  Op op;
  Inputs inputs;
  Shape input_shape;               // after summing and concatenating terms (element: one term's shape)
  Shape output_shape;
  std::vector<Shape> step_shapes;  // sequential only: output shape of every step

  OpKind kind() const { return static_cast<OpKind>(op.index()); }
  template <typename T>
  const T& attrs() const { return std::get<T>(op); }
  template <typename T>
  bool is() const { return std::holds_alternative<T>(op); }
};

struct Block {
  NodeId enter = kNoNode;               // previous block's exit (or the graph input); not a member
  std::vector<NodeId> inner;            // in creation order
  NodeId exit = kNoNode;                // a member, the block's sink
  std::vector<std::vector<NodeId>> parts;  // optional split for the scheduler (NasNet's cells)

  std::vector<NodeId> members() const;  // inner + exit
};

// Cost figures of one node at batch 1 (float32 bytes).
struct NodeCost {
  double flops = 0;        // multiply-add counted as 2
  double bytes = 0;        // activations read + written + parameters
  int kernels = 0;         // kernel launches a straightforward runtime needs
};

class Graph {
 public:
  std::string name;
  std::vector<Node> nodes;  // nodes[0] is the input
  std::vector<Block> blocks;
  uint64_t weight_seed = 0x105;

  const Node& node(NodeId id) const { return nodes[static_cast<size_t>(id)]; }
  NodeId input() const { return 0; }
  NodeId output() const { return blocks.empty() ? 0 : blocks.back().exit; }
  Shape input_shape() const { return nodes.front().output_shape; }
  Shape output_shape() const { return node(output()).output_shape; }
  int op_count() const { return static_cast<int>(nodes.size()) - 1; }
  std::optional<NodeId> find(const std::string& node_name) const;

  // Producers of a node (distinct, sorted) and consumers (distinct, sorted).
  std::vector<NodeId> producers(NodeId id) const;
  std::vector<std::vector<NodeId>> consumers() const;

  NodeCost cost(NodeId id) const;
  double total_flops() const;

  // Checks every rule of the IR and (re)computes every shape. Errors name the node and the field.
  Status validate_and_infer();
};

// Checks node `id`'s inputs against the nodes before it and sets its shapes.
Status infer_node(const Graph& g, NodeId id, Node& n);

// Shape after a sub-operator; errors describe the attribute at fault.
Expected<Shape> infer_step_shape(const SubOp& step, const Shape& in);
NodeCost step_cost(const SubOp& step, const Shape& in, const Shape& out);

}  // namespace ios::ir
