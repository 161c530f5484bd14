// Regression cases for untrusted input: every file reader rejects, by name, what an adversarial
// review found crashing, hanging or silently misreading. Each test is one reported case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "ir/json_io.h"
#include "ir/weights.h"
#include "models/models.h"
#include "scheduler/cost_model.h"
#include "scheduler/memory_plan.h"
#include "scheduler/merge.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"
#include "test_graphs.h"

namespace ios {
namespace {

using nlohmann::json;

class UntrustedInput : public ::testing::Test {
 protected:
  std::filesystem::path dir;
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("ios_untrusted_" + std::to_string(::getpid()) + "_" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

// The error's message contains `words` (and there is an error).
template <typename T>
void expect_error(const Expected<T>& r, const std::string& words) {
  ASSERT_FALSE(r) << "accepted; expected an error mentioning: " << words;
  EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
}
void expect_error(const Status& s, const std::string& words) {
  ASSERT_FALSE(s) << "accepted; expected an error mentioning: " << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

json graph_json() { return ir::graph_to_json(testing::fire_module()); }
json& first_conv(json& j) { return j["blocks"][0]["inner_nodes"][0]; }

// ---- crashes ----

TEST_F(UntrustedInput, ANumberPastADoubleIsAnErrorInEveryReader) {
  const std::string path = write("big.json", R"({"w": 1e400})");
  expect_error(ir::load_graph(path), "unreadable JSON");
  expect_error(sched::load_schedule(path), "unreadable JSON");
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load(path), "unreadable JSON");
}

TEST_F(UntrustedInput, AStageCacheWithAWronglyTypedKeyIsAnError) {
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load(write("a.json", R"({"key": 5, "stages": {}})")), "'key' must be a string");
  expect_error(cache.load(write("b.json", R"({"key": null, "stages": {}})")), "'key' must be a string");
  expect_error(cache.load(write("c.json", "null")), "not a stage cache");
}

TEST_F(UntrustedInput, DeepNestingIsRejectedBeforeAnyRecursion) {
  const int depth = 100000;
  std::string parts = std::string(depth, '[') + std::string(depth, ']');
  std::string text = graph_json().dump();
  text.insert(text.size() - 1, R"(, "deep": )" + parts);
  expect_error(ir::load_graph(write("deep.json", text)), "nests deeper than the limit of 64");
  const std::string inputs = "{\"inputs\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  expect_error(ir::load_graph(write("inputs.json", inputs)), "nests deeper");
}

TEST_F(UntrustedInput, DepthInsideStringsDoesNotCount) {
  json j = graph_json();
  j["name"] = std::string(1000, '[');
  EXPECT_TRUE(ir::load_graph(write("ok.json", j.dump())));
}

TEST_F(UntrustedInput, AHugeRandWireNodeCountIsAnError) {
  expect_error(models::read_wiring_graph(write("ws.txt", "2147483647\n0\n")), "node count 2147483647 is outside");
}

// A five-op chain, for stream schedules.
ir::Graph chain5() {
  ir::GraphBuilder b("chain5", {4, 6, 6});
  b.begin_block();
  ir::Value v = b.input();
  for (int i = 0; i < 5; ++i) v = b.conv(v, ir::Conv(4).kernel(3).pad(1));
  b.end_block(v);
  return *b.build();
}

json stream_schedule(const ir::Graph& g, json stream_of) {
  json j = sched::schedule_to_json(g, sched::Schedule{});
  json order = json::array();
  for (size_t id = 1; id < g.nodes.size(); ++id) order.push_back(g.nodes[id].name);
  j["schedule"]["launch_order"] = order;
  j["schedule"]["stream_of"] = std::move(stream_of);
  return j;
}

json streams_of(const ir::Graph& g, int input, int second) {
  json s = json::object();
  for (size_t id = 0; id < g.nodes.size(); ++id) s[g.nodes[id].name] = id == 0 ? input : (id == 2 ? second : 0);
  return s;
}

TEST_F(UntrustedInput, StreamIndicesOutsideTheLimitAreRejectedBeforeAnyPlan) {
  const ir::Graph g = chain5();
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, -7, 1))), "in [0, 1023]");
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 2147483647))), "in [0, 1023]");
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 100000))), "in [0, 1023]");
  json big = streams_of(g, 0, 0);
  big[g.nodes[3].name] = 4294967296ull;  // 2^32, which a 32-bit read would take as 0
  expect_error(sched::schedule_from_json(g, stream_schedule(g, big)), "got 4294967296");
}

