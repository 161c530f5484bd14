// Dataflow execution: plans without stage barriers, and the dependency graph the runtime's CUDA graph
// is built from — every data and memory-reuse conflict ordered, no edge that is not one, checked by
// reachability against an independent reading of the memory plan.
#include "scheduler/dataflow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>

#include "models/models.h"
#include "schedule_cases.h"
#include "scheduler/barriers.h"
#include "scheduler/policies.h"
#include "scheduler/timing_devices.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

using schedule_cases::one_op_stages;

// after[a][b]: launch step b is ordered after step a by the dataflow graph's edges.
std::vector<std::vector<bool>> closure(const DataflowGraph& d) {
  const size_t n = d.deps.size();
  std::vector<std::vector<bool>> after(n, std::vector<bool>(n, false));
  for (size_t b = 0; b < n; ++b)
    for (int a : d.deps[b]) {
      EXPECT_LT(size_t(a), b) << "an edge from a later step";
      after[size_t(a)][b] = true;
      for (size_t x = 0; x < n; ++x)
        if (after[x][size_t(a)]) after[x][b] = true;
    }
  return after;
}

std::vector<int> launch_of(const ir::Graph& g, const ExecutionPlan& p) {
  std::vector<int> step(g.nodes.size(), -1);
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (ir::NodeId id : p.steps[i].ops) step[size_t(id)] = int(i);
  return step;
}

// The launches whose output a launch reads: its producers', looking through concatenations that launch
// nothing (their producers wrote in place).
void effective_producers(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m, const std::vector<int>& step,
                         ir::NodeId id, std::vector<int>& out) {
  for (ir::NodeId q : g.producers(id)) {
    const int s = step[size_t(q)];
    if (s < 0) continue;  // the graph input
    if (m.launch[size_t(s)].elided) {
      effective_producers(g, p, m, step, q, out);
    } else {
      out.push_back(s);
    }
  }
}

// Buffers a launch touches, read the way the memory plan's own test reads them.
std::vector<int> buffers_touched(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m, size_t i) {
  std::vector<int> out;
  for (ir::NodeId id : p.steps[i].ops) {
    out.push_back(m.placement[size_t(id)].buffer);
    for (ir::NodeId q : g.producers(id)) out.push_back(m.placement[size_t(q)].buffer);
  }
  out.push_back(m.launch[i].input_scratch);
  for (int b : m.launch[i].step_buffers) out.push_back(b);
  if (m.launch[i].residual.node != ir::kNoNode) out.push_back(m.placement[size_t(m.launch[i].residual.node)].buffer);
  return out;
}

bool share_memory(const MemoryPlan& m, int a, int b) {
  if (a < 0 || b < 0 || a == b) return false;
  return m.buffer_offset[size_t(a)] < m.buffer_offset[size_t(b)] + m.buffer_bytes[size_t(b)] &&
         m.buffer_offset[size_t(b)] < m.buffer_offset[size_t(a)] + m.buffer_bytes[size_t(a)];
}

void expect_every_conflict_ordered(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m,
                                   const DataflowGraph& d, const std::string& what) {
  const auto after = closure(d);
  const std::vector<int> step = launch_of(g, p);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].kind != PlanStep::Kind::kLaunch || m.launch[i].elided) continue;
    std::vector<int> producers;
    for (ir::NodeId id : p.steps[i].ops) effective_producers(g, p, m, step, id, producers);
    if (const ir::NodeId r = m.launch[i].residual.node; r != ir::kNoNode) {
      if (m.launch[size_t(step[size_t(r)])].elided) {
        effective_producers(g, p, m, step, r, producers);
      } else {
        producers.push_back(step[size_t(r)]);
      }
    }
    for (int s : producers)
      EXPECT_TRUE(after[size_t(s)][i]) << what << ": step " << i << " may run before its producer, step " << s;
    // Memory reuse: an earlier launch touching a buffer that shares memory with one this launch touches.
    const std::vector<int> mine = buffers_touched(g, p, m, i);
    for (size_t j = 0; j < i; ++j) {
      if (p.steps[j].kind != PlanStep::Kind::kLaunch || m.launch[j].elided) continue;
      for (int a : buffers_touched(g, p, m, j))
        for (int b : mine)
          EXPECT_TRUE(!share_memory(m, a, b) || after[j][i])
              << what << ": steps " << j << " and " << i << " reuse memory without an edge";
    }
  }
}

