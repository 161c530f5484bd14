// The memory plan: no two tensors that may be live at once share memory (checked against an
// independent reachability over the plan), concatenations are elided, reuse shrinks the arena.
#include "scheduler/memory_plan.h"

#include <gtest/gtest.h>

#include "models/models.h"
#include "scheduler/merge.h"
#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

// reach[a][b]: step b is ordered after step a by stream order and record -> wait edges.
std::vector<std::vector<bool>> reachability(const ExecutionPlan& p) {
  const size_t n = p.steps.size();
  std::vector<std::vector<size_t>> next(n);
  std::vector<int> last_on_stream(size_t(p.streams), -1);
  std::vector<int> record_of(size_t(p.events), -1);
  for (size_t i = 0; i < n; ++i) {
    const PlanStep& st = p.steps[i];
    if (last_on_stream[size_t(st.stream)] >= 0) next[size_t(last_on_stream[size_t(st.stream)])].push_back(i);
    last_on_stream[size_t(st.stream)] = int(i);
    if (st.kind == PlanStep::Kind::kRecord) record_of[size_t(st.event)] = int(i);
    if (st.kind == PlanStep::Kind::kWait && record_of[size_t(st.event)] >= 0)
      next[size_t(record_of[size_t(st.event)])].push_back(i);
  }
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t i = n; i-- > 0;)
    for (size_t j : next[i]) {
      reach[i][j] = true;
      for (size_t k = 0; k < n; ++k)
        if (reach[j][k]) reach[i][k] = true;
    }
  return reach;
}

std::vector<std::vector<int>> accesses(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m) {
  std::vector<std::vector<int>> acc(m.buffer_bytes.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].kind != PlanStep::Kind::kLaunch) continue;
    auto touch = [&](int b) {
      if (b >= 0) acc[size_t(b)].push_back(int(i));
    };
    for (ir::NodeId id : p.steps[i].ops) {
      touch(m.placement[size_t(id)].buffer);
      for (ir::NodeId q : g.producers(id)) touch(m.placement[size_t(q)].buffer);
    }
    touch(m.launch[i].input_scratch);
    for (int b : m.launch[i].step_buffers) touch(b);
    if (m.launch[i].residual.node != ir::kNoNode) touch(m.placement[size_t(m.launch[i].residual.node)].buffer);
  }
  return acc;
}

// Every pair of buffers whose regions overlap is ordered: all of one's accesses before the other's.
void expect_no_overlap_in_time(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m) {
  const auto reach = reachability(p);
  const auto acc = accesses(g, p, m);
  auto ordered = [&](size_t a, size_t b) {
    for (int x : acc[a])
      for (int y : acc[b])
        if (!reach[size_t(x)][size_t(y)]) return false;
    return true;
  };
  for (size_t a = 0; a < m.buffer_bytes.size(); ++a)
    for (size_t b = a + 1; b < m.buffer_bytes.size(); ++b) {
      const bool overlap = m.buffer_offset[a] < m.buffer_offset[b] + m.buffer_bytes[b] &&
                           m.buffer_offset[b] < m.buffer_offset[a] + m.buffer_bytes[a];
      if (!overlap) continue;
      EXPECT_FALSE(m.buffer_pinned[a] || m.buffer_pinned[b]) << g.name << ": a pinned buffer is shared";
      EXPECT_TRUE(ordered(a, b) || ordered(b, a))
          << g.name << ": buffers " << a << " and " << b << " share memory but may be live at the same time";
    }
}

Schedule schedule_for(const ir::Graph& g, Policy policy) {
  AnalyticCostModel model;
  OptimizeOptions o;
  o.policy = policy;
  o.max_part_size = 20;
  auto r = optimize(g, o, model);
  EXPECT_TRUE(r) << r.status().to_string();
  return r->schedule;
}

ExecutionPlan plan_for(const ir::Graph& g, Policy policy) {
  auto p = compile_plan(g, schedule_for(g, policy));
  EXPECT_TRUE(p);
  return *p;
}

