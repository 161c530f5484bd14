// The ONNX front end's windowed ops on small models built here with the protobuf API: Conv (pads, auto_pad,
// asymmetric pads, groups, dilation, folded BatchNorm), ConvTranspose against its definition, and pooling,
// imported and run by the CPU reference against outputs computed by hand or by a direct loop in the test.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

TEST(OnnxConv, PaddedStridedConvWithBiasMatchesTheDefinition) {
  Model m;
  const auto wt = iota(2 * 2 * 9, -8.f);
  m.input("x", {1, 2, 5, 5}).output("y").init("w", {2, 2, 3, 3}, wt).init("b", {2}, {0.5f, -1.f}, false);
  auto& n = m.node("Conv", {"x", "w", "b"}, {"y"});
  set_ints(n, "pads", {1, 1, 1, 1});
  set_ints(n, "strides", {2, 2});
  const auto model = imported(m);
  const auto x = iota(50, -20.f);
  expect_near(run(model, x), direct_conv(x, 2, 5, 5, wt, 2, 3, 1, 2, {0.5f, -1.f}), 1e-3f);
  EXPECT_EQ(model.graph.output_shape(), (ir::Shape{2, 3, 3}));
}

TEST(OnnxConv, BatchNormAndReluFoldIntoTheConvolution) {
  Model m;
  const auto wt = iota(2 * 1 * 9, -4.f);
  m.input("x", {1, 1, 4, 4}).output("r").init("w", {2, 1, 3, 3}, wt);
  m.init("g", {2}, {2.f, 0.5f})
      .init("beta", {2}, {1.f, -1.f})
      .init("mu", {2}, {3.f, -2.f})
      .init("var", {2}, {4.f, 1.f});
  set_ints(m.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  set_float(m.node("BatchNormalization", {"c", "g", "beta", "mu", "var"}, {"bn"}), "epsilon", 0.f);
  m.node("Relu", {"bn"}, {"r"});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1) << "conv + bn + relu should be one node";
  const auto x = iota(16, -8.f);
  auto want = direct_conv(x, 1, 4, 4, wt, 2, 3, 1, 1, {});
  const float g[2] = {2.f, 0.5f}, beta[2] = {1.f, -1.f}, mu[2] = {3.f, -2.f}, sd[2] = {2.f, 1.f};
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t ch = i / 16;
    want[i] = std::max(0.f, (want[i] - mu[ch]) / sd[ch] * g[ch] + beta[ch]);
  }
  expect_near(run(model, x), want, 1e-4f);
}

TEST(OnnxConv, BatchNormWithoutAConvolutionBeforeItIsADepthwiseScaleShift) {
  Model m;
  m.input("x", {1, 2, 1, 2}).output("bn");
  m.init("g", {2}, {2.f, 3.f}).init("beta", {2}, {1.f, 0.f}).init("mu", {2}, {0.f, 1.f}).init("var", {2}, {1.f, 1.f});
  set_float(m.node("BatchNormalization", {"x", "g", "beta", "mu", "var"}, {"bn"}), "epsilon", 0.f);
  const auto model = imported(m);
  ASSERT_EQ(model.graph.op_count(), 1);
  EXPECT_EQ(model.graph.node(1).attrs<ir::ConvAttrs>().groups, 2);
  expect_near(run(model, {1, 2, 3, 4}), {3, 5, 6, 9});
}

TEST(OnnxConv, SameUpperAutoPadAndRepresentableAsymmetricPadsImport) {
  Model m;
  m.input("x", {1, 1, 5, 5}).output("b").init("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  set_string(m.node("Conv", {"x", "w"}, {"a"}), "auto_pad", "SAME_UPPER");
  set_ints(m.node("Conv", {"a", "w"}, {"b"}), "pads", {0, 0, 1, 1});  // the extra end row/column is never read
  set_ints(*m.graph()->mutable_node(1), "strides", {2, 2});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.node(1).attrs<ir::ConvAttrs>().ph, 1);
  EXPECT_EQ(model.graph.output_shape(), (ir::Shape{1, 2, 2}));
}

