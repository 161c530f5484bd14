// The ONNX front end on small models built here with the protobuf API (no network, no PyTorch): one
// per supported op and per error case, imported and run by the CPU reference against outputs computed
// by hand in the test.
#include "frontends/onnx/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "common/file_io.h"
#include "common/tensor_file.h"
#include "ir/auto_blocks.h"
#include "ir/builder.h"
#include "ir/json_io.h"
#include "reference/reference_executor.h"
#include "tests/activation_cases.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

// The activations of the table by their ONNX ops, on their own and fused into the convolution before them.
TEST(OnnxActivation, TableActivationsImportByTheirOnnxOps) {
  struct OnnxCase {
    const char* op;
    ir::Act act;
    std::function<void(onnx::NodeProto&)> attrs;
  };
  const std::vector<OnnxCase> cases = {
      {"HardSigmoid", ir::Act::kHardSigmoid,
       [](onnx::NodeProto& n) { set_float(n, "alpha", 1.f / 6.f), set_float(n, "beta", 0.5f); }},
      {"HardSwish", ir::Act::kHardSwish, {}},
      {"Elu", ir::Act::kElu, {}},
      {"Softplus", ir::Act::kSoftplus, {}},
      {"Mish", ir::Act::kMish, {}},
      {"Softsign", ir::Act::kSoftsign, {}},
      {"LeakyRelu", ir::Act::kLeakyRelu, {}},
      {"Gelu", ir::Act::kGelu, {}},
      {"Gelu", ir::Act::kGeluTanh, [](onnx::NodeProto& n) { set_string(n, "approximate", "tanh"); }},
      {"Sqrt", ir::Act::kSqrt, {}},
      {"Reciprocal", ir::Act::kReciprocal, {}},
  };
  const std::vector<float> all = {-4.f, -2.5f, -1.f, -0.25f, 0.f, 0.3f, 1.f, 2.5f, 3.f, 7.f};
  for (const auto& c : cases) {
    const testing::ActivationCase& table = [&]() -> const testing::ActivationCase& {
      for (const auto& t : testing::activation_cases())
        if (t.act == c.act) return t;
      throw std::logic_error("no case");
    }();
    const std::vector<float> xs = testing::in_domain(table, all);
    Model alone(20);
    alone.input("x", {1, 1, 1, int64_t(xs.size())}).output("y");
    auto& n = alone.node(c.op, {"x"}, {"y"});
    if (c.attrs) c.attrs(n);
    const ImportedModel m = imported(alone);
    ASSERT_EQ(m.graph.nodes.size(), 2u) << c.op;
    EXPECT_EQ(m.graph.node(1).attrs<ir::ActivationAttrs>().activation, c.act) << c.op;
    std::vector<float> want;
    for (float x : xs) want.push_back(float(table.definition(x)));
    expect_near(run(m, xs), want, 1e-5f);

    Model fused(20);
    fused.input("x", {1, 1, 2, 2}).output("y").init("w", {2, 1, 1, 1}, {1.f, -2.f});
    fused.node("Conv", {"x", "w"}, {"c"});
    auto& f = fused.node(c.op, {"c"}, {"y"});
    if (c.attrs) c.attrs(f);
    const ImportedModel fm = imported(fused);
    EXPECT_EQ(fm.graph.op_count(), 1) << c.op << " fuses into the convolution";
    EXPECT_EQ(fm.graph.node(1).attrs<ir::ConvAttrs>().activation, c.act) << c.op;
  }
}

TEST(OnnxActivation, ParametersOtherThanTheTablesAreNamed) {
  Model hs;  // ONNX's default alpha (0.2) is not PyTorch's hardsigmoid
  hs.input("x", {1, 1, 1, 1}).output("y");
  hs.node("HardSigmoid", {"x"}, {"y"}, "hs");
  auto r = hs.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("attribute 'alpha' is 0.2"), std::string::npos) << r.status().message();
  Model elu;
  elu.input("x", {1, 1, 1, 1}).output("y");
  set_float(elu.node("Elu", {"x"}, {"y"}, "e"), "alpha", 0.5f);
  EXPECT_FALSE(elu.import());
}

