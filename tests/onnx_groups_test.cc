// The ONNX front end's ops over groups of channels (frontends/onnx/onnx_ops_groups.cc), on models built here and
// run by the CPU reference against values computed in the test: SKNet's selective kernel (paths stacked, summed,
// pooled, a softmax across the paths, weighted and summed again), ResNeSt's split attention with its radix
// softmax over a view of the pooled logits (reordered where its cardinality is above 1), a softmax over channels,
// and the errors each names.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

constexpr int kH = 2, kW = 3, kPlane = kH * kW;

std::vector<float> sample_input(int channels) {
  std::vector<float> x(size_t(channels * kPlane));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7) % 11) * 0.3f - 1.5f + 0.1f * float(i % 3);
  return x;
}

onnx::NodeProto& reduce(Model& m, const std::string& op, const std::string& in, const std::string& out,
                        std::vector<int64_t> axes, int64_t keepdims) {
  onnx::NodeProto* n;
  if (op == "ReduceSum") {  // axes as input 1 from opset 13
    const std::string name = out + "_axes";
    m.init_ints(name, std::move(axes));
    n = &m.node(op, {in, name}, {out});
  } else {
    n = &m.node(op, {in}, {out});
    set_ints(*n, "axes", std::move(axes));
  }
  set_int(*n, "keepdims", keepdims);
  return *n;
}

// Pixel means of a (C, H, W) sample.
std::vector<double> pooled(const std::vector<float>& x, int channels) {
  std::vector<double> p(size_t(channels), 0.0);
  for (int c = 0; c < channels; ++c)
    for (int q = 0; q < kPlane; ++q) p[size_t(c)] += x[size_t(c * kPlane + q)] / kPlane;
  return p;
}

// timm's SelectiveKernel with two paths (here Relu(x) and Sigmoid(x)) and its SelectiveKernelAttn.
TEST(OnnxGroups, SelectiveKernelWeighsItsStackedPathsByASoftmaxAcrossThem) {
  constexpr int kC = 4;
  const std::vector<float> w = iota(2 * kC * kC, -3.f);  // fc_select: 8 x 4, scaled below
  std::vector<float> ws(w.size());
  for (size_t i = 0; i < w.size(); ++i) ws[i] = w[i] * 0.05f;
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y").init("w", {2 * kC, kC, 1, 1}, ws).init_ints("one", {1});
  m.init_ints("split", {1, 2, kC, 1, 1});
  m.node("Relu", {"x"}, {"a"});
  m.node("Sigmoid", {"x"}, {"b"});
  m.node("Unsqueeze", {"a", "one"}, {"ua"});
  m.node("Unsqueeze", {"b", "one"}, {"ub"});
  set_int(m.node("Concat", {"ua", "ub"}, {"s"}), "axis", 1);
  reduce(m, "ReduceSum", "s", "u", {1}, 0);
  reduce(m, "ReduceMean", "u", "p", {2, 3}, 1);
  m.node("Conv", {"p", "w"}, {"z"});
  m.node("Reshape", {"z", "split"}, {"zv"});
  set_int(m.node("Softmax", {"zv"}, {"att"}), "axis", 1);
  m.node("Mul", {"s", "att"}, {"prod"});
  reduce(m, "ReduceSum", "prod", "y", {1}, 0);
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelSoftmax), 1);

  const std::vector<float> x = sample_input(kC);
  std::vector<float> a(x.size()), b(x.size()), u(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    a[i] = std::max(x[i], 0.f);
    b[i] = 1.f / (1.f + std::exp(-x[i]));
    u[i] = a[i] + b[i];
  }
  const std::vector<double> p = pooled(u, kC);
  std::vector<double> z(2 * kC, 0.0);
  for (int o = 0; o < 2 * kC; ++o)
    for (int c = 0; c < kC; ++c) z[size_t(o)] += ws[size_t(o * kC + c)] * p[size_t(c)];
  std::vector<float> want(x.size());
  for (int c = 0; c < kC; ++c) {
    const double s0 = 1.0 / (1.0 + std::exp(z[size_t(kC + c)] - z[size_t(c)]));
    for (int q = 0; q < kPlane; ++q) {
      const size_t i = size_t(c * kPlane + q);
      want[i] = float(a[i] * s0 + b[i] * (1.0 - s0));
    }
  }
  expect_near(run(model, x), want);
}

