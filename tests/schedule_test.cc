// Schedules and what is made of them: files, validation, stage signatures, stage cache files, execution
// plans, readable listings.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "ir/builder.h"
#include "models/models.h"
#include "scheduler/dp.h"
#include "scheduler/memory_plan.h"
#include "scheduler/merge.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#include "test_graphs.h"
#include "test_processes.h"

namespace ios::sched {
namespace {

using ir::NodeId;

// A model that corrects its figures by values it measured once (as the measured model does).
class CalibratedModel : public AnalyticCostModel, public Measurement {
 public:
  Measurement* measurement() override { return this; }
  std::string timing_device() const override { return ""; }
  std::map<std::string, double> calibration() const override { return values; }
  Status adopt_calibration(const std::map<std::string, double>& adopted) override {
    values = adopted;
    ++adoptions;
    return Status::ok();
  }
  std::map<std::string, double> values;
  int adoptions = 0;
};

// Figures and the calibration they were corrected by travel together: a re-search from the file corrects
// new figures as the file's were, not by what it would measure itself.
TEST(StageCacheFile, KeepsTheModelsCalibrationAndGivesItBackToTheModelThatLoadsIt) {
  const ir::Graph g = testing::inception_block();
  CalibratedModel measuring;
  measuring.values = {{"stage_boundary_ms", 0.001}, {"b1|share", 0.64}};
  StageCache cache(measuring, "k");
  ASSERT_TRUE(cache.stage_latency_ms(g, Stage{StageKind::kConcurrent, {{1}}}, 1));
  const std::string path = ::testing::TempDir() + "/calibrated_stages.json";
  ASSERT_TRUE(cache.save(path).is_ok());
  CalibratedModel fresh;
  StageCache reloaded(fresh, "k");
  ASSERT_TRUE(reloaded.load(path).is_ok());
  EXPECT_EQ(fresh.adoptions, 1);
  EXPECT_EQ(fresh.values, measuring.values);
  CalibratedModel elsewhere;  // another device's file: neither its figures nor its calibration
  StageCache other_key(elsewhere, "other-device");
  ASSERT_TRUE(other_key.load(path).is_ok());
  EXPECT_EQ(elsewhere.adoptions, 0);
  EXPECT_TRUE(other_key.measurement()->calibration().empty());
}

// Processes sharing one stage cache, each saving after every new figure, keep each other's figures.
TEST(StageCacheFile, ProcessesSavingToOneFileKeepEachOthersFigures) {
  const ir::Graph g = testing::inception_block();
  const std::string path = ::testing::TempDir() + "/shared_stages_" + std::to_string(::getpid()) + ".json";
  std::filesystem::remove(path);
  testing::in_processes(4, [&](int process) {
    AnalyticCostModel analytic;
    StageCache cache(analytic, "k");
    for (int k = 0; k < 20; ++k) {  // one batch size per figure: every figure is a new entry
      if (!cache.stage_latency_ms(g, Stage{StageKind::kConcurrent, {{1}}}, 1 + process * 20 + k)) return false;
      if (!cache.save(path)) return false;
    }
    return true;
  });
  AnalyticCostModel analytic;
  StageCache all(analytic, "k");
  ASSERT_TRUE(all.load(path).is_ok());
  EXPECT_EQ(all.size(), 80u);
  std::filesystem::remove(path);
}

TEST(StageSignature, IndependentConcurrentGroupsInAnyOrderAreOneStage) {
  const ir::Graph g = testing::inception_block();
  // Nodes: 1 = 1x1 (8); 2, 3 = 1x1 (6) -> 3x3; 4, 5, 6 = 1x1 (6) -> 3x3 -> 3x3; 7, 8 = pool -> 1x1.
  const Stage a{StageKind::kConcurrent, {{1}, {2, 3}, {7, 8}}};
  const Stage b{StageKind::kConcurrent, {{7, 8}, {1}, {2, 3}}};
  EXPECT_EQ(stage_signature(g, a), stage_signature(g, b));
  const Stage shorter{StageKind::kConcurrent, {{1}, {2}}};
  EXPECT_NE(stage_signature(g, a), stage_signature(g, shorter));
  // Same shapes, different structure: 2 -> 3 in one group vs 2 and 4 side by side.
  EXPECT_NE(stage_signature(g, Stage{StageKind::kConcurrent, {{2, 3}}}),
            stage_signature(g, Stage{StageKind::kConcurrent, {{2}, {4}}}));
}

// p and q read the input; r and s read p, t reads q (all 1x1 convolutions of the same shapes).
ir::Graph shared_and_separate_inputs() {
  ir::GraphBuilder b("shared_inputs", {16, 8, 8});
  b.begin_block();
  const ir::Value p = b.conv(b.input(), ir::Conv(16));  // node 1
  const ir::Value q = b.conv(b.input(), ir::Conv(16));  // node 2
  const ir::Value r = b.conv(p, ir::Conv(8));           // node 3
  const ir::Value s = b.conv(p, ir::Conv(8));           // node 4
  const ir::Value t = b.conv(q, ir::Conv(8));           // node 5
  b.end_block(b.identity(ir::cat({r, s, t})));
  return *b.build();
}

TEST(StageSignature, StagesThatDifferOnlyInWhichGroupsShareAnInputAreOneStage) {
  const ir::Graph g = shared_and_separate_inputs();
  const Stage shared{StageKind::kConcurrent, {{3}, {4}}}, separate{StageKind::kConcurrent, {{3}, {5}}};
  EXPECT_EQ(stage_signature(g, shared), stage_signature(g, separate));
  // Within a group, reading one tensor twice is not reading two.
  EXPECT_NE(stage_signature(g, Stage{StageKind::kConcurrent, {{1, 3}}}),
            stage_signature(g, Stage{StageKind::kConcurrent, {{2, 3}}}));
}

TEST(StageSignature, SegmentsKeepWhichGroupReadsWhichAcrossTheirStages) {
  const ir::Graph g = shared_and_separate_inputs();
  const OpKeys keys = op_keys(g);
  const Stage first{StageKind::kConcurrent, {{1}}};
  // r and s both read p, made in the segment's first stage; t reads q, made outside the segment.
  const std::string both_read_p = segment_signature(g, keys, {first, Stage{StageKind::kConcurrent, {{3}, {4}}}});
  const std::string one_reads_q = segment_signature(g, keys, {first, Stage{StageKind::kConcurrent, {{3}, {5}}}});
  EXPECT_NE(both_read_p, one_reads_q);
}

// A merge of two convolutions whose outputs are consecutive terms of a concatenation, in order, writes
// it in place; the same merge of terms in the other order is copied, so it is another stage to time.
TEST(StageSignature, MergesWhoseOutputsAreTermsInAnotherOrderAreOtherStages) {
  const ir::Graph g = testing::merged_terms();
  EXPECT_NE(stage_signature(g, Stage{StageKind::kMerge, {{1, 2}}}),
            stage_signature(g, Stage{StageKind::kMerge, {{3, 4}}}));
  EXPECT_EQ(stage_signature(g, Stage{StageKind::kMerge, {{1, 2}}}),
            stage_signature(g, Stage{StageKind::kMerge, {{4, 3}}}));
  EXPECT_EQ(stage_signature(g, Stage{StageKind::kConcurrent, {{1}, {2}}}),
            stage_signature(g, Stage{StageKind::kConcurrent, {{3}, {4}}}));
}

// A merge's figure includes what reading its slices costs its readers, so merges alike but for their
// readers are other stages.
TEST(StageSignature, MergesWhoseOutputsHaveOtherReadersAreOtherStages) {
  ir::GraphBuilder b("merged_readers", {16, 8, 8});
  b.begin_block();
  std::vector<ir::Value> c;
  for (int i = 0; i < 4; ++i) c.push_back(b.conv(b.input(), ir::Conv(16)));  // nodes 1-4
  const ir::Value wide = b.conv(c[0], ir::Conv(16).kernel(3).pad(1));        // 5 reads 1
  const ir::Value narrow = b.conv(c[2], ir::Conv(16));                       // 6 reads 3
  b.end_block(b.identity(ir::cat({wide, c[1], narrow, c[3]})));
  const ir::Graph g = *b.build();
  EXPECT_NE(stage_signature(g, Stage{StageKind::kMerge, {{1, 2}}}),
            stage_signature(g, Stage{StageKind::kMerge, {{3, 4}}}));
}

// ---------- Opara ----------

TEST(ScheduleFile, RoundTripsStagedAndStreamSchedules) {
  ir::Graph g = testing::inception_block();
  AnalyticCostModel model;
  for (Policy p : {Policy::kDpBoth, Policy::kOpara}) {
    OptimizeOptions options;
    options.policy = p;
    auto r = optimize(g, options, model);
    ASSERT_TRUE(r);
    const std::string path = ::testing::TempDir() + "/sched.json";
    ASSERT_TRUE(save_schedule(g, r->schedule, path).is_ok());
    auto back = load_schedule(path);
    ASSERT_TRUE(back) << back.status().to_string();
    EXPECT_EQ(back->schedule.blocks, r->schedule.blocks);
    EXPECT_EQ(back->schedule.streams, r->schedule.streams);
    EXPECT_EQ(back->schedule.meta.policy, policy_flag_name(p));
  }
}

Status check_stages(const ir::Graph& g, const std::string& stages_json, const std::string& kinds = "") {
  nlohmann::json j = schedule_to_json(g, sequential_schedule(g));
  j["blocks"][0]["stages"] = nlohmann::json::parse(stages_json);
  if (!kinds.empty())
    j["blocks"][0]["stage_kinds"] = nlohmann::json::parse(kinds);
  else
    j["blocks"][0].erase("stage_kinds");
  return schedule_from_json(g, j).status();
}

void expect_rejected(const Status& s, const std::string& words) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

TEST(ScheduleValidation, RejectsEachBrokenRule) {
  ir::Graph g = testing::fire_module();  // 1 squeeze, 2 e3, 3 e1, 4 concat, 5 bypass, 6 sum
  EXPECT_TRUE(check_stages(g, R"([[["1"]], [["2"], ["3"], ["5"]], [["4"]], [["6"]]])").is_ok());
  expect_rejected(check_stages(g, R"([[["1"]], [["2"], ["3"]], [["4"]], [["6"]]])"), "op '5' is never scheduled");
  expect_rejected(check_stages(g, R"([[["1"]], [["2"], ["3"], ["5"]], [["4"], ["2"]], [["6"]]])"),
                  "op '2' is scheduled more than once");
  expect_rejected(check_stages(g, R"([[["2"]], [["1"], ["3"], ["5"]], [["4"]], [["6"]]])"),
                  "op '2' runs before its producer op '1'");
  expect_rejected(check_stages(g, R"([[["1"], ["2"]], [["3"], ["5"]], [["4"]], [["6"]]])"), "not independent");
  expect_rejected(check_stages(g, R"([[["1"]], [["2", "5"]], [["3"]], [["4"]], [["6"]]])",
                               R"(["parallel", "merge", "parallel", "parallel", "parallel"])"),
                  "merge stage 1: op '5' does not read exactly the same single value");
  expect_rejected(check_stages(g, R"([[["1"]], [["2"], ["3"], ["9"]], [["4"]], [["6"]]])"), "unknown op '9'");
  EXPECT_TRUE(check_stages(g, R"([[["1", "5"]], [["2", "3"]], [["4"]], [["6"]]])",
                           R"(["parallel", "merge", "parallel", "parallel"])")
                  .is_ok());
}

TEST(ScheduleValidation, RejectsStreamScheduleOutOfOrder) {
  ir::Graph g = testing::diamond();
  Schedule s;
  s.streams = StreamSchedule{{3, 1, 2}, {0, 0, 1, 0}};
  expect_rejected(validate(g, s), "before its producer");
}

// ---------- plans ----------

TEST(PrefetchSuffix, NamesHowManyStagesAheadAndRejectsAnythingElse) {
  EXPECT_EQ(prefetch_suffix(0), "");
  EXPECT_EQ(prefetch_suffix(1), "+prefetch");
  EXPECT_EQ(prefetch_suffix(3), "+prefetch3");
  for (int ahead : {0, 1, 3, 12}) {
    auto split = split_prefetch_suffix("dataflow" + prefetch_suffix(ahead));
    ASSERT_TRUE(split) << split.status().to_string();
    EXPECT_EQ(split->base, "dataflow");
    EXPECT_EQ(split->ahead, ahead);
  }
  for (const char* bad : {"staged+prefetch0", "staged+prefetchx", "staged+prefetch-1", "staged+prefetch123"}) {
    auto split = split_prefetch_suffix(bad);
    ASSERT_FALSE(split) << bad;
    EXPECT_NE(split.status().to_string().find(bad), std::string::npos) << split.status().to_string();
  }
}

TEST(Plan, SequentialUsesOneStreamAndNoEvents) {
  ir::Graph g = testing::inception_block();
  auto plan = compile_plan(g, sequential_schedule(g));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->streams, 1);
  EXPECT_EQ(plan->events, 0);
  EXPECT_EQ(plan->launches(), g.op_count());
}

TEST(Plan, ConcurrentStageForksAndJoinsThroughEvents) {
  ir::Graph g = testing::diamond();
  Schedule s;
  s.blocks.push_back(BlockSchedule{{Stage{StageKind::kConcurrent, {{1}, {2}}}, Stage{StageKind::kConcurrent, {{3}}}}});
  auto plan = compile_plan(g, s);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->streams, 2);
  // record(0) wait(1) launch(0) launch(1) record(1) wait(0) launch(0)
  std::vector<PlanStep::Kind> kinds;
  for (const auto& step : plan->steps) kinds.push_back(step.kind);
  using K = PlanStep::Kind;
  EXPECT_EQ(kinds, (std::vector<K>{K::kRecord, K::kWait, K::kLaunch, K::kLaunch, K::kRecord, K::kWait, K::kLaunch}));
  EXPECT_EQ(plan->steps.back().stream, 0);
}