TEST_F(UntrustedInput, AValidatedStreamScheduleCompilesAndPlansMemory) {
  const ir::Graph g = chain5();
  auto s = sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 1)));
  ASSERT_TRUE(s) << s.status().to_string();
  auto plan = sched::compile_plan(g, *s);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_TRUE(sched::plan_memory(g, *plan, sched::MemoryOptions{}));
}

TEST_F(UntrustedInput, APlanWithABadStreamOrEventIsRejectedByTheMemoryPlan) {
  const ir::Graph g = chain5();
  sched::ExecutionPlan p;
  p.streams = 1;
  p.steps.push_back({sched::PlanStep::Kind::kLaunch, 3, -1, {1}, -1});
  expect_error(sched::plan_memory(g, p, sched::MemoryOptions{}), "stream 3 out of range");
  p.steps[0] = {sched::PlanStep::Kind::kWait, 0, 0, {}, -1};
  p.events = 1;
  expect_error(sched::plan_memory(g, p, sched::MemoryOptions{}), "before it is recorded");
  p.steps[0] = {sched::PlanStep::Kind::kLaunch, 0, -1, {99}, -1};
  expect_error(sched::plan_memory(g, p, sched::MemoryOptions{}), "not an op of graph");
}

// ---- hangs ----

TEST_F(UntrustedInput, EndlessDevicesEndWithASizeError) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  expect_error(ir::load_graph("/dev/zero"), "larger than the limit");
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load("/dev/zero"), "larger than the limit");
}

// ---- silent misreadings ----

TEST_F(UntrustedInput, IntegersAreNotNarrowedTo32Bits) {
  json j = graph_json();
  first_conv(j)["out_channels"] = 4294967299ull;  // 2^32 + 3: read as 3 before
  expect_error(ir::graph_from_json(j), "got 4294967299");
}

TEST_F(UntrustedInput, AttributesPastTheirLimitsAreNamed) {
  for (const char* field : {"kernel", "stride", "padding", "dilation"}) {
    json j = graph_json();
    first_conv(j)[field] = json::array({2147483647, 1});
    expect_error(ir::graph_from_json(j), std::string("field '") + field + "'[0] must be an integer in");
  }
  json j = graph_json();
  j["input"]["output_shape"] = json::array({3, 1 << 20, 1 << 20});
  expect_error(ir::graph_from_json(j), "output_shape'[1] must be an integer in [1, 65536]");
}

TEST_F(UntrustedInput, APoolWithAHugeKernelIsAnErrorNotATinyOutput) {
  ir::GraphBuilder b("pool", {3, 10, 10});
  b.begin_block();
  b.end_block(b.pool(b.input(), ir::MaxPool(2147483647)));
  expect_error(b.build(), "field 'kernel' must be in [1, 1024]");
}

TEST_F(UntrustedInput, TensorsPastTheElementLimitAreRejected) {
  ir::GraphBuilder b("huge", {1024, 4096, 4096});
  b.begin_block();
  b.end_block(b.conv(b.input(), ir::Conv(1 << 20).act(ir::Act::kNone)));
  expect_error(b.build(), "past the limits");
}

