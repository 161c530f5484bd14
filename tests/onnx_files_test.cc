// ONNX files as a user meets them: unsupported nodes and opsets listed, malformed files, names and external
// data, .npy tensors, the CLI importing and running a model; and the blocks derived for imported graphs.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "common/file_io.h"
#include "common/tensor_file.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/auto_blocks.h"
#include "ir/builder.h"
#include "ir/json_io.h"
#include "reference/reference_executor.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

TEST(OnnxErrors, EveryUnsupportedNodeIsListedWithItsOpTypeAndOpset) {
  Model m(13);
  m.input("x", {1, 1, 2, 2}).output("y");
  m.node("LRN", {"x"}, {"a"}, "norm1");
  m.node("Relu", {"a"}, {"b"});
  m.node("Hardmax", {"b"}, {"y"}, "prob");
  auto r = m.import();
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("node 'norm1' (LRN, opset 13)"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("node 'prob' (Hardmax, opset 13)"), std::string::npos);
}

TEST(OnnxErrors, OpsetsOutsideElevenToTwentyOneAreRejected) {
  for (int opset : {10, 22}) {
    Model m(opset);
    m.input("x", {1, 1, 1, 1}).output("y");
    m.node("Relu", {"x"}, {"y"});
    auto r = m.import();
    ASSERT_FALSE(r) << opset;
    EXPECT_NE(r.status().message().find("opset " + std::to_string(opset)), std::string::npos);
  }
  for (int opset : {11, 21}) {
    Model m(opset);
    m.input("x", {1, 1, 1, 1}).output("y");
    m.node("Relu", {"x"}, {"y"});
    EXPECT_TRUE(m.import()) << opset;
  }
}

TEST(OnnxErrors, MalformedAndTruncatedFilesAreRejectedCleanly) {
  EXPECT_FALSE(import_bytes("not a protobuf at all \xff\xff\xff", "bad", "."));
  Model m;
  m.input("x", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {1.f});
  m.node("Conv", {"x", "w"}, {"y"});
  const std::string bytes = m.bytes();
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    auto r = import_bytes(bytes.substr(0, cut), "cut", ".");
    EXPECT_FALSE(r) << "truncated at " << cut;
  }
  EXPECT_FALSE(import_bytes("", "empty", "."));
}

TEST(OnnxErrors, ComputedWeightsWrongShapesAndDynamicInputsNameTheProblem) {
  {
    Model m;  // weight computed by another node
    m.input("x", {1, 1, 2, 2}).output("y");
    m.node("Relu", {"x"}, {"w"});
    m.node("Conv", {"x", "w"}, {"y"}, "c");
    auto r = m.import();
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("must be a constant"), std::string::npos) << r.status().message();
  }
  {
    Model m;  // weight channels do not match
    m.input("x", {1, 3, 2, 2}).output("y").init("w", {1, 2, 1, 1}, {1.f, 1.f});
    m.node("Conv", {"x", "w"}, {"y"}, "c");
    auto r = m.import();
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("3 channels"), std::string::npos) << r.status().message();
  }
  {
    Model m;  // a symbolic height
    m.input("x", {1, 1, 1, 1}).output("y");
    m.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param(
        "H");
    m.node("Relu", {"x"}, {"y"});
    auto r = m.import();
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("graph input 'x'"), std::string::npos) << r.status().message();
  }
}

TEST_F(OnnxFiles, ExternalDataIsReadFromBesideTheModel) {
  const float values[2] = {99.f, -3.f};  // the weight is at offset 4
  write("weights.bin", std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  write("m.onnx", external_model("weights.bin").bytes());
  auto r = import_file((dir_ / "m.onnx").string());
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->graph.name, "m");
  expect_near(run(*r, {1.f, 2.f}), {-3.f, -6.f});
}

TEST_F(OnnxFiles, ExternalDataOutsideTheModelFolderIsRefused) {
  write("m.onnx", external_model("../secret.bin").bytes());
  auto r = import_file((dir_ / "m.onnx").string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("relative path inside"), std::string::npos) << r.status().message();
}

TEST_F(OnnxFiles, NpyFilesRoundTripAndWrongSizesAreNamed) {
  const std::vector<float> v = iota(6);
  const std::string path = (dir_ / "t.npy").string();
  ASSERT_TRUE(write_tensor_file(path, v, {1, 2, 3, 1}));
  auto back = read_tensor_file(path, {1, 2, 3, 1});
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(*back, v);
  auto wrong = read_tensor_file(path, {1, 7, 1, 1});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.status().message().find("has shape (1, 2, 3, 1); the network needs (1, 7, 1, 1)"), std::string::npos)
      << wrong.status().message();
  std::string f64 = encode_npy(v, {6});
  f64.replace(f64.find("<f4"), 3, "<f8");
  EXPECT_FALSE(decode_npy(f64, nullptr, "f64.npy"));
  ASSERT_TRUE(write_tensor_file((dir_ / "t.raw").string(), v, {6}));
  EXPECT_EQ(*read_tensor_file((dir_ / "t.raw").string(), {1, 6, 1, 1}), v);
}

