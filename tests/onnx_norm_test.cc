// The ONNX front end's normalizations beyond BatchNormalization, on models built here and run by the CPU
// reference against values computed in the test: InstanceNormalization, GroupNormalization, GroupNorm as
// PyTorch's TorchScript exporter writes it (Reshape to (N, g, -1), InstanceNormalization, Reshape back, Mul,
// Add), PoolFormer's block around it (a Sub of two activations), PRelu, ConvNeXt V2's GRN and the filter response
// normalization with its thresholded linear unit (FRN, TLU: Sqrt, Reciprocal and Max of activations), and
// EvoNorm-S0's division by the group standard deviation.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

constexpr int kC = 4, kH = 2, kW = 3;

std::vector<float> sample_input() {
  std::vector<float> x(size_t(kC * kH * kW));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 5) % 9) - 4.f + 0.25f * float(i % 3);
  return x;
}

// GroupNorm of one (C, H, W) sample in double: `groups` groups of consecutive channels, per-channel scale and
// shift.
std::vector<float> group_norm(const std::vector<float>& x, int groups, const std::vector<float>& scale,
                              const std::vector<float>& shift, double eps) {
  const int per = kC / groups, plane = kH * kW;
  std::vector<float> y(x.size());
  for (int g = 0; g < groups; ++g) {
    const size_t first = size_t(g * per * plane), count = size_t(per * plane);
    double mean = 0, var = 0;
    for (size_t i = 0; i < count; ++i) mean += x[first + i] / double(count);
    for (size_t i = 0; i < count; ++i) var += std::pow(x[first + i] - mean, 2) / double(count);
    for (size_t i = 0; i < count; ++i) {
      const size_t c = (first + i) / size_t(plane);
      y[first + i] = float((x[first + i] - mean) / std::sqrt(var + eps) * scale[c] + shift[c]);
    }
  }
  return y;
}

TEST(OnnxNorm, InstanceNormalizationIsAGroupNormOfOneChannelAGroup) {
  const std::vector<float> scale = {1.f, 2.f, -0.5f, 3.f}, shift = {0.f, 1.f, 2.f, -1.f};
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y").init("s", {kC}, scale).init("b", {kC}, shift);
  set_float(m.node("InstanceNormalization", {"x", "s", "b"}, {"y"}), "epsilon", 1e-3f);
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kGroupNorm), 1);
  const std::vector<float> x = sample_input();
  expect_near(run(model, x), group_norm(x, kC, scale, shift, 1e-3));
}

// torch.nn.GroupNorm(2, 4) as torch.onnx.export(dynamo=False) writes it; the affine folds into the op.
TEST(OnnxNorm, PyTorchsGroupNormExportIsOneOpWithItsWeightAndBiasFolded) {
  const std::vector<float> weight = {0.5f, 1.5f, -1.f, 2.f}, bias = {0.1f, -0.2f, 0.3f, 0.f};
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y");
  m.init_ints("view", {0, 2, -1}).init_ints("back", {1, kC, kH, kW});
  m.init("ones", {2}, {1.f, 1.f}).init("zeros", {2}, {0.f, 0.f});
  m.init("w", {kC, 1, 1}, weight).init("b", {kC, 1, 1}, bias);
  m.node("Reshape", {"x", "view"}, {"r"});
  set_float(m.node("InstanceNormalization", {"r", "ones", "zeros"}, {"n"}), "epsilon", 1e-5f);
  m.node("Reshape", {"n", "back"}, {"r2"});
  m.node("Mul", {"r2", "w"}, {"m"});
  m.node("Add", {"m", "b"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kGroupNorm), 1);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kConv), 0) << "the Mul and Add fold into the normalization";
  const std::vector<float> x = sample_input();
  expect_near(run(model, x), group_norm(x, 2, weight, bias, 1e-5));
}