TEST_F(UntrustedInput, AConcatPastTheChannelLimitIsRejected) {
  ir::GraphBuilder b("wide", {4, 2, 2});
  b.begin_block();
  std::vector<ir::Value> outs;
  for (int i = 0; i < 3; ++i) outs.push_back(b.conv(b.input(), ir::Conv(1 << 20)));
  b.end_block(b.identity(ir::cat({outs[0], outs[1]})));
  auto g = b.build();
  ASSERT_FALSE(g);  // the concat is inferred, and rejected, before the third conv is found to be a second sink
  expect_error(g, "concatenates more than the limit");
}

TEST_F(UntrustedInput, MergingPastTheChannelLimitIsNotAMerge) {
  ir::GraphBuilder b("wide", {4, 2, 2});
  b.begin_block();
  const ir::Value x = b.conv(b.input(), ir::Conv(1 << 20));
  const ir::Value y = b.conv(b.input(), ir::Conv(1 << 20));
  b.end_block(b.identity(ir::add({x, y})));
  auto g = b.build();
  ASSERT_TRUE(g) << g.status().to_string();
  const std::string why = sched::merge_violation(*g, {x.node, y.node});
  EXPECT_NE(why.find("more than the limit of 1048576"), std::string::npos) << why;
}

json meta_schedule(const ir::Graph& g, const char* field, json value) {
  json j = sched::schedule_to_json(g, sched::Schedule{});
  for (auto& blk : j["blocks"]) blk["stages"] = json::array();
  j["schedule"][field] = std::move(value);
  return j;
}

TEST_F(UntrustedInput, ScheduleMetadataIsCheckedByRange) {
  const ir::Graph g = testing::diamond();
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "batch", -5)), "'batch' must be an integer in [1, 65536]");
  // A parsed non-negative integer is unsigned in nlohmann::json: its lower bound is checked too.
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "batch", json::parse("0"))),
               "'batch' must be an integer in [1, 65536], got 0");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "precision", "fp8")), "one of fp32, tf32, fp16, bf16");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "policy", "bogus")), "unknown policy 'bogus'");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "latency_ms", -1e308)), "'latency_ms' must be a finite");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "r", 1099511627776ull)), "'r' must be an integer");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "r", 2.7)), "'r' must be an integer");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "version", 2)), "'version' must be an integer in [1, 1]");
  expect_error(sched::schedule_from_json(g, meta_schedule(g, "colour", "red")), "unknown field 'colour'");
}

json staged(const ir::Graph& g) {
  sched::Schedule s;
  sched::BlockSchedule b;
  for (ir::NodeId id : g.blocks[0].members()) b.stages.push_back(sched::Stage{sched::StageKind::kConcurrent, {{id}}});
  s.blocks.push_back(b);
  return sched::schedule_to_json(g, s);
}

TEST_F(UntrustedInput, StageKindsOfTheWrongLengthOrTypeAreRejected) {
  const ir::Graph g = testing::diamond();
  ASSERT_TRUE(sched::schedule_from_json(g, staged(g)));
  json j = staged(g);
  j["blocks"][0]["stage_kinds"].erase(0);
  expect_error(sched::schedule_from_json(g, j), "one entry per stage");
  j["blocks"][0]["stage_kinds"] = "merge";
  expect_error(sched::schedule_from_json(g, j), "one entry per stage");
  j["blocks"][0]["stage_kinds"] = json::array({1, 2, 3});
  expect_error(sched::schedule_from_json(g, j), "must be 'merge' or 'parallel'");
}

TEST_F(UntrustedInput, AStreamScheduleWithBlockStagesIsRejected) {
  const ir::Graph g = chain5();
  json j = stream_schedule(g, streams_of(g, 0, 0));
  j["blocks"][0]["stages"] = json::array({json::array({json::array({"no-such-op"})})});
  expect_error(sched::schedule_from_json(g, j), "must not also give 'stages'");
}

