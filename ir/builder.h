// A fluent C++ builder for graphs, close to IOS's Python builder:
//
//   GraphBuilder g("tiny", {3, 32, 32});
//   g.begin_block();
//   Value a = g.conv(g.input(), Conv(16).kernel(3).pad(1));
//   Value b = g.conv(g.input(), Conv(16));
//   g.end_block(g.identity(cat(a, b)));      // concat; add(a, b) would sum
//   Expected<Graph> graph = g.build();
//
// Every op is appended to the open block; a block's exit is the value passed to end_block, which must
// be the last op created.
#pragma once

#include <initializer_list>
#include <string>

#include "ir/graph.h"

namespace ios::ir {

// An op input: terms concatenated on channels, each a sum of values. Built implicitly from a Value.
struct In {
  Inputs terms;
  In(Value v) : terms{{v}} {}  // NOLINT: implicit on purpose
  explicit In(Inputs t) : terms(std::move(t)) {}
};
// One term: the element-wise sum of the values.
In add(std::initializer_list<Value> values);
In add(const std::vector<Value>& values);
// Concatenation of the inputs' terms, in order.
In cat(std::initializer_list<In> parts);
In cat(const std::vector<Value>& values);  // one term per value

class GraphBuilder {
 public:
  GraphBuilder(std::string name, Shape input_shape);

  Value input() const { return Value{0, 0, graph_.nodes[0].output_shape.c}; }

  void begin_block();
  void end_block(Value exit);
  // Closes the current part of the open block (NasNet splits its block per cell).
  void end_part();

  Value conv(In in, const ConvAttrs& attrs);
  Value pool(In in, const PoolAttrs& attrs);
  Value identity(In in);
  Value element(std::initializer_list<In> terms, ElementOp op);
  Value activation(In in, Act act);
  Value relu(In in) { return activation(std::move(in), Act::kRelu); }
  Value linear(In in, const LinearAttrs& attrs);
  Value sequential(In in, SequentialAttrs steps);
  Value step(In in, const SubOp& op);  // any step op (ir/ops/), e.g. ResizeAttrs, ChannelShuffleAttrs

  // Composites used by NasNet and RandWire.
  Value sep_conv(In in, int out_channels, int kernel, int stride, int pad);       // depthwise + pointwise
  Value relu_sep_conv(In in, int out_channels, int kernel, int stride, int pad);  // relu + sep_conv
  Value relu_conv(In in, const ConvAttrs& attrs);                                 // relu + conv

  // Names the op producing `v` (names appear in graph and schedule files, `ios show` and errors; the
  // default is the node index). Names must be unique; build() says which is not. Returns `v`.
  Value name(Value v, std::string name);

  // Channel count of a value's producer output, for builders that size convolutions from inputs.
  int channels(const In& in) const;

  // Validates the whole graph (shapes, blocks) and returns it; errors name the node at fault.
  Expected<Graph> build();

 private:
  Value add_node(Op op, Inputs inputs);

  Graph graph_;
  bool block_open_ = false;
  Block current_;
  size_t part_start_ = 0;
  Status deferred_;  // first misuse of the builder, reported by build()
};

}  // namespace ios::ir