TEST(MemoryPlan, TensorsThatMayBeLiveTogetherNeverShareMemory) {
  for (const char* name : {"inception_v3", "squeezenet", "googlenet", "nasnet", "randwire", "densenet121"}) {
    const ir::Graph g = *models::build_model(name);
    const std::string model = name;
    for (Policy policy : {Policy::kSequential, Policy::kGreedy, Policy::kOpara, Policy::kDpParallel}) {
      if (policy == Policy::kDpParallel && (model == "nasnet" || model == "randwire")) continue;  // slow on CPU
      const ExecutionPlan p = plan_for(g, policy);
      for (int batch : {1, 4}) {
        MemoryOptions o;
        o.config.batch = batch;
        auto m = plan_memory(g, p, o);
        ASSERT_TRUE(m) << m.status().to_string();
        expect_no_overlap_in_time(g, p, *m);
        EXPECT_LT(m->arena_bytes, m->no_reuse_bytes) << name << " " << policy_flag_name(policy);
      }
    }
  }
}

TEST(MemoryPlan, ConcatProducersWriteTheirSlicesOfTheConcatBuffer) {
  const ir::Graph g = testing::inception_block();
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->elided_concats, 1);
  const Placement& exit = m->placement[size_t(g.output())];
  int begin = 0;
  for (const ir::Term& term : g.node(g.output()).inputs) {
    const Placement& q = m->placement[size_t(term[0].node)];
    EXPECT_EQ(q.buffer, exit.buffer);
    EXPECT_EQ(q.begin, begin);
    EXPECT_EQ(q.channels, g.output_shape().c);
    begin += term[0].channels();
  }
}

// SqueezeNet's sequential schedule with each fire module's two expand convolutions merged, as IOS-Both
// chose on the H100: the merged launch writes its fire module's concatenation, which launches nothing
// (copying it cost two kernels per module, 12 % of the network at tf32).
Schedule with_adjacent_sibling_convs_merged(const ir::Graph& g, Schedule s, int& merges) {
  merges = 0;
  for (BlockSchedule& b : s.blocks) {
    std::vector<Stage> stages;
    for (const Stage& st : b.stages) {
      const bool after_one = !stages.empty() && stages.back().kind == StageKind::kConcurrent &&
                             stages.back().ops().size() == 1 && st.ops().size() == 1;
      const std::vector<ir::NodeId> pair =
          after_one ? std::vector<ir::NodeId>{stages.back().ops()[0], st.ops()[0]} : std::vector<ir::NodeId>{};
      if (after_one && can_merge(g, pair)) {
        stages.back() = Stage{StageKind::kMerge, {pair}};
        ++merges;
      } else {
        stages.push_back(st);
      }
    }
    b.stages = std::move(stages);
  }
  return s;
}

TEST(MemoryPlan, AMergedLaunchWritesTheConcatenationOfItsOutputsInPlace) {
  const ir::Graph g = *models::build_model("squeezenet");
  int merges = 0;
  const Schedule s = with_adjacent_sibling_convs_merged(g, schedule_for(g, Policy::kSequential), merges);
  ASSERT_GT(merges, 0);
  auto p = compile_plan(g, s);
  ASSERT_TRUE(p) << p.status().to_string();
  for (Layout layout : {Layout::kNHWC, Layout::kNCHW}) {
    MemoryOptions o;
    o.config.layout = layout;
    auto m = plan_memory(g, *p, o);
    ASSERT_TRUE(m) << m.status().to_string();
    expect_no_overlap_in_time(g, *p, *m);
    int merged_into_concat = 0;
    const std::vector<std::vector<ir::NodeId>> consumers = g.consumers();
    for (size_t i = 0; i < p->steps.size(); ++i) {
      const PlanStep& st = p->steps[i];
      if (st.kind != PlanStep::Kind::kLaunch || st.ops.size() < 2) continue;
      for (ir::NodeId c : consumers[size_t(st.ops[0])]) {
        const ir::Node& concat = g.node(c);
        if (!concat.is<ir::IdentityAttrs>() || concat.inputs.size() != st.ops.size()) continue;
        int begin = 0;
        for (size_t j = 0; j < st.ops.size(); ++j) {
          const Placement& q = m->placement[size_t(st.ops[j])];
          EXPECT_EQ(q.buffer, m->placement[size_t(c)].buffer) << concat.name;
          EXPECT_EQ(q.begin, m->placement[size_t(c)].begin + begin) << concat.name;
          begin += g.node(st.ops[j]).output_shape.c;
        }
        ++merged_into_concat;
      }
    }
    EXPECT_EQ(merged_into_concat, merges) << layout_name(layout);
    EXPECT_GE(m->elided_concats, merges) << layout_name(layout);
  }
}