TEST(OnnxNorm, GroupNormalizationScalesPerGroupBeforeOpset21AndPerChannelFrom21) {
  const std::vector<float> x = sample_input();
  Model per_group(18);
  per_group.input("x", {1, kC, kH, kW}).output("y").init("s", {2}, {2.f, -1.f}).init("b", {2}, {0.5f, 1.f});
  set_int(per_group.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
  expect_near(run(imported(per_group), x), group_norm(x, 2, {2.f, 2.f, -1.f, -1.f}, {0.5f, 0.5f, 1.f, 1.f}, 1e-5));
  const std::vector<float> scale = {1.f, 2.f, 3.f, 4.f}, shift = {0.f, -1.f, 1.f, 0.5f};
  Model per_channel(21);
  per_channel.input("x", {1, kC, kH, kW}).output("y").init("s", {kC}, scale).init("b", {kC}, shift);
  set_int(per_channel.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 1);
  expect_near(run(imported(per_channel), x), group_norm(x, 1, scale, shift, 1e-5));
}

// PoolFormer's token mixer: x + ls * (AvgPool(GroupNorm1(x)) - GroupNorm1(x)).
TEST(OnnxNorm, APoolFormerMixerSubtractsTwoActivations) {
  const std::vector<float> ls = {0.5f, -1.f, 2.f, 1.f}, ones(kC, 1.f), zeros(kC, 0.f);
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y");
  m.init_ints("view", {0, 1, -1}).init_ints("back", {1, kC, kH, kW}).init("one", {1}, {1.f}).init("zero", {1}, {0.f});
  m.init("ls", {kC, 1, 1}, ls);
  m.node("Reshape", {"x", "view"}, {"r"});
  m.node("InstanceNormalization", {"r", "one", "zero"}, {"n"});
  m.node("Reshape", {"n", "back"}, {"norm"});
  auto& pool = m.node("AveragePool", {"norm"}, {"pool"});
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "pads", {1, 1, 1, 1});
  set_int(pool, "count_include_pad", 0);
  m.node("Sub", {"pool", "norm"}, {"d"});
  m.node("Mul", {"d", "ls"}, {"s"});
  m.node("Add", {"x", "s"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kGroupNorm), 1);
  const std::vector<float> x = sample_input();
  const std::vector<float> nrm = group_norm(x, 1, ones, zeros, 1e-5);
  std::vector<float> want(x.size());
  for (int c = 0; c < kC; ++c)
    for (int i = 0; i < kH; ++i)
      for (int j = 0; j < kW; ++j) {
        double sum = 0;
        int count = 0;
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) {
            const int y = i + di, xx = j + dj;
            if (y < 0 || y >= kH || xx < 0 || xx >= kW) continue;
            sum += nrm[size_t((c * kH + y) * kW + xx)];
            ++count;
          }
        const size_t k = size_t((c * kH + i) * kW + j);
        want[k] = float(x[k] + ls[size_t(c)] * (sum / count - nrm[k]));
      }
  expect_near(run(model, x), want);
  Model shapes;
  shapes.input("x", {1, kC, kH, kW}).output("y");
  auto& p2 = shapes.node("MaxPool", {"x"}, {"p"});
  set_ints(p2, "kernel_shape", {2, 2});
  shapes.node("Sub", {"p", "x"}, {"y"}, "sub");
  EXPECT_NE(import_error(shapes).find("between activations only 4-D tensors of one shape are supported"),
            std::string::npos);
}

TEST(OnnxPRelu, ASlopePerChannelOrOneForAll) {
  const std::vector<float> x = sample_input();
  auto expect_prelu = [&](std::vector<int64_t> dims, std::vector<float> slope) {
    Model m;
    m.input("x", {1, kC, kH, kW}).output("y").init("a", dims, slope);
    m.node("PRelu", {"x", "a"}, {"y"});
    const ImportedModel model = imported(m);
    EXPECT_EQ(count_kind(model.graph, ir::OpKind::kPRelu), 1);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float a = slope.size() == 1 ? slope[0] : slope[i / size_t(kH * kW)];
      want[i] = x[i] >= 0 ? x[i] : a * x[i];
    }
    expect_near(run(model, x), want);
  };
  expect_prelu({kC, 1, 1}, {0.1f, 0.2f, -0.5f, 2.f});  // torch.nn.PReLU(4) as exported
  expect_prelu({1}, {0.25f});                          // torch.nn.PReLU()
  Model along_w;                                       // a [C] slope broadcasts along W in ONNX, not along the channels
  along_w.input("x", {1, kC, kH, kW}).output("y").init("a", {kC}, {1, 2, 3, 4});
  along_w.node("PRelu", {"x", "a"}, {"y"}, "prelu");
  EXPECT_NE(import_error(along_w).find("a constant of shape [4] is not per channel"), std::string::npos);
}