void expect_every_edge_a_conflict(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m,
                                  const DataflowGraph& d, const std::string& what) {
  const auto access = launch_accesses(g, p, m);
  auto overlap = [&](const std::vector<Region>& x, const std::vector<Region>& y) {
    for (const Region& a : x)
      for (const Region& b : y)
        if (regions_overlap(a, b, m)) return true;
    return false;
  };
  for (size_t i = 0; i < d.deps.size(); ++i)
    for (int j : d.deps[i]) {
      const LaunchAccess &a = access[size_t(j)], &b = access[i];
      EXPECT_TRUE(overlap(a.writes, b.reads) || overlap(a.writes, b.writes) || overlap(a.reads, b.writes))
          << what << ": edge " << j << " -> " << i << " orders launches that share no memory";
    }
}

ExecutionPlan plan_for(const ir::Graph& g, Policy policy, ExecMode mode) {
  AnalyticCostModel model;
  OptimizeOptions o;
  o.policy = policy;
  o.max_part_size = 12;
  auto r = optimize(g, o, model);
  EXPECT_TRUE(r) << r.status().to_string();
  auto p = compile_plan(g, r->schedule, mode);
  EXPECT_TRUE(p) << p.status().to_string();
  return *p;
}

TEST(Dataflow, EdgesAreExactlyTheDataAndMemoryReuseConflictsOnRandomGraphs) {
  std::vector<ir::Graph> graphs = {testing::inception_block(), testing::fire_module(),
                                   *models::build_model("squeezenet")};
  for (uint64_t seed : {3, 4, 5}) {
    models::ModelOptions o;
    o.randwire_seed = seed;
    graphs.push_back(*models::build_model("randwire", o));
  }
  for (const ir::Graph& g : graphs)
    for (Policy policy : {Policy::kSequential, Policy::kGreedy, Policy::kOpara, Policy::kDpMerge})
      for (ExecMode mode : {ExecMode::kStaged, ExecMode::kDataflow})
        for (int batch : {1, 2}) {
          const ExecutionPlan p = plan_for(g, policy, mode);
          MemoryOptions mo;
          mo.config.batch = batch;
          auto m = plan_memory(g, p, mo);
          ASSERT_TRUE(m) << m.status().to_string();
          auto d = dataflow_graph(g, p, *m);
          ASSERT_TRUE(d) << d.status().to_string();
          const std::string what = g.name + " " + policy_flag_name(policy) + " " + exec_mode_name(mode);
          expect_every_conflict_ordered(g, p, *m, *d, what);
          expect_every_edge_a_conflict(g, p, *m, *d, what);
        }
}

TEST(Dataflow, ConcurrentBranchesWritingOneConcatAreNotOrdered) {
  const ir::Graph g = testing::inception_block();  // four branches written into one concat buffer
  const ExecutionPlan p = plan_for(g, Policy::kGreedy, ExecMode::kDataflow);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  auto d = dataflow_graph(g, p, *m);
  ASSERT_TRUE(d);
  const auto after = closure(*d);
  const std::vector<int> step = launch_of(g, p);
  int unordered = 0;
  for (const ir::Term& a : g.node(g.output()).inputs)
    for (const ir::Term& b : g.node(g.output()).inputs) {
      const int x = step[size_t(a[0].node)], y = step[size_t(b[0].node)];
      unordered += x != y && !after[size_t(x)][size_t(y)] && !after[size_t(y)][size_t(x)];
    }
  EXPECT_GT(unordered, 0) << "the branch ends share the concat buffer but write disjoint channels";
}