TEST(MemoryPlan, DenseLayersReadTheirConcatenationsAsPrefixesOfOneSharedBuffer) {
  const ir::Graph g = testing::dense_block(4);
  for (Policy policy : {Policy::kSequential, Policy::kDpBoth, Policy::kOpara})
    for (int batch : {1, 4}) {
      const ExecutionPlan p = plan_for(g, policy);
      MemoryOptions o;
      o.config.batch = batch;
      auto m = plan_memory(g, p, o);
      ASSERT_TRUE(m) << m.status().to_string();
      EXPECT_EQ(m->shared_concat_buffers, 1);
      const ir::Node& last = g.node(g.output());
      const int shared = m->placement[size_t(last.inputs[0][0].node)].buffer;
      int begin = 0;
      for (const ir::Term& term : last.inputs) {  // stem, then every layer, side by side
        EXPECT_EQ(m->placement[size_t(term[0].node)].buffer, shared);
        EXPECT_EQ(m->placement[size_t(term[0].node)].begin, begin);
        begin += term[0].channels();
      }
      for (size_t i = 0; i < p.steps.size(); ++i)
        if (p.steps[i].kind == PlanStep::Kind::kLaunch && g.node(p.steps[i].ops[0]).inputs.size() > 1) {
          EXPECT_EQ(m->launch[i].input_scratch, -1) << g.node(p.steps[i].ops[0]).name << " gathers its input";
        }
      EXPECT_EQ(m->terms_in_place, m->concat_terms);
      EXPECT_EQ(m->concat_terms, 2 + 3 + 4 + 5);  // layers 2-4 and the exit
      expect_no_overlap_in_time(g, p, *m);
    }
}

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

// The measured cost model times each stage alone: it must not gather a concatenation the whole network
// reads in place (or the other way round), or its figures time copies the network never makes.
// Whether the plan's launch of `op` (a concatenation) copies nothing: its producers write in place.
bool elided(const ExecutionPlan& plan, const MemoryPlan& m, ir::NodeId op) {
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == PlanStep::Kind::kLaunch && plan.steps[i].ops == std::vector<ir::NodeId>{op})
      return m.launch[i].elided;
  ADD_FAILURE() << "op " << op << " is not launched alone by the plan";
  return false;
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

// The launches writing into a wider buffer than their own output (a concatenation's slice), counted
// separately for convolutions and for every other op.
struct SliceWriters {
  int convs = 0, others = 0;
};
SliceWriters slice_writers(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& m) {
  SliceWriters w;
  for (const PlanStep& st : plan.steps) {
    if (st.kind != PlanStep::Kind::kLaunch) continue;
    int channels = 0;
    for (ir::NodeId id : st.ops) channels += g.node(id).output_shape.c;
    if (m.placement[size_t(st.ops[0])].channels == channels) continue;
    (g.node(st.ops[0]).is<ir::ConvAttrs>() ? w.convs : w.others) += 1;
  }
  return w;
}

// The memory plans of one schedule at batch 1 with in-place and conv-copy concatenation writes.
std::pair<Expected<MemoryPlan>, Expected<MemoryPlan>> plans_both_ways(const ir::Graph& g, const ExecutionPlan& p,
                                                                      const std::string& precision,
                                                                      const std::string& layout) {
  MemoryOptions in_place, copy;
  in_place.config = *make_exec_config(precision, layout, 1);
  copy.config = *make_exec_config(precision, layout, 1, "conv-copy");
  return {plan_memory(g, p, in_place), plan_memory(g, p, copy)};
}

