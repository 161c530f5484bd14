// The memory plan of a stage timed alone against the whole network's: the measured cost model times each
// stage by itself, so its copies, in-place reads and strided writes must be the network's.
#include <gtest/gtest.h>

#include "memory_plan_checks.h"
#include "models/models.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

using namespace memory_checks;

TEST(MemoryPlan, ATimedStageReadsItsOutsideConcatenationInPlaceAsTheNetworkDoes) {
  const ir::Graph g = testing::dense_block(4);
  const ir::NodeId last_layer = 5;  // reads the stem and layers 1-3, all produced before the stage
  const ExecutionPlan p = compile_stages({Stage{StageKind::kConcurrent, {{last_layer}}}});
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_EQ(m->shared_concat_buffers, 1);
  EXPECT_TRUE(reads_in_place(g, last_layer, m->placement, ExecConfig{}));
  const int shared = m->placement[size_t(g.node(last_layer).inputs[0][0].node)].buffer;
  int begin = 0;
  for (const ir::Term& term : g.node(last_layer).inputs) {
    EXPECT_EQ(m->placement[size_t(term[0].node)].buffer, shared);
    EXPECT_EQ(m->placement[size_t(term[0].node)].begin, begin);
    begin += term[0].channels();
  }
  EXPECT_TRUE(m->buffer_pinned[size_t(shared)]) << "the stage's inputs must not share memory with its outputs";
  expect_no_overlap_in_time(g, p, *m);
}

// ... and a concatenation timed alone copies exactly what it copies in the network (Greedy gives each
// one its own stage).
TEST(MemoryPlan, AStageAloneGathersExactlyTheConcatenationsTheWholeNetworkGathers) {
  for (const char* name : {"densenet121", "inception_v3", "googlenet", "squeezenet"}) {
    const ir::Graph g = *models::build_model(name);
    AnalyticCostModel model;
    OptimizeOptions o;
    o.policy = Policy::kGreedy;
    auto r = optimize(g, o, model);
    ASSERT_TRUE(r) << r.status().to_string();
    auto network = compile_plan(g, r->schedule);
    ASSERT_TRUE(network);
    auto whole = plan_memory(g, *network, MemoryOptions{});
    ASSERT_TRUE(whole);
    for (const BlockSchedule& block : r->schedule.blocks)
      for (const Stage& stage : block.stages) {
        const ExecutionPlan alone = compile_stages({stage});
        auto m = plan_memory(g, alone, MemoryOptions{});
        ASSERT_TRUE(m) << m.status().to_string();
        expect_no_overlap_in_time(g, alone, *m);
        for (ir::NodeId op : stage.ops())
          if (g.node(op).is<ir::IdentityAttrs>())
            EXPECT_EQ(elided(alone, *m, op), elided(*network, *whole, op)) << name << ": " << g.node(op).name;
          else
            EXPECT_EQ(reads_in_place(g, op, m->placement, ExecConfig{}),
                      reads_in_place(g, op, whole->placement, ExecConfig{}))
                << name << ": " << g.node(op).name;
      }
  }
}

// The launch of the network's plan that writes `op`, or -1.
int launch_of(const ExecutionPlan& plan, ir::NodeId op) {
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == PlanStep::Kind::kLaunch &&
        std::find(plan.steps[i].ops.begin(), plan.steps[i].ops.end(), op) != plan.steps[i].ops.end())
      return int(i);
  return -1;
}

// A merge stage timed alone is followed by the later concatenations its outputs go into, and those copy
// exactly the outputs the network's concatenations copy: Inception V3's merged 1x1 convolutions (one a
// term of the block's concatenation, the other not) are copied, SqueezeNet's expand pairs are not.
TEST(MemoryPlan, AMergeStageTimedAloneCopiesIntoItsConcatenationExactlyWhatTheNetworkCopies) {
  for (const char* name : {"inception_v3", "squeezenet", "googlenet"}) {
    const ir::Graph g = *models::build_model(name);
    int merges = 0;
    const Schedule s = with_adjacent_sibling_convs_merged(g, schedule_for(g, Policy::kSequential), merges);
    ASSERT_GT(merges, 0) << name;
    auto network = compile_plan(g, s);
    ASSERT_TRUE(network) << network.status().to_string();
    auto whole = plan_memory(g, *network, MemoryOptions{});
    ASSERT_TRUE(whole) << whole.status().to_string();
    const std::vector<std::vector<ir::NodeId>> consumers = g.consumers();
    int copied = 0, in_place = 0;
    for (const Stage& stage : all_stages(s)) {
      if (stage.kind != StageKind::kMerge) continue;
      for (ExecMode mode : {ExecMode::kStaged, ExecMode::kDataflow}) {
        const ExecutionPlan alone = compile_timed_stages(g, {stage}, mode);
        auto m = plan_memory(g, alone, MemoryOptions{});
        ASSERT_TRUE(m) << m.status().to_string();
        expect_no_overlap_in_time(g, alone, *m);
        for (ir::NodeId op : stage.ops()) {
          const std::vector<ConcatLevel> chain = concat_chain(g, op, consumers);
          if (chain.empty()) continue;
          const ir::NodeId concat = chain[0].concat;
          ASSERT_GE(launch_of(alone, concat), 0) << name << ": " << g.node(concat).name << " is not timed";
          auto written_in = [&](const MemoryPlan& plan) {
            return plan.placement[size_t(op)].buffer == plan.placement[size_t(concat)].buffer;
          };
          EXPECT_EQ(written_in(*m), written_in(*whole)) << name << ": " << g.node(op).name;
          (written_in(*whole) ? in_place : copied) += mode == ExecMode::kStaged;
        }
      }
    }
    if (std::string(name) == "inception_v3") {
      EXPECT_GT(copied, 0);
    }
    if (std::string(name) == "squeezenet") {
      EXPECT_GT(in_place, 0);
    }
  }
}

