#include "ir/graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <set>
#include <sstream>

#include "common/limits.h"
#include "common/overloaded.h"

namespace ios::ir {

namespace {
template <size_t... I>
const char* kind_type(size_t kind, std::index_sequence<I...>) {
  const char* name = "?";
  ((kind == I ? (name = std::variant_alternative_t<I, Op>::kType, 0) : 0), ...);
  return name;
}
}  // namespace

const char* op_kind_name(OpKind kind) {
  return kind_type(size_t(kind), std::make_index_sequence<std::variant_size_v<Op>>{});
}

const char* step_type(const SubOp& step) {
  return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kType; }, step);
}

OpTraits step_traits(const SubOp& step) {
  return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kTraits; }, step);
}

std::optional<OpTraits> op_traits(const Op& op) {
  return std::visit(
      [](const auto& a) -> std::optional<OpTraits> {
        using T = std::decay_t<decltype(a)>;
        if constexpr (is_step_op_v<T>)
          return T::kTraits;
        else
          return std::nullopt;
      },
      op);
}

std::vector<NodeId> Block::members() const {
  std::vector<NodeId> m = inner;
  if (exit != kNoNode) m.push_back(exit);
  return m;
}

std::optional<NodeId> Graph::find(const std::string& node_name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == node_name) return static_cast<NodeId>(i);
  return std::nullopt;
}

std::vector<NodeId> Graph::producers(NodeId id) const {
  std::vector<NodeId> out;
  for (const Term& term : node(id).inputs)
    for (const Value& v : term) out.push_back(v.node);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> out(nodes.size());
  for (NodeId id = 0; id < static_cast<NodeId>(nodes.size()); ++id)
    for (NodeId p : producers(id)) out[static_cast<size_t>(p)].push_back(id);
  return out;
}

namespace {

}  // namespace

std::optional<SubOp> as_step(const Op& op) {
  return std::visit(
      [](const auto& a) -> std::optional<SubOp> {
        if constexpr (is_step_op_v<std::decay_t<decltype(a)>>)
          return SubOp{a};
        else
          return std::nullopt;
      },
      op);
}

Expected<Shape> infer_step_shape(const SubOp& step, const Shape& in) {
  ASSIGN_OR_RETURN(Shape out, std::visit([&](const auto& s) { return s.infer(in); }, step));
  RETURN_IF_ERROR(op_check::tensor_size(out));
  return out;
}

NodeCost step_cost(const SubOp& step, const Shape& in, const Shape& out) {
  return std::visit([&](const auto& s) { return s.cost(in, out); }, step);
}

NodeCost Graph::cost(NodeId id) const {
  const Node& n = node(id);
  NodeCost cost;
  // Summing values of a term and concatenating terms are extra element-wise passes.
  for (const Term& term : n.inputs) {
    if (term.size() > 1) {
      const Shape& src = node(term[0].node).output_shape;
      const double elems = double(term[0].channels()) * src.h * src.w;
      cost.flops += elems * double(term.size() - 1);
      cost.bytes += 4.0 * elems * double(term.size() + 1);
      cost.kernels += 1;
    }
  }
  auto add = [&](const NodeCost& c) {
    return NodeCost{cost.flops + c.flops, cost.bytes + c.bytes, cost.kernels + c.kernels};
  };
  return std::visit(
      Overloaded{[](const InputAttrs&) { return NodeCost{}; },
                 [&](const IdentityAttrs&) {
                   if (n.inputs.size() > 1) {
                     cost.bytes += 8.0 * static_cast<double>(n.output_shape.numel());
                     cost.kernels += 1;
                   }
                   return cost;
                 },
                 [&](const ElementAttrs&) {
                   cost.flops += static_cast<double>(n.output_shape.numel()) * double(n.inputs.size() - 1);
                   cost.bytes += 4.0 * static_cast<double>(n.output_shape.numel()) * double(n.inputs.size() + 1);
                   cost.kernels += 1;
                   return cost;
                 },
                 [&](const SequentialAttrs& seq) {
                   Shape in = n.input_shape;
                   for (size_t i = 0; i < seq.steps.size(); ++i) {
                     cost = add(step_cost(seq.steps[i], in, n.step_shapes[i]));
                     in = n.step_shapes[i];
                   }
                   return cost;
                 },
                 [&](const auto& step) { return add(step.cost(n.input_shape, n.output_shape)); }},
      n.op);
}