TEST(OnnxNorm, GroupsThatDoNotDivideTheChannelsAndOtherReadersOfTheViewAreNamed) {
  Model bad_view;
  bad_view.input("x", {1, kC, kH, kW}).output("y").init_ints("view", {0, 3, -1});
  bad_view.node("Reshape", {"x", "view"}, {"y"}, "view");
  EXPECT_NE(import_error(bad_view).find("g dividing the 4 channels"), std::string::npos);
  Model reader;
  reader.input("x", {1, kC, kH, kW}).output("y").init_ints("view", {0, 2, -1});
  reader.node("Reshape", {"x", "view"}, {"r"});
  reader.node("Relu", {"r"}, {"y"}, "act");
  EXPECT_NE(import_error(reader).find("only a group normalization (Reshape, InstanceNormalization, Reshape back)"),
            std::string::npos);
  Model groups(18);
  groups.input("x", {1, kC, kH, kW}).output("y").init("s", {3}, {1, 1, 1}).init("b", {3}, {0, 0, 0});
  set_int(groups.node("GroupNormalization", {"x", "s", "b"}, {"y"}, "gn"), "num_groups", 3);
  EXPECT_NE(import_error(groups).find("attribute 'num_groups' = 3 must divide the input's 4 channels"),
            std::string::npos);
  Model wrong_size;
  wrong_size.input("x", {1, kC, kH, kW}).output("y").init("s", {2}, {1, 1}).init("b", {kC}, {0, 0, 0, 0});
  wrong_size.node("InstanceNormalization", {"x", "s", "b"}, {"y"}, "in");
  EXPECT_NE(import_error(wrong_size).find("must hold 4 values, one per channel"), std::string::npos);
}

// ConvNeXt V2's GRN as timm writes it (x + bias + weight * x * Nx) through the TorchScript exporter, NCHW (axes
// as attributes) and channels-last at opset 18 (axes as inputs): one response_norm op, its weight and bias folded.
std::vector<float> response_norm(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& b) {
  const int plane = kH * kW;
  std::vector<double> norm(kC);
  double mean = 0;
  for (int c = 0; c < kC; ++c) {
    for (int p = 0; p < plane; ++p) norm[size_t(c)] += double(x[size_t(c * plane + p)]) * x[size_t(c * plane + p)];
    norm[size_t(c)] = std::sqrt(norm[size_t(c)]);
    mean += norm[size_t(c)] / kC;
  }
  std::vector<float> y(x.size());
  for (int c = 0; c < kC; ++c)
    for (int p = 0; p < plane; ++p) {
      const double v = x[size_t(c * plane + p)];
      y[size_t(c * plane + p)] = float(v + b[size_t(c)] + w[size_t(c)] * v * norm[size_t(c)] / (mean + 1e-6));
    }
  return y;
}

void add_response_norm(Model& m, const std::string& x, const std::string& y, bool channels_last) {
  if (channels_last) {  // opset 18: axes are inputs
    m.init_ints("spatial", {1, 2}).init_ints("last", {-1});
    set_int(m.node("ReduceL2", {x, "spatial"}, {"l2"}), "keepdims", 1);
    set_int(m.node("ReduceMean", {"l2", "last"}, {"mean"}), "keepdims", 1);
  } else {
    auto& l2 = m.node("ReduceL2", {x}, {"l2"});
    set_ints(l2, "axes", {2, 3});
    set_int(l2, "keepdims", 1);
    set_ints(m.node("ReduceMean", {"l2"}, {"mean"}), "axes", {1});
  }
  m.node("Add", {"mean", "eps"}, {"d"});
  m.node("Div", {"l2", "d"}, {"nx"});
  m.node("Mul", {x, "nx"}, {"xn"});
  m.node("Mul", {"gamma", "xn"}, {"t"});
  m.node("Add", {"beta", "t"}, {"u"});
  m.node("Add", {x, "u"}, {y});
}

