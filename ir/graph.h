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
#include "ir/ops/activation_op.h"
#include "ir/ops/channel_conv.h"
#include "ir/ops/channel_norm.h"
#include "ir/ops/channel_shuffle.h"
#include "ir/ops/channel_softmax.h"
#include "ir/ops/conv.h"
#include "ir/ops/group_norm.h"
#include "ir/ops/linear.h"
#include "ir/ops/op_common.h"
#include "ir/ops/pad.h"
#include "ir/ops/pool.h"
#include "ir/ops/prelu.h"
#include "ir/ops/resize.h"
#include "ir/ops/response_norm.h"
#include "ir/ops/space_depth.h"

namespace ios::ir {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

enum class ElementOp : uint8_t { kAdd, kMul };

// A term of shape `factor` multiplies one of shape `full` per channel: C x 1 x 1 against C x H x W (a
// squeeze-excite gate). Element-wise products allow such factors after their first term.
inline bool broadcasts(const Shape& factor, const Shape& full) {
  return factor.c == full.c && factor.h == 1 && factor.w == 1 && !(factor == full);
}

struct InputAttrs {
  static constexpr const char* kType = "input";
  Shape shape;
  bool operator==(const InputAttrs&) const = default;
};
struct IdentityAttrs {
  static constexpr const char* kType = "identity";
  bool operator==(const IdentityAttrs&) const = default;
};
// Combines its terms element-wise (instead of concatenating them); all terms have one shape.
struct ElementAttrs {
  static constexpr const char* kType = "element";
  ElementOp op = ElementOp::kAdd;
  bool operator==(const ElementAttrs&) const = default;
};

// The step ops (ir/ops/*.h): one input tensor to one output tensor, alone as a node or as a step of a
// sequential node, each running on the previous step's output. A new step op is added here and to Op.
using SubOp = std::variant<ConvAttrs, PoolAttrs, ActivationAttrs, LinearAttrs, ResizeAttrs, ChannelShuffleAttrs,
                           ChannelNormAttrs, PadAttrs, GroupNormAttrs, PReluAttrs, ChannelConvAttrs,
                           ChannelSoftmaxAttrs, ResponseNormAttrs, SpaceDepthAttrs>;

template <typename T, typename Variant>
struct is_alternative;
template <typename T, typename... Ts>
struct is_alternative<T, std::variant<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {};
template <typename T>
inline constexpr bool is_step_op_v = is_alternative<T, SubOp>::value;

// Several operators run back to back as one scheduling unit (SepConv, ReluConv, ...).
struct SequentialAttrs {
  static constexpr const char* kType = "sequential";
  std::vector<SubOp> steps;
  bool operator==(const SequentialAttrs&) const = default;
};

using Op = std::variant<InputAttrs, ConvAttrs, PoolAttrs, IdentityAttrs, ElementAttrs, ActivationAttrs, SequentialAttrs,
                        LinearAttrs, ResizeAttrs, ChannelShuffleAttrs, ChannelNormAttrs, PadAttrs, GroupNormAttrs,
                        PReluAttrs, ChannelConvAttrs, ChannelSoftmaxAttrs, ResponseNormAttrs, SpaceDepthAttrs>;

// One kind per alternative of Op, in the same order: Node::kind() is the variant index.
enum class OpKind : uint8_t {
  kInput,
  kConv,
  kPool,
  kIdentity,
  kElement,
  kActivation,
  kSequential,
  kLinear,
  kResize,
  kChannelShuffle,
  kChannelNorm,
  kPad,
  kGroupNorm,
  kPRelu,
  kChannelConv,
  kChannelSoftmax,
  kResponseNorm,
  kSpaceDepth
};
inline constexpr size_t kOpKindCount = 18;
static_assert(std::variant_size_v<Op> == kOpKindCount,
              "an op was added to ir::Op: add its OpKind, then follow the compiler to every visit");
static_assert(
    std::is_same_v<std::variant_alternative_t<size_t(OpKind::kConv), Op>, ConvAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kSequential), Op>, SequentialAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kLinear), Op>, LinearAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kChannelShuffle), Op>, ChannelShuffleAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kChannelNorm), Op>, ChannelNormAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kPad), Op>, PadAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kGroupNorm), Op>, GroupNormAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kPRelu), Op>, PReluAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kChannelConv), Op>, ChannelConvAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kChannelSoftmax), Op>, ChannelSoftmaxAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kResponseNorm), Op>, ResponseNormAttrs> &&
        std::is_same_v<std::variant_alternative_t<size_t(OpKind::kSpaceDepth), Op>, SpaceDepthAttrs>,
    "OpKind and ir::Op list the ops in different orders");
const char* op_kind_name(OpKind kind);

// The op as one step (a SubOp alternative); nullopt for the structural kinds (input, identity, element,
// sequential).
std::optional<SubOp> as_step(const Op& op);
// The step's type name and traits (ir/ops/op_common.h: OpTraits).
const char* step_type(const SubOp& step);
OpTraits step_traits(const SubOp& step);
// A node's traits where it is a step op; nullopt for the structural kinds.
std::optional<OpTraits> op_traits(const Op& op);

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

using Term = std::vector<Value>;   // summed element-wise
using Inputs = std::vector<Term>;  // concatenated on channels

struct Node {
  std::string name;
  Op op;
  Inputs inputs;
  Shape input_shape;  // after summing and concatenating terms (element: one term's shape)
  Shape output_shape;
  std::vector<Shape> step_shapes;  // sequential only: output shape of every step

  OpKind kind() const { return static_cast<OpKind>(op.index()); }
  template <typename T>
  const T& attrs() const {
    return std::get<T>(op);
  }
  template <typename T>
  bool is() const {
    return std::holds_alternative<T>(op);
  }
};

struct Block {
  NodeId enter = kNoNode;                  // previous block's exit (or the graph input); not a member
  std::vector<NodeId> inner;               // in creation order
  NodeId exit = kNoNode;                   // a member, the block's sink
  std::vector<std::vector<NodeId>> parts;  // optional split for the scheduler (NasNet's cells)

  std::vector<NodeId> members() const;  // inner + exit
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
