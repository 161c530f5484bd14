// Readers of graph, weight and wiring files, and the graph's own limits, fed adversarial input: each
// rejects by name what would crash, hang or be silently misread.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "ir/json_io.h"
#include "ir/weights.h"
#include "models/models.h"
#include "scheduler/cost_model.h"
#include "scheduler/schedule.h"
#include "test_graphs.h"
#include "untrusted_files.h"

namespace ios {
namespace {

using nlohmann::json;
using testing::expect_error;

class FileIo : public testing::UntrustedFiles {};
class GraphDot : public testing::UntrustedFiles {};
class GraphFileReader : public testing::UntrustedFiles {};
class GraphLimits : public testing::UntrustedFiles {};
class RandWireFile : public testing::UntrustedFiles {};
class WeightsFile : public testing::UntrustedFiles {};

json graph_json() { return ir::graph_to_json(testing::fire_module()); }
json& first_conv(json& j) { return j["blocks"][0]["inner_nodes"][0]; }

TEST_F(FileIo, ANumberPastADoubleIsAnErrorInEveryReader) {
  const std::string path = write("big.json", R"({"w": 1e400})");
  expect_error(ir::load_graph(path), "unreadable JSON");
  expect_error(sched::load_schedule(path), "unreadable JSON");
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load(path), "unreadable JSON");
}

TEST_F(GraphFileReader, DeepNestingIsRejectedBeforeAnyRecursion) {
  const int depth = 100000;
  std::string parts = std::string(depth, '[') + std::string(depth, ']');
  std::string text = graph_json().dump();
  text.insert(text.size() - 1, R"(, "deep": )" + parts);
  expect_error(ir::load_graph(write("deep.json", text)), "nests deeper than the limit of 64");
  const std::string inputs = "{\"inputs\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  expect_error(ir::load_graph(write("inputs.json", inputs)), "nests deeper");
}

TEST_F(GraphFileReader, DepthInsideStringsDoesNotCount) {
  json j = graph_json();
  j["name"] = std::string(1000, '[');
  EXPECT_TRUE(ir::load_graph(write("ok.json", j.dump())));
}

TEST_F(FileIo, EndlessDevicesEndWithASizeError) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  expect_error(ir::load_graph("/dev/zero"), "larger than the limit");
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load("/dev/zero"), "larger than the limit");
}

TEST_F(GraphFileReader, IntegersAreNotNarrowedTo32Bits) {
  json j = graph_json();
  first_conv(j)["out_channels"] = 4294967299ull;  // 2^32 + 3: a 32-bit read takes it as 3
  expect_error(ir::graph_from_json(j), "got 4294967299");
}

TEST_F(GraphFileReader, AttributesPastTheirLimitsAreNamed) {
  for (const char* field : {"kernel", "stride", "padding", "dilation"}) {
    json j = graph_json();
    first_conv(j)[field] = json::array({2147483647, 1});
    expect_error(ir::graph_from_json(j), std::string("field '") + field + "'[0] must be an integer in");
  }
  json j = graph_json();
  j["input"]["output_shape"] = json::array({3, 1 << 20, 1 << 20});
  expect_error(ir::graph_from_json(j), "output_shape'[1] must be an integer in [1, 65536]");
}

TEST_F(GraphLimits, APoolWithAHugeKernelIsAnErrorNotATinyOutput) {
  ir::GraphBuilder b("pool", {3, 10, 10});
  b.begin_block();
  b.end_block(b.pool(b.input(), ir::MaxPool(2147483647)));
  expect_error(b.build(), "field 'kernel' must be in [1, 1024]");
}

TEST_F(GraphLimits, TensorsPastTheElementLimitAreRejected) {
  ir::GraphBuilder b("huge", {1024, 4096, 4096});
  b.begin_block();
  b.end_block(b.conv(b.input(), ir::Conv(1 << 20).act(ir::Act::kNone)));
  expect_error(b.build(), "past the limits");
}

TEST_F(GraphLimits, AConcatPastTheChannelLimitIsRejected) {
  ir::GraphBuilder b("wide", {4, 2, 2});
  b.begin_block();
  std::vector<ir::Value> outs;
  for (int i = 0; i < 3; ++i) outs.push_back(b.conv(b.input(), ir::Conv(1 << 20)));
  b.end_block(b.identity(ir::cat({outs[0], outs[1]})));
  auto g = b.build();
  ASSERT_FALSE(g);  // the concat is inferred, and rejected, before the third conv is found to be a second sink
  expect_error(g, "concatenates more than the limit");
}

