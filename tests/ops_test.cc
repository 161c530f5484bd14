// The step ops of ir/ops/: each op's serialization, shape inference and CPU reference, with one sample
// of every op (a new op without a sample fails EveryStepOpHasASample).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "common/file_io.h"
#include "ir/builder.h"
#include "ir/json_io.h"
#include "op_cases.h"
#include "reference/reference_executor.h"

namespace ios::ir {
namespace {

ResizeAttrs resize(ResizeMode mode, ResizeCoord coord, int h, int w, ResizeRound round = ResizeRound::kFloor) {
  ResizeAttrs r;
  r.mode = mode, r.coord = coord, r.round = round, r.out_h = h, r.out_w = w;
  return r;
}

// One instance of every step op, its attributes away from the defaults where it has any.
std::vector<SubOp> samples() {
  ResizeAttrs scaled = resize(ResizeMode::kLinear, ResizeCoord::kAlignCorners, 10, 3);
  scaled.scale_h = 1.5, scaled.scale_w = 0.5;
  return {Conv(6).kernel(3, 1).stride(2).pad(1, 0).dilation(1, 2).grouped(2).bias(false).act(Act::kHardSwish),
          MaxPool(3).stride(2).pad(1).dilation(2, 1).ceil().include_pad(false),
          ActivationAttrs{Act::kSilu},
          LinearAttrs{5, false, Act::kGelu},
          scaled,
          ChannelShuffleAttrs{2},
          ChannelNormAttrs{1e-3f},
          PadAttrs{PadMode::kReflect, 1, 2, 0, 1, 0.f},
          GroupNormAttrs{2, 1e-3f},
          PReluAttrs{},
          ChannelConvAttrs{5, 1, true},
          ChannelSoftmaxAttrs{2},
          ResponseNormAttrs{1e-3f},
          SpaceDepthAttrs{false, 2, BlockOrder::kCrd}};
}

TEST(OpCases, EveryOpKindAndActivationHasACase) {
  std::set<OpKind> kinds;
  std::set<std::string> names;
  for (const ios::testing::OpGraphCase& c : ios::testing::op_graph_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
    const Graph g = c.build();
    for (const Node& n : g.nodes) kinds.insert(n.kind());
  }
  for (size_t k = 0; k < std::variant_size_v<Op>; ++k)
    EXPECT_TRUE(kinds.count(OpKind(k))) << "op kind " << op_kind_name(OpKind(k)) << " has no case in tests/op_cases.h";
  for (const auto& a : ios::testing::activation_cases())
    EXPECT_TRUE(names.count(ios::testing::case_name(act_name(a.act)))) << act_name(a.act) << " has no case";
}

TEST(StepOps, EveryStepOpHasASample) {
  std::set<size_t> covered;
  for (const SubOp& s : samples()) covered.insert(s.index());
  for (size_t i = 0; i < std::variant_size_v<SubOp>; ++i) {
    EXPECT_TRUE(covered.count(i)) << "step op " << i << " has no sample in tests/ops_test.cc";
  }
}

TEST(StepOps, EveryOpKindHasItsOwnName) {
  std::set<std::string> names;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const std::string name = op_kind_name(OpKind(k));
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << name << " names two kinds";
  }
  for (const SubOp& s : samples()) {
    const std::optional<SubOp> back = as_step(std::visit([](const auto& a) { return Op{a}; }, s));
    ASSERT_TRUE(back);
    EXPECT_STREQ(step_type(s), op_kind_name(OpKind(std::visit([](const auto& a) { return Op{a}; }, s).index())));
  }
}

TEST(StepOps, EachSerializationReadsBackToTheSameAttributes) {
  for (const SubOp& s : samples()) {
    const nlohmann::json j = attrs_to_json(s);
    EXPECT_EQ(j["type"], step_type(s));
    // Through a graph file: a node of the op after a 4 x 6 x 6 input.
    GraphBuilder b("g", {4, 6, 6});
    b.begin_block();
    b.end_block(b.step(b.input(), s));
    auto g = b.build();
    ASSERT_TRUE(g) << step_type(s) << ": " << g.status().to_string();
    auto back = graph_from_json(graph_to_json(*g));
    ASSERT_TRUE(back) << step_type(s) << ": " << back.status().to_string();
    EXPECT_TRUE(back->nodes[1].op == g->nodes[1].op) << j.dump();
    EXPECT_EQ(attrs_key(back->nodes[1].op), attrs_key(g->nodes[1].op));
  }
}

TEST(StepOps, BadFieldsOfTheNewOpsAreNamed) {
  auto read = [](const std::string& node) {
    const std::string text = R"({"name": "g", "input": {"name": "x", "type": "placeholder", "output_shape": [4, 6, 6]},
      "blocks": [{"enter_name": "x", "inner_nodes": [], "exit_node": )" +
                             node + "}]}";
    auto j = parse_json_text(text, "mem");
    EXPECT_TRUE(j);
    return graph_from_json(*j);
  };
  auto bad_mode =
      read(R"({"name": "r", "type": "resize", "mode": "cubic", "size": [3, 3], "inputs": [[["x", 0, 4]]]})");
  ASSERT_FALSE(bad_mode);
  EXPECT_NE(bad_mode.status().message().find("field 'mode' has unknown value 'cubic'"), std::string::npos)
      << bad_mode.status().message();
  auto no_size = read(R"({"name": "r", "type": "resize", "inputs": [[["x", 0, 4]]]})");
  ASSERT_FALSE(no_size);
  EXPECT_NE(no_size.status().message().find("missing field 'size'"), std::string::npos) << no_size.status().message();
  auto groups = read(R"({"name": "s", "type": "channel_shuffle", "groups": 3, "inputs": [[["x", 0, 4]]]})");
  ASSERT_FALSE(groups);
  EXPECT_NE(groups.status().message().find("'groups' = 3 must divide the input's 4 channels"), std::string::npos)
      << groups.status().message();
}

std::vector<float> run_one(const SubOp& op, Shape in, std::vector<float> x) {
  GraphBuilder b("g", in);
  b.begin_block();
  b.end_block(b.step(b.input(), op));
  auto g = b.build();
  EXPECT_TRUE(g) << g.status().to_string();
  reference::Tensor t(1, in);
  t.data = std::move(x);
  auto out = reference::run(*g, make_weights(*g), t);
  EXPECT_TRUE(out) << out.status().to_string();
  return out ? out->data : std::vector<float>{};
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << "element " << i;
}

TEST(ReferenceResize, NearestAsymmetricFloorRepeatsPixels) {
  expect_near(run_one(resize(ResizeMode::kNearest, ResizeCoord::kAsymmetric, 4, 4), {1, 2, 2}, {1, 2, 3, 4}),
              {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(ReferenceResize, BilinearHalfPixelIsPyTorchsAlignCornersFalse) {
  // Along each axis the taps sit at -0.25 (clamped to 0), 0.25, 0.75 and 1.25 (clamped to 1).
  expect_near(run_one(resize(ResizeMode::kLinear, ResizeCoord::kHalfPixel, 4, 4), {1, 2, 2}, {1, 2, 3, 4}),
              {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

TEST(ReferenceResize, BilinearAlignCornersKeepsTheCorners) {
  expect_near(run_one(resize(ResizeMode::kLinear, ResizeCoord::kAlignCorners, 3, 3), {1, 2, 2}, {1, 2, 3, 4}),
              {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
}

TEST(ReferenceResize, NearestRoundingModesAndAStatedScale) {
  // 4 -> 2 pixels, half_pixel: sources at 0.5 and 2.5, which the rounding modes split.
  const std::vector<float> x = {10, 20, 30, 40};
  auto down = [&](ResizeRound r) {
    return run_one(resize(ResizeMode::kNearest, ResizeCoord::kHalfPixel, 1, 2, r), {1, 1, 4}, x);
  };
  expect_near(down(ResizeRound::kRoundPreferFloor), {10, 30});
  expect_near(down(ResizeRound::kRoundPreferCeil), {20, 40});
  expect_near(down(ResizeRound::kFloor), {10, 30});
  expect_near(down(ResizeRound::kCeil), {20, 40});
  // A stated scale of 3 on 4 pixels gives 2 outputs whose sources follow the scale: 0 and 1/3 -> 0, 0.
  ResizeAttrs stated = resize(ResizeMode::kNearest, ResizeCoord::kAsymmetric, 1, 2);
  stated.scale_w = 3;
  expect_near(run_one(stated, {1, 1, 4}, x), {10, 10});
}

TEST(ReferenceChannelShuffle, ChannelsAreTransposedAcrossGroups) {
  // 6 channels in 3 groups of 2: (0 1)(2 3)(4 5) -> 0 2 4 1 3 5, as numpy's x.reshape(3, 2).T.reshape(6).
  expect_near(run_one(ChannelShuffleAttrs{3}, {6, 1, 2}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}),
              {0, 0, 2, 2, 4, 4, 1, 1, 3, 3, 5, 5});
  expect_near(run_one(ChannelShuffleAttrs{1}, {3, 1, 1}, {7, 8, 9}), {7, 8, 9});
}

TEST(ReferenceSpaceDepth, BlocksMoveToChannelsInEitherOrderAndBack) {
  // Channel 0 = [[1 2] [3 4]], channel 1 = [[5 6] [7 8]].
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  expect_near(run_one(SpaceDepthAttrs{true, 2, BlockOrder::kDcr}, {2, 2, 2}, x), {1, 5, 2, 6, 3, 7, 4, 8});
  expect_near(run_one(SpaceDepthAttrs{true, 2, BlockOrder::kCrd}, {2, 2, 2}, x), x);
  expect_near(run_one(SpaceDepthAttrs{false, 2, BlockOrder::kDcr}, {8, 1, 1}, {1, 5, 2, 6, 3, 7, 4, 8}), x);
  // 2 x 6 x 3 by blocks of 3 and back, each order.
  std::vector<float> big(36);
  for (size_t i = 0; i < big.size(); ++i) big[i] = float(i * 7 % 36);
  for (BlockOrder order : {BlockOrder::kDcr, BlockOrder::kCrd}) {
    const std::vector<float> deep = run_one(SpaceDepthAttrs{true, 3, order}, {2, 6, 3}, big);
    expect_near(run_one(SpaceDepthAttrs{false, 3, order}, {18, 2, 1}, deep), big);
  }
}

TEST(StepOps, ABlockMustDivideTheSideItMoves) {
  EXPECT_FALSE((SpaceDepthAttrs{true, 2, BlockOrder::kDcr}.infer({1, 4, 3})));
  EXPECT_FALSE((SpaceDepthAttrs{false, 2, BlockOrder::kDcr}.infer({6, 4, 3})));
  auto out = SpaceDepthAttrs{false, 3, BlockOrder::kCrd}.infer({18, 4, 3});
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, (Shape{2, 12, 9}));
}

TEST(ReferencePad, ConstantReflectAndEdgeFillEachSide) {
  // 1 x 2 x 3 input [[1 2 3] [4 5 6]]; one row on top, one column left and two right.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  expect_near(run_one(PadAttrs{PadMode::kConstant, 1, 1, 0, 2, 9.f}, {1, 2, 3}, x),
              {9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9});
  expect_near(run_one(PadAttrs{PadMode::kReflect, 1, 1, 0, 2, 0.f}, {1, 2, 3}, x),
              {5, 4, 5, 6, 5, 4, 2, 1, 2, 3, 2, 1, 5, 4, 5, 6, 5, 4});
  expect_near(run_one(PadAttrs{PadMode::kEdge, 1, 1, 0, 2, 0.f}, {1, 2, 3}, x),
              {1, 1, 2, 3, 3, 3, 1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6});
  // Negative pads crop: the top row and the first column off, one column of 9 on the right.
  expect_near(run_one(PadAttrs{PadMode::kConstant, -1, -1, 0, 1, 9.f}, {1, 2, 3}, x), {5, 6, 9});
  EXPECT_FALSE((PadAttrs{PadMode::kConstant, -1, 0, -1, 0, 0.f}.infer({1, 2, 3})));
}

// A dilated window spans d * (k - 1) + 1 pixels; only max pooling takes one, and its padding is checked
// against the spread window.
TEST(StepOps, DilatedPoolingIsMaxPoolingOverTheSpreadWindow) {
  auto out = MaxPool(3).dilation(2, 1).infer({4, 9, 5});
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(*out, (Shape{4, 5, 3}));
  EXPECT_TRUE(MaxPool(3).pad(2, 1).dilation(2, 1).infer({4, 9, 5})) << "padding 2 of a 5-pixel window";
  EXPECT_FALSE(MaxPool(3).pad(2, 2).dilation(2, 1).infer({4, 9, 5})) << "padding 2 of a 3-pixel window";
  auto average = AvgPool(3).dilation(2, 2).infer({4, 9, 9});
  ASSERT_FALSE(average);
  EXPECT_NE(average.status().message().find("max pooling only"), std::string::npos) << average.status().message();
}

TEST(StepOps, AReflectionLongerThanTheSideItMirrorsIsAnError) {
  auto out = PadAttrs{PadMode::kReflect, 0, 3, 0, 0, 0.f}.infer({1, 4, 3});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("reflect padding of 3 columns needs more than 3 input columns"),
            std::string::npos)
      << out.status().message();
}

TEST(ReferenceChannelNorm, EachPixelIsNormalizedOverItsChannelsThenScaledAndShifted) {
  GraphBuilder b("g", {2, 1, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), ChannelNormAttrs{0.f + 1e-6f}));
  auto g = b.build();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  w.per_node[1][0].weight = {2.f, 3.f};
  w.per_node[1][0].bias = {10.f, 20.f};
  reference::Tensor t(1, {2, 1, 2});
  t.data = {1.f, 5.f, 3.f, 5.f};  // pixel 0: channels (1, 3) -> (-1, 1); pixel 1: (5, 5) -> (0, 0)
  auto out = reference::run(*g, w, t);
  ASSERT_TRUE(out);
  const float one = 1.f / std::sqrt(1.f + 1e-6f);
  expect_near(out->data, {10.f - 2.f * one, 10.f, 20.f + 3.f * one, 20.f});
}

TEST(ReferenceGroupNorm, EachGroupIsNormalizedOverItsChannelsAndPixelsThenScaledAndShiftedPerChannel) {
  GraphBuilder b("g", {4, 1, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), GroupNormAttrs{2, 1e-6f}));
  auto g = b.build();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  w.per_node[1][0].weight = {1.f, 2.f, 3.f, 4.f};
  w.per_node[1][0].bias = {0.f, 10.f, 20.f, 30.f};
  reference::Tensor t(1, {4, 1, 2});
  // group 0 (channels 0, 1): 1, 3, 5, 7 -> mean 4, variance 5; group 1 (channels 2, 3): 2, 2, 2, 2 -> all 0
  t.data = {1.f, 3.f, 5.f, 7.f, 2.f, 2.f, 2.f, 2.f};
  auto out = reference::run(*g, w, t);
  ASSERT_TRUE(out);
  const float inv = 1.f / std::sqrt(5.f + 1e-6f);
  expect_near(out->data, {-3.f * inv, -1.f * inv, 10.f + 2.f * inv, 10.f + 6.f * inv, 20.f, 20.f, 30.f, 30.f});
}

TEST(ReferencePRelu, NegativeValuesAreScaledByTheirChannelsSlope) {
  GraphBuilder b("g", {2, 1, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), PReluAttrs{}));
  auto g = b.build();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  w.per_node[1][0].weight = {0.25f, -2.f};
  reference::Tensor t(1, {2, 1, 2});
  t.data = {-4.f, 3.f, -1.f, 0.f};
  auto out = reference::run(*g, w, t);
  ASSERT_TRUE(out);
  expect_near(out->data, {-1.f, 3.f, 2.f, 0.f});
}

TEST(ReferenceChannelConv, EachChannelSumsItsNeighboursTapsWithZerosBeyondTheEnds) {
  GraphBuilder b("g", {4, 1, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), ChannelConvAttrs{3, 2, true}));  // y[c] = w0 x[c-2] + w1 x[c-1] + w2 x[c] + bias
  auto g = b.build();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  w.per_node[1][0].weight = {1.f, 10.f, 100.f};
  w.per_node[1][0].bias = {0.5f};
  reference::Tensor t(1, {4, 1, 2});
  t.data = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f};  // channel c holds (2c + 1, 2c + 2)
  auto out = reference::run(*g, w, t);
  ASSERT_TRUE(out);
  expect_near(out->data, {100.5f, 200.5f, 310.5f, 420.5f, 531.5f, 642.5f, 753.5f, 864.5f});
}

TEST(ReferenceChannelSoftmax, EachPositionIsNormalizedAcrossTheGroups) {
  GraphBuilder b("g", {4, 1, 1});
  b.begin_block();
  b.end_block(b.step(b.input(), ChannelSoftmaxAttrs{2}));  // groups {0, 1} and {2, 3}: pairs (0, 2), (1, 3)
  auto g = b.build();
  ASSERT_TRUE(g);
  reference::Tensor t(1, {4, 1, 1});
  t.data = {0.f, 1000.f, std::log(3.f), 1000.f};
  auto out = reference::run(*g, make_weights(*g), t);
  ASSERT_TRUE(out);
  expect_near(out->data, {0.25f, 0.5f, 0.75f, 0.5f});
}

TEST(ReferenceResponseNorm, EachChannelGainsItsNormOverTheMeanNormThenIsScaledAndShifted) {
  GraphBuilder b("g", {2, 1, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), ResponseNormAttrs{1e-9f}));
  auto g = b.build();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  w.per_node[1][0].weight = {1.f, 2.f};
  w.per_node[1][0].bias = {0.5f, -1.f};
  reference::Tensor t(1, {2, 1, 2});
  t.data = {0.3f, 0.4f, 0.f, 1.5f};  // norms 0.5 and 1.5, mean 1: gains 0.5 and 1.5
  auto out = reference::run(*g, w, t);
  ASSERT_TRUE(out);
  expect_near(out->data, {0.65f, 0.7f, -1.f, 3.5f});
}

TEST(StepOps, ChannelConvPadMustLeaveTheChannelCount) {
  GraphBuilder b("g", {6, 2, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), ChannelConvAttrs{3, 3, false}));
  auto g = b.build();
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("'pad'"), std::string::npos) << g.status().message();
}

TEST(StepOps, GroupNormGroupsMustDivideTheChannels) {
  GraphBuilder b("g", {6, 2, 2});
  b.begin_block();
  b.end_block(b.step(b.input(), GroupNormAttrs{4, 1e-5f}));
  auto g = b.build();
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("field 'groups' = 4 must divide the input's 6 channels"), std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace ios::ir