// TensorFlow's "same" padding of a stride-2 convolution, as the dynamo exporter folds it into the Conv.
TEST(OnnxConv, AsymmetricPadsRunAsAPadBeforeTheConvolution) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("y").init("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  auto& n = m.node("Conv", {"x", "w"}, {"y"}, "stem");
  set_ints(n, "pads", {0, 0, 1, 1});
  set_ints(n, "strides", {2, 2});
  const auto model = imported(m);
  ASSERT_EQ(model.graph.op_count(), 2);
  const auto& pad = model.graph.node(1).attrs<ir::PadAttrs>();
  EXPECT_EQ(std::make_tuple(pad.top, pad.left, pad.bottom, pad.right, pad.value), std::make_tuple(0, 0, 1, 1, 0.f));
  EXPECT_EQ(model.graph.node(2).attrs<ir::ConvAttrs>().ph, 0);
  // Windows of rows/columns {0,1,2} and {2,3,pad}: sums of x[r][c] = 1 + 4r + c.
  expect_near(run(model, iota(16)), {54, 45, 72, 54});
}

// nn.ZeroPad2d before a convolution: the convolution pads the tensor itself, and no padded copy is made.
// Where the sum is asymmetric the convolution's one pad op takes it; a Pad with another reader, a non-zero
// fill or a convolution of auto_pad (sized by the padded input) stays a pad op.
TEST(OnnxConv, AZeroPadBeforeAConvolutionIsTakenIntoItsPadding) {
  const auto wt = iota(2 * 1 * 9, -4.f);
  auto padded = [&](std::vector<int64_t> pads, std::vector<int64_t> conv_pads, float fill = 0.f) {
    Model m;
    m.input("x", {1, 1, 5, 5}).output("y").init("w", {2, 1, 3, 3}, wt).init_ints("pads", pads).init("v", {}, {fill});
    m.node("Pad", {"x", "pads", "v"}, {"p"}, "pad");
    set_ints(m.node("Conv", {"p", "w"}, {"y"}, "conv"), "pads", conv_pads);
    return m;
  };
  const auto x = iota(25, -12.f);
  const auto folded = imported(padded({0, 0, 1, 1, 0, 0, 1, 1}, {1, 0, 1, 0}));
  ASSERT_EQ(folded.graph.op_count(), 1) << "the pad is the convolution's";
  const auto& conv = folded.graph.node(1).attrs<ir::ConvAttrs>();
  EXPECT_EQ(std::make_pair(conv.ph, conv.pw), std::make_pair(2, 1));
  // rows padded by 2 (1 + 1), columns by 1: a 7 x 5 output
  auto bigger = [&](int ph, int pw) {
    Model m;
    m.input("x", {1, 1, 5, 5}).output("y").init("w", {2, 1, 3, 3}, wt);
    set_ints(m.node("Conv", {"x", "w"}, {"y"}), "pads", {ph, pw, ph, pw});
    return run(imported(m), x);
  };
  expect_near(run(folded, x), bigger(2, 1), 1e-4f);
  // (1, 0) before and (0, 1) after: one pad op, as the convolution's own asymmetric pads would be
  const auto asymmetric = imported(padded({0, 0, 1, 0, 0, 0, 0, 1}, {0, 0, 0, 0}));
  EXPECT_EQ(asymmetric.graph.op_count(), 2);
  // a fill of 2: the pad stays, and the result is the padded tensor's
  const auto filled = imported(padded({0, 0, 1, 1, 0, 0, 1, 1}, {0, 0, 0, 0}, 2.f));
  ASSERT_EQ(filled.graph.op_count(), 2);
  EXPECT_EQ(filled.graph.node(1).attrs<ir::PadAttrs>().value, 2.f);
  auto pads_in = [](const ImportedModel& model) {
    int n = 0;
    for (const auto& node : model.graph.nodes) n += std::holds_alternative<ir::PadAttrs>(node.op);
    return n;
  };
  Model read_twice = padded({0, 0, 1, 1, 0, 0, 1, 1}, {0, 0, 0, 0});
  read_twice.node("Conv", {"p", "w"}, {"y2"});
  read_twice.node("Add", {"y", "y2"}, {"s"});
  read_twice.graph()->mutable_output(0)->set_name("s");
  EXPECT_EQ(pads_in(imported(read_twice)), 1);
  Model auto_padded = padded({0, 0, 1, 1, 0, 0, 1, 1}, {0, 0, 0, 0});
  auto* conv_node = auto_padded.graph()->mutable_node(1);
  conv_node->mutable_attribute()->Clear();
  set_string(*conv_node, "auto_pad", "SAME_UPPER");
  EXPECT_EQ(pads_in(imported(auto_padded)), 1);
}

