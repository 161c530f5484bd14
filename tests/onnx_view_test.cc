// The ONNX front end's views of pooled tensors (frontends/onnx/onnx_ops_view.cc), on models built here and run
// by the CPU reference against values computed in the test: ECA's gate as timm writes it (ReduceMean, Reshape
// to (N, 1, C), Conv1d, Sigmoid, Reshape back, Expand, Mul) and as the ECA-Net paper writes it (Squeeze,
// Transpose, Conv1d with a bias, Transpose, Unsqueeze), a GroupNorm of a pooled tensor, and the errors each
// view names.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

constexpr int kC = 5, kH = 2, kW = 3, kPlane = kH * kW;

std::vector<float> sample_input() {
  std::vector<float> x(size_t(kC * kPlane));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7) % 11) - 5.f + 0.25f * float(i % 3);
  return x;
}

// x * sigmoid(conv1d(mean over pixels of x)) per channel, the conv's taps centred with `pad` before.
std::vector<float> eca(const std::vector<float>& x, const std::vector<float>& taps, int pad, float bias) {
  std::vector<double> mean(kC, 0.0);
  for (int c = 0; c < kC; ++c)
    for (int p = 0; p < kPlane; ++p) mean[size_t(c)] += x[size_t(c * kPlane + p)] / double(kPlane);
  std::vector<float> y(x.size());
  for (int c = 0; c < kC; ++c) {
    double z = bias;
    for (int t = 0; t < int(taps.size()); ++t) {
      const int src = c + t - pad;
      if (src >= 0 && src < kC) z += taps[size_t(t)] * mean[size_t(src)];
    }
    const double gate = 1.0 / (1.0 + std::exp(-z));
    for (int p = 0; p < kPlane; ++p) y[size_t(c * kPlane + p)] = float(x[size_t(c * kPlane + p)] * gate);
  }
  return y;
}

onnx::NodeProto& conv1d(Model& m, const std::string& in, const std::string& w, const std::string& out,
                        std::vector<int64_t> pads, const std::string& bias = "") {
  std::vector<std::string> inputs{in, w};
  if (!bias.empty()) inputs.push_back(bias);
  onnx::NodeProto& n = m.node("Conv", inputs, {out});
  set_ints(n, "kernel_shape", {3});
  set_ints(n, "pads", std::move(pads));
  return n;
}

// timm's EcaModule: y.mean((2, 3)).view(N, 1, -1), Conv1d(1, 1, 3, padding=1, bias=False), sigmoid,
// .view(N, -1, 1, 1), x * y.expand_as(x).
TEST(OnnxView, TimmsEcaGateIsOneChannelConvOverThePooledChannels) {
  const std::vector<float> taps = {0.5f, -1.f, 2.f};
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y").init("w", {1, 1, 3}, taps);
  m.init_ints("row", {1, 1, -1}).init_ints("back", {1, -1, 1, 1}).init_ints("full", {1, kC, kH, kW});
  onnx::NodeProto& mean = m.node("ReduceMean", {"x"}, {"pooled"});
  set_int(mean, "keepdims", 0);
  set_ints(mean, "axes", {2, 3});
  m.node("Reshape", {"pooled", "row"}, {"r"});
  conv1d(m, "r", "w", "z", {1, 1});
  m.node("Sigmoid", {"z"}, {"s"});
  m.node("Reshape", {"s", "back"}, {"g"});
  m.node("Expand", {"g", "full"}, {"e"});
  m.node("Mul", {"x", "e"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelConv), 1);
  const std::vector<float> x = sample_input();
  expect_near(run(model, x), eca(x, taps, 1, 0.f));
}

// The ECA-Net paper's module: avg_pool, conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1),
// sigmoid, x * y (broadcast); here with a bias and pads off centre.
TEST(OnnxView, SqueezeTransposeAndUnsqueezeOfAPooledTensorAreViews) {
  const std::vector<float> taps = {1.f, 0.25f, -0.5f};
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y").init("w", {1, 1, 3}, taps).init("b", {1}, {0.75f});
  m.init_ints("last", {-1});
  m.node("GlobalAveragePool", {"x"}, {"pooled"});
  m.node("Squeeze", {"pooled", "last"}, {"sq"});
  set_ints(m.node("Transpose", {"sq"}, {"t"}), "perm", {0, 2, 1});
  conv1d(m, "t", "w", "z", {2, 0}, "b");
  set_ints(m.node("Transpose", {"z"}, {"t2"}), "perm", {0, 2, 1});
  m.node("Unsqueeze", {"t2", "last"}, {"u"});
  m.node("Sigmoid", {"u"}, {"s"});
  m.node("Mul", {"x", "s"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelConv), 1);
  const std::vector<float> x = sample_input();
  expect_near(run(model, x), eca(x, taps, 2, 0.75f));
}