TEST_F(UntrustedInput, StageCacheValuesMustBeMeasurements) {
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load(write("neg.json", R"({"key": "k", "stages": {"1|a": -1000}})")), "'1|a' must be a finite");
  expect_error(cache.load(write("huge.json", R"({"key": "k", "stages": {"1|a": 1e308}})")), "must be a finite");
  expect_error(cache.load(write("text.json", R"({"key": "k", "stages": {"1|a": "fast"}})")), "got string");
  expect_error(cache.load(write("extra.json", R"({"key": "k", "stages": {}, "x": 1})")), "unknown field 'x'");
  EXPECT_TRUE(cache.load(write("other.json", R"({"key": "other", "stages": {"1|a": 0.5}})")));
  EXPECT_TRUE(cache.load(write("ok.json", R"({"key": "k", "stages": {"1|a": 0.5}})")));
  expect_error(cache.load(write("cal_list.json", R"({"key": "k", "stages": {}, "calibration": [1]})")),
               "calibration values are not an object");
  expect_error(cache.load(write("cal_neg.json", R"({"key": "k", "stages": {}, "calibration": {"b1|share": -1}})")),
               "calibration value 'b1|share' must be a finite");
  EXPECT_TRUE(cache.load(write("cal_ok.json", R"({"key": "k", "stages": {}, "calibration": {"b1|share": 0.5}})")));
}

TEST_F(UntrustedInput, AGraphWithoutBlocksIsRejected) {
  json j = graph_json();
  j["blocks"] = json::array();
  expect_error(ir::graph_from_json(j), "has no operators");
}

TEST_F(UntrustedInput, ABlockWithASecondSinkIsRejected) {
  ir::GraphBuilder b("two_sinks", {4, 6, 6});
  b.begin_block();
  b.conv(b.input(), ir::Conv(4));
  b.end_block(b.conv(b.input(), ir::Conv(4)));
  expect_error(b.build(), "is read by nothing, but only the exit");
}

TEST_F(UntrustedInput, PartsOrderedAgainstTheirDependenciesAreRejected) {
  json j = graph_json();
  json parts = json::array();
  for (const json& n : j["blocks"][0]["inner_nodes"]) parts.push_back(json::array({n["name"]}));
  parts.push_back(json::array({j["blocks"][0]["exit_node"]["name"]}));
  std::swap(parts[0], parts[1]);  // the squeeze conv after the expand conv that reads it
  j["blocks"][0]["parts"] = parts;
  expect_error(ir::graph_from_json(j), "of the later part");
}

TEST_F(UntrustedInput, ADeclaredOutputShapeThatDisagreesIsNamed) {
  json j = graph_json();
  first_conv(j)["output_shape"] = json::array({4, 3, 3});
  expect_error(ir::graph_from_json(j), "field 'output_shape' is [4,3,3]");
}

TEST_F(UntrustedInput, DotNamesCannotInjectStatements) {
  ir::Graph g = testing::diamond();
  g.nodes[1].name = "a\"]; evil [label=\"x";
  const std::string dot = ir::graph_to_dot(g);
  EXPECT_EQ(dot.find("a\"]"), std::string::npos) << dot;  // the quote never ends the label
  EXPECT_NE(dot.find("a\\\"]; evil [label=\\\"x"), std::string::npos) << dot;
}

TEST_F(UntrustedInput, WritingToAFullDeviceIsAnError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  expect_error(write_text_file("/dev/full", "digraph {}\n"), "failed writing");
}

TEST_F(UntrustedInput, RandWireDuplicateEdgesAndTrailingTextAreRejected) {
  expect_error(models::read_wiring_graph(write("dup.txt", "3\n3\n0 1\n1 2\n0 1\n")), "line 5: edge 0 1 is given twice");
  expect_error(models::read_wiring_graph(write("rev.txt", "3\n2\n0 1\n1 0\n")), "given twice");
  expect_error(models::read_wiring_graph(write("tail.txt", "3\n1\n0 1\nextra\n")), "unexpected text 'extra'");
  EXPECT_TRUE(models::read_wiring_graph(write("ok.txt", "3\n2\n0 1\n1 2\n")));
}

TEST_F(UntrustedInput, WeightFilesWithNonFiniteValuesOrTrailingBytesAreRejected) {
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

}  // namespace
}  // namespace ios