struct TransposedCase {
  int in_c, out_c, group, k, s;
  std::vector<int64_t> pads, output_padding;
};

// ONNX's ConvTranspose by its definition: every input pixel scatters its kernel into the output.
std::vector<float> scatter_conv_transpose(const TransposedCase& t, int h, int w, const std::vector<float>& x,
                                          const std::vector<float>& weight, const std::vector<float>& bias) {
  const int oh = (h - 1) * t.s + t.k - int(t.pads[0] + t.pads[2]) + int(t.output_padding[0]);
  const int ow = (w - 1) * t.s + t.k - int(t.pads[1] + t.pads[3]) + int(t.output_padding[1]);
  const int in_g = t.in_c / t.group, out_g = t.out_c / t.group;
  std::vector<float> y(size_t(t.out_c * oh * ow));
  for (int oc = 0; oc < t.out_c; ++oc)
    for (int i = 0; i < oh * ow; ++i) y[size_t(oc * oh * ow + i)] = bias[size_t(oc)];
  for (int ic = 0; ic < t.in_c; ++ic)
    for (int ocl = 0; ocl < out_g; ++ocl)
      for (int iy = 0; iy < h; ++iy)
        for (int ix = 0; ix < w; ++ix)
          for (int ky = 0; ky < t.k; ++ky)
            for (int kx = 0; kx < t.k; ++kx) {
              const int oy = iy * t.s + ky - int(t.pads[0]), ox = ix * t.s + kx - int(t.pads[1]);
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
              const int oc = ic / in_g * out_g + ocl;
              y[size_t((oc * oh + oy) * ow + ox)] +=
                  x[size_t((ic * h + iy) * w + ix)] * weight[size_t(((ic * out_g + ocl) * t.k + ky) * t.k + kx)];
            }
  return y;
}

TEST(OnnxConvTranspose, MatchesItsDefinitionAcrossStridesPadsGroupsAndOutputPadding) {
  const std::vector<TransposedCase> cases = {
      {4, 3, 1, 2, 2, {0, 0, 0, 0}, {0, 0}},  // U-Net's upsampling: no crop
      {4, 6, 1, 4, 2, {1, 1, 1, 1}, {0, 0}},  // DCGAN / FCN: k = 2s
      {4, 2, 2, 3, 2, {1, 1, 1, 1}, {1, 1}},  // grouped, k not a multiple of s
      {3, 5, 1, 3, 1, {1, 1, 1, 1}, {0, 0}},  // stride 1: a convolution with the kernel reversed
      {2, 2, 1, 4, 2, {0, 2, 0, 0}, {1, 0}},  // asymmetric pads; output padding past the blocks' end
      {2, 3, 1, 3, 3, {0, 0, 0, 0}, {2, 2}},
  };
  const int h = 3, w = 4;
  for (const TransposedCase& t : cases) {
    SCOPED_TRACE("k " + std::to_string(t.k) + " s " + std::to_string(t.s) + " group " + std::to_string(t.group));
    std::vector<float> weight(size_t(t.in_c * t.out_c / t.group * t.k * t.k)), bias(size_t(t.out_c));
    for (size_t i = 0; i < weight.size(); ++i) weight[i] = float(int(i * 37 % 23) - 11) / 8.f;
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) / 4.f - 0.5f;
    std::vector<float> x(size_t(t.in_c * h * w));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 11 % 17) - 8) / 4.f;
    Model m;
    m.input("x", {1, t.in_c, h, w}).output("y");
    m.init("w", {t.in_c, t.out_c / t.group, t.k, t.k}, weight).init("b", {t.out_c}, bias);
    auto& n = m.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
    set_ints(n, "strides", {t.s, t.s});
    set_ints(n, "pads", t.pads);
    set_ints(n, "output_padding", t.output_padding);
    set_int(n, "group", t.group);
    const auto model = imported(m);
    EXPECT_EQ(count_kind(model.graph, ir::OpKind::kSpaceDepth), 1);
    expect_near(run(model, x), scatter_conv_transpose(t, h, w, x, weight, bias), 1e-4f);
  }
}