double Graph::total_flops() const {
  double total = 0;
  for (NodeId id = 1; id < static_cast<NodeId>(nodes.size()); ++id) total += cost(id).flops;
  return total;
}

namespace {

struct CycleFinder : boost::default_dfs_visitor {
  std::optional<std::pair<size_t, size_t>>* found;
  explicit CycleFinder(std::optional<std::pair<size_t, size_t>>* out) : found(out) {}
  template <typename Edge, typename G>
  void back_edge(Edge e, const G& g) const {
    if (!*found) *found = std::make_pair(boost::source(e, g), boost::target(e, g));
  }
};

std::string node_label(const Graph& g, NodeId id) { return "node '" + g.node(id).name + "'"; }

Status check_acyclic(const Graph& g) {
  using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  BGraph bg(g.nodes.size());
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id)
    for (const Term& term : g.node(id).inputs)
      for (const Value& v : term) boost::add_edge(static_cast<size_t>(v.node), static_cast<size_t>(id), bg);
  std::optional<std::pair<size_t, size_t>> back_edge;
  boost::depth_first_search(bg, boost::visitor(CycleFinder(&back_edge)));
  if (back_edge) {
    return error(ErrorCode::kInvalidGraph, "graph is cyclic: " + node_label(g, static_cast<NodeId>(back_edge->second)) +
                                               " and " + node_label(g, static_cast<NodeId>(back_edge->first)) +
                                               " depend on each other");
  }
  return Status::ok();
}

// Parts cover the block once each, in an order the scheduler can follow: a part's producers are in it or
// in an earlier part.
Status check_parts(const Graph& g, const Block& blk, const std::vector<int>& owner, int block) {
  if (blk.parts.empty()) return Status::ok();
  std::vector<int> part_of(g.nodes.size(), -1);
  size_t covered = 0;
  for (size_t p = 0; p < blk.parts.size(); ++p)
    for (NodeId m : blk.parts[p]) {
      RETURN_ERROR_IF(m <= 0 || m >= static_cast<NodeId>(g.nodes.size()) || owner[size_t(m)] != block,
                      ErrorCode::kInvalidGraph, "a part lists a node outside the block");
      RETURN_ERROR_IF(part_of[size_t(m)] != -1, ErrorCode::kInvalidGraph, node_label(g, m) + " is in two parts");
      part_of[size_t(m)] = static_cast<int>(p);
      ++covered;
    }
  RETURN_ERROR_IF(covered != blk.members().size(), ErrorCode::kInvalidGraph,
                  "its parts do not cover every node of the block");
  for (NodeId m : blk.members())
    for (NodeId p : g.producers(m))
      RETURN_ERROR_IF(part_of[size_t(p)] > part_of[size_t(m)], ErrorCode::kInvalidGraph,
                      "part " + std::to_string(part_of[size_t(m)]) + " holds " + node_label(g, m) + ", which reads " +
                          node_label(g, p) + " of the later part " + std::to_string(part_of[size_t(p)]));
  return Status::ok();
}

}  // namespace