// A LeakyRelu slope other than PyTorch's default (TResNet's 1e-3) is a PRelu of that slope on every channel.
TEST(OnnxActivation, LeakyReluOfAnySlopeImports) {
  Model leaky;
  leaky.input("x", {1, 2, 1, 2}).output("y");
  set_float(leaky.node("LeakyRelu", {"x"}, {"y"}, "l"), "alpha", 0.1f);
  const ImportedModel model = imported(leaky);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kPRelu), 1);
  expect_near(run(model, {-1.f, 2.f, -30.f, 0.5f}), {-0.1f, 2.f, -3.f, 0.5f});
}

// PyTorch exports SiLU as x * Sigmoid(x) and (below opset 20) GELU as its erf form: each becomes one
// activation, fused into the convolution before it.
TEST(OnnxActivation, SiluAndGeluPatternsBecomeOneActivation) {
  Model silu;
  silu.input("x", {1, 1, 2, 2}).output("y").init("w", {2, 1, 1, 1}, {1.f, -2.f});
  silu.node("Conv", {"x", "w"}, {"c"});
  silu.node("Sigmoid", {"c"}, {"s"});
  silu.node("Mul", {"s", "c"}, {"y"});
  const ImportedModel sm = imported(silu);
  EXPECT_EQ(sm.graph.op_count(), 1);
  EXPECT_EQ(sm.graph.node(1).attrs<ir::ConvAttrs>().activation, ir::Act::kSilu);
  const std::vector<float> x = {-1.f, 0.5f, 2.f, 3.f};
  std::vector<float> want;
  for (float w : {1.f, -2.f})
    for (float v : x) want.push_back(w * v / (1.f + std::exp(-w * v)));
  expect_near(run(sm, x), want);

  Model gelu(17);
  gelu.input("x", {1, 1, 1, 4}).output("y");
  auto constant = [&](const std::string& name, float v) {
    auto& n = gelu.node("Constant", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    Model::fill(*a->mutable_t(), name, {}, {v}, true);
  };
  constant("sqrt2", 1.4142135f);
  constant("one", 1.f);
  constant("half", 0.5f);
  gelu.node("Div", {"x", "sqrt2"}, {"d"});
  gelu.node("Erf", {"d"}, {"e"});
  gelu.node("Add", {"e", "one"}, {"a"});
  gelu.node("Mul", {"x", "a"}, {"m"});
  gelu.node("Mul", {"m", "half"}, {"y"});
  const ImportedModel gm = imported(gelu);
  ASSERT_EQ(gm.graph.nodes.size(), 2u);
  EXPECT_EQ(gm.graph.node(1).attrs<ir::ActivationAttrs>().activation, ir::Act::kGelu);
  want.clear();
  for (float v : x) want.push_back(0.5f * v * (1.f + std::erf(v / std::sqrt(2.f))));
  expect_near(run(gm, x), want);

  Model dynamo(18);  // the dynamo exporter's order: Mul(Mul(x, 0.5), Add(Erf(Mul(x, 1 / sqrt 2)), 1))
  dynamo.input("x", {1, 1, 1, 4}).output("y").init("r", {}, {0.70710678f}).init("one", {}, {1.f});
  dynamo.init("half", {}, {0.5f});
  dynamo.node("Mul", {"x", "half"}, {"h"});
  dynamo.node("Mul", {"r", "x"}, {"d"});
  dynamo.node("Erf", {"d"}, {"e"});
  dynamo.node("Add", {"one", "e"}, {"a"});
  dynamo.node("Mul", {"h", "a"}, {"y"});
  const ImportedModel dm = imported(dynamo);
  ASSERT_EQ(dm.graph.nodes.size(), 2u);
  EXPECT_EQ(dm.graph.node(1).attrs<ir::ActivationAttrs>().activation, ir::Act::kGelu);
  expect_near(run(dm, x), want);

  Model module(18);  // nn.GELU through the dynamo exporter: Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt 2)), 1)))
  module.input("x", {1, 1, 1, 4}).output("y").init("sqrt2", {}, {1.4142135f}).init("one", {}, {1.f});
  module.init("half", {}, {0.5f});
  module.node("Div", {"x", "sqrt2"}, {"d"});
  module.node("Erf", {"d"}, {"e"});
  module.node("Add", {"e", "one"}, {"a"});
  module.node("Mul", {"half", "a"}, {"h"});
  module.node("Mul", {"x", "h"}, {"y"});
  const ImportedModel mm = imported(module);
  ASSERT_EQ(mm.graph.nodes.size(), 2u);
  EXPECT_EQ(mm.graph.node(1).attrs<ir::ActivationAttrs>().activation, ir::Act::kGelu);
  expect_near(run(mm, x), want);

  Model shared;  // the sigmoid is read elsewhere too: not a SiLU, and Mul of two activations stays
  shared.input("x", {1, 1, 1, 2}).output("y");
  shared.node("Sigmoid", {"x"}, {"s"});
  shared.node("Mul", {"x", "s"}, {"m"});
  shared.node("Add", {"m", "s"}, {"y"});
  const ImportedModel hm = imported(shared);
  EXPECT_GE(hm.graph.op_count(), 2);
}

TEST(OnnxActivation, ReluSigmoidTanhAndClipAsRelu6) {
  for (const auto& [op, f] : std::vector<std::pair<std::string, std::function<float(float)>>>{
           {"Relu", [](float v) { return std::max(v, 0.f); }},
           {"Sigmoid", [](float v) { return 1.f / (1.f + std::exp(-v)); }},
           {"Tanh", [](float v) { return std::tanh(v); }},
           {"Clip", [](float v) { return std::min(std::max(v, 0.f), 6.f); }}}) {
    Model m;
    m.input("x", {1, 1, 1, 15}).output("y").init("lo", {}, {0.f}).init("hi", {}, {6.f});
    m.node(op, op == "Clip" ? std::vector<std::string>{"x", "lo", "hi"} : std::vector<std::string>{"x"}, {"y"});
    const auto model = imported(m);
    const auto x = iota(15, -7.f);
    std::vector<float> want;
    for (float v : x) want.push_back(f(v));
    SCOPED_TRACE(op);
    expect_near(run(model, x), want);
  }
}

TEST(OnnxActivation, ClipWithOtherBoundsIsAnErrorNamingThem) {
  Model m;
  m.input("x", {1, 1, 1, 4}).output("y").init("lo", {}, {-1.f}).init("hi", {}, {1.f});
  m.node("Clip", {"x", "lo", "hi"}, {"y"}, "clamp");
  auto r = m.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("node 'clamp' (Clip"), std::string::npos) << r.status().message();
}