// A decoder's ConvTranspose, BatchNormalization, Relu: both fold into the phases convolution (the block move
// and the crop commute with per-channel and element-wise ops), leaving three ops.
TEST(OnnxConvTranspose, BatchNormAndActivationAfterItFoldIntoItsConvolution) {
  const TransposedCase t{3, 2, 1, 4, 2, {1, 1, 1, 1}, {0, 0}};
  const int h = 3, w = 2;
  std::vector<float> weight(size_t(3 * 2 * 16)), x(size_t(3 * h * w));
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = float(int(i * 29 % 19) - 9) / 8.f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 13) - 6) / 4.f;
  const std::vector<float> g = {2.f, 0.5f}, beta = {0.25f, -1.f}, mu = {0.5f, -0.5f}, var = {4.f, 1.f};
  Model m;
  m.input("x", {1, 3, h, w}).output("y").init("w", {3, 2, 4, 4}, weight);
  m.init("g", {2}, g).init("beta", {2}, beta).init("mu", {2}, mu).init("var", {2}, var);
  auto& n = m.node("ConvTranspose", {"x", "w"}, {"up"});
  set_ints(n, "strides", {2, 2});
  set_ints(n, "pads", t.pads);
  set_float(m.node("BatchNormalization", {"up", "g", "beta", "mu", "var"}, {"bn"}), "epsilon", 0.f);
  m.node("Relu", {"bn"}, {"y"});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 3);
  std::vector<float> want = scatter_conv_transpose(t, h, w, x, weight, {0.f, 0.f});
  const size_t plane = want.size() / 2;
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t c = i / plane;
    want[i] = std::max(0.f, (want[i] - mu[c]) / std::sqrt(var[c]) * g[c] + beta[c]);
  }
  expect_near(run(model, x), want, 1e-4f);
}

TEST(OnnxConvTranspose, UnsupportedAttributesAreNamed) {
  auto error = [](std::function<void(onnx::NodeProto&)> set) {
    Model m;
    m.input("x", {1, 2, 3, 3}).output("y").init("w", {2, 2, 2, 2}, std::vector<float>(16, 1.f));
    auto& n = m.node("ConvTranspose", {"x", "w"}, {"y"}, "up");
    set_ints(n, "strides", {2, 2});
    set(n);
    auto r = m.import();
    EXPECT_FALSE(r);
    return r ? std::string() : r.status().message();
  };
  EXPECT_NE(error([](onnx::NodeProto& n) { set_ints(n, "dilations", {2, 2}); }).find("no dilation"), std::string::npos);
  EXPECT_NE(error([](onnx::NodeProto& n) {
              set_ints(n, "output_shape", {6, 6});
            }).find("'output_shape'"),
            std::string::npos);
  EXPECT_NE(error([](onnx::NodeProto& n) {
              set_ints(n, "output_padding", {2, 0});
            }).find("[0, stride)"),
            std::string::npos);
  EXPECT_NE(error([](onnx::NodeProto& n) { set_ints(n, "pads", {4, 4, 4, 4}); }).find("would be"), std::string::npos);
  Model sparse;  // a 2x2 kernel at stride 3
  sparse.input("x", {1, 2, 3, 3}).output("y").init("w", {2, 2, 2, 2}, std::vector<float>(16, 1.f));
  set_ints(sparse.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "strides", {3, 3});
  auto r = sparse.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("stride larger than the kernel"), std::string::npos) << r.status().message();
}

TEST(OnnxConv, GroupedAndDilatedConvolutionImport) {
  Model m;
  m.input("x", {1, 4, 6, 6}).output("y").init("w", {4, 2, 3, 3}, iota(72, -30.f));
  auto& n = m.node("Conv", {"x", "w"}, {"y"});
  set_int(n, "group", 2);
  set_ints(n, "dilations", {2, 2});
  const auto model = imported(m);
  const auto& c = model.graph.node(1).attrs<ir::ConvAttrs>();
  EXPECT_EQ(c.groups, 2);
  EXPECT_EQ(c.dh, 2);
  EXPECT_EQ(model.graph.output_shape(), (ir::Shape{4, 2, 2}));
}

TEST(OnnxPool, AveragePoolHonoursCountIncludePad) {
  for (int include : {0, 1}) {
    Model m;
    m.input("x", {1, 1, 3, 3}).output("y");
    auto& n = m.node("AveragePool", {"x"}, {"y"});
    set_ints(n, "kernel_shape", {3, 3});
    set_ints(n, "pads", {1, 1, 1, 1});
    set_int(n, "count_include_pad", include);
    const auto out = run(imported(m), iota(9));
    // Top-left window covers 1, 2, 4, 5 (12) and five padded cells; the centre covers all nine (45).
    EXPECT_FLOAT_EQ(out[0], include ? 12.f / 9 : 12.f / 4);
    EXPECT_FLOAT_EQ(out[4], 5.f);
  }
}