TEST(OnnxNorm, ConvNeXtV2sGlobalResponseNormIsOneOpWithItsScaleAndShiftFolded) {
  const std::vector<float> w = {0.5f, -1.f, 2.f, 0.25f}, b = {0.1f, 0.f, -0.3f, 1.f};
  const std::vector<float> x = sample_input();
  {
    Model m;
    m.input("x", {1, kC, kH, kW}).output("y").init("eps", {}, {1e-6f});
    m.init("gamma", {1, kC, 1, 1}, w).init("beta", {1, kC, 1, 1}, b);
    add_response_norm(m, "x", "y", false);
    const ImportedModel model = imported(m);
    EXPECT_EQ(count_kind(model.graph, ir::OpKind::kResponseNorm), 1);
    EXPECT_EQ(count_kind(model.graph, ir::OpKind::kConv), 0) << "the scale and shift fold into the op";
    expect_near(run(model, x), response_norm(x, w, b));
  }
  {
    Model m(18);
    m.input("x", {1, kC, kH, kW}).output("y").init("eps", {}, {1e-6f}).init("gamma", {kC}, w).init("beta", {kC}, b);
    set_ints(m.node("Transpose", {"x"}, {"xl"}), "perm", {0, 2, 3, 1});
    add_response_norm(m, "xl", "yl", true);
    set_ints(m.node("Transpose", {"yl"}, {"y"}), "perm", {0, 3, 1, 2});
    const ImportedModel model = imported(m);
    EXPECT_EQ(count_kind(model.graph, ir::OpKind::kResponseNorm), 1);
    expect_near(run(model, x), response_norm(x, w, b));
  }
  {  // a norm over the channels instead
    Model m;
    m.input("x", {1, kC, kH, kW}).output("y").init("eps", {}, {1e-6f});
    m.init("gamma", {1, kC, 1, 1}, w).init("beta", {1, kC, 1, 1}, b);
    add_response_norm(m, "x", "y", false);
    m.graph()->mutable_node(0)->mutable_attribute(0)->clear_ints();  // ReduceL2's axes
    m.graph()->mutable_node(0)->mutable_attribute(0)->add_ints(1);
    EXPECT_NE(import_error(m).find("with the norm over H and W and its mean over the channels"), std::string::npos);
  }
}