// Squeeze and Unsqueeze axes as attributes before opset 13, and a reshape of the view straight to (N, C).
TEST(OnnxView, SqueezeAxesAreAnAttributeBeforeOpset13) {
  Model m(11);
  m.input("x", {1, kC, 1, 1}).output("y").init_ints("flat", {1, kC});
  set_ints(m.node("Squeeze", {"x"}, {"sq"}), "axes", {2, 3});
  set_ints(m.node("Unsqueeze", {"sq"}, {"u"}), "axes", {1});
  m.node("Reshape", {"u", "flat"}, {"f"});
  m.node("Relu", {"f"}, {"y"});
  const ImportedModel model = imported(m);
  const std::vector<float> x = {1.f, -2.f, 3.f, -4.f, 5.f};
  expect_near(run(model, x), {1.f, 0.f, 3.f, 0.f, 5.f});
}

// The dynamo exporter writes adaptive_avg_pool2d's as_strided as a Reshape to (-1) and a Gather of every index,
// shaped (1, C, 1, 1).
TEST(OnnxView, AGatherOfEveryIndexOfAPooledVectorIsAView) {
  Model m(18);
  m.input("x", {1, kC, kH, kW}).output("y").init_ints("vec", {-1});
  m.init_ints("every", {0, 1, 2, 3, 4}, {1, kC, 1, 1}).init_ints("swapped", {1, 0, 2, 3, 4}, {1, kC, 1, 1});
  m.node("GlobalAveragePool", {"x"}, {"p"});
  m.node("Reshape", {"p", "vec"}, {"v"});
  m.node("Gather", {"v", "every"}, {"g"});
  m.node("Relu", {"g"}, {"y"});
  const ImportedModel model = imported(m);
  const std::vector<float> x = sample_input();
  std::vector<float> want(kC);
  for (int c = 0; c < kC; ++c) {
    double mean = 0;
    for (int p = 0; p < kPlane; ++p) mean += x[size_t(c * kPlane + p)] / kPlane;
    want[size_t(c)] = std::max(float(mean), 0.f);
  }
  expect_near(run(model, x), want);
  m.graph()->mutable_node(2)->set_input(1, "swapped");
  EXPECT_NE(import_error(m).find("only as every index in order"), std::string::npos);
}

TEST(OnnxView, EachViewNamesWhatItCannotRead) {
  {  // a Conv1d of two input channels
    Model m;
    m.input("x", {1, 4, 1, 1}).output("y").init("w", {1, 2, 3}, iota(6)).init_ints("v", {1, 2, -1});
    m.node("Reshape", {"x", "v"}, {"r"});
    conv1d(m, "r", "w", "y", {1, 1});
    EXPECT_NE(import_error(m).find("(N, 1, C) view of pooled channels"), std::string::npos);
  }
  {  // pads that change the channel count
    Model m;
    m.input("x", {1, kC, 1, 1}).output("y").init("w", {1, 1, 3}, iota(3)).init_ints("v", {1, 1, -1});
    m.node("Reshape", {"x", "v"}, {"r"});
    conv1d(m, "r", "w", "y", {1, 0});
    EXPECT_NE(import_error(m).find("must add up to kernel - 1 = 2"), std::string::npos);
  }
  {  // a view read by an op that is not element-wise
    Model m;
    m.input("x", {1, kC, 1, 1}).output("y").init_ints("v", {1, 1, -1});
    m.node("Reshape", {"x", "v"}, {"r"});
    m.node("GlobalAveragePool", {"r"}, {"y"});
    EXPECT_NE(import_error(m).find("3-D view of a pooled tensor"), std::string::npos);
  }
  {  // Squeeze of a tensor with pixels
    Model m;
    m.input("x", {1, kC, kH, kW}).output("y").init_ints("a", {2});
    m.node("Squeeze", {"x", "a"}, {"y"});
    EXPECT_NE(import_error(m).find("only a pooled (N, C, 1, 1) tensor"), std::string::npos);
  }
  {  // an expanded factor read by anything but Mul
    Model m;
    m.input("x", {1, kC, kH, kW}).output("y").init_ints("full", {1, kC, kH, kW});
    m.node("GlobalAveragePool", {"x"}, {"p"});
    m.node("Expand", {"p", "full"}, {"e"});
    m.node("Relu", {"e"}, {"y"});
    EXPECT_NE(import_error(m).find("only an element-wise product (Mul) reads it"), std::string::npos);
  }
  {  // Expand of a tensor with pixels over H and W
    Model m;
    m.input("x", {1, kC, kH, 1}).output("y").init_ints("full", {1, kC, kH, kW});
    m.node("Expand", {"x", "full"}, {"y"});
    EXPECT_NE(import_error(m).find("only a pooled (N, C, 1, 1) tensor can be expanded"), std::string::npos);
  }
}

}  // namespace
}  // namespace ios::onnx_import
