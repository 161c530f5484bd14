#include <gtest/gtest.h>

#include "ir/builder.h"
#include "test_graphs.h"

namespace ios::ir {
namespace {

Expected<Graph> single_op(Shape in, const std::function<Value(GraphBuilder&, Value)>& make) {
  GraphBuilder g("t", in);
  g.begin_block();
  g.end_block(make(g, g.input()));
  return g.build();
}

TEST(ShapeInference, ConvUsesIosFloorFormula) {
  auto g = single_op({3, 299, 299}, [](GraphBuilder& b, Value v) { return b.conv(v, Conv(32).kernel(3).stride(2)); });
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->output_shape(), (Shape{32, 149, 149}));
}

TEST(ShapeInference, ConvWithDilationAndAsymmetricKernel) {
  auto g = single_op({4, 17, 17},
                     [](GraphBuilder& b, Value v) { return b.conv(v, Conv(8).kernel(1, 7).pad(0, 3).dilation(1, 2)); });
  ASSERT_TRUE(g);
  EXPECT_EQ(g->output_shape(), (Shape{8, 17, 11}));  // 17 + 6 - 2*6 - 1 = 10, /1 + 1
}

TEST(ShapeInference, CeilModePoolMatchesPyTorch) {
  auto g = single_op({64, 112, 112}, [](GraphBuilder& b, Value v) { return b.pool(v, MaxPool(3).stride(2).ceil()); });
  ASSERT_TRUE(g);
  EXPECT_EQ(g->output_shape(), (Shape{64, 56, 56}));
  auto floor = single_op({64, 112, 112}, [](GraphBuilder& b, Value v) { return b.pool(v, MaxPool(3).stride(2)); });
  EXPECT_EQ(floor->output_shape(), (Shape{64, 55, 55}));
}

TEST(ShapeInference, GlobalPoolAndLinear) {
  auto g = single_op({16, 7, 5}, [](GraphBuilder& b, Value v) {
    return b.linear(b.pool(v, GlobalAvgPool()), LinearAttrs{10, true, Act::kNone});
  });
  ASSERT_TRUE(g);
  EXPECT_EQ(g->output_shape(), (Shape{10, 1, 1}));
}

TEST(ShapeInference, ConcatSumsChannelsAndSliceNarrows) {
  auto g = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {
    Value a = b.conv(v, Conv(5));
    return b.identity(cat({a.slice(1, 3), v, add({v.slice(0, 2), a.slice(3, 5)})}));
  });
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->output_shape(), (Shape{10, 4, 4}));
}

TEST(Validation, RejectsSumOfMismatchedShapes) {
  auto g = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {
    Value a = b.conv(v, Conv(5));
    return b.identity(add({a, v}));
  });
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("different shapes"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("node '2'"), std::string::npos) << g.status().message();
}

TEST(Validation, AProductMayTakeAChannelGateButASumMayNot) {
  auto gated = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {
    return b.element({v, b.pool(v, GlobalAvgPool())}, ElementOp::kMul);
  });
  ASSERT_TRUE(gated) << gated.status().to_string();
  EXPECT_EQ(gated->output_shape(), (Shape{6, 4, 4}));
  auto summed = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {
    return b.element({v, b.pool(v, GlobalAvgPool())}, ElementOp::kAdd);
  });
  EXPECT_FALSE(summed);
  auto first = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {  // the full tensor must come first
    return b.element({b.pool(v, GlobalAvgPool()), v}, ElementOp::kMul);
  });
  EXPECT_FALSE(first);
  auto other_channels = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) {
    return b.element({v, b.pool(v.slice(0, 3), GlobalAvgPool())}, ElementOp::kMul);
  });
  EXPECT_FALSE(other_channels);
}

TEST(Validation, RejectsChannelSliceOutOfRange) {
  auto g = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) { return b.identity(v.slice(4, 9)); });
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("out of range"), std::string::npos) << g.status().message();
}

TEST(Validation, RejectsNonPositiveDimensions) {
  auto zero_channels = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) { return b.conv(v, Conv(0)); });
  ASSERT_FALSE(zero_channels);
  EXPECT_NE(zero_channels.status().message().find("out_channels"), std::string::npos);
  auto too_big = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) { return b.conv(v, Conv(3).kernel(7)); });
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.status().message().find("kernel larger"), std::string::npos);
  GraphBuilder zero_input("t", {0, 4, 4});
  zero_input.begin_block();
  zero_input.end_block(zero_input.relu(zero_input.input()));
  EXPECT_FALSE(zero_input.build());
}