// timm's SplitAttn with radix 2: the convolution's output viewed as (N, radix, C, H, W); its RadixSoftmax views
// the pooled logits as (N, cardinality, radix, C'), so that above cardinality 1 (resnest50d_4s2x40d) the
// Transpose(0, 2, 1, 3) reorders the channels to (radix, cardinality, C') before the softmax across the radix.
// Both exporters' forms: flattened and reshaped back (TorchScript), or the softmax reshaped to 5-D at once
// (dynamo).
void check_split_attention(int cardinality, bool dynamo) {
  SCOPED_TRACE("cardinality " + std::to_string(cardinality) + (dynamo ? ", dynamo" : ", TorchScript"));
  constexpr int kRadix = 2, kCp = 2;
  const int c_split = cardinality * kCp;  // channels per radix split
  std::vector<float> w(size_t(kRadix * c_split * c_split));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float((i * 5) % 7) * 0.4f - 1.2f;
  Model m(17);
  m.input("x", {1, kRadix * c_split, kH, kW}).output("y").init("w", {kRadix * c_split, c_split, 1, 1}, w);
  m.init_ints("split", {1, kRadix, c_split, kH, kW}).init_ints("card", {1, cardinality, kRadix, -1});
  m.init_ints("flat", {1, -1}).init_ints("pool4", {1, -1, 1, 1}).init_ints("att5", {1, kRadix, c_split, 1, 1});
  m.node("Reshape", {"x", "split"}, {"xv"});
  reduce(m, "ReduceSum", "xv", "gap", {1}, 0);
  reduce(m, "ReduceMean", "gap", "p", {2, 3}, 1);
  m.node("Conv", {"p", "w"}, {"z"});
  m.node("Reshape", {"z", "card"}, {"zc"});
  set_ints(m.node("Transpose", {"zc"}, {"zt"}), "perm", {0, 2, 1, 3});
  set_int(m.node("Softmax", {"zt"}, {"sm"}), "axis", 1);
  if (dynamo) {
    m.node("Reshape", {"sm", "att5"}, {"att"});
  } else {
    m.node("Reshape", {"sm", "flat"}, {"sf"});
    m.node("Reshape", {"sf", "pool4"}, {"s4"});
    m.node("Reshape", {"s4", "att5"}, {"att"});
  }
  m.node("Mul", {"xv", "att"}, {"prod"});
  reduce(m, "ReduceSum", "prod", "y", {1}, 0);
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelSoftmax), 1);

  const std::vector<float> x = sample_input(kRadix * c_split);
  std::vector<float> gap(size_t(c_split * kPlane));
  for (size_t i = 0; i < gap.size(); ++i) gap[i] = x[i] + x[i + gap.size()];
  const std::vector<double> p = pooled(gap, c_split);
  std::vector<double> z(size_t(kRadix * c_split), 0.0);
  for (int o = 0; o < kRadix * c_split; ++o)
    for (int c = 0; c < c_split; ++c) z[size_t(o)] += w[size_t(o * c_split + c)] * p[size_t(c)];
  std::vector<float> want(gap.size());
  for (int c = 0; c < c_split; ++c) {
    // channel c of every split is (cardinality k, position j); its logit of radix r is z[(k, r, j)]
    const int k = c / kCp, j = c % kCp;
    const double z0 = z[size_t((k * kRadix + 0) * kCp + j)], z1 = z[size_t((k * kRadix + 1) * kCp + j)];
    const double s0 = 1.0 / (1.0 + std::exp(z1 - z0));
    for (int q = 0; q < kPlane; ++q) {
      const size_t i = size_t(c * kPlane + q);
      want[i] = float(x[i] * s0 + x[i + gap.size()] * (1.0 - s0));
    }
  }
  expect_near(run(model, x), want);
}

TEST(OnnxGroups, SplitAttentionsRadixSoftmaxIsASoftmaxAcrossTheRadixGroups) {
  for (int cardinality : {1, 2})
    for (bool dynamo : {false, true}) check_split_attention(cardinality, dynamo);
}

// A classifier's probabilities (Softmax of (N, features) pooled logits), and a softmax over the channels of a
// 4-D tensor at every pixel.
TEST(OnnxGroups, SoftmaxOverChannels) {
  Model head;
  head.input("x", {1, 3, 1, 1}).output("y");
  head.node("Flatten", {"x"}, {"f"});
  head.node("Softmax", {"f"}, {"y"});
  const std::vector<float> logits = {0.f, std::log(2.f), std::log(5.f)};  // exp: 1, 2, 5 of 8
  expect_near(run(imported(head), logits), {0.125f, 0.25f, 0.625f});

  Model pixels;
  pixels.input("x", {1, 2, kH, kW}).output("y");
  set_int(pixels.node("Softmax", {"x"}, {"y"}), "axis", 1);
  const std::vector<float> x = sample_input(2);
  std::vector<float> want(x.size());
  for (int q = 0; q < kPlane; ++q) {
    const double s0 = 1.0 / (1.0 + std::exp(x[size_t(kPlane + q)] - x[size_t(q)]));
    want[size_t(q)] = float(s0);
    want[size_t(kPlane + q)] = float(1.0 - s0);
  }
  expect_near(run(imported(pixels), x), want);
}

TEST(OnnxGroups, EachGroupOpNamesWhatItCannotRead) {
  {  // a softmax over a spatial axis
    Model m;
    m.input("x", {1, 2, kH, kW}).output("y");
    set_int(m.node("Softmax", {"x"}, {"y"}), "axis", 3);
    EXPECT_NE(import_error(m).find("only a softmax over the channels or over groups of channels"), std::string::npos);
  }
  {  // a sum over another axis of a 5-D view
    Model m;
    m.input("x", {1, 4, kH, kW}).output("y").init_ints("split", {1, 2, 2, kH, kW});
    m.node("Reshape", {"x", "split"}, {"v"});
    reduce(m, "ReduceSum", "v", "y", {2}, 0);
    EXPECT_NE(import_error(m).find("only a sum over the groups (axis 1)"), std::string::npos);
  }
  {  // stacking a view with a plain tensor
    Model m;
    m.input("x", {1, 2, kH, kW}).output("y").init_ints("one", {1});
    m.node("Unsqueeze", {"x", "one"}, {"u"});
    set_int(m.node("Concat", {"u", "x"}, {"y"}), "axis", 1);
    EXPECT_NE(import_error(m).find("is not a 5-D (N, g, C/g, H, W) view"), std::string::npos);
  }
  {  // a product of a view and a plain tensor
    Model m;
    m.input("x", {1, 4, kH, kW}).output("y").init_ints("split", {1, 2, 2, kH, kW});
    m.node("Reshape", {"x", "split"}, {"v"});
    m.node("Mul", {"v", "x"}, {"y"});
    EXPECT_NE(import_error(m).find("multiplies a 5-D (N, g, C/g, H, W) view and a tensor"), std::string::npos);
  }
}

}  // namespace
}  // namespace ios::onnx_import
