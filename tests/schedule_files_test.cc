// Readers of schedule and stage-cache files, and the checks of execution plans and merges, fed
// adversarial input: each rejects by name what would crash or be silently misread.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scheduler/cost_model.h"
#include "scheduler/memory_plan.h"
#include "scheduler/merge.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"
#include "test_graphs.h"
#include "untrusted_files.h"

namespace ios {
namespace {

using nlohmann::json;
using testing::expect_error;

class PlanChecks : public testing::UntrustedFiles {};
class ScheduleFileReader : public testing::UntrustedFiles {};
class StageCacheFileReader : public testing::UntrustedFiles {};

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

json meta_schedule(const ir::Graph& g, const char* field, json value) {
  json j = sched::schedule_to_json(g, sched::Schedule{});
  for (auto& blk : j["blocks"]) blk["stages"] = json::array();
  j["schedule"][field] = std::move(value);
  return j;
}

json staged(const ir::Graph& g) {
  sched::Schedule s;
  sched::BlockSchedule b;
  for (ir::NodeId id : g.blocks[0].members()) b.stages.push_back(sched::Stage{sched::StageKind::kConcurrent, {{id}}});
  s.blocks.push_back(b);
  return sched::schedule_to_json(g, s);
}

TEST_F(StageCacheFileReader, AStageCacheWithAWronglyTypedKeyIsAnError) {
  sched::AnalyticCostModel model;
  sched::StageCache cache(model, "k");
  expect_error(cache.load(write("a.json", R"({"key": 5, "stages": {}})")), "'key' must be a string");
  expect_error(cache.load(write("b.json", R"({"key": null, "stages": {}})")), "'key' must be a string");
  expect_error(cache.load(write("c.json", "null")), "not a stage cache");
}

TEST_F(StageCacheFileReader, StageCacheValuesMustBeMeasurements) {
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

TEST_F(ScheduleFileReader, StreamIndicesOutsideTheLimitAreRejectedBeforeAnyPlan) {
  const ir::Graph g = chain5();
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, -7, 1))), "in [0, 1023]");
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 2147483647))), "in [0, 1023]");
  expect_error(sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 100000))), "in [0, 1023]");
  json big = streams_of(g, 0, 0);
  big[g.nodes[3].name] = 4294967296ull;  // 2^32, which a 32-bit read would take as 0
  expect_error(sched::schedule_from_json(g, stream_schedule(g, big)), "got 4294967296");
}

TEST_F(ScheduleFileReader, AValidatedStreamScheduleCompilesAndPlansMemory) {
  const ir::Graph g = chain5();
  auto s = sched::schedule_from_json(g, stream_schedule(g, streams_of(g, 0, 1)));
  ASSERT_TRUE(s) << s.status().to_string();
  auto plan = sched::compile_plan(g, *s);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_TRUE(sched::plan_memory(g, *plan, sched::MemoryOptions{}));
}

TEST_F(PlanChecks, APlanWithABadStreamOrEventIsRejectedByTheMemoryPlan) {
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

TEST_F(ScheduleFileReader, ScheduleMetadataIsCheckedByRange) {
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

TEST_F(ScheduleFileReader, StageKindsOfTheWrongLengthOrTypeAreRejected) {
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

TEST_F(ScheduleFileReader, AStreamScheduleWithBlockStagesIsRejected) {
  const ir::Graph g = chain5();
  json j = stream_schedule(g, streams_of(g, 0, 0));
  j["blocks"][0]["stages"] = json::array({json::array({json::array({"no-such-op"})})});
  expect_error(sched::schedule_from_json(g, j), "must not also give 'stages'");
}

TEST_F(PlanChecks, MergingPastTheChannelLimitIsNotAMerge) {
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

}  // namespace
}  // namespace ios
