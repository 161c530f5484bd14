#include "ir/builder.h"

namespace ios::ir {

In add(std::initializer_list<Value> values) { return In(Inputs{Term(values)}); }
In add(const std::vector<Value>& values) { return In(Inputs{Term(values)}); }

In cat(std::initializer_list<In> parts) {
  Inputs terms;
  for (const In& p : parts) terms.insert(terms.end(), p.terms.begin(), p.terms.end());
  return In(std::move(terms));
}

In cat(const std::vector<Value>& values) {
  Inputs terms;
  for (const Value& v : values) terms.push_back({v});
  return In(std::move(terms));
}

GraphBuilder::GraphBuilder(std::string name, Shape input_shape) {
  graph_.name = std::move(name);
  Node in;
  in.name = "0";
  in.op = InputAttrs{input_shape};
  in.input_shape = in.output_shape = input_shape;
  graph_.nodes.push_back(std::move(in));
}

void GraphBuilder::begin_block() {
  if (block_open_ && deferred_.is_ok())
    deferred_ = error(ErrorCode::kInvalidArgument, "begin_block called while a block is open");
  block_open_ = true;
  current_ = Block{};
  current_.enter = graph_.blocks.empty() ? 0 : graph_.blocks.back().exit;
  part_start_ = 0;
}

void GraphBuilder::end_part() {
  std::vector<NodeId> part(current_.inner.begin() + static_cast<std::ptrdiff_t>(part_start_), current_.inner.end());
  if (!part.empty()) current_.parts.push_back(std::move(part));
  part_start_ = current_.inner.size();
}

void GraphBuilder::end_block(Value exit) {
  if (!block_open_ || current_.inner.empty() || current_.inner.back() != exit.node) {
    if (deferred_.is_ok())
      deferred_ =
          error(ErrorCode::kInvalidArgument, "end_block needs an open block whose last op is the exit (node index " +
                                                 std::to_string(exit.node) + ")");
    return;
  }
  current_.inner.pop_back();
  current_.exit = exit.node;
  if (!current_.parts.empty()) {
    // The exit closes the last part; a trailing part holding only the exit joins it.
    std::vector<NodeId> last(
        current_.inner.begin() + static_cast<std::ptrdiff_t>(std::min(part_start_, current_.inner.size())),
        current_.inner.end());
    last.push_back(exit.node);
    current_.parts.push_back(std::move(last));
  }
  graph_.blocks.push_back(std::move(current_));
  current_ = Block{};
  block_open_ = false;
}

Value GraphBuilder::name(Value v, std::string name) {
  if (v.node < 0 || size_t(v.node) >= graph_.nodes.size() || name.empty()) {
    if (deferred_.is_ok())
      deferred_ = error(ErrorCode::kInvalidArgument,
                        "name('" + name + "'): needs a value of this builder and a non-empty name");
    return v;
  }
  graph_.nodes[size_t(v.node)].name = std::move(name);
  return v;
}

Value GraphBuilder::add_node(Op op, Inputs inputs) {
  if (!block_open_ && deferred_.is_ok())
    deferred_ = error(ErrorCode::kInvalidArgument, "op created outside a block (call begin_block first)");
  const auto id = static_cast<NodeId>(graph_.nodes.size());
  Node n;
  n.name = std::to_string(id);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  Status st = infer_node(graph_, id, n);
  if (!st.is_ok() && deferred_.is_ok()) deferred_ = st;
  const int channels = n.output_shape.c;
  graph_.nodes.push_back(std::move(n));
  current_.inner.push_back(id);
  return Value{id, 0, channels};
}

Value GraphBuilder::conv(In in, const ConvAttrs& attrs) { return add_node(attrs, std::move(in.terms)); }
Value GraphBuilder::pool(In in, const PoolAttrs& attrs) { return add_node(attrs, std::move(in.terms)); }
Value GraphBuilder::identity(In in) { return add_node(IdentityAttrs{}, std::move(in.terms)); }
Value GraphBuilder::activation(In in, Act act) { return add_node(ActivationAttrs{act}, std::move(in.terms)); }
Value GraphBuilder::linear(In in, const LinearAttrs& attrs) { return add_node(attrs, std::move(in.terms)); }
Value GraphBuilder::step(In in, const SubOp& op) {
  return add_node(std::visit([](const auto& s) { return Op{s}; }, op), std::move(in.terms));
}
Value GraphBuilder::sequential(In in, SequentialAttrs steps) { return add_node(std::move(steps), std::move(in.terms)); }

Value GraphBuilder::element(std::initializer_list<In> terms, ElementOp op) {
  return add_node(ElementAttrs{op}, cat(terms).terms);
}

int GraphBuilder::channels(const In& in) const {
  int c = 0;
  for (const Term& t : in.terms)
    if (!t.empty()) c += t[0].channels();
  return c;
}

Value GraphBuilder::sep_conv(In in, int out_channels, int kernel, int stride, int pad) {
  const int c = channels(in);
  SequentialAttrs seq{
      {Conv(c).kernel(kernel).stride(stride).pad(pad).grouped(c).act(Act::kNone), Conv(out_channels).act(Act::kNone)}};
  return sequential(std::move(in), std::move(seq));
}

Value GraphBuilder::relu_sep_conv(In in, int out_channels, int kernel, int stride, int pad) {
  const int c = channels(in);
  SequentialAttrs seq{{ActivationAttrs{Act::kRelu},
                       Conv(c).kernel(kernel).stride(stride).pad(pad).grouped(c).act(Act::kNone),
                       Conv(out_channels).act(Act::kNone)}};
  return sequential(std::move(in), std::move(seq));
}

Value GraphBuilder::relu_conv(In in, const ConvAttrs& attrs) {
  ConvAttrs conv = attrs;
  conv.act(Act::kNone);
  return sequential(std::move(in), SequentialAttrs{{ActivationAttrs{Act::kRelu}, conv}});
}

Expected<Graph> GraphBuilder::build() {
  RETURN_IF_ERROR(deferred_.with_context("building graph '" + graph_.name + "'"));
  RETURN_ERROR_IF(block_open_, ErrorCode::kInvalidArgument,
                  "building graph '" + graph_.name + "': the last block was not closed with end_block");
  Graph g = graph_;
  RETURN_IF_ERROR(g.validate_and_infer());
  return g;
}

}  // namespace ios::ir