TEST(OnnxGraph, ConcatAndAddBecomeInputTermsAndASharedSumIsComputedOnce) {
  Model m;
  m.input("x", {1, 1, 1, 2}).output("out");
  m.init("w1", {1, 1, 1, 1}, {2.f}).init("w2", {1, 1, 1, 1}, {3.f});
  m.node("Conv", {"x", "w1"}, {"a"});
  m.node("Conv", {"x", "w2"}, {"b"});
  m.node("Add", {"a", "b"}, {"s"});  // read twice below: one node
  m.node("Relu", {"s"}, {"r"});
  m.node("Concat", {"s", "r", "a"}, {"out"});
  set_int(*m.graph()->mutable_node(4), "axis", 1);
  const auto model = imported(m);
  // x = [-1, 2]: a = 2x, b = 3x, s = 5x = [-5, 10], relu(s) = [0, 10].
  expect_near(run(model, {-1.f, 2.f}), {-5, 10, 0, 10, -2, 4});
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kIdentity), 2) << "the shared sum, and the concat as the output";
}

TEST(OnnxGraph, ResidualAddThenReluIsOneActivationReadingASum) {
  Model m;
  m.input("x", {1, 1, 1, 3}).output("y").init("w", {1, 1, 1, 1}, {-2.f});
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Add", {"c", "x"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 2);
  expect_near(run(model, {-1.f, 0.f, 3.f}), {1.f, 0.f, 0.f});  // relu(-2x + x) = relu(-x)
}

