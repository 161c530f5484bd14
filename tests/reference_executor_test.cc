// Hand-computed cases for every operator and input form of the CPU reference executor.
#include "reference/reference_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "activation_cases.h"
#include "ir/builder.h"
#include "models/models.h"
#include "test_graphs.h"

namespace ios::reference {
namespace {

using namespace ir;

Tensor tensor(Shape s, std::vector<float> values, int batch = 1) {
  Tensor t(batch, s);
  t.data = std::move(values);
  return t;
}

Tensor iota(Shape s, int batch = 1) {
  Tensor t(batch, s);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i + 1);
  return t;
}

struct Built {
  Graph graph;
  Weights weights;
};

Built build(Shape in, const std::function<Value(GraphBuilder&, Value)>& make) {
  GraphBuilder g("t", in);
  g.begin_block();
  g.end_block(make(g, g.input()));
  auto graph = g.build();
  EXPECT_TRUE(graph) << graph.status().to_string();
  Weights w = make_weights(*graph);
  return {*graph, w};
}

std::vector<float> run_output(const Built& b, const Tensor& input) {
  auto out = run(b.graph, b.weights, input);
  EXPECT_TRUE(out) << out.status().to_string();
  return out->data;
}

TEST(ReferenceConv, OneByOneIsAChannelMix) {
  Built b = build({2, 1, 2}, [](GraphBuilder& g, Value v) { return g.conv(v, Conv(1).act(Act::kNone)); });
  b.weights.per_node[1][0].weight = {2.f, -1.f};
  b.weights.per_node[1][0].bias = {0.5f};
  // x = [[1, 2], [3, 4]] per channel -> 2*c0 - c1 + 0.5
  EXPECT_EQ(run_output(b, tensor({2, 1, 2}, {1, 2, 3, 4})), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(ReferenceConv, ThreeByThreeWithPaddingAndStride) {
  Built b = build({1, 3, 3}, [](GraphBuilder& g, Value v) { return g.conv(v, Conv(1).kernel(3).pad(1).stride(2)); });
  b.weights.per_node[1][0].weight.assign(9, 1.f);
  b.weights.per_node[1][0].bias = {0.f};
  // Sum of the 3x3 neighbourhood (zero padded) at (0,0), (0,2), (2,0), (2,2) of 1..9.
  EXPECT_EQ(run_output(b, iota({1, 3, 3})), (std::vector<float>{12, 16, 24, 28}));
}

TEST(ReferenceConv, ReluClampsNegatives) {
  Built b = build({1, 1, 2}, [](GraphBuilder& g, Value v) { return g.conv(v, Conv(1)); });
  b.weights.per_node[1][0].weight = {-1.f};
  b.weights.per_node[1][0].bias = {0.f};
  EXPECT_EQ(run_output(b, tensor({1, 1, 2}, {1, -2})), (std::vector<float>{0, 2}));
}

TEST(ReferenceConv, DepthwiseKeepsChannelsApart) {
  Built b = build({2, 1, 3}, [](GraphBuilder& g, Value v) {
    return g.conv(v, Conv(2).kernel(1, 3).pad(0, 1).grouped(2).act(Act::kNone));
  });
  b.weights.per_node[1][0].weight = {1, 1, 1, 0, 1, 0};  // channel 0 box filter, channel 1 identity
  b.weights.per_node[1][0].bias = {0, 0};
  EXPECT_EQ(run_output(b, iota({2, 1, 3})), (std::vector<float>{3, 6, 5, 4, 5, 6}));
}

TEST(ReferenceConv, DilationSkipsInputs) {
  Built b = build({1, 1, 5}, [](GraphBuilder& g, Value v) {
    return g.conv(v, Conv(1).kernel(1, 2).dilation(1, 3).act(Act::kNone));
  });
  b.weights.per_node[1][0].weight = {1, 10};
  b.weights.per_node[1][0].bias = {0};
  EXPECT_EQ(run_output(b, iota({1, 1, 5})), (std::vector<float>{41, 52}));  // x0 + 10 x3, x1 + 10 x4
}

TEST(ReferencePool, MaxIgnoresPaddingAvgCountsIt) {
  Built mx = build({1, 2, 2}, [](GraphBuilder& g, Value v) { return g.pool(v, MaxPool(3).pad(1)); });
  EXPECT_EQ(run_output(mx, tensor({1, 2, 2}, {-1, -2, -3, -4})), (std::vector<float>{-1, -1, -1, -1}));
  Built avg = build({1, 2, 2}, [](GraphBuilder& g, Value v) { return g.pool(v, AvgPool(3).pad(1)); });
  EXPECT_EQ(run_output(avg, iota({1, 2, 2})), (std::vector<float>{10.f / 9, 10.f / 9, 10.f / 9, 10.f / 9}));
}

TEST(ReferencePool, CeilModeAddsAPartialWindow) {
  Built b =
      build({1, 1, 4}, [](GraphBuilder& g, Value v) { return g.pool(v, MaxPool(1).kernel(1, 3).stride(1, 2).ceil()); });
  EXPECT_EQ(run_output(b, iota({1, 1, 4})), (std::vector<float>{3, 4}));
}

// Taps 3 pixels apart along W and 2 along H, padded by 1, which a max never takes.
TEST(ReferencePool, DilatedMaxTakesSpreadTaps) {
  Built b = build({1, 3, 5},
                  [](GraphBuilder& g, Value v) { return g.pool(v, MaxPool(1).kernel(2, 2).dilation(2, 3).pad(1, 1)); });
  ASSERT_EQ(b.graph.output_shape(), (Shape{1, 3, 4}));
  // x = 5r + c + 1; output (oy, ox) takes rows {oy - 1, oy + 1} and columns {ox - 1, ox + 2} inside the input
  EXPECT_EQ(run_output(b, iota({1, 3, 5})), (std::vector<float>{8, 9, 10, 8, 13, 14, 15, 13, 8, 9, 10, 8}));
}

TEST(ReferencePool, GlobalAverageAndMax) {
  Built avg = build({2, 2, 2}, [](GraphBuilder& g, Value v) { return g.pool(v, GlobalAvgPool()); });
  EXPECT_EQ(run_output(avg, iota({2, 2, 2})), (std::vector<float>{2.5f, 6.5f}));
  Built mx = build({2, 2, 2}, [](GraphBuilder& g, Value v) { return g.pool(v, GlobalMaxPool()); });
  EXPECT_EQ(run_output(mx, iota({2, 2, 2})), (std::vector<float>{4, 8}));
}

TEST(ReferenceInputs, TermsAreSummedThenConcatenatedWithSlices) {
  Built b = build({3, 1, 1}, [](GraphBuilder& g, Value v) {
    return g.identity(cat({add({v.slice(0, 1), v.slice(2, 3)}), v.slice(1, 3)}));
  });
  EXPECT_EQ(run_output(b, tensor({3, 1, 1}, {1, 10, 100})), (std::vector<float>{101, 10, 100}));
}

TEST(ReferenceInputs, ConvReadsASumOfValues) {
  Built b = build({1, 1, 2}, [](GraphBuilder& g, Value v) {
    Value r = g.relu(v);
    return g.conv(add({v, r}), Conv(1).act(Act::kNone));
  });
  b.weights.per_node[2][0].weight = {1};
  b.weights.per_node[2][0].bias = {0};
  EXPECT_EQ(run_output(b, tensor({1, 1, 2}, {3, -2})), (std::vector<float>{6, -2}));
}

TEST(ReferenceElement, MulMultipliesTerms) {
  Built b = build({2, 1, 2}, [](GraphBuilder& g, Value v) {
    return g.element({v.slice(0, 1), v.slice(1, 2)}, ElementOp::kMul);
  });
  EXPECT_EQ(run_output(b, iota({2, 1, 2})), (std::vector<float>{3, 8}));
}

TEST(ReferenceElement, AChannelGateMultipliesEveryPixelOfItsChannel) {
  Built b = build({2, 1, 3}, [](GraphBuilder& g, Value v) {
    return g.element({v, g.pool(v, GlobalMaxPool())}, ElementOp::kMul);
  });
  // channel 0: 1 2 3 (max 3); channel 1: 4 5 6 (max 6)
  EXPECT_EQ(run_output(b, iota({2, 1, 3})), (std::vector<float>{3, 6, 9, 24, 30, 36}));
}

TEST(ReferenceActivation, SigmoidAndTanh) {
  Built s = build({1, 1, 1}, [](GraphBuilder& g, Value v) { return g.activation(v, Act::kSigmoid); });
  EXPECT_FLOAT_EQ(run_output(s, tensor({1, 1, 1}, {0.f}))[0], 0.5f);
  Built t = build({1, 1, 1}, [](GraphBuilder& g, Value v) { return g.activation(v, Act::kTanh); });
  EXPECT_FLOAT_EQ(run_output(t, tensor({1, 1, 1}, {1.f}))[0], std::tanh(1.f));
}

// Every row of the activation table against its independent definition and its hand values, through an
// activation node of the reference executor; a row without a case fails here.
TEST(ReferenceActivation, EveryActivationOfTheTableMatchesItsDefinition) {
  std::vector<bool> covered(size_t(ir::kActCount), false);
  const std::vector<float> all = {-9.f, -4.f, -3.f, -2.5f, -1.f, -0.25f, 0.f, 0.3f, 1.f, 2.5f, 3.f, 7.f, 25.f};
  for (const auto& c : testing::activation_cases()) {
    covered[size_t(c.act)] = true;
    const std::vector<float> xs = testing::in_domain(c, all);
    Built b = build({int(xs.size()), 1, 1}, [&](GraphBuilder& g, Value v) { return g.activation(v, c.act); });
    const std::vector<float> got = run_output(b, tensor({int(xs.size()), 1, 1}, xs));
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(got[i], c.definition(xs[i]), 2e-6 * std::max(1.0, std::fabs(c.definition(xs[i]))))
          << ir::act_name(c.act) << "(" << xs[i] << ")";
    for (const auto& [x, want] : c.known) {
      EXPECT_NEAR(ir::activate(c.act, float(x)), want, 1e-6) << ir::act_name(c.act) << "(" << x << ") by hand";
      EXPECT_NEAR(c.definition(x), want, 1e-9) << ir::act_name(c.act) << "(" << x << ") definition vs hand";
    }
    EXPECT_EQ(ir::parse_act(ir::act_name(c.act)), c.act) << "the name reads back";
  }
  for (int a = 0; a < ir::kActCount; ++a)
    EXPECT_TRUE(covered[size_t(a)]) << "activation " << ir::act_name(ir::Act(a))
                                    << " has no case in activation_cases.h";
}

TEST(ReferenceLinear, MatrixVectorPlusBias) {
  Built b = build({2, 1, 1}, [](GraphBuilder& g, Value v) { return g.linear(v, LinearAttrs{2, true, Act::kNone}); });
  b.weights.per_node[1][0].weight = {1, 2, 3, 4};
  b.weights.per_node[1][0].bias = {0.5, -0.5};
  EXPECT_EQ(run_output(b, tensor({2, 1, 1}, {1, 1})), (std::vector<float>{3.5f, 6.5f}));
}

TEST(ReferenceSequential, StepsRunInOrder) {
  Built b = build({1, 1, 2}, [](GraphBuilder& g, Value v) { return g.relu_conv(v, Conv(1)); });
  b.weights.per_node[1][1].weight = {-2};
  b.weights.per_node[1][1].bias = {1};
  // relu then conv(-2x + 1) with no activation.
  EXPECT_EQ(run_output(b, tensor({1, 1, 2}, {3, -4})), (std::vector<float>{-5, 1}));
}

TEST(ReferenceBatch, BatchOfTwoEqualsTwoSingleRuns) {
  Graph g = testing::inception_block();
  Weights w = make_weights(g);
  Tensor both(2, g.input_shape());
  both.data = make_input(g.input_shape(), 2, 3);
  Tensor first(1, g.input_shape()), second(1, g.input_shape());
  const size_t n = static_cast<size_t>(g.input_shape().numel());
  first.data.assign(both.data.begin(), both.data.begin() + static_cast<std::ptrdiff_t>(n));
  second.data.assign(both.data.begin() + static_cast<std::ptrdiff_t>(n), both.data.end());
  auto out2 = run(g, w, both), out_a = run(g, w, first), out_b = run(g, w, second);
  ASSERT_TRUE(out2 && out_a && out_b);
  std::vector<float> joined = out_a->data;
  joined.insert(joined.end(), out_b->data.begin(), out_b->data.end());
  EXPECT_EQ(out2->data, joined);
}

TEST(ReferenceErrors, WrongInputShapeIsRejected) {
  Graph g = testing::diamond();
  auto r = run(g, make_weights(g), Tensor(1, {3, 8, 8}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("does not match"), std::string::npos);
}

TEST(Weights, AreDeterministicPerSeed) {
  Graph g = testing::fire_module();
  Weights a = make_weights(g), b = make_weights(g), c = make_weights(g, 99);
  EXPECT_EQ(a.at(1).weight, b.at(1).weight);
  EXPECT_NE(a.at(1).weight, c.at(1).weight);
  EXPECT_EQ(a.at(1).weight.size(), 4u * 12u);
}

TEST(Weights, SaveLoadRoundTripAndMismatchIsNamed) {
  Graph g = testing::fire_module();
  Weights w = make_weights(g);
  const std::string path = ::testing::TempDir() + "/fire.weights";
  ASSERT_TRUE(save_weights(w, path).is_ok());
  auto back = load_weights(g, path);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->at(3).weight, w.at(3).weight);
  auto other = load_weights(testing::diamond(), path);
  ASSERT_FALSE(other);
}

TEST(ReferenceModels, SqueezeNetRunsInSeconds) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  Weights w = make_weights(*g);
  Tensor in(1, g->input_shape());
  in.data = make_input(g->input_shape(), 1, 1);
  const auto start = std::chrono::steady_clock::now();
  auto out = run(*g, w, in);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(out);
  EXPECT_LT(seconds, 20.0);
  double norm = 0;
  for (float x : out->data) {
    ASSERT_TRUE(std::isfinite(x));
    norm += double(x) * x;
  }
  EXPECT_GT(norm, 0.0);
}

}  // namespace
}  // namespace ios::reference
