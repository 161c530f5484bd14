// The ONNX front end's layout ops on models built here, run by the CPU reference against values computed by
// hand: Resize / Upsample, the channel shuffle (Reshape, Transpose, Reshape) and channels-last blocks
// (Transpose, LayerNormalization, MatMul, Transpose: ConvNeXt), and moves of pixel blocks between space and
// channels (DepthToSpace, SpaceToDepth, and their Reshape, Transpose, Reshape form).
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

const std::vector<float> k2x2 = {1, 2, 3, 4};

TEST(OnnxResize, NearestScalesAsPyTorchExportsThem) {
  Model m;
  m.input("x", {1, 1, 2, 2}).output("y").init("scales", {4}, {1, 1, 2, 2});
  auto& r = m.node("Resize", {"x", "", "scales"}, {"y"});
  set_string(r, "mode", "nearest");
  set_string(r, "coordinate_transformation_mode", "asymmetric");
  set_string(r, "nearest_mode", "floor");
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kResize), 1);
  expect_near(run(model, k2x2), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(OnnxResize, BilinearToSizesHalfPixelAndAlignCorners) {
  Model half;
  half.input("x", {1, 1, 2, 2}).output("y").init_ints("sizes", {1, 1, 4, 4});
  set_string(half.node("Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "linear");  // half_pixel by default
  expect_near(run(imported(half), k2x2),
              {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  Model corners(18);
  corners.input("x", {1, 1, 2, 2}).output("y").init_ints("sizes", {3, 3});
  auto& r = corners.node("Resize", {"x", "", "", "sizes"}, {"y"});
  set_string(r, "mode", "linear");
  set_string(r, "coordinate_transformation_mode", "align_corners");
  set_ints(r, "axes", {2, 3});
  expect_near(run(imported(corners), k2x2), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
}

TEST(OnnxResize, UpsampleIsNearestWithAsymmetricCoordinates) {
  Model m;
  m.input("x", {1, 1, 2, 2}).output("y").init("scales", {4}, {1, 1, 1, 2});
  m.node("Upsample", {"x", "scales"}, {"y"});
  expect_near(run(imported(m), k2x2), {1, 1, 2, 2, 3, 3, 4, 4});
}

TEST(OnnxResize, UnsupportedModesAndScalesAreNamed) {
  auto with = [](const char* attr, const char* value, std::vector<float> scales = {1, 1, 2, 2}) {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y").init("scales", {4}, scales);
    auto& r = m.node("Resize", {"x", "", "scales"}, {"y"}, "up");
    if (attr) set_string(r, attr, value);
    return import_error(m);
  };
  EXPECT_NE(with("mode", "cubic").find("attribute 'mode' = 'cubic' is not supported"), std::string::npos);
  EXPECT_NE(with("coordinate_transformation_mode", "tf_crop_and_resize").find("tf_crop_and_resize"), std::string::npos);
  EXPECT_NE(with(nullptr, nullptr, {1, 2, 2, 2}).find("may resize only H and W"), std::string::npos);
  EXPECT_NE(with(nullptr, nullptr, {1, 1, 0, 2}).find("must be positive"), std::string::npos);
  EXPECT_NE(with(nullptr, nullptr, {1, 1, 1e9f, 2}).find("must be positive and finite"), std::string::npos);
  Model none;
  none.input("x", {1, 1, 2, 2}).output("y");
  none.node("Resize", {"x"}, {"y"}, "up");
  EXPECT_NE(import_error(none).find("neither 'scales' nor 'sizes'"), std::string::npos);
}

// torchvision's channel_shuffle: x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, -1, H, W).
Model shuffle_model(std::vector<int64_t> first, std::vector<int64_t> perm, std::vector<int64_t> back) {
  Model m;
  m.input("x", {1, 6, 1, 1}).output("y").init_ints("s5", first).init_ints("s4", back);
  m.node("Reshape", {"x", "s5"}, {"v"});
  set_ints(m.node("Transpose", {"v"}, {"t"}, "swap"), "perm", perm);
  m.node("Reshape", {"t", "s4"}, {"y"});
  return m;
}

TEST(OnnxShuffle, ReshapeTransposeReshapeIsOneChannelShuffle) {
  const ImportedModel model = imported(shuffle_model({1, 3, 2, 1, 1}, {0, 2, 1, 3, 4}, {1, -1, 1, 1}));
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelShuffle), 1);
  expect_near(run(model, {0, 1, 2, 3, 4, 5}), {0, 2, 4, 1, 3, 5});
  // 0 copies the batch, -1 infers the group size.
  expect_near(run(imported(shuffle_model({0, 2, -1, 1, 1}, {0, 2, 1, 3, 4}, {0, 6, 1, 1})), {0, 1, 2, 3, 4, 5}),
              {0, 3, 1, 4, 2, 5});
}

TEST(OnnxShuffle, OtherReshapesAndTransposesAreNamed) {
  EXPECT_NE(import_error(shuffle_model({1, 3, 2, 1, 1}, {0, 1, 2, 4, 3}, {1, 6, 1, 1})).find("Transpose(0,2,1,3,4)"),
            std::string::npos);
  EXPECT_NE(import_error(shuffle_model({1, 3, 1, 2, 1}, {0, 2, 1, 3, 4}, {1, 6, 1, 1})).find("(N, g, C/g, H, W)"),
            std::string::npos);
  EXPECT_NE(import_error(shuffle_model({1, 3, 2, 1, 1}, {0, 2, 1, 3, 4}, {1, 2, 3, 1})).find("back to (N, C, H, W)"),
            std::string::npos);
  EXPECT_NE(import_error(shuffle_model({1, 4, 2, 1, 1}, {0, 2, 1, 3, 4}, {1, 6, 1, 1})).find("does not fit"),
            std::string::npos);
  Model read5d;
  read5d.input("x", {1, 6, 1, 1}).output("y").init_ints("s5", {1, 3, 2, 1, 1});
  read5d.node("Reshape", {"x", "s5"}, {"v"});
  read5d.node("Relu", {"v"}, {"y"}, "relu5d");
  EXPECT_NE(import_error(read5d).find("5-D view"), std::string::npos);
  Model transposed;
  transposed.input("x", {1, 6, 2, 1}).output("y");  // (a pooled tensor's unit axes may swap: a view)
  set_ints(transposed.node("Transpose", {"x"}, {"y"}, "swap_hw"), "perm", {0, 1, 3, 2});
  EXPECT_NE(import_error(transposed).find("only Transpose(0,2,3,1) and (0,3,1,2)"), std::string::npos);
}

// x viewed 6-D, transposed and reshaped back: PyTorch's pixel_unshuffle / pixel_shuffle and TResNet's stem.
Model block_model(std::vector<int64_t> in, std::vector<int64_t> s6, std::vector<int64_t> perm,
                  std::vector<int64_t> s4) {
  Model m;
  m.input("x", in).output("y").init_ints("s6", s6).init_ints("s4", s4);
  m.node("Reshape", {"x", "s6"}, {"v"});
  set_ints(m.node("Transpose", {"v"}, {"t"}, "blocks"), "perm", perm);
  m.node("Reshape", {"t", "s4"}, {"y"});
  return m;
}

TEST(OnnxBlocks, DepthToSpaceAndSpaceToDepthMovePixelBlocks) {
  // x: channel 0 = [[1 2] [3 4]], channel 1 = [[5 6] [7 8]].
  Model to_depth;
  to_depth.input("x", {1, 2, 2, 2}).output("y");
  set_int(to_depth.node("SpaceToDepth", {"x"}, {"y"}), "blocksize", 2);
  const ImportedModel model = imported(to_depth);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kSpaceDepth), 1);
  expect_near(run(model, iota(8)), {1, 5, 2, 6, 3, 7, 4, 8});  // block-major: pixel of the block, then channel
  for (const char* mode : {"DCR", "CRD"}) {
    Model to_space;
    to_space.input("x", {1, 8, 1, 1}).output("y");
    auto& n = to_space.node("DepthToSpace", {"x"}, {"y"});
    set_int(n, "blocksize", 2);
    set_string(n, "mode", mode);
    const bool dcr = std::string(mode) == "DCR";
    expect_near(run(imported(to_space), dcr ? std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8} : iota(8)), iota(8));
  }
  Model bad_mode;
  bad_mode.input("x", {1, 8, 1, 1}).output("y");
  auto& n = bad_mode.node("DepthToSpace", {"x"}, {"y"}, "d2s");
  set_int(n, "blocksize", 2);
  set_string(n, "mode", "RDC");
  EXPECT_NE(import_error(bad_mode).find("attribute 'mode' must be DCR or CRD"), std::string::npos);
}

TEST(OnnxBlocks, ReshapeTransposeReshapeOfPixelBlocksIsOneOp) {
  // TResNet's space-to-depth (block-major) and pixel_unshuffle (channel-major), from (1, 2, 2, 2).
  const ImportedModel tresnet =
      imported(block_model({1, 2, 2, 2}, {1, 2, 1, 2, 1, 2}, {0, 3, 5, 1, 2, 4}, {1, 8, 1, 1}));
  EXPECT_EQ(count_kind(tresnet.graph, ir::OpKind::kSpaceDepth), 1);
  EXPECT_EQ(tresnet.graph.op_count(), 1);
  expect_near(run(tresnet, iota(8)), {1, 5, 2, 6, 3, 7, 4, 8});
  // The dynamo exporter's Reshapes set allowzero (no 0 in their shapes).
  Model dynamo = block_model({1, 2, 2, 2}, {1, 2, 1, 2, 1, 2}, {0, 3, 5, 1, 2, 4}, {1, 8, 1, 1});
  for (int i : {0, 2}) set_int(*dynamo.graph()->mutable_node(i), "allowzero", 1);
  expect_near(run(imported(dynamo), iota(8)), {1, 5, 2, 6, 3, 7, 4, 8});
  expect_near(run(imported(block_model({1, 2, 2, 2}, {-1, 2, 1, 2, 1, 2}, {0, 1, 3, 5, 2, 4}, {1, 8, 1, 1})), iota(8)),
              iota(8));
  // Out and back: pixel_unshuffle by 3, then pixel_shuffle (channel-major) and DepthToSpace's DCR view.
  const std::vector<float> x = iota(3 * 6 * 9);
  Model round_trip = block_model({1, 3, 6, 9}, {1, 3, 2, 3, 3, 3}, {0, 1, 3, 5, 2, 4}, {1, 27, 2, 3});
  round_trip.init_ints("b6", {1, 3, 3, 3, 2, 3}).init_ints("b4", {1, 3, 6, 9});
  round_trip.graph()->mutable_output(0)->set_name("z");
  round_trip.node("Reshape", {"y", "b6"}, {"w"});
  set_ints(round_trip.node("Transpose", {"w"}, {"u"}), "perm", {0, 1, 4, 2, 5, 3});
  round_trip.node("Reshape", {"u", "b4"}, {"z"});
  const ImportedModel both = imported(round_trip);
  EXPECT_EQ(count_kind(both.graph, ir::OpKind::kSpaceDepth), 2);
  expect_near(run(both, x), x);
  Model dcr = block_model({1, 8, 1, 1}, {1, 2, 2, 2, 1, 1}, {0, 3, 4, 1, 5, 2}, {1, 2, 2, 2});
  expect_near(run(imported(dcr), {1, 5, 2, 6, 3, 7, 4, 8}), iota(8));
}

TEST(OnnxBlocks, OtherSixDimensionalViewsAreNamed) {
  EXPECT_NE(import_error(block_model({1, 2, 2, 2}, {1, 2, 1, 2, 1, 2}, {0, 1, 2, 3, 5, 4}, {1, 8, 1, 1}))
                .find("move of b x b pixel blocks"),
            std::string::npos);
  EXPECT_NE(import_error(block_model({1, 2, 2, 2}, {1, 2, 1, 2, 1, 2}, {0, 3, 5, 1, 2, 4}, {1, 4, 2, 1}))
                .find("last Reshape must give (N, 8, 1, 1)"),
            std::string::npos);
}

TEST(OnnxPad, ConstantReflectAndEdgePadsOfHeightAndWidth) {
  auto padded = [](const char* mode, std::vector<int64_t> pads, bool value) {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y").init_ints("pads", pads).init("v", {}, {7.f});
    auto& p = m.node("Pad", value ? std::vector<std::string>{"x", "pads", "v"} : std::vector<std::string>{"x", "pads"},
                     {"y"}, "pad");
    set_string(p, "mode", mode);
    return m;
  };
  // [[1 2] [3 4]], one column on the left and one row at the bottom.
  expect_near(run(imported(padded("constant", {0, 0, 0, 1, 0, 0, 1, 0}, true)), k2x2), {7, 1, 2, 7, 3, 4, 7, 7, 7});
  expect_near(run(imported(padded("reflect", {0, 0, 0, 1, 0, 0, 1, 0}, false)), k2x2), {2, 1, 2, 4, 3, 4, 2, 1, 2});
  expect_near(run(imported(padded("edge", {0, 0, 0, 1, 0, 0, 1, 0}, false)), k2x2), {1, 1, 2, 3, 3, 4, 3, 3, 4});
  EXPECT_NE(import_error(padded("wrap", {0, 0, 0, 1, 0, 0, 1, 0}, false)).find("'wrap' is not supported"),
            std::string::npos);
  EXPECT_NE(import_error(padded("constant", {0, 1, 0, 0, 0, 0, 0, 0}, false)).find("only H and W"), std::string::npos);
  // A negative pad crops: the top row off, one column of 7 on the right.
  expect_near(run(imported(padded("constant", {0, 0, -1, 0, 0, 0, 0, 1}, true)), k2x2), {3, 4, 7});
  EXPECT_NE(import_error(padded("constant", {0, 0, -1, 0, 0, 0, -1, 0}, false)).find("negative pads crop all"),
            std::string::npos);
  EXPECT_NE(import_error(padded("reflect", {0, 0, 0, 2, 0, 0, 0, 0}, false)).find("reflect padding of 2 columns"),
            std::string::npos);
}

// timm's "same" padding (tf_* models): the pads computed from the input's shape with float arithmetic
// (Cast, Div, Ceil, Sub, Mul, Add, Max), then Pad: all evaluated at import, one Pad node remains.
TEST(OnnxPad, SamePaddingComputedFromTheShapeIsEvaluatedAtImport) {
  Model m;  // width 5, kernel 3, stride 2: pad = max((ceil(5 / 2) - 1) * 2 + 3 - 5, 0) = 2 -> 1 left, 1 right
  m.input("x", {1, 1, 1, 5}).output("y").init_ints("i3", {3}).init("two", {}, {2.f}).init("one", {}, {1.f});
  m.init("k", {}, {3.f}).init("zero", {}, {0.f}).init_ints("z", {0});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "i3"}, {"w"});
  set_int(m.node("Cast", {"w"}, {"wf"}), "to", onnx::TensorProto::FLOAT);
  m.node("Div", {"wf", "two"}, {"q"});
  m.node("Ceil", {"q"}, {"c"});
  m.node("Sub", {"c", "one"}, {"c1"});
  m.node("Mul", {"c1", "two"}, {"c2"});
  m.node("Add", {"c2", "k"}, {"c3"});
  m.node("Sub", {"c3", "wf"}, {"total"});
  m.node("Max", {"total", "zero"}, {"pad"});
  m.node("Div", {"pad", "two"}, {"half"});
  m.node("Floor", {"half"}, {"left"});
  m.node("Sub", {"pad", "left"}, {"right"});
  set_int(m.node("Cast", {"left"}, {"li"}), "to", onnx::TensorProto::INT64);
  set_int(m.node("Cast", {"right"}, {"ri"}), "to", onnx::TensorProto::INT64);
  // pads = [0, 0, 0, left, 0, 0, 0, right]
  set_int(m.node("Concat", {"z", "z", "z", "li", "z", "z", "z", "ri"}, {"pads"}), "axis", 0);
  m.node("Pad", {"x", "pads"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  expect_near(run(model, {1, 2, 3, 4, 5}), {0, 1, 2, 3, 4, 5, 0});
}

// NF-Nets' weight standardization: the convolution's weight computed from parameters at run time
// ((w - mean) / sqrt(var + eps) * gain, with ReduceMean, Sub, Pow, Add, Sqrt, Div, Mul): evaluated at import.
TEST(OnnxFold, WeightsComputedFromInitializersAreEvaluatedAtImport) {
  Model m;
  m.input("x", {1, 2, 1, 1}).output("y").init("w", {2, 2, 1, 1}, {1.f, 3.f, -2.f, 2.f});
  m.init("gain", {2, 1, 1, 1}, {1.f, 0.5f}).init("eps", {}, {0.f}).init("p2", {}, {2.f});
  auto& mean = m.node("ReduceMean", {"w"}, {"mean"});
  set_ints(mean, "axes", {1, 2, 3});
  m.node("Sub", {"w", "mean"}, {"d"});
  m.node("Pow", {"d", "p2"}, {"d2"});
  set_ints(m.node("ReduceMean", {"d2"}, {"var"}), "axes", {1, 2, 3});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"z"});
  m.node("Mul", {"z", "gain"}, {"ws"});
  m.node("Conv", {"x", "ws"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  // rows standardize to (-1, 1) and (-1, 1) * 0.5: y = (x1 - x0, 0.5 * (x1 - x0))
  expect_near(run(model, {2.f, 5.f}), {3.f, 1.5f});
}

// The same standardization written as batch_norm in training mode over the weight viewed as (1, out, k),
// and a slice of an N-D initializer: both evaluated at import.
TEST(OnnxFold, TrainingModeBatchNormAndSlicesOfInitializersAreEvaluatedAtImport) {
  Model m;
  m.input("x", {1, 2, 1, 1}).output("y").init("w", {3, 2, 1, 1}, {1.f, 3.f, -2.f, 2.f, 7.f, 7.f});
  m.init_ints("s0", {0}).init_ints("s2", {2}).init_ints("ax", {0}).init_ints("flat", {1, 2, 2});
  m.init_ints("back", {2, 2, 1, 1}).init("one", {2}, {1.f, 1.f}).init("zero", {2}, {0.f, 0.f});
  m.node("Slice", {"w", "s0", "s2", "ax"}, {"w2"});  // the first two output channels
  m.node("Reshape", {"w2", "flat"}, {"wf"});
  set_int(m.node("BatchNormalization", {"wf", "one", "zero", "zero", "one"}, {"wn"}), "training_mode", 1);
  m.node("Reshape", {"wn", "back"}, {"ws"});
  m.node("Conv", {"x", "ws"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(model.graph.op_count(), 1);
  expect_near(run(model, {2.f, 5.f}), {3.f, 3.f}, 1e-4f);  // both rows become (-1, 1)
}

// expand_as as the TorchScript exporter writes it (FRN, EvoNorm): Expand's target is
// Where(Equal(shape, -1), 1, shape), constants only, evaluated at import.
TEST(OnnxFold, EqualAndWhereOfConstantsAreEvaluatedAtImport) {
  Model m;
  m.input("x", {1, 2, 2, 2}).output("y");
  m.init_ints("target", {-1, -1, 2, 2}).init_ints("ones", {1, 1, 1, 1}).init_ints("minus", {-1, -1, -1, -1});
  m.node("Equal", {"target", "minus"}, {"unset"});
  m.node("Where", {"unset", "ones", "target"}, {"shape"});
  auto& mean = m.node("ReduceMean", {"x"}, {"p"});
  set_ints(mean, "axes", {2, 3});
  m.node("Expand", {"p", "shape"}, {"e"});
  m.node("Mul", {"x", "e"}, {"y"});
  const ImportedModel model = imported(m);
  // channel 0 is 1..4 (mean 2.5), channel 1 is 5..8 (mean 6.5)
  expect_near(run(model, iota(8)), {2.5f, 5.f, 7.5f, 10.f, 32.5f, 39.f, 45.5f, 52.f});
  Model computed;  // Where of an activation is not shape arithmetic
  computed.input("x", {1, 1, 1, 2}).output("y").init_ints("c", {1}).init("a", {1}, {0.f});
  computed.node("Where", {"c", "x", "a"}, {"y"});
  EXPECT_NE(import_error(computed).find("Where is supported only on constants"), std::string::npos);
}

TEST(OnnxFold, TransposedInitializersAreEvaluatedAtImport) {
  Model m;  // the weight stored as (in, out): [[1, 2], [3, 4]] -> (out, in) [[1, 3], [2, 4]]
  m.input("x", {1, 2, 1, 1}).output("y").init("wt", {2, 2, 1, 1}, {1.f, 2.f, 3.f, 4.f});
  set_ints(m.node("Transpose", {"wt"}, {"w"}), "perm", {1, 0, 2, 3});
  m.node("Conv", {"x", "w"}, {"y"});
  expect_near(run(imported(m), {1.f, 10.f}), {31.f, 42.f});
}

// ConvNeXt's block after its depthwise convolution: x.permute(0,2,3,1), LayerNorm, Linear, activation,
// Linear, permute back, layer scale, residual.
TEST(OnnxChannelsLast, AConvNeXtBlockIsAChannelNormAndTwoPointwiseConvolutions) {
  const int C = 4, K = 8, P = 6;  // channels, hidden width, pixels (2 x 3)
  std::vector<float> scale = {1.f, 2.f, 0.5f, -1.f}, shift = {0.1f, 0.f, -0.2f, 0.3f}, w1(C * K), b1(K), w2(K * C),
                     b2(C), ls = {0.5f, 1.f, 2.f, -1.f};
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = float((i * 7) % 11) / 11.f - 0.5f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = float((i * 5) % 13) / 13.f - 0.5f;
  for (int k = 0; k < K; ++k) b1[size_t(k)] = 0.05f * float(k) - 0.2f;
  for (int c = 0; c < C; ++c) b2[size_t(c)] = 0.1f * float(c);
  Model m;
  m.input("x", {1, C, 2, 3}).output("y");
  m.init("scale", {C}, scale).init("shift", {C}, shift).init("w1", {C, K}, w1).init("b1", {K}, b1);
  m.init("w2", {K, C}, w2).init("b2", {C}, b2).init("ls", {C, 1, 1}, ls);
  set_ints(m.node("Transpose", {"x"}, {"t1"}), "perm", {0, 2, 3, 1});
  set_float(m.node("LayerNormalization", {"t1", "scale", "shift"}, {"ln"}), "epsilon", 1e-6f);
  m.node("MatMul", {"ln", "w1"}, {"m1"});
  m.node("Add", {"m1", "b1"}, {"a1"});
  m.node("Relu", {"a1"}, {"r"});
  m.node("MatMul", {"r", "w2"}, {"m2"});
  m.node("Add", {"b2", "m2"}, {"a2"});
  set_ints(m.node("Transpose", {"a2"}, {"t2"}), "perm", {0, 3, 1, 2});
  m.node("Mul", {"t2", "ls"}, {"s"});
  m.node("Add", {"s", "x"}, {"y"});
  const ImportedModel model = imported(m);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kChannelNorm), 1);
  EXPECT_EQ(count_kind(model.graph, ir::OpKind::kConv), 2);
  std::vector<float> x(size_t(C * P));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 3) % 7) - 3.f;
  std::vector<float> want(x.size());
  for (int p = 0; p < P; ++p) {
    double mean = 0, var = 0;
    for (int c = 0; c < C; ++c) mean += x[size_t(c * P + p)] / double(C);
    for (int c = 0; c < C; ++c) var += std::pow(x[size_t(c * P + p)] - mean, 2) / double(C);
    std::vector<double> nrm(C), h(K);
    for (int c = 0; c < C; ++c)
      nrm[size_t(c)] = (x[size_t(c * P + p)] - mean) / std::sqrt(var + 1e-6) * scale[size_t(c)] + shift[size_t(c)];
    for (int k = 0; k < K; ++k) {
      double acc = b1[size_t(k)];
      for (int c = 0; c < C; ++c) acc += nrm[size_t(c)] * w1[size_t(c * K + k)];
      h[size_t(k)] = std::max(acc, 0.0);
    }
    for (int c = 0; c < C; ++c) {
      double acc = b2[size_t(c)];
      for (int k = 0; k < K; ++k) acc += h[size_t(k)] * w2[size_t(k * C + c)];
      want[size_t(c * P + p)] = float(ls[size_t(c)] * acc + x[size_t(c * P + p)]);
    }
  }
  expect_near(run(model, x), want, 1e-4f);
}

TEST(OnnxChannelsLast, OpsThatNeedNchwAndOtherNormalizationsAreNamed) {
  Model conv;
  conv.input("x", {1, 2, 2, 2}).output("y").init("w", {1, 2, 1, 1}, {1.f, 1.f});
  set_ints(conv.node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 3, 1});
  conv.node("Conv", {"t", "w"}, {"y"}, "conv_nhwc");
  EXPECT_NE(import_error(conv).find("channels-last"), std::string::npos);
  Model out;
  out.input("x", {1, 2, 2, 2}).output("y");
  set_ints(out.node("Transpose", {"x"}, {"y"}), "perm", {0, 2, 3, 1});
  EXPECT_NE(import_error(out).find("only NCHW outputs"), std::string::npos);
  Model nchw;
  nchw.input("x", {1, 2, 2, 2}).output("y").init("scale", {2, 2, 2}, std::vector<float>(8, 1.f));
  set_int(nchw.node("LayerNormalization", {"x", "scale"}, {"y"}, "ln_chw"), "axis", 1);
  EXPECT_NE(import_error(nchw).find("over the channels of a channels-last tensor"), std::string::npos);
}

}  // namespace
}  // namespace ios::onnx_import