Status infer_node(const Graph& g, NodeId id, Node& n) {
  const std::string where = "node '" + n.name + "' (" + op_kind_name(n.kind()) + ")";
  auto fail = [&](const std::string& msg) { return error(ErrorCode::kInvalidGraph, where + ": " + msg); };

  if (const auto* in = std::get_if<InputAttrs>(&n.op)) {
    if (id != 0) return fail("only the first node may be the graph input");
    if (in->shape.c <= 0 || in->shape.h <= 0 || in->shape.w <= 0 || in->shape.c > limits::kMaxChannels ||
        in->shape.h > limits::kMaxSpatial || in->shape.w > limits::kMaxSpatial)
      return fail("field 'output_shape' must be positive, at most " + std::to_string(limits::kMaxChannels) +
                  " channels and " + std::to_string(limits::kMaxSpatial) + " pixels a side, got " +
                  in->shape.to_string());
    n.input_shape = n.output_shape = in->shape;
    return Status::ok();
  }
  if (id == 0) return fail("the first node must be the graph input (placeholder)");
  if (n.inputs.empty()) return fail("field 'inputs' is empty");

  std::vector<Shape> term_shapes;
  for (size_t t = 0; t < n.inputs.size(); ++t) {
    const Term& term = n.inputs[t];
    if (term.empty()) return fail("input term " + std::to_string(t) + " is empty");
    std::optional<Shape> term_shape;
    for (const Value& v : term) {
      if (v.node < 0 || v.node >= static_cast<NodeId>(g.nodes.size()))
        return fail("references unknown value (node index " + std::to_string(v.node) + ")");
      if (v.node >= id) return fail("reads " + node_label(g, v.node) + ", which is defined after it");
      const Shape& src = g.node(v.node).output_shape;
      if (v.begin < 0 || v.end > src.c || v.begin >= v.end)
        return fail("channel slice [" + std::to_string(v.begin) + ", " + std::to_string(v.end) + ") of " +
                    node_label(g, v.node) + " is out of range (it has " + std::to_string(src.c) + " channels)");
      Shape s{v.channels(), src.h, src.w};
      if (term_shape && !(*term_shape == s))
        return fail("term " + std::to_string(t) + " sums values of different shapes " + term_shape->to_string() +
                    " and " + s.to_string());
      term_shape = s;
    }
    term_shapes.push_back(*term_shape);
  }

  // Terms are concatenated on channels, except by an element-wise op, which combines them.
  auto concatenated = [&]() -> Expected<Shape> {
    Shape in = term_shapes[0];
    for (size_t t = 1; t < term_shapes.size(); ++t) {
      if (term_shapes[t].h != in.h || term_shapes[t].w != in.w)
        return fail("concatenates terms of different spatial size " + in.to_string() + " and " +
                    term_shapes[t].to_string());
      in.c += term_shapes[t].c;
      if (in.c > limits::kMaxChannels)
        return fail("concatenates more than the limit of " + std::to_string(limits::kMaxChannels) + " channels");
    }
    return in;
  };
  auto one_step = [&](const SubOp& op) -> Status {
    ASSIGN_OR_RETURN(n.input_shape, concatenated());
    Expected<Shape> out = infer_step_shape(op, n.input_shape);
    if (!out) return out.status().with_context(where);
    n.output_shape = *out;
    return Status::ok();
  };
  RETURN_IF_ERROR(std::visit(
      Overloaded{[&](const InputAttrs&) { return fail("only the first node may be the graph input"); },
                 [&](const ElementAttrs& e) -> Status {
                   if (n.inputs.size() < 2) return fail("element-wise op needs at least two terms");
                   for (const Shape& s : term_shapes)
                     if (!(s == term_shapes[0]) && !(e.op == ElementOp::kMul && broadcasts(s, term_shapes[0])))
                       return fail("element-wise terms have different shapes " + term_shapes[0].to_string() + " and " +
                                   s.to_string() +
                                   (e.op == ElementOp::kMul ? " (a factor may be C x 1 x 1 of the first term's C)" : ""));
                   n.input_shape = n.output_shape = term_shapes[0];
                   return Status::ok();
                 },
                 [&](const IdentityAttrs&) -> Status {
                   ASSIGN_OR_RETURN(n.input_shape, concatenated());
                   n.output_shape = n.input_shape;
                   return Status::ok();
                 },
                 [&](const SequentialAttrs& seq) -> Status {
                   if (seq.steps.empty()) return fail("sequential op has no steps");
                   ASSIGN_OR_RETURN(n.input_shape, concatenated());
                   n.step_shapes.clear();
                   Shape cur = n.input_shape;
                   for (size_t i = 0; i < seq.steps.size(); ++i) {
                     Expected<Shape> out = infer_step_shape(seq.steps[i], cur);
                     if (!out) return out.status().with_context(where + " step " + std::to_string(i));
                     n.step_shapes.push_back(*out);
                     cur = *out;
                   }
                   n.output_shape = cur;
                   return Status::ok();
                 },
                 [&](const auto& step) { return one_step(step); }},
      n.op));
  return op_check::tensor_size(n.output_shape).with_context(where);
}