TEST_F(GraphFileReader, AGraphWithoutBlocksIsRejected) {
  json j = graph_json();
  j["blocks"] = json::array();
  expect_error(ir::graph_from_json(j), "has no operators");
}

TEST_F(GraphLimits, ABlockWithASecondSinkIsRejected) {
  ir::GraphBuilder b("two_sinks", {4, 6, 6});
  b.begin_block();
  b.conv(b.input(), ir::Conv(4));
  b.end_block(b.conv(b.input(), ir::Conv(4)));
  expect_error(b.build(), "is read by nothing, but only the exit");
}

TEST_F(GraphFileReader, PartsOrderedAgainstTheirDependenciesAreRejected) {
  json j = graph_json();
  json parts = json::array();
  for (const json& n : j["blocks"][0]["inner_nodes"]) parts.push_back(json::array({n["name"]}));
  parts.push_back(json::array({j["blocks"][0]["exit_node"]["name"]}));
  std::swap(parts[0], parts[1]);  // the squeeze conv after the expand conv that reads it
  j["blocks"][0]["parts"] = parts;
  expect_error(ir::graph_from_json(j), "of the later part");
}

TEST_F(GraphFileReader, ADeclaredOutputShapeThatDisagreesIsNamed) {
  json j = graph_json();
  first_conv(j)["output_shape"] = json::array({4, 3, 3});
  expect_error(ir::graph_from_json(j), "field 'output_shape' is [4,3,3]");
}

TEST_F(GraphDot, DotNamesCannotInjectStatements) {
  ir::Graph g = testing::diamond();
  g.nodes[1].name = "a\"]; evil [label=\"x";
  const std::string dot = ir::graph_to_dot(g);
  EXPECT_EQ(dot.find("a\"]"), std::string::npos) << dot;  // the quote never ends the label
  EXPECT_NE(dot.find("a\\\"]; evil [label=\\\"x"), std::string::npos) << dot;
}

TEST_F(FileIo, WritingToAFullDeviceIsAnError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  expect_error(write_text_file("/dev/full", "digraph {}\n"), "failed writing");
}

TEST_F(WeightsFile, WeightFilesWithNonFiniteValuesOrTrailingBytesAreRejected) {
  const ir::Graph g = testing::diamond();
  ir::Weights w = ir::make_weights(g);
  const std::string good = (dir / "w.bin").string();
  ASSERT_TRUE(ir::save_weights(w, good));
  ASSERT_TRUE(ir::load_weights(g, good));
  std::ofstream(good, std::ios::binary | std::ios::app) << "x";
  expect_error(ir::load_weights(g, good), "unexpected bytes after the last tensor");
  for (float bad : {std::nanf(""), INFINITY}) {
    ir::Weights v = w;
    v.per_node[1][0].weight[3] = bad;
    const std::string path = (dir / "bad.bin").string();
    expect_error(ir::save_weights(v, path), "at element 3");  // never written: the loader would refuse it
    EXPECT_FALSE(std::filesystem::exists(path));
    // A file written by something else is refused by the loader.
    std::string bytes = *read_file(good);
    bytes.pop_back();  // the "x" appended above
    const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&w.per_node[1][0].weight[3]), 4));
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, 4, std::string(reinterpret_cast<const char*>(&bad), 4));
    ASSERT_TRUE(write_text_file(path, bytes));
    expect_error(ir::load_weights(g, path), "holds");
    std::filesystem::remove(path);
  }
}

TEST_F(RandWireFile, AHugeRandWireNodeCountIsAnError) {
  expect_error(models::read_wiring_graph(write("ws.txt", "2147483647\n0\n")), "node count 2147483647 is outside");
}

TEST_F(RandWireFile, RandWireDuplicateEdgesAndTrailingTextAreRejected) {
  expect_error(models::read_wiring_graph(write("dup.txt", "3\n3\n0 1\n1 2\n0 1\n")), "line 5: edge 0 1 is given twice");
  expect_error(models::read_wiring_graph(write("rev.txt", "3\n2\n0 1\n1 0\n")), "given twice");
  expect_error(models::read_wiring_graph(write("tail.txt", "3\n1\n0 1\nextra\n")), "unexpected text 'extra'");
  EXPECT_TRUE(models::read_wiring_graph(write("ok.txt", "3\n2\n0 1\n1 2\n")));
}

}  // namespace
}  // namespace ios