#ifdef IOS_BINARY
TEST_F(OnnxFiles, CliImportsAModelAndRunsItsGraphAndWeightsFiles) {
  Model m;
  m.input("x", {1, 2, 4, 4}).output("y").init("w", {3, 2, 3, 3}, iota(54, -27.f));
  set_ints(m.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"});
  write("tiny.onnx", m.bytes());
  const std::string d = dir_.string();
  const std::string import = std::string(IOS_BINARY) + " import --onnx " + d + "/tiny.onnx --out " + d +
                             "/g.json --weights-out " + d + "/w.bin > " + d + "/log.txt 2>&1";
  ASSERT_EQ(std::system(import.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "g.json"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "w.bin"));
  const std::string optimize = std::string(IOS_BINARY) + " optimize --onnx " + d +
                               "/tiny.onnx --cost-model analytic --quiet > " + d + "/opt.txt 2>&1";
  EXPECT_EQ(std::system(optimize.c_str()), 0);
  const std::string bad =
      std::string(IOS_BINARY) + " show --graph " + d + "/g.json --weights " + d + "/g.json > /dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0) << "--weights must be checked";
  auto back = ir::load_weights(*ir::load_graph((dir_ / "g.json").string()), (dir_ / "w.bin").string());
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->per_node[1][0].weight, iota(54, -27.f));
}

// A model file and node named with bytes that are not UTF-8: the graph file and the JSON report are still
// written (names escaped), not an abort.
TEST_F(OnnxFiles, CliWritesGraphsAndReportsOfModelsWithNamesThatAreNotUtf8) {
  Model m;
  m.input("x\xff", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {2.f});
  m.node("Conv", {"x\xff", "w"}, {"c"}, "conv\xfe");
  m.node("Sigmoid", {"x\xff"}, {"s"});
  m.node("Add", {"c", "s"}, {"y"});
  write("m\xfe.onnx", m.bytes());
  const std::string d = dir_.string();
  const std::string model = "'" + d + "/m\xfe.onnx'";
  const std::string import =
      std::string(IOS_BINARY) + " import --onnx " + model + " --out " + d + "/g.json > " + d + "/log.txt 2>&1";
  ASSERT_EQ(std::system(import.c_str()), 0) << *read_file(d + "/log.txt");
  auto g = ir::load_graph(d + "/g.json");
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->name, "m\\xFE");
  const std::string optimize = std::string(IOS_BINARY) + " optimize --onnx " + model +
                               " --cost-model analytic --quiet --json " + d + "/r.json > " + d + "/log.txt 2>&1";
  ASSERT_EQ(std::system(optimize.c_str()), 0) << *read_file(d + "/log.txt");
  EXPECT_TRUE(read_json_file(d + "/r.json"));
}

// `ios run --device cpu`: a user without a GPU runs an imported model on the reference executor with
// their own input, and gets the model's output back in a file.
TEST_F(OnnxFiles, CliRunsAModelOnTheCpuReferenceWithAnInputAndOutputFile) {
  Model m;
  m.input("x", {1, 2, 4, 4}).output("y").init("w", {3, 2, 3, 3}, iota(54, -27.f)).init("b", {3}, {1.f, -2.f, 0.5f});
  set_ints(m.node("Conv", {"x", "w", "b"}, {"y"}), "pads", {1, 1, 1, 1});
  write("tiny.onnx", m.bytes());
  const std::vector<float> x = iota(32, -5.f);
  const std::string d = dir_.string();
  std::vector<float> both = x;  // batch 2: the same sample twice
  both.insert(both.end(), x.begin(), x.end());
  ASSERT_TRUE(write_tensor_file(d + "/x2.npy", both, {2, 2, 4, 4}));
  const std::string run = std::string(IOS_BINARY) + " run --device cpu --onnx " + d + "/tiny.onnx --batch 2 --input " +
                          d + "/x2.npy --output " + d + "/y.npy > " + d + "/log.txt 2>&1";
  ASSERT_EQ(std::system(run.c_str()), 0) << *read_file(d + "/log.txt");
  auto y = read_tensor_file(d + "/y.npy", {2, 3, 4, 4});
  ASSERT_TRUE(y) << y.status().to_string();
  const std::vector<float> one = direct_conv(x, 2, 4, 4, iota(54, -27.f), 3, 3, 1, 1, {1.f, -2.f, 0.5f});
  std::vector<float> want = one;
  want.insert(want.end(), one.begin(), one.end());
  expect_near(*y, want, 1e-3f);
  const std::string wrong = std::string(IOS_BINARY) + " run --device cpu --onnx " + d + "/tiny.onnx --input " + d +
                            "/x2.npy > " + d + "/log.txt 2>&1";
  EXPECT_NE(std::system(wrong.c_str()), 0) << "a (2, 2, 4, 4) input for batch 1 must be refused";
  EXPECT_NE(read_file(d + "/log.txt")->find("the network needs (1, 2, 4, 4)"), std::string::npos);
}
#endif

TEST(AutoBlocks, ChainsCutAtEveryNodeAndSkipConnectionsSpanOneBlock) {
  ir::GraphBuilder b("skip", {4, 4, 4});
  b.begin_block();
  ir::Value a = b.conv(b.input(), ir::Conv(4));
  ir::Value c = b.conv(a, ir::Conv(4));
  ir::Value d = b.conv(c, ir::Conv(4));
  ir::Value e = b.identity(ir::add({a, d}));
  b.end_block(b.conv(e, ir::Conv(4)));
  ir::Graph g = *b.build();
  ASSERT_TRUE(ir::assign_blocks(g));
  ASSERT_EQ(g.blocks.size(), 3u);  // [a], [c, d, e], [conv]
  EXPECT_EQ(g.blocks[1].exit, e.node);
  EXPECT_EQ(g.blocks[1].inner.size(), 2u);
}

TEST(AutoBlocks, ANodeReadByNothingButTheOutputIsNamed) {
  ir::GraphBuilder b("dead", {4, 4, 4});
  b.begin_block();
  ir::Value a = b.conv(b.input(), ir::Conv(4));
  b.end_block(b.conv(a, ir::Conv(4)));
  ir::Graph g = *b.build();
  g.nodes[2].inputs = {{ir::Value{0, 0, 4}}};  // a is now read by nobody
  Status s = ir::assign_blocks(g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("read by nothing"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ios::onnx_import