// RepGhostNet's fusion BatchNorm: a per-channel scale of a convolution another op has already read stays a
// separate op (folding it into the convolution would change what that op read).
TEST(OnnxGraph, AScaleOfAnOutputAnotherOpAlreadyReadIsNotFolded) {
  Model m;
  m.input("x", {1, 1, 1, 3}).output("y").init("w", {2, 1, 1, 1}, {1.f, -2.f}).init("s", {1, 2, 1, 1}, {3.f, 0.5f});
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Relu", {"c"}, {"r"});
  m.node("Mul", {"c", "s"}, {"m"});
  m.node("Add", {"r", "m"}, {"y"});
  const ImportedModel model = imported(m);
  const std::vector<float> x = {-1.f, 0.5f, 2.f};
  std::vector<float> want;
  for (float v : x) want.push_back(std::max(v, 0.f) + 3.f * v);
  for (float v : x) want.push_back(std::max(-2.f * v, 0.f) - v);
  expect_near(run(model, x), want);
}

TEST(OnnxGraph, PerChannelMulAndAddFoldOrBecomeDepthwise) {
  Model m;
  m.input("x", {1, 2, 1, 1}).output("y");
  m.init("s", {1, 2, 1, 1}, {2.f, -3.f}).init("t", {2, 1, 1}, {1.f, 1.f}).init("k", {}, {10.f});
  m.node("Mul", {"x", "s"}, {"a"});
  m.node("Add", {"t", "a"}, {"b"});  // folds into the depthwise op Mul became
  m.node("Mul", {"b", "k"}, {"y"});  // scalar: folds too
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  expect_near(run(model, {1.f, 2.f}), {30.f, -50.f});
}

TEST(OnnxGraph, ElementwiseProductOfTwoActivations) {
  Model m;
  m.input("x", {1, 1, 1, 3}).output("y");
  m.node("Sigmoid", {"x"}, {"s"});
  m.node("Mul", {"x", "s"}, {"y"});  // SiLU
  const auto out = run(imported(m), {-1.f, 0.f, 2.f});
  expect_near(out, {-1.f / (1.f + std::exp(1.f)), 0.f, 2.f / (1.f + std::exp(-2.f))});
}

// Squeeze-excite as torchvision writes it: global pool, 1x1 convolutions, a sigmoid gate multiplying the
// input per channel; and mnasnet's mean over H, W before its classifier.
TEST(OnnxGraph, ASqueezeExciteGateMultipliesItsInputPerChannel) {
  Model m;
  m.input("x", {1, 2, 2, 2}).output("y").init("w1", {1, 2, 1, 1}, {1.f, 1.f}).init("w2", {2, 1, 1, 1}, {1.f, -1.f});
  m.node("GlobalAveragePool", {"x"}, {"p"});
  m.node("Conv", {"p", "w1"}, {"s"});
  m.node("Relu", {"s"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"e"});
  m.node("Sigmoid", {"e"}, {"g"});
  m.node("Mul", {"g", "x"}, {"y"});  // the gate first, as some exporters write it
  const ImportedModel model = imported(m);
  const std::vector<float> x = {1.f, 2.f, 3.f, 4.f, -1.f, 0.f, 1.f, 2.f};
  // means 2.5 and 0.5; s = relu(3) = 3; gates sigmoid(3) and sigmoid(-3)
  const float g0 = 1.f / (1.f + std::exp(-3.f)), g1 = 1.f / (1.f + std::exp(3.f));
  std::vector<float> want;
  for (size_t i = 0; i < x.size(); ++i) want.push_back(x[i] * (i < 4 ? g0 : g1));
  expect_near(run(model, x), want);
}

TEST(OnnxGraph, ReduceMeanAndMaxOverHeightAndWidthAreGlobalPools) {
  for (int keepdims : {0, 1}) {
    Model m(17);
    m.input("x", {1, 2, 1, 2}).output("y").init("b", {2, 1}, {1.f, 10.f});
    auto& r = m.node("ReduceMean", {"x"}, {"r"});
    set_ints(r, "axes", {-1, 2});
    set_int(r, "keepdims", keepdims);
    if (keepdims) {
      m.node("Flatten", {"r"}, {"f"});
      m.node("MatMul", {"f", "b"}, {"y"});
    } else {
      m.node("MatMul", {"r", "b"}, {"y"});
    }
    expect_near(run(imported(m), {1.f, 3.f, 5.f, 7.f}), {2.f + 60.f});
  }
  Model max(18);
  max.input("x", {1, 2, 1, 2}).output("y").init_ints("axes", {2, 3});
  max.node("ReduceMax", {"x", "axes"}, {"y"});
  expect_near(run(imported(max), {1.f, 3.f, 5.f, 7.f}), {3.f, 7.f});
  Model channels(17);
  channels.input("x", {1, 2, 1, 2}).output("y");
  set_ints(channels.node("ReduceMean", {"x"}, {"y"}, "mean_c"), "axes", {1});
  EXPECT_FALSE(channels.import());
}