// MaxPool's dilations (PyTorch's MaxPool2d(dilation=...)) spread its taps; AveragePool's are refused by name.
TEST(OnnxPool, DilatedMaxPoolTakesSpreadTaps) {
  auto pooled = [](const char* op) {
    Model m;
    m.input("x", {1, 1, 3, 5}).output("y");
    auto& n = m.node(op, {"x"}, {"y"}, "pool");
    set_ints(n, "kernel_shape", {2, 2});
    set_ints(n, "dilations", {2, 3});
    set_ints(n, "pads", {1, 1, 1, 1});
    return m;
  };
  const auto model = imported(pooled("MaxPool"));
  EXPECT_EQ(model.graph.output_shape(), (ir::Shape{1, 3, 4}));
  expect_near(run(model, iota(15)), {8, 9, 10, 8, 13, 14, 15, 13, 8, 9, 10, 8});
  EXPECT_NE(import_error(pooled("AveragePool")).find("'dilations' is supported for MaxPool only"), std::string::npos);
}

// Padded cells of an asymmetric max pooling never win, even over negative values.
TEST(OnnxPool, AsymmetricPadsOfAMaxPoolFillBelowEveryValue) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("y");
  auto& n = m.node("MaxPool", {"x"}, {"y"});
  set_ints(n, "kernel_shape", {3, 3});
  set_ints(n, "strides", {2, 2});
  set_ints(n, "pads", {0, 0, 1, 1});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.node(1).attrs<ir::PadAttrs>().bottom, 1);
  expect_near(run(model, iota(16, -20.f)), {-10, -9, -6, -5});
}

// NASNet pads before a max pooling with an explicit Pad of -inf: the padded cells never win either.
TEST(OnnxPool, APadOfMinusInfinityBeforeAMaxPoolNeverWins) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("y").init_ints("pads", {0, 0, 0, 0, 0, 0, 1, 1});
  m.init("v", {}, {-INFINITY});
  m.node("Pad", {"x", "pads", "v"}, {"p"});
  auto& n = m.node("MaxPool", {"p"}, {"y"});
  set_ints(n, "kernel_shape", {3, 3});
  set_ints(n, "strides", {2, 2});
  const auto model = imported(m);
  EXPECT_LT(model.graph.node(1).attrs<ir::PadAttrs>().value, -1e38f);
  EXPECT_TRUE(std::isfinite(model.graph.node(1).attrs<ir::PadAttrs>().value)) << "graph files hold finite numbers";
  expect_near(run(model, iota(16, -20.f)), {-10, -9, -6, -5});
  m.graph()->mutable_initializer(1)->set_raw_data(std::string(4, '\xff'));  // a NaN, which the reader refuses
  EXPECT_NE(import_error(m).find("holds NaN"), std::string::npos) << import_error(m);
}

TEST(OnnxPool, AsymmetricPadsAnAverageMustNotCountAreRejectedByName) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("y");
  auto& n = m.node("AveragePool", {"x"}, {"y"}, "pool");
  set_ints(n, "kernel_shape", {3, 3});
  set_ints(n, "strides", {2, 2});
  set_ints(n, "pads", {0, 0, 1, 1});
  auto r = m.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("node 'pool' (AveragePool"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("count_include_pad=1"), std::string::npos) << r.status().message();
  set_int(n, "count_include_pad", 1);
  expect_near(run(imported(m), iota(16)), {54.f / 9, 45.f / 9, 72.f / 9, 54.f / 9});
}

TEST(OnnxPool, MaxPoolCeilModeAndGlobalPools) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("g");
  auto& n = m.node("MaxPool", {"x"}, {"p"});
  set_ints(n, "kernel_shape", {3, 3});
  set_ints(n, "strides", {2, 2});
  set_int(n, "ceil_mode", 1);
  m.node("GlobalAveragePool", {"p"}, {"g"});
  const auto model = imported(m);
  EXPECT_EQ(model.graph.node(1).output_shape, (ir::Shape{1, 2, 2}));
  // Max pools of 1..16 in a 4x4 grid, windows at 0 and 2: 11, 12, 15, 16; their mean is 13.5.
  expect_near(run(model, iota(16)), {13.5f});
}

}  // namespace
}  // namespace ios::onnx_import
