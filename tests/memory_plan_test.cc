// The memory plan: no two tensors that may be live at once share memory (checked against an
// independent reachability over the plan), concatenations are elided, reuse shrinks the arena.
#include "scheduler/memory_plan.h"

#include <gtest/gtest.h>

#include "memory_plan_checks.h"
#include "models/models.h"
#include "scheduler/merge.h"
#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

using namespace memory_checks;

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
