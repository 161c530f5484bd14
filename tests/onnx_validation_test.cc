// The ONNX reader as an untrusted-input reader: models that break ONNX's rules or the importer's limits
// are refused with an error naming the node, op type and field; external data stays inside the model's
// folder; declared sizes cost no memory before the data is checked. Every model is built here with the
// protobuf API.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/limits.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/json_io.h"
#include "tests/onnx_test_model.h"

namespace ios::onnx_import {
namespace {

using namespace testing_model;

void expect_error(const Model& m, const std::string& fragment) {
  auto r = m.import();
  ASSERT_FALSE(r) << "imported, expected an error containing '" << fragment << "'";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(OnnxValidation, IdentityAndDropoutWithoutInputsAreErrors) {
  for (const char* op : {"Identity", "Dropout"}) {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y");
    m.node(op, {}, {"y"}, "empty");
    expect_error(m, "input 0 is missing");
  }
}

TEST(OnnxValidation, NamesThatAreNotUtf8BecomeValidUtf8InTheGraphFile) {
  Model m;
  m.input("x\xff", {1, 1, 2, 2}).output("y");
  m.node("Relu", {"x\xff"}, {"y"}, "bad\xc3\x28name");
  auto r = import_bytes(m.bytes(), "model\xfe", ".");
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->graph.name, "model\\xFE");
  EXPECT_EQ(r->graph.nodes[0].name, "x\\xFF");
  EXPECT_EQ(r->graph.nodes[1].name, "bad\\xC3(name");
  const std::string text = ir::graph_to_json(r->graph).dump();  // throws on invalid UTF-8
  EXPECT_NE(text.find("bad\\\\xC3(name"), std::string::npos);
}

TEST(OnnxValidation, APerFeatureConstantAfterAFlattenedConvolutionIsNotFoldedIntoIt) {
  for (const char* op : {"Mul", "Add"}) {
    Model m;  // conv of 4 channels at 6x6: 144 features after Flatten
    m.input("x", {1, 1, 6, 6}).output("y").init("w", {4, 1, 1, 1}, {1.f, 2.f, 3.f, 4.f});
    m.init("k", {1, 144}, iota(144));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node("Flatten", {"c"}, {"f"});
    m.node(op, {"f", "k"}, {"y"}, "scale");
    expect_error(m, "flattened tensor");
  }
  Model bn;
  bn.input("x", {1, 1, 6, 6}).output("y").init("w", {4, 1, 1, 1}, {1.f, 2.f, 3.f, 4.f});
  for (const char* p : {"s", "b", "m", "v"}) bn.init(p, {144}, std::vector<float>(144, 1.f));
  bn.node("Conv", {"x", "w"}, {"c"});
  bn.node("Flatten", {"c"}, {"f"});
  bn.node("BatchNormalization", {"f", "s", "b", "m", "v"}, {"y"}, "bn");
  expect_error(bn, "flattened tensor");
}

TEST(OnnxValidation, AHugeGroupIsAnErrorNotAnOverflow) {
  Model m;
  m.input("x", {1, 3, 2, 2}).output("y").init("w", {3, 1, 1, 1}, {1.f, 1.f, 1.f});
  set_int(m.node("Conv", {"x", "w"}, {"y"}, "c"), "group", (int64_t{1} << 62) + 1);
  expect_error(m, "group");
}

TEST(OnnxValidation, ATensorWrittenTwiceOrNamedLikeAnInitializerIsAnError) {
  {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y");
    m.node("Relu", {"x"}, {"t"}, "first");
    m.node("Sigmoid", {"x"}, {"t"}, "second");
    m.node("Relu", {"t"}, {"y"});
    expect_error(m, "which node 'first' (Relu, opset 17) writes too");
  }
  {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {2.f});
    m.node("Relu", {"x"}, {"w"}, "shadow");
    m.node("Conv", {"x", "w"}, {"y"});
    expect_error(m, "already an initializer");
  }
}

TEST(OnnxValidation, MixingFlattenedAndFourDimensionalTensorsIsAnError) {
  Model add;
  add.input("x", {1, 4, 1, 1}).output("y");
  add.node("Flatten", {"x"}, {"f"});
  add.node("Add", {"x", "f"}, {"y"}, "mixed");
  expect_error(add, "flattened (batch, features) tensor and a 4-D one");
  Model mul;
  mul.input("x", {1, 4, 1, 1}).output("y");
  mul.node("Flatten", {"x"}, {"f"});
  mul.node("Mul", {"f", "x"}, {"y"}, "mixed");
  expect_error(mul, "flattened (batch, features) tensor and a 4-D one");
}

TEST(OnnxValidation, GemmAndMatMulNeedAFlattenedInput) {
  Model gemm;
  gemm.input("x", {1, 4, 1, 1}).output("y").init("b", {4, 2}, iota(8));
  gemm.node("Gemm", {"x", "b"}, {"y"}, "fc");
  expect_error(gemm, "only (batch, features) is supported here");
  Model matmul;
  matmul.input("x", {1, 4, 1, 1}).output("y").init("b", {1, 2}, iota(2));
  matmul.node("MatMul", {"x", "b"}, {"y"}, "mm");
  expect_error(matmul, "only (batch, features) is supported here");
}

TEST(OnnxValidation, AGemmBiasMustBroadcastOverTheBatch) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{10, 1}, {2, 10}, {1, 10, 1}}) {
    Model m;
    m.input("x", {1, 4, 1, 1}).output("y").init("b", {4, 10}, iota(40));
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    m.init("c", dims, std::vector<float>(size_t(n), 1.f));
    m.node("Flatten", {"x"}, {"f"});
    m.node("Gemm", {"f", "b", "c"}, {"y"}, "fc");
    expect_error(m, "does not broadcast to (batch, 10)");
  }
  for (std::vector<int64_t> dims : {std::vector<int64_t>{10}, {1, 10}, {1}, {}}) {
    Model m;
    m.input("x", {1, 4, 1, 1}).output("y").init("b", {4, 10}, iota(40));
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    m.init("c", dims, std::vector<float>(size_t(n), 1.f));
    m.node("Flatten", {"x"}, {"f"});
    m.node("Gemm", {"f", "b", "c"}, {"y"}, "fc");
    EXPECT_TRUE(m.import()) << dims.size();
  }
}