// conv-copy: in NHWC no convolution writes a strided slice (cuDNN would copy it in and out); pools
// (Inception V3's reduction blocks) still write theirs, and the concatenations copy the convolutions'.
TEST(MemoryPlan, ConvCopyKeepsConvolutionsOutOfStridedSlicesOnly) {
  const ir::Graph g = *models::build_model("inception_v3");
  const ExecutionPlan p = plan_for(g, Policy::kDpBoth);
  auto [a, b] = plans_both_ways(g, p, "tf32", "auto");
  ASSERT_TRUE(a && b);
  const SliceWriters before = slice_writers(g, p, *a), after = slice_writers(g, p, *b);
  EXPECT_GT(before.convs, 0);
  EXPECT_EQ(after.convs, 0);
  EXPECT_EQ(after.others, before.others);
  EXPECT_GT(after.others, 0);
  EXPECT_EQ(b->terms_in_place, a->terms_in_place - before.convs);
  EXPECT_LT(b->elided_concats, a->elided_concats);
  expect_no_overlap_in_time(g, p, *b);
}

// ... but where the slice is dense nothing changes: a convolution still writes a sum that is a whole
// buffer of its own, adding the other value (the fire module's bypass), and in NCHW at batch 1 every
// channel slice of one sample is dense.
TEST(MemoryPlan, ConvCopyChangesNothingWhereTheSliceIsDense) {
  const ir::Graph fire = testing::fire_module();
  MemoryOptions copy_nhwc;
  copy_nhwc.config = *make_exec_config("fp16", "nhwc", 1, "conv-copy");
  auto fused = plan_memory(fire, plan_for(fire, Policy::kSequential), copy_nhwc);
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->fused_sums, 1);
  const ir::Graph g = *models::build_model("inception_v3");
  const ExecutionPlan p = plan_for(g, Policy::kDpBoth);
  auto [a, b] = plans_both_ways(g, p, "fp16", "nchw");
  ASSERT_TRUE(a && b);
  EXPECT_GT(a->terms_in_place, 0);
  EXPECT_EQ(b->terms_in_place, a->terms_in_place);
}

TEST(MemoryPlan, AConcatenationReadOutOfPrefixOrderIsGathered) {
  ir::GraphBuilder gb("reordered", {8, 6, 6});
  gb.begin_block();
  const ir::Value a = gb.conv(gb.input(), ir::Conv(8));
  const ir::Value b = gb.conv(a, ir::Conv(8));
  const ir::Value c = gb.conv(b, ir::Conv(8));
  const ir::Value ab = gb.conv(ir::cat({a, b}), ir::Conv(8));
  const ir::Value bac = gb.conv(ir::cat({b, a, c}), ir::Conv(8));  // shares a and b, in another order
  gb.end_block(gb.identity(ir::cat({ab, bac})));
  const ir::Graph g = *gb.build();
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shared_concat_buffers, 1);
  EXPECT_FALSE(reads_in_place(g, ab.node, m->placement, ExecConfig{}));
  EXPECT_TRUE(reads_in_place(g, bac.node, m->placement, ExecConfig{}));
  EXPECT_EQ(m->terms_in_place, 3 + 2);  // b, a, c read in place; the output concat's two terms elided
  expect_no_overlap_in_time(g, p, *m);
}