// torch.chunk / split and channel slicing (CSP and ghost blocks): views of the IR's channel slices.
TEST(OnnxGraph, SplitAndSliceAlongChannelsAreViews) {
  for (int opset : {11, 13}) {
    Model m(opset);
    m.input("x", {1, 4, 1, 2}).output("y").init("w", {1, 1, 1, 1}, {10.f});
    auto& sp = m.node("Split", {"x"}, {"a", "b", "c"}, "split");
    set_int(sp, "axis", 1);
    if (opset < 13) {
      set_ints(sp, "split", {1, 1, 2});
    } else {
      m.init_ints("sizes", {1, 1, 2});
      sp.add_input("sizes");
    }
    m.node("Conv", {"b", "w"}, {"cb"});  // channel 1 times 10
    set_int(m.node("Concat", {"c", "cb", "a"}, {"y"}, "cat"), "axis", 1);
    // x = [1 2 | 3 4 | 5 6 | 7 8] -> c = [5 6 7 8], cb = [30 40], a = [1 2]
    expect_near(run(imported(m), iota(8)), {5.f, 6.f, 7.f, 8.f, 30.f, 40.f, 1.f, 2.f});
  }
  Model halves(18);  // num_outputs: equal parts
  halves.input("x", {1, 4, 1, 2}).output("y");
  auto& sp = halves.node("Split", {"x"}, {"a", "b"}, "chunk");
  set_int(sp, "axis", 1);
  set_int(sp, "num_outputs", 2);
  set_int(halves.node("Concat", {"b", "a"}, {"y"}, "swap"), "axis", 1);
  expect_near(run(imported(halves), iota(8)), {5.f, 6.f, 7.f, 8.f, 1.f, 2.f, 3.f, 4.f});
  Model sl(13);
  sl.input("x", {1, 4, 1, 2}).output("y").init_ints("s", {-3}).init_ints("e", {3}).init_ints("ax", {1});
  sl.node("Slice", {"x", "s", "e", "ax"}, {"t"});
  sl.node("Relu", {"t"}, {"y"});
  expect_near(run(imported(sl), iota(8, -4.f)), {0.f, 0.f, 0.f, 1.f});  // channels 1, 2 of [-4 -3 | -2 -1 | 0 1 | 2 3]
  Model spatial(13);
  spatial.input("x", {1, 4, 1, 2}).output("y").init_ints("s", {1}).init_ints("e", {2}).init_ints("ax", {3});
  spatial.node("Slice", {"x", "s", "e", "ax"}, {"y"}, "w_slice");
  auto r = spatial.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("slicing axis 3 is not supported"), std::string::npos) << r.status().message();
  Model sizes(13);
  sizes.input("x", {1, 4, 1, 2}).output("y").init_ints("sizes", {1, 2});
  auto& bad = sizes.node("Split", {"x", "sizes"}, {"y", "z"}, "split");
  set_int(bad, "axis", 1);
  auto rs = sizes.import();
  ASSERT_FALSE(rs);
  EXPECT_NE(rs.status().message().find("split sizes add up to 3, the input has 4 channels"), std::string::npos)
      << rs.status().message();
}