// timm's FilterResponseNormTlu2d: x * 1 / sqrt(mean_hw(x^2) + eps), times gamma plus beta, then Max with tau;
// as TorchScript writes it (the factor Expanded to x's shape) and with Pow and a broadcast factor.
TEST(OnnxNorm, FilterResponseNormWithItsThresholdedLinearUnit) {
  const std::vector<float> gamma = {0.5f, -1.f, 2.f, 1.f}, beta = {0.1f, 0.f, -0.3f, 1.f};
  const std::vector<float> tau = {0.f, -0.5f, 0.25f, 2.f};
  constexpr float kEps = 1e-6f;
  const std::vector<float> x = sample_input();
  std::vector<float> want(x.size());
  for (int c = 0; c < kC; ++c) {
    double mean_square = 0;
    for (int q = 0; q < kH * kW; ++q) mean_square += std::pow(x[size_t(c * kH * kW + q)], 2) / (kH * kW);
    const double inverse = 1 / std::sqrt(mean_square + kEps);
    for (int q = 0; q < kH * kW; ++q) {
      const size_t i = size_t(c * kH * kW + q);
      want[i] = float(std::max(x[i] * inverse * gamma[size_t(c)] + beta[size_t(c)], double(tau[size_t(c)])));
    }
  }
  for (bool expanded : {true, false}) {
    SCOPED_TRACE(expanded ? "TorchScript: x * x, 1 / sqrt, expanded" : "dynamo: Pow(x, 2), Pow(-0.5), broadcast");
    Model m(18);
    m.input("x", {1, kC, kH, kW}).output("y").init("eps", {}, {kEps}).init("one", {}, {1.f});
    m.init("gamma", {1, kC, 1, 1}, gamma).init("beta", {1, kC, 1, 1}, beta).init("tau", {1, kC, 1, 1}, tau);
    m.init_ints("shape", {1, kC, kH, kW});
    m.init("two", {}, {2.f}).init("minus_half", {}, {-0.5f}).init_ints("axes", {2, 3});
    if (expanded) {
      m.node("Mul", {"x", "x"}, {"sq"});
    } else {
      m.node("Pow", {"x", "two"}, {"sq"});
    }
    set_int(m.node("ReduceMean", {"sq", "axes"}, {"ms"}), "keepdims", 1);
    m.node("Add", {"ms", "eps"}, {"mse"});
    if (expanded) {
      m.node("Sqrt", {"mse"}, {"rms"});
      m.node("Div", {"one", "rms"}, {"inv"});
      m.node("Expand", {"inv", "shape"}, {"inv_full"});
    } else {
      m.node("Pow", {"mse", "minus_half"}, {"inv"});
    }
    m.node("Mul", {"x", expanded ? "inv_full" : "inv"}, {"xn"});
    m.node("Mul", {"xn", "gamma"}, {"xs"});
    m.node("Add", {"xs", "beta"}, {"xb"});
    m.node("Max", {"xb", "tau"}, {"y"});
    const ImportedModel model = imported(m);
    expect_near(run(model, x), want);
  }
}

// Max(x, 0) is a relu whichever side the constant is on; c / x is a reciprocal scaled by c.
TEST(OnnxNorm, MaxWithZeroIsAReluAndAConstantOverAnActivationIsAScaledReciprocal) {
  const std::vector<float> x = sample_input();
  Model m;
  m.input("x", {1, kC, kH, kW}).output("y").init("zero", {}, {0.f});
  m.node("Max", {"zero", "x"}, {"y"});
  const ImportedModel relu = imported(m);
  EXPECT_EQ(relu.graph.op_count(), 1);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = std::max(x[i], 0.f);
  expect_near(run(relu, x), want);

  Model d;
  d.input("x", {1, kC, kH, kW}).output("y").init("two", {}, {2.f}).init("shift", {}, {4.5f});
  d.node("Add", {"x", "shift"}, {"pos"});  // 0.25 at least
  d.node("Div", {"two", "pos"}, {"y"});
  const ImportedModel scaled = imported(d);
  for (size_t i = 0; i < x.size(); ++i) want[i] = 2.f / (x[i] + 4.5f);
  expect_near(run(scaled, x), want);

  Model both;  // Max of two activations is not an op the IR has
  both.input("x", {1, kC, kH, kW}).output("y");
  both.node("Relu", {"x"}, {"r"});
  both.node("Max", {"x", "r"}, {"y"});
  EXPECT_NE(import_error(both).find("Max of two computed tensors"), std::string::npos) << import_error(both);
}