TEST(MemoryPlan, APrefixGroupKeepsOnlyTheProducersWhoseSlicesAreAligned) {
  // fp16, 2x2 pixels: a slice starting at channel b is 8b bytes in, 16-byte aligned only for even b.
  // Stem (8 channels) at 0 and layer 1 (3) at 8 are aligned; layer 2 would start at 11.
  const ir::Graph g = testing::dense_block(3, /*growth=*/3, /*channels=*/8, /*size=*/2);
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  MemoryOptions o;
  o.config = *make_exec_config("fp16", "nchw", 1);
  auto m = plan_memory(g, p, o);
  ASSERT_TRUE(m) << m.status().to_string();
  for (size_t id = 1; id < g.nodes.size(); ++id) {
    const Placement& q = m->placement[id];
    EXPECT_TRUE(slice_aligned(o.config, q.channels, q.begin, g.nodes[id].output_shape)) << g.nodes[id].name;
  }
  EXPECT_EQ(m->shared_concat_buffers, 1);
  EXPECT_EQ(m->terms_in_place, 2);  // layer 2 reads stem + layer 1 in place; layer 3 and the exit gather
  EXPECT_EQ(m->concat_terms, 2 + 3 + 4);
  expect_no_overlap_in_time(g, p, *m);
}

TEST(MemoryPlan, ASumIsWrittenByTheConvolutionLaunchedAfterTheOtherValue) {
  const ir::Graph g = testing::fire_module();  // out = identity(cat(e3, e1) + bypass conv)
  const ir::NodeId cat = 4, bypass = 5;
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->fused_sums, 1);
  EXPECT_EQ(m->elided_concats, 2);  // the expand concat, and the sum: the bypass conv writes it
  EXPECT_EQ(m->placement[size_t(bypass)].buffer, m->placement[size_t(g.output())].buffer);
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == PlanStep::Kind::kLaunch && p.steps[i].ops == std::vector<ir::NodeId>{bypass}) {
      EXPECT_EQ(m->launch[i].residual, (ir::Value{cat, 0, 16}));
    }
  expect_no_overlap_in_time(g, p, *m);
}

TEST(MemoryPlan, ASumIsGatheredWhenItsValuesAreProducedConcurrently) {
  const ir::Graph g = testing::fire_module();
  const ExecutionPlan p =
      compile_stages({Stage{StageKind::kConcurrent, {{1, 2, 3, 4}, {5}}}, Stage{StageKind::kConcurrent, {{6}}}});
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->fused_sums, 0);
  EXPECT_NE(m->placement[size_t(g.output())].buffer, m->placement[5].buffer);
  for (const LaunchMemory& lm : m->launch) EXPECT_EQ(lm.residual.node, ir::kNoNode);
}

TEST(MemoryPlan, FusedSumsKeepEveryPlanRaceFree) {
  for (const char* name : {"squeezenet", "nasnet"}) {
    const ir::Graph g = *models::build_model(name);
    for (Policy policy : {Policy::kSequential, Policy::kGreedy, Policy::kOpara}) {
      const ExecutionPlan p = plan_for(g, policy);
      auto m = plan_memory(g, p, MemoryOptions{});
      ASSERT_TRUE(m);
      if (policy == Policy::kSequential) {
        EXPECT_GT(m->fused_sums, 0) << name;
      }
      const auto reach = reachability(p);
      std::vector<int> step_of(g.nodes.size(), -1);
      for (size_t i = 0; i < p.steps.size(); ++i)
        for (ir::NodeId id : p.steps[i].ops) step_of[size_t(id)] = int(i);
      for (size_t i = 0; i < p.steps.size(); ++i) {
        const ir::NodeId z = m->launch[i].residual.node;
        if (z == ir::kNoNode) continue;
        ASSERT_GE(step_of[size_t(z)], 0);
        EXPECT_TRUE(reach[size_t(step_of[size_t(z)])][i])
            << name << " " << policy_flag_name(policy) << ": a fused sum reads a value not yet complete";
      }
      expect_no_overlap_in_time(g, p, *m);
    }
  }
}

TEST(MemoryPlan, WithoutReuseOrWithEverythingKeptNothingIsShared) {
  const ir::Graph g = *models::build_model("inception_v3");
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  MemoryOptions no_reuse;
  no_reuse.reuse = false;
  MemoryOptions keep;
  keep.keep_all = true;
  for (const MemoryOptions& o : {no_reuse, keep}) {
    auto m = plan_memory(g, p, o);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->arena_bytes, m->no_reuse_bytes);
  }
}