TEST(Plan, TheNetworkWithoutAStageLaunchesEveryOtherStagesOpsAndNoneOfItsOwn) {
  ir::Graph g = testing::inception_block();
  const std::vector<Stage> stages = all_stages(sequential_schedule(g));
  const int all = compile_stages(stages).launches();
  for (size_t k = 0; k < stages.size(); ++k) {
    const ExecutionPlan p = compile_stages_without(stages, k);
    EXPECT_TRUE(validate_plan(p).is_ok()) << "without stage " << k;
    EXPECT_EQ(p.launches(), all - compile_stages({stages[k]}).launches()) << "without stage " << k;
    const std::vector<ir::NodeId> left_out = stages[k].ops();
    for (const PlanStep& st : p.steps)
      for (ir::NodeId id : st.ops)
        EXPECT_EQ(std::count(left_out.begin(), left_out.end(), id), 0) << "without stage " << k << ": op " << id;
  }
}

TEST(Plan, OparaWaitsOnlyAcrossStreams) {
  ir::Graph g = testing::opara_example();
  Schedule s;
  s.streams = opara_schedule(g, estimate_resource_profile(g));
  auto plan = compile_plan(g, s);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->streams, 5);
  int waits = 0;
  for (const auto& step : plan->steps) waits += step.kind == PlanStep::Kind::kWait;
  EXPECT_GE(waits, 8);
}

TEST(DescribeSchedule, ListsEveryStageWithOpsByNameAndKind) {
  const ir::Graph g = testing::inception_block();
  AnalyticCostModel model;
  auto r = optimize(g, OptimizeOptions{}, model);
  ASSERT_TRUE(r);
  const std::string text = describe_schedule(g, r->schedule);
  EXPECT_NE(text.find("schedule for 'inception_block'"), std::string::npos) << text;
  EXPECT_NE(text.find(":conv"), std::string::npos) << text;
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 1 + r->schedule.stage_count()) << text;
  for (const ir::Node& n : g.nodes)
    if (n.kind() != ir::OpKind::kInput) {
      EXPECT_NE(text.find(n.name + ":"), std::string::npos) << n.name;
    }
}

TEST(DescribeSchedule, StreamSchedulesAreListedPerStream) {
  const ir::Graph g = testing::inception_block();
  AnalyticCostModel model;
  OptimizeOptions o;
  o.policy = Policy::kOpara;
  auto r = optimize(g, o, model);
  ASSERT_TRUE(r);
  const std::string text = describe_schedule(g, r->schedule);
  EXPECT_NE(text.find("stream-level"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 0:"), std::string::npos) << text;
}

}  // namespace
}  // namespace ios::sched