Status Graph::validate_and_infer() {
  RETURN_ERROR_IF(nodes.size() < 2, ErrorCode::kInvalidGraph, "graph '" + name + "' has no operators");
  RETURN_ERROR_IF(nodes.size() > size_t(limits::kMaxNodes), ErrorCode::kInvalidGraph,
                  "graph '" + name + "' has more nodes than the limit of " + std::to_string(limits::kMaxNodes));
  std::set<std::string> names;
  for (const Node& n : nodes) {
    RETURN_ERROR_IF(n.name.empty(), ErrorCode::kInvalidGraph, "a node has an empty name");
    RETURN_ERROR_IF(!names.insert(n.name).second, ErrorCode::kInvalidGraph, "node name '" + n.name + "' is used twice");
    for (const Term& term : n.inputs)
      for (const Value& v : term)
        RETURN_ERROR_IF(v.node < 0 || v.node >= static_cast<NodeId>(nodes.size()), ErrorCode::kInvalidGraph,
                        "node '" + n.name + "' references an unknown value");
  }
  RETURN_IF_ERROR(check_acyclic(*this));
  int64_t elements = 0;  // each term is at most kMaxTensorElements, so the sum cannot overflow first
  for (NodeId id = 0; id < static_cast<NodeId>(nodes.size()); ++id) {
    RETURN_IF_ERROR(infer_node(*this, id, nodes[static_cast<size_t>(id)]));
    elements += node(id).output_shape.numel();
    RETURN_ERROR_IF(elements > limits::kMaxGraphElements, ErrorCode::kInvalidGraph,
                    "graph '" + name + "': its outputs hold more than the limit of " +
                        std::to_string(limits::kMaxGraphElements) + " elements per sample");
  }

  // Blocks partition the operators; each block is entered from the previous block's exit.
  RETURN_ERROR_IF(blocks.empty(), ErrorCode::kInvalidGraph, "graph has no blocks");
  const auto consumer_lists = consumers();
  std::vector<int> owner(nodes.size(), -1);
  NodeId expected_enter = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const Block& blk = blocks[b];
    const std::string where = "block " + std::to_string(b);
    RETURN_ERROR_IF(blk.exit == kNoNode, ErrorCode::kInvalidGraph, where + " has no exit node");
    RETURN_ERROR_IF(blk.enter != expected_enter, ErrorCode::kInvalidGraph,
                    where + " must be entered from '" + node(expected_enter).name + "'");
    for (NodeId m : blk.members()) {
      RETURN_ERROR_IF(m <= 0 || m >= static_cast<NodeId>(nodes.size()), ErrorCode::kInvalidGraph,
                      where + " lists an unknown node");
      RETURN_ERROR_IF(owner[static_cast<size_t>(m)] != -1, ErrorCode::kInvalidGraph,
                      node_label(*this, m) + " belongs to two blocks");
      owner[static_cast<size_t>(m)] = static_cast<int>(b);
    }
    for (NodeId m : blk.members())
      for (NodeId p : producers(m))
        RETURN_ERROR_IF(p != 0 && (owner[static_cast<size_t>(p)] == -1 || owner[static_cast<size_t>(p)] > int(b)),
                        ErrorCode::kInvalidGraph,
                        node_label(*this, m) + " in " + where + " reads " + node_label(*this, p) +
                            ", which is not in this block or an earlier one");
    // The exit is the block's only sink: any other member nobody reads would be a second output.
    for (NodeId m : blk.inner)
      RETURN_ERROR_IF(consumer_lists[size_t(m)].empty(), ErrorCode::kInvalidGraph,
                      where + ": " + node_label(*this, m) + " is read by nothing, but only the exit " +
                          node_label(*this, blk.exit) + " may end a block");
    RETURN_IF_ERROR(check_parts(*this, blk, owner, int(b)).with_context(where));
    expected_enter = blk.exit;
  }
  for (NodeId id = 1; id < static_cast<NodeId>(nodes.size()); ++id)
    RETURN_ERROR_IF(owner[static_cast<size_t>(id)] == -1, ErrorCode::kInvalidGraph,
                    node_label(*this, id) + " belongs to no block");
  return Status::ok();
}

}  // namespace ios::ir