// Whether plan step b runs after step a: stream order and record -> wait edges, searched forwards.
bool plan_orders(const ExecutionPlan& p, size_t a, size_t b) {
  std::vector<bool> seen(p.steps.size(), false);
  std::vector<size_t> todo = {a};
  while (!todo.empty()) {
    const size_t x = todo.back();
    todo.pop_back();
    if (x == b) return true;
    for (size_t y = x + 1; y < p.steps.size(); ++y) {
      const PlanStep &from = p.steps[x], &to = p.steps[y];
      const bool edge = to.stream == from.stream || (from.kind == PlanStep::Kind::kRecord &&
                                                     to.kind == PlanStep::Kind::kWait && to.event == from.event);
      if (edge && !seen[y]) {
        seen[y] = true;
        todo.push_back(y);
      }
    }
  }
  return false;
}

TEST(Dataflow, StagedSchedulesLoseTheirBarriersInDataflowPlans) {
  // Inception block: 1 = 1x1 branch, 2 -> 3 and 4 -> 5 -> 6 the 3x3 chains, 7 -> 8 pool branch, 9 concat.
  const ir::Graph g = testing::inception_block();
  Schedule s = sequential_schedule(g);
  ASSERT_EQ(s.blocks.size(), 1u);
  s.blocks[0].stages = {Stage{StageKind::kConcurrent, {{1}, {2}, {4}, {7}}},
                        Stage{StageKind::kConcurrent, {{8}, {3}, {5}}}, Stage{StageKind::kConcurrent, {{6}}},
                        Stage{StageKind::kConcurrent, {{9}}}};
  auto staged = compile_plan(g, s, ExecMode::kStaged);
  auto dataflow = compile_plan(g, s, ExecMode::kDataflow);
  ASSERT_TRUE(staged && dataflow) << staged.status().to_string() << dataflow.status().to_string();
  EXPECT_EQ(dataflow->mode, ExecMode::kDataflow);
  EXPECT_EQ(staged->launches(), dataflow->launches());
  auto runs_after = [&](const ExecutionPlan& p, ir::NodeId later, ir::NodeId earlier) {
    const std::vector<int> step = launch_of(g, p);
    return plan_orders(p, size_t(step[size_t(earlier)]), size_t(step[size_t(later)]));
  };
  // Staged: the second stage's 3x3 waits for the first stage's unrelated 1x1 and pool.
  EXPECT_TRUE(runs_after(*staged, 3, 1) && runs_after(*staged, 3, 7));
  // Dataflow: only for its producer (and what precedes it on its own stream).
  EXPECT_TRUE(runs_after(*dataflow, 3, 2));
  EXPECT_FALSE(runs_after(*dataflow, 3, 1) || runs_after(*dataflow, 3, 7) || runs_after(*dataflow, 5, 7));
  EXPECT_TRUE(runs_after(*dataflow, 9, 6) && runs_after(*dataflow, 9, 8));
}

TEST(Dataflow, BarrierStagesWaitForEveryEarlierStageInThePlanAndTheGraph) {
  const ir::Graph g = testing::inception_block();
  Schedule s = sequential_schedule(g);
  s.blocks[0].stages = {Stage{StageKind::kConcurrent, {{1}, {2}, {4}, {7}}},
                        Stage{StageKind::kConcurrent, {{8}, {3}, {5}}}, Stage{StageKind::kConcurrent, {{6}}},
                        Stage{StageKind::kConcurrent, {{9}}}};
  s.dataflow_barriers = {2};  // stage 2 (op 6) waits for stages 0 and 1; stage 1 still only for its producers
  auto p = compile_plan(g, s, ExecMode::kDataflow);
  ASSERT_TRUE(p) << p.status().to_string();
  auto m = plan_memory(g, *p, MemoryOptions{});
  ASSERT_TRUE(m);
  auto d = dataflow_graph(g, *p, *m);
  ASSERT_TRUE(d);
  const auto after = closure(*d);
  const std::vector<int> step = launch_of(g, *p);
  auto in_graph = [&](ir::NodeId earlier, ir::NodeId later) {
    return bool(after[size_t(step[size_t(earlier)])][size_t(step[size_t(later)])]);
  };
  for (ir::NodeId earlier : {1, 2, 3, 4, 5, 7, 8}) {
    EXPECT_TRUE(in_graph(earlier, 6)) << "op " << earlier;
    EXPECT_TRUE(plan_orders(*p, size_t(step[size_t(earlier)]), size_t(step[6]))) << "eager plan, op " << earlier;
  }
  // Stage 1 keeps no barrier (the eager plan also orders each stream's launches; the graph does not).
  EXPECT_FALSE(in_graph(1, 3) || in_graph(7, 3) || in_graph(7, 5) || in_graph(1, 8));
  expect_every_conflict_ordered(g, *p, *m, *d, "barrier before stage 2");
}

