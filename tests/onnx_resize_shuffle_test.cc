// The ONNX front end's Resize / Upsample and channel shuffle (Reshape, Transpose, Reshape) on models built
// here, run by the CPU reference against values computed by hand.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

const std::vector<float> k2x2 = {1, 2, 3, 4};

std::string import_error(const Model& m) {
  auto r = m.import();
  EXPECT_FALSE(r);
  return r ? "" : r.status().message();
}

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
  transposed.input("x", {1, 6, 1, 1}).output("y");
  set_ints(transposed.node("Transpose", {"x"}, {"y"}, "nhwc"), "perm", {0, 2, 3, 1});
  EXPECT_NE(import_error(transposed).find("only the Transpose(0,2,1,3,4) of a channel shuffle"), std::string::npos);
}

}  // namespace
}  // namespace ios::onnx_import