// x.view(x.size(0), -1) as exporters write it with a dynamic batch: Shape, Gather, Unsqueeze, Concat into a
// Reshape target, all evaluated at import; a Cast to float of an activation is dropped.
TEST(OnnxGraph, ShapeArithmeticIsEvaluatedAtImport) {
  for (int opset : {11, 13}) {
    Model m(opset);
    m.input("x", {1, 2, 2, 2}).output("y").init("b", {2, 3}, iota(6)).init_ints("minus_one", {-1});
    m.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
        "N");
    m.node("GlobalAveragePool", {"x"}, {"p"});
    m.node("Cast", {"p"}, {"pc"});
    set_int(m.graph()->mutable_node(1)[0], "to", onnx::TensorProto::FLOAT);
    m.node("Shape", {"pc"}, {"s"});
    m.init_ints("zero", {0});
    m.graph()->mutable_initializer(m.graph()->initializer_size() - 1)->clear_dims();  // a scalar index
    m.node("Gather", {"s", "zero"}, {"n"});
    auto& u = m.node("Unsqueeze", {"n"}, {"n1"});
    if (opset < 13) {
      set_ints(u, "axes", {0});
    } else {
      m.init_ints("axis0", {0});
      u.add_input("axis0");
    }
    auto& c = m.node("Concat", {"n1", "minus_one"}, {"target"});
    set_int(c, "axis", 0);
    m.node("Reshape", {"pc", "target"}, {"f"});
    m.node("MatMul", {"f", "b"}, {"y"});
    const ImportedModel r = imported(m);
    EXPECT_EQ(r.graph.op_count(), 2) << "the pool and the linear op; the shape arithmetic is gone";
    // means 2.5 and 6.5: y = [2.5 * 1 + 6.5 * 4, 2.5 * 2 + 6.5 * 5, 2.5 * 3 + 6.5 * 6]
    expect_near(run(r, iota(8)), {28.5f, 37.5f, 46.5f});
  }
  Model prod(13);  // ReduceProd of a shape: its element count, an exact integer
  prod.input("x", {1, 2, 2, 2}).output("y").init("b", {2, 3}, iota(6)).init_ints("one", {1});
  prod.node("GlobalAveragePool", {"x"}, {"p"});
  prod.node("Shape", {"p"}, {"s"});
  set_int(prod.node("ReduceProd", {"s"}, {"count"}), "keepdims", 1);
  set_int(prod.node("Concat", {"one", "count"}, {"target"}), "axis", 0);
  prod.node("Reshape", {"p", "target"}, {"f"});
  prod.node("MatMul", {"f", "b"}, {"y"});
  expect_near(run(imported(prod), iota(8)), {28.5f, 37.5f, 46.5f});
  Model sub(13);
  sub.input("x", {1, 1, 1, 2}).output("y");
  sub.node("Relu", {"x"}, {"r"});
  sub.node("Sub", {"x", "r"}, {"y"}, "diff");
  expect_near(run(imported(sub), {-1.f, 2.f}), {-1.f, 0.f});  // x - relu(x) = min(x, 0)
  Model const_first(13);
  const_first.input("x", {1, 1, 1, 2}).output("y").init("c", {1}, {1.f});
  const_first.node("Sub", {"c", "x"}, {"y"}, "diff");
  auto r = const_first.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("Sub is supported with an activation first and a per-channel"), std::string::npos)
      << r.status().message();
  Model norm(13);  // (x - mean) / std per channel
  norm.input("x", {1, 2, 1, 2})
      .output("y")
      .init("mean", {1, 2, 1, 1}, {1.f, 2.f})
      .init("std", {1, 2, 1, 1}, {2.f, 4.f});
  norm.node("Sub", {"x", "mean"}, {"c"});
  norm.node("Div", {"c", "std"}, {"y"});
  expect_near(run(imported(norm), {1.f, 3.f, 2.f, 10.f}), {0.f, 1.f, 0.f, 2.f});
}

TEST(OnnxLinear, FlattenGemmWithTransposeAlphaBetaAndBias) {
  Model m;
  m.input("x", {1, 2, 1, 2}).output("y");
  m.init("B", {4, 3}, iota(12));  // transB = 0: (in, out)
  m.init("C", {3}, {1.f, 2.f, 3.f});
  m.node("Flatten", {"x"}, {"f"});
  auto& g = m.node("Gemm", {"f", "B", "C"}, {"y"});
  set_float(g, "alpha", 2.f);
  set_float(g, "beta", 0.5f);
  const auto model = imported(m);
  ASSERT_EQ(model.graph.op_count(), 1);
  EXPECT_TRUE(model.graph.node(1).is<ir::LinearAttrs>());
  // y_o = 2 * sum_i x_i * B[i][o] + 0.5 * C_o with x = [1, 0, 0, 1]: rows 0 and 3 of B.
  expect_near(run(model, {1, 0, 0, 1}), {2 * (1 + 10) + 0.5f, 2 * (2 + 11) + 1.f, 2 * (3 + 12) + 1.5f});
}