TEST(OnnxValidation, AutoPadTogetherWithPadsIsAnError) {
  Model m;
  m.input("x", {1, 1, 4, 4}).output("y").init("w", {1, 1, 3, 3}, iota(9));
  auto& n = m.node("Conv", {"x", "w"}, {"y"}, "c");
  set_string(n, "auto_pad", "SAME_UPPER");
  set_ints(n, "pads", {0, 0, 0, 0});
  expect_error(m, "'auto_pad' (SAME_UPPER) and 'pads' are both given");
}

TEST(OnnxValidation, NonFiniteAndOutOfRangeWeightsAreNamed) {
  {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {std::nanf("")});
    m.node("Conv", {"x", "w"}, {"y"}, "c");
    expect_error(m, "tensor 'w' holds NaN at element 0");
  }
  {
    Model m;
    m.input("x", {1, 1, 2, 2}).output("y").init("w", {1, 1, 1, 1}, {INFINITY});
    m.node("Conv", {"x", "w"}, {"y"}, "c");
    expect_error(m, "node 'c': its weight holds inf");
  }
  {
    Model m;  // a double past float's range
    m.input("x", {1, 1, 2, 2}).output("y");
    auto* t = m.graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::DOUBLE);
    for (int i = 0; i < 4; ++i) t->add_dims(1);
    t->add_double_data(1e300);
    m.node("Conv", {"x", "w"}, {"y"}, "c");
    expect_error(m, "beyond the range of float32");
  }
}

TEST(OnnxValidation, BatchNormalizationNeedsAPositiveVariancePlusEpsilon) {
  for (float var : {-1.f, 0.f}) {
    Model m;
    m.input("x", {1, 2, 2, 2}).output("y");
    m.init("s", {2}, {1.f, 1.f}).init("b", {2}, {0.f, 0.f}).init("m", {2}, {0.f, 0.f}).init("v", {2}, {1.f, var});
    auto& n = m.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
    set_float(n, "epsilon", 0.f);
    expect_error(m, "variance + epsilon is");
  }
}

// Shape arithmetic on untrusted integers: a result past int64 is a named error, not undefined behaviour.
TEST(OnnxValidation, ShapeArithmeticPastInt64IsAnError) {
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  for (const auto& [op, a, b] : {std::tuple<std::string, int64_t, int64_t>{"Mul", int64_t{1} << 62, 4},
                                 {"Add", max, 1},
                                 {"Sub", min, 1},
                                 {"Div", min, -1}}) {
    Model m(13);
    m.input("x", {1, 1, 1, 1}).output("y").init_ints("a", {a}).init_ints("b", {b});
    m.node(op, {"a", "b"}, {"t"}, "arith");
    m.node("Reshape", {"x", "t"}, {"y"});
    expect_error(m, "overflows int64");
  }
  Model range(13);
  range.input("x", {1, 1, 1, 1}).output("y").init_ints("lo", {min}).init_ints("hi", {max}).init_ints("step", {1});
  for (int i = 0; i < 3; ++i) range.graph()->mutable_initializer(i)->clear_dims();  // scalars
  range.node("Range", {"lo", "hi", "step"}, {"r"}, "range");
  range.node("Reshape", {"x", "r"}, {"y"});
  expect_error(range, "a folded Range of more than");
}