TEST(MemoryPlan, ConcurrentPlansStayWithinHalfAgainTheSequentialPeak) {
  for (const char* name : {"inception_v3", "squeezenet", "googlenet"}) {
    const ir::Graph g = *models::build_model(name);
    auto seq = plan_memory(g, plan_for(g, Policy::kSequential), MemoryOptions{});
    auto both = plan_memory(g, plan_for(g, Policy::kDpBoth), MemoryOptions{});
    ASSERT_TRUE(seq && both);
    EXPECT_LE(double(both->arena_bytes), 1.5 * double(seq->arena_bytes)) << name;
  }
}

TEST(MemoryPlan, ReadsInPlaceUnlessTheOpNeedsAGatheredInput) {
  const ir::Graph g = testing::fire_module();
  const ExecutionPlan p = plan_for(g, Policy::kSequential);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  for (size_t id = 1; id < g.nodes.size(); ++id)
    if (g.nodes[id].is<ir::ConvAttrs>()) {
      EXPECT_TRUE(reads_in_place(g, ir::NodeId(id), m->placement, ExecConfig{.batch = 4})) << g.nodes[id].name;
    }
}

}  // namespace
}  // namespace ios::sched

namespace ios::sched {
namespace {

// input -> a -> a2 -> a3 on stream 0; input -> b on stream 1, joined at the end.
struct TwoStreams {
  ir::Graph g;
  ir::NodeId a, a2, a3, b;
  ExecutionPlan plan;
};

TwoStreams two_streams() {
  ir::GraphBuilder gb("two_streams", {8, 16, 16});
  gb.begin_block();
  const ir::Value a = gb.conv(gb.input(), ir::Conv(8).kernel(3).pad(1));
  const ir::Value a2 = gb.conv(a, ir::Conv(8).kernel(3).pad(1));
  const ir::Value a3 = gb.conv(a2, ir::Conv(8).kernel(3).pad(1));
  const ir::Value b = gb.conv(gb.input(), ir::Conv(8).kernel(3).pad(1));
  gb.end_block(gb.identity(ir::add({a3, b})));
  TwoStreams t{*gb.build(), a.node, a2.node, a3.node, b.node, {}};
  using K = PlanStep::Kind;
  auto& p = t.plan;
  p.streams = 2;
  p.events = 2;
  p.steps = {{K::kRecord, 0, 0, {}, -1},     {K::kWait, 1, 0, {}, -1},        {K::kLaunch, 1, -1, {t.b}, -1},
             {K::kLaunch, 0, -1, {t.a}, -1}, {K::kLaunch, 0, -1, {t.a2}, -1}, {K::kLaunch, 0, -1, {t.a3}, -1},
             {K::kRecord, 1, 1, {}, -1},     {K::kWait, 0, 1, {}, -1},        {K::kLaunch, 0, -1, {t.g.output()}, -1}};
  return t;
}

bool overlap(const MemoryPlan& m, int x, int y) {
  return m.buffer_offset[size_t(x)] < m.buffer_offset[size_t(y)] + m.buffer_bytes[size_t(y)] &&
         m.buffer_offset[size_t(y)] < m.buffer_offset[size_t(x)] + m.buffer_bytes[size_t(x)];
}

TEST(MemoryPlan, SameStreamOrderLetsABufferBeReusedButNeverByAConcurrentStream) {
  const TwoStreams t = two_streams();
  auto m = plan_memory(t.g, t.plan, MemoryOptions{});
  ASSERT_TRUE(m) << m.status().to_string();
  const auto buf = [&](ir::NodeId id) { return m->placement[size_t(id)].buffer; };
  EXPECT_TRUE(overlap(*m, buf(t.a), buf(t.a3))) << "a is dead once a2 ran on the same stream";
  for (ir::NodeId id : {t.a, t.a2, t.a3})
    EXPECT_FALSE(overlap(*m, buf(id), buf(t.b))) << t.g.node(id).name << " runs concurrently with b";
  EXPECT_LT(m->arena_bytes, m->no_reuse_bytes);
}

}  // namespace
}  // namespace ios::sched