TEST(Validation, RejectsGroupsThatDoNotDivideChannels) {
  auto g = single_op({6, 4, 4}, [](GraphBuilder& b, Value v) { return b.conv(v, Conv(6).grouped(4)); });
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("groups"), std::string::npos);
}

TEST(Validation, RejectsCycle) {
  Graph g = testing::diamond();
  // Make conv a read the concat, which reads a.
  g.nodes[1].inputs = {{Value{3, 0, 8}}};
  Status s = g.validate_and_infer();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cyclic"), std::string::npos) << s.message();
}

TEST(Validation, RejectsUnknownValue) {
  Graph g = testing::diamond();
  g.nodes[2].inputs = {{Value{42, 0, 8}}};
  Status s = g.validate_and_infer();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("unknown value"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'2'"), std::string::npos) << s.message();
}

TEST(Validation, RejectsNodeOutsideBlocks) {
  Graph g = testing::diamond();
  g.blocks[0].inner.pop_back();
  Status s = g.validate_and_infer();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node '2'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not in this block"), std::string::npos) << s.message();
}

TEST(Builder, ReportsOpsOutsideBlocksAndUnclosedBlocks) {
  GraphBuilder g("t", {3, 8, 8});
  g.relu(g.input());
  EXPECT_FALSE(g.build());
  GraphBuilder h("t", {3, 8, 8});
  h.begin_block();
  h.relu(h.input());
  auto r = h.build();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("not closed"), std::string::npos);
}

TEST(Builder, SepConvIsDepthwiseThenPointwise) {
  auto g = single_op({8, 10, 10}, [](GraphBuilder& b, Value v) { return b.relu_sep_conv(v, 16, 3, 2, 1); });
  ASSERT_TRUE(g);
  const Node& n = g->node(1);
  ASSERT_TRUE(n.is<SequentialAttrs>());
  const auto& steps = n.attrs<SequentialAttrs>().steps;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(std::get<ConvAttrs>(steps[1]).groups, 8);
  EXPECT_EQ(n.step_shapes[1], (Shape{8, 5, 5}));
  EXPECT_EQ(n.output_shape, (Shape{16, 5, 5}));
}

TEST(Cost, ConvFlopsCountMultiplyAddAsTwo) {
  auto g = single_op({4, 8, 8}, [](GraphBuilder& b, Value v) { return b.conv(v, Conv(2).kernel(3).pad(1)); });
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->cost(1).flops, 2.0 * 2 * 8 * 8 * 4 * 9);
  EXPECT_EQ(g->cost(1).kernels, 1);
}

TEST(Graph, ProducersAndConsumersOfDiamond) {
  Graph g = testing::diamond();
  EXPECT_EQ(g.producers(3), (std::vector<NodeId>{1, 2}));
  auto consumers = g.consumers();
  EXPECT_EQ(consumers[0], (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(consumers[1], (std::vector<NodeId>{3}));
}

}  // namespace
}  // namespace ios::ir

namespace ios::ir {
namespace {

TEST(BuilderNames, NamedOpsKeepTheirNamesInTheGraphAndDuplicatesAreRejected) {
  GraphBuilder b("named", {4, 8, 8});
  b.begin_block();
  Value stem = b.name(b.conv(b.input(), Conv(4)), "stem");
  b.end_block(b.name(b.conv(stem, Conv(4)), "head"));
  auto g = b.build();
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->node(1).name, "stem");
  EXPECT_EQ(*g->find("head"), 2);

  GraphBuilder dup("dup", {4, 8, 8});
  dup.begin_block();
  Value x = dup.name(dup.conv(dup.input(), Conv(4)), "x");
  dup.end_block(dup.name(dup.conv(x, Conv(4)), "x"));
  auto bad = dup.build();
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("'x' is used twice"), std::string::npos) << bad.status().to_string();
}

TEST(BuilderNames, AnEmptyNameIsAnError) {
  GraphBuilder b("empty", {4, 8, 8});
  b.begin_block();
  b.end_block(b.name(b.conv(b.input(), Conv(4)), ""));
  auto g = b.build();
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("non-empty name"), std::string::npos) << g.status().to_string();
}

}  // namespace
}  // namespace ios::ir