TEST(OnnxLinear, ReshapeMatMulAddAndDropoutIdentityAreFoldedOrDropped) {
  Model m;
  m.input("x", {1, 3, 1, 1}).output("y");
  m.init_ints("shape", {0, -1});
  m.init("B", {3, 2}, {1, 0, 0, 1, 1, 1});
  m.init("bias", {2}, {0.5f, -0.5f});
  m.node("Dropout", {"x"}, {"d"});
  m.node("Reshape", {"d", "shape"}, {"f"});
  m.node("MatMul", {"f", "B"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"a"});
  m.node("Identity", {"a"}, {"y"});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  expect_near(run(model, {1, 2, 3}), {4.5f, 4.5f});
}

TEST(OnnxLinear, AReshapeWritingTheDeclaredBatchFlattens) {
  // torch.export's exporter writes the example's batch into the target: (2, -1) for a batch-2 input.
  Model m;
  m.input("x", {2, 3, 1, 1}).output("y");
  m.init_ints("shape", {2, -1});
  m.init("B", {3, 1}, {1, 2, 3});
  m.node("Reshape", {"x", "shape"}, {"f"});
  m.node("MatMul", {"f", "B"}, {"y"});
  expect_near(run(imported(m), {1, 1, 1}), {6.f});
  Model wrong;  // (1, -1) of a batch-2 input would fold the batch into the features
  wrong.input("x", {2, 3, 1, 1}).output("y");
  wrong.init_ints("shape", {1, -1});
  wrong.init("B", {3, 1}, {1, 2, 3});
  wrong.node("Reshape", {"x", "shape"}, {"f"});
  wrong.node("MatMul", {"f", "B"}, {"y"});
  auto r = wrong.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("only a reshape to (batch, 3)"), std::string::npos) << r.status().message();
}

TEST(OnnxGraph, ConstantNodesAndFloatDataInitializersAreRead) {
  Model m;
  m.input("x", {1, 1, 1, 2}).output("y");
  auto& c = m.node("Constant", {}, {"w"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  Model::fill(*a->mutable_t(), "w", {1, 1, 1, 1}, {4.f}, false);
  m.node("Conv", {"x", "w"}, {"y"});
  expect_near(run(imported(m), {1.f, -2.f}), {4.f, -8.f});
}

TEST(OnnxGraph, BlocksAreCutWhereEveryPathPasses) {
  // x -> c1 -> (c2, c3) -> add -> relu -> c4: cuts at c1, the relu (reading the sum) and c4.
  Model m;
  m.input("x", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {1.f});
  m.node("Conv", {"x", "w"}, {"c1"});
  m.node("Conv", {"c1", "w"}, {"c2"});
  m.node("Conv", {"c1", "w"}, {"c3"});
  m.node("Add", {"c2", "c3"}, {"s"});
  m.node("Relu", {"s"}, {"r"});
  m.node("Conv", {"r", "w"}, {"y"});
  const auto model = imported(m);
  ASSERT_EQ(model.graph.blocks.size(), 3u);
  EXPECT_EQ(model.graph.blocks[1].inner.size(), 2u);  // c2, c3, then the relu of their sum as exit
}

TEST(OnnxGraph, NodesThatDoNotReachTheOutputAreDropped) {
  Model m;
  m.input("x", {1, 1, 1, 2}).output("y").init("w", {1, 1, 1, 1}, {1.f});
  m.node("Conv", {"x", "w"}, {"y"});
  m.node("Softmax", {"x"}, {"unused"});  // unsupported, but dead
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  ASSERT_FALSE(model.notes.empty());
}

}  // namespace
}  // namespace ios::onnx_import