TEST(OnnxResources, ADeclaredShapeWithoutDataAllocatesNothing) {
  Model m;  // 2^31 doubles declared (16 GiB), none given
  m.input("x", {1, 1, 2, 2}).output("y");
  auto* t = m.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::DOUBLE);
  for (int64_t d : {int64_t{1} << 16, int64_t{1} << 15, int64_t{1}, int64_t{1}}) t->add_dims(d);
  m.node("Conv", {"x", "w"}, {"y"}, "c");
  expect_error(m, "holds 0 values");
  rusage usage{};
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 2L << 20) << "peak RSS in KiB";  // 16 GiB had it been allocated
}

TEST(OnnxResources, ManyNodesOfOneNameGetDistinctNames) {
  Model m;
  m.input("x", {1, 1, 1, 1}).output("y");
  const int n = 5000;
  for (int i = 0; i < n; ++i)
    m.node("Relu", {i == 0 ? "x" : "t" + std::to_string(i - 1)}, {i == n - 1 ? "y" : "t" + std::to_string(i)}, "r");
  auto r = m.import();
  ASSERT_TRUE(r) << r.status().to_string();
  std::set<std::string> names;
  for (const auto& node : r->graph.nodes) names.insert(node.name);
  EXPECT_EQ(names.size(), r->graph.nodes.size());
  EXPECT_TRUE(names.count("r_" + std::to_string(n)));
}

TEST(OnnxResources, AModelPastTheNodeLimitIsRefusedWhileImporting) {
  Model m;
  m.input("x", {1, 1, 1, 1}).output("y");
  const int n = int(limits::kMaxNodes) + 10;
  for (int i = 0; i < n; ++i)
    m.node("Relu", {i == 0 ? "x" : "t" + std::to_string(i - 1)}, {i == n - 1 ? "y" : "t" + std::to_string(i)});
  expect_error(m, "more than the limit of " + std::to_string(limits::kMaxNodes) + " graph nodes");
}

// External data: the location must resolve, through every symlink, to a regular file in the model's folder.
class OnnxExternalData : public OnnxFiles {
 protected:
  Expected<ImportedModel> import_with(const std::string& location) {
    write("m.onnx", external_model(location).bytes());
    return import_file((dir_ / "m.onnx").string());
  }
  void expect_refused(const std::string& location, const std::string& fragment) {
    auto r = import_with(location);
    ASSERT_FALSE(r) << location;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  }
};

TEST_F(OnnxExternalData, SymlinksOutOfTheFolderAreRefused) {
  const std::filesystem::path outside = dir_.string() + "_outside";
  std::filesystem::create_directories(outside);
  const float values[2] = {1.f, 2.f};
  std::ofstream(outside / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof(values));
  std::filesystem::create_symlink(outside / "secret.bin", dir_ / "link_secret");
  std::filesystem::create_directory_symlink(outside, dir_ / "outdir");
  expect_refused("link_secret", "outside the model's folder");
  expect_refused("outdir/secret.bin", "outside the model's folder");
  std::filesystem::remove_all(outside);
}

TEST_F(OnnxExternalData, ASymlinkInsideTheFolderIsFollowed) {
  const float values[2] = {99.f, -3.f};
  std::filesystem::create_directories(dir_ / "data");
  std::ofstream(dir_ / "data" / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof(values));
  std::filesystem::create_symlink(dir_ / "data" / "w.bin", dir_ / "link");
  auto r = import_with("link");
  ASSERT_TRUE(r) << r.status().to_string();
  expect_near(run(*r, {1.f, 2.f}), {-3.f, -6.f});
}

TEST_F(OnnxExternalData, AFifoOrAFolderIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  expect_refused("fifo", "not a regular file");
  std::filesystem::create_directories(dir_ / "folder");
  expect_refused("folder", "not a regular file");
}

TEST_F(OnnxExternalData, OffsetsAndLengthsAreReadStrictly) {
  const float values[2] = {99.f, -3.f};
  write("w.bin", std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  for (const char* bad : {"0xyz", "1e3", "-8", "", " 4", "99999999999999999999"}) {
    for (const char* key : {"offset", "length"}) {
      Model m = external_model("w.bin");
      for (auto& e : *m.graph()->mutable_initializer(0)->mutable_external_data())
        if (e.key() == key) e.set_value(bad);
      write("m.onnx", m.bytes());
      auto r = import_file((dir_ / "m.onnx").string());
      ASSERT_FALSE(r) << key << " = '" << bad << "'";
      EXPECT_NE(r.status().message().find("not a non-negative integer"), std::string::npos) << r.status().message();
    }
  }
}

TEST_F(OnnxExternalData, AFileShorterThanOffsetPlusLengthIsNamedBeforeAnyAllocation) {
  write("w.bin", std::string(6, '\0'));
  expect_refused("w.bin", "has 6 bytes, fewer than offset 4 + 4");
}

}  // namespace
}  // namespace ios::onnx_import