TEST(Dataflow, DataflowBarriersSurviveTheScheduleFileAndBadOnesAreNamed) {
  const ir::Graph g = testing::inception_block();
  Schedule s = one_op_stages(g);
  s.dataflow_barriers = {2, 5};
  auto back = schedule_from_json(g, schedule_to_json(g, s));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->dataflow_barriers, s.dataflow_barriers);
  const std::string listing = describe_schedule(g, *back);
  EXPECT_NE(listing.find("| block 0 stage 2 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("  block 0 stage 3 "), std::string::npos) << listing;
  for (std::vector<int> bad : {std::vector<int>{0}, {5, 2}, {9}}) {
    s.dataflow_barriers = bad;
    const Status v = validate(g, s);
    ASSERT_FALSE(v);
    EXPECT_NE(v.message().find("dataflow barrier"), std::string::npos) << v.to_string();
  }
}

TEST(Dataflow, EveryLaunchWithWorkHasALaneAndLaunchesSharingOneAreOrdered) {
  for (uint64_t seed : {1, 2}) {
    models::ModelOptions o;
    o.randwire_seed = seed;
    const ir::Graph g = *models::build_model("randwire", o);
    const ExecutionPlan p = plan_for(g, Policy::kGreedy, ExecMode::kDataflow);
    auto m = plan_memory(g, p, MemoryOptions{});
    ASSERT_TRUE(m);
    std::vector<LaunchResources> resources(p.steps.size());
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].kind == PlanStep::Kind::kLaunch) resources[i] = LaunchResources{1024 * (i % 3), i % 7 == 0};
    auto d = dataflow_graph(g, p, *m, resources);
    ASSERT_TRUE(d);
    const auto after = closure(*d);
    size_t lanes_used = 0;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const bool runs_work = p.steps[i].kind == PlanStep::Kind::kLaunch && !resources[i].empty;
      EXPECT_EQ(d->lane[i] >= 0, runs_work) << "step " << i;
      if (d->lane[i] < 0) continue;
      lanes_used = std::max(lanes_used, size_t(d->lane[i]) + 1);
      EXPECT_GE(d->lane_bytes[size_t(d->lane[i])], resources[i].workspace_bytes);
      for (size_t j = 0; j < i; ++j)
        if (d->lane[j] == d->lane[i]) {
          EXPECT_TRUE(after[j][i]) << "steps " << j << " and " << i << " share a lane concurrently";
        }
    }
    EXPECT_EQ(lanes_used, d->lane_bytes.size());
    EXPECT_GT(lanes_used, 1u) << "a greedy RandWire plan runs convolutions concurrently";
    EXPECT_LE(lanes_used, kMaxLanes);
  }
}

TEST(Dataflow, ResourcesForAnotherPlanAreRejected) {
  const ir::Graph g = testing::diamond();
  const ExecutionPlan p = plan_for(g, Policy::kSequential, ExecMode::kDataflow);
  auto m = plan_memory(g, p, MemoryOptions{});
  ASSERT_TRUE(m);
  auto d = dataflow_graph(g, p, *m, std::vector<LaunchResources>(p.steps.size() + 1));
  ASSERT_FALSE(d);
  EXPECT_NE(d.status().message().find("resources for"), std::string::npos) << d.status().to_string();
}

TEST(Dataflow, ExecModeNamesParseAndUnknownOnesAreRejected) {
  EXPECT_EQ(*parse_exec_mode("staged"), ExecMode::kStaged);
  EXPECT_EQ(*parse_exec_mode("dataflow"), ExecMode::kDataflow);
  EXPECT_EQ(*parse_exec_mode("dataflow-ordered"), ExecMode::kDataflowOrdered);
  auto bad = parse_exec_mode("eager");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("'eager'"), std::string::npos);
}

}  // namespace
}  // namespace ios::sched