// A stage without merges is timed as compiled: its outputs are written in place in any case.
TEST(MemoryPlan, AStageWithoutMergesIsTimedWithoutItsConcatenation) {
  const ir::Graph g = testing::inception_block();
  const Stage concurrent{StageKind::kConcurrent, {{1}, {2}, {4}}};
  const ExecutionPlan alone = compile_timed_stages(g, {concurrent}, ExecMode::kStaged);
  EXPECT_EQ(alone.launches(), 3);
  EXPECT_EQ(launch_of(alone, g.output()), -1);
  const ExecutionPlan merged = compile_timed_stages(g, {Stage{StageKind::kMerge, {{1, 2, 4}}}}, ExecMode::kStaged);
  EXPECT_EQ(merged.launches(), 2);  // the merge, then the block's concatenation copying its first term
  auto m = plan_memory(g, merged, MemoryOptions{});
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_FALSE(m->launch[size_t(launch_of(merged, g.output()))].elided);
}

// A merge is timed once more with the ops that read its outputs after it, each reading its channel slice of
// the merged buffer as inside the network (a stage timed alone reads a tensor of its own).
TEST(MemoryPlan, AMergeIsTimedWithItsReadersReadingTheirSlicesOfTheMergedBuffer) {
  const ir::Graph g = testing::inception_block();
  // Nodes: 1 = 1x1 (8); 2 -> 3 = 1x1 (6) -> 3x3; 4 -> 5 -> 6 = 1x1 (6) -> 3x3 -> 3x3; 7 -> 8 = pool -> 1x1.
  const Stage merge{StageKind::kMerge, {{2, 4}}};
  EXPECT_EQ(merged_output_readers(g, merge), (std::vector<ir::NodeId>{3, 5}));
  EXPECT_TRUE(merged_output_readers(g, Stage{StageKind::kConcurrent, {{2}, {4}}}).empty());
  const ExecutionPlan plan = compile_merge_with_readers(g, merge, {3, 5});
  EXPECT_EQ(plan.launches(), 3);
  auto m = plan_memory(g, plan, MemoryOptions{});
  ASSERT_TRUE(m) << m.status().to_string();
  expect_no_overlap_in_time(g, plan, *m);
  const Placement& merged = m->placement[2];
  EXPECT_EQ(merged.channels, 12);
  EXPECT_EQ(m->placement[4].buffer, merged.buffer);
  EXPECT_EQ(m->placement[4].begin, merged.begin + 6);
}

// Each stage of `schedule` alone against the whole network: its outputs' (buffer channels, first channel).
// Returns how many of them the network writes into a wider buffer.
int expect_stages_write_as_the_network(const ir::Graph& g, const Schedule& schedule, const MemoryOptions& o) {
  auto network = compile_plan(g, schedule);
  auto whole = network ? plan_memory(g, *network, o) : Expected<MemoryPlan>(network.status());
  EXPECT_TRUE(whole) << whole.status().to_string();
  if (!whole) return 0;
  int strided = 0;
  for (const Stage& stage : all_stages(schedule)) {
    const ExecutionPlan alone = compile_stages({stage});
    auto m = plan_memory(g, alone, o);
    EXPECT_TRUE(m) << m.status().to_string();
    if (!m) continue;
    expect_no_overlap_in_time(g, alone, *m);
    for (ir::NodeId op : stage.ops()) {
      if (whole->launch[size_t(launch_of(*network, op))].residual.node != ir::kNoNode) continue;
      const Placement& there = whole->placement[size_t(op)];
      const Placement& here = m->placement[size_t(op)];
      EXPECT_EQ(here.channels, there.channels) << o.config.plan_key() << " " << g.name << ": " << g.node(op).name;
      EXPECT_EQ(here.begin, there.begin) << o.config.plan_key() << " " << g.name << ": " << g.node(op).name;
      strided += there.channels != g.node(op).output_shape.c;
    }
  }
  return strided;
}

// ... nor write an output into a tensor of its own that the network writes into a channel slice of a
// later stage's concatenation (strided in NHWC, which tensor-core engines write at another speed).
// Sums fused into a convolution are the exception: a stage alone adds no value it does not read. Not
// yet DenseNet-121 either: its layers write their slices of the buffer that later layers read as one
// concatenation (prefix groups, known only to a plan holding those readers).
TEST(MemoryPlan, AStageAloneWritesEachOutputWhereTheWholeNetworkWritesIt) {
  for (const char* name : {"inception_v3", "googlenet", "squeezenet", "nasnet"}) {
    const ir::Graph g = *models::build_model(name);
    for (Policy policy : {Policy::kGreedy, Policy::kDpBoth}) {
      const Schedule schedule = schedule_for(g, policy);
      for (const char* precision : {"fp32", "tf32", "fp16"})
        for (const char* writes : {"in-place", "conv-copy"}) {
          MemoryOptions o;
          o.config = *make_exec_config(precision, "auto", 1, writes);
          const int strided = expect_stages_write_as_the_network(g, schedule, o);
          if (o.config.concat_writes == ConcatWrites::kInPlace) {
            EXPECT_GT(strided, 0) << name << ": no output is written into a concatenation";
          }
        }
    }
  }
}

}  // namespace
}  // namespace ios::sched