// timm's EvoNorm2dS0a: x * sigmoid(v * x) / std_g(x) * w + b, std_g over each group of 2 channels and the
// pixels, as TorchScript writes it (casts, keepdims, an Expand) and as dynamo does (axes as an input, the
// variance without dimensions reshaped back); also x / std_g(x) alone.
TEST(OnnxNorm, EvoNormDividesByTheGroupStandardDeviation) {
  const std::vector<float> v = {0.5f, -1.f, 2.f, 1.f}, w = {1.f, 2.f, -0.5f, 0.25f}, b = {0.f, 0.1f, -0.2f, 1.f};
  constexpr int kGroups = 2, kPer = kC / kGroups, kPlane = kH * kW;
  constexpr float kEps = 1e-5f;
  const std::vector<float> x = sample_input();
  std::vector<double> inverse_std(kC);
  for (int g = 0; g < kGroups; ++g) {
    double mean = 0, var = 0;
    for (int i = 0; i < kPer * kPlane; ++i) mean += x[size_t(g * kPer * kPlane + i)] / (kPer * kPlane);
    for (int i = 0; i < kPer * kPlane; ++i)
      var += std::pow(x[size_t(g * kPer * kPlane + i)] - mean, 2) / (kPer * kPlane);
    for (int c = 0; c < kPer; ++c) inverse_std[size_t(g * kPer + c)] = 1 / std::sqrt(var + kEps);
  }
  for (bool gated : {true, false})
    for (bool dynamo : {false, true}) {
      SCOPED_TRACE(std::string(dynamo ? "dynamo" : "TorchScript") + (gated ? ", gated" : ", x / std"));
      Model m(dynamo ? 18 : 17);
      m.input("x", {1, kC, kH, kW}).output("y").init("eps", {}, {kEps}).init("v", {1, kC, 1, 1}, v);
      m.init("w", {1, kC, 1, 1}, w).init("b", {1, kC, 1, 1}, b);
      m.init_ints("shape5", {1, kGroups, kPer, kH, kW}).init_ints("shape4", {1, kC, kH, kW});
      m.init_ints("axes", {2, 3, 4}).init_ints("var5", {1, kGroups, 1, 1, 1});
      auto mean = [&](const std::string& in, const std::string& out, int64_t keepdims) {
        auto& r = dynamo ? m.node("ReduceMean", {in, "axes"}, {out}) : m.node("ReduceMean", {in}, {out});
        if (!dynamo) set_ints(r, "axes", {2, 3, 4});
        set_int(r, "keepdims", keepdims);
      };
      m.node("Reshape", {"x", "shape5"}, {"r5"});
      if (!dynamo) set_int(m.node("Cast", {"r5"}, {"c"}), "to", onnx::TensorProto::FLOAT);
      const std::string c = dynamo ? "r5" : "c";
      mean(c, "m", 1);
      m.node("Sub", {c, "m"}, {"s"});
      m.node("Mul", {"s", "s"}, {"q"});
      mean("q", dynamo ? "var0" : "var", dynamo ? 0 : 1);
      if (dynamo) m.node("Reshape", {"var0", "var5"}, {"var"});
      m.node("Add", {"var", "eps"}, {"a"});
      m.node("Sqrt", {"a"}, {dynamo ? "sdc" : "sd"});
      if (!dynamo) set_int(m.node("Cast", {"sd"}, {"sdc"}), "to", onnx::TensorProto::FLOAT);
      m.node("Expand", {"sdc", "shape5"}, {"e"});
      m.node("Reshape", {"e", "shape4"}, {"d"});
      if (gated) {
        m.node("Mul", {"x", "v"}, {"xv"});
        m.node("Sigmoid", {"xv"}, {"g"});
        m.node("Mul", {"g", "x"}, {"num"});
        m.node("Div", {"num", "d"}, {"y0"});
        m.node("Mul", {"y0", "w"}, {"y1"});
        m.node("Add", {"y1", "b"}, {"y"});
      } else {
        m.node("Div", {"x", "d"}, {"y"});
      }
      const ImportedModel model = imported(m);
      EXPECT_EQ(count_kind(model.graph, ir::OpKind::kGroupNorm), 1);
      std::vector<float> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t ch = i / kPlane;
        const double y = x[i] * inverse_std[ch];
        want[i] = gated ? float(y / (1 + std::exp(-v[ch] * x[i])) * w[ch] + b[ch]) : float(y);
      }
      expect_near(run(model, x), want);
      if (dynamo) continue;
      // A cast to another type inside the chain is not dropped: the pattern stays unread and the cast is named.
      for (auto& node : *m.graph()->mutable_node())
        if (node.op_type() == "Cast") node.mutable_attribute(0)->set_i(onnx::TensorProto::INT64);
      EXPECT_NE(import_error(m).find("casts an activation to type 7"), std::string::npos) << import_error(m);
    }
}

}  // namespace
}  // namespace ios::onnx_import
