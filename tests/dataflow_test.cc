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
#include "scheduler/barriers.h"
#include "scheduler/policies.h"
#include "scheduler/timing_devices.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

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

// The inception block's ops 1..9, one stage each, in id order.
Schedule one_op_stages(const ir::Graph& g) {
  Schedule s = sequential_schedule(g);
  s.blocks[0].stages.clear();
  for (ir::NodeId id = 1; id <= 9; ++id) s.blocks[0].stages.push_back(Stage{StageKind::kConcurrent, {{id}}});
  return s;
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

TEST(Dataflow, PlaceBarriersFindsTheCheapestCutsOfEverySegmentation) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  const int n = 9, longest = 3;
  // A segment of stages [a, b) costs a pseudo-random amount, cheaper or dearer than its stages alone.
  auto cost = [](int a, int b) { return 1.0 + double((a * 7919 + b * 104729) % 97) / 50.0; };
  auto first_op = [](const std::vector<Stage>& seg) { return int(seg.front().groups[0][0]) - 1; };
  TableCostModel model([&](const ir::Graph&, const Stage& st) { return cost(int(st.groups[0][0]) - 1, 0); },
                       [&](const ir::Graph&, const std::vector<Stage>& seg) {
                         const int a = first_op(seg);
                         return cost(a, a + int(seg.size()));
                       });
  auto placed = place_barriers(g, s, model, BarrierOptions{longest, 1});
  ASSERT_TRUE(placed) << placed.status().to_string();
  // Brute force: every set of cuts between the 9 stages whose segments are at most 3 long.
  double best = 1e9;
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    double total = 0;
    int start = 0;
    bool fits = true;
    for (int end = 1; end <= n; ++end)
      if (end == n || (cuts >> (end - 1) & 1)) {
        fits &= end - start <= longest;
        total += cost(start, end);
        start = end;
      }
    if (fits) best = std::min(best, total);
  }
  EXPECT_DOUBLE_EQ(placed->dataflow_ms, best);
  double chosen = 0;
  int start = 0;
  std::vector<int> ends = placed->barriers;
  ends.push_back(n);
  for (int end : ends) {
    EXPECT_LE(end - start, longest);
    chosen += cost(start, end);
    start = end;
  }
  EXPECT_DOUBLE_EQ(chosen, best) << "the barriers must cut the schedule into the segments priced";
  EXPECT_EQ(placed->segments, 3 * n - 3);  // lengths 1..3 ending at each stage
}

TEST(Dataflow, PlaceBarriersKeepsEveryBarrierWhenTheModelSeesNoOverlap) {
  const ir::Graph g = testing::inception_block();
  Schedule s = one_op_stages(g);
  // Segments cost the sum of their stages, added in another order than the DP adds them (rounding).
  TableCostModel model([](const ir::Graph&, const Stage& st) { return 0.1 * double(st.groups[0][0]) / 3.0; });
  auto placed = place_barriers(g, s, model, BarrierOptions{4, 1});
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_NEAR(placed->dataflow_ms, placed->barriers_ms, 1e-12);
  s.dataflow_barriers = placed->barriers;
  EXPECT_TRUE(validate(g, s));
}

TEST(Dataflow, PlaceBarriersDropsABarrierOnlyWhenTheSegmentWinsByTheMargin) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  // Every stage 1 ms; two stages without their barrier 1.9 ms (5 % less), longer segments no better.
  TableCostModel model([](const ir::Graph&, const Stage&) { return 1.0; },
                       [](const ir::Graph&, const std::vector<Stage>& seg) {
                         return seg.size() == 1 ? 1.0 : 0.95 * double(seg.size());
                       });
  auto eager = place_barriers(g, s, model, BarrierOptions{2, 1, 0.0});
  auto careful = place_barriers(g, s, model, BarrierOptions{2, 1, 0.06});
  ASSERT_TRUE(eager && careful);
  EXPECT_EQ(eager->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(eager->dataflow_ms, 4 * 1.9 + 1.0);
  EXPECT_EQ(careful->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_DOUBLE_EQ(careful->dataflow_ms, 9.0);
  EXPECT_FALSE(place_barriers(g, s, model, BarrierOptions{2, 1, -0.1}));
}

// Every stage 1 ms; two stages without their barrier 1.9 ms, longer segments no better, so the segment
// DP (segments of 2) keeps the barriers {2, 4, 6, 8} and leaves out {1, 3, 5, 7}. `penalty` adds what the whole network
// loses per missing barrier.
struct PairsModel {
  std::map<int, double> penalty;
  TableCostModel model{
      [](const ir::Graph&, const Stage&) { return 1.0; },
      [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 1 ? 1.0 : 0.95 * double(seg.size()); },
      [this](const std::vector<int>& barriers) { return network(barriers); }};
  double network(const std::vector<int>& barriers) const {
    double ms = 0;
    int start = 0;
    std::vector<int> ends = barriers;
    ends.push_back(9);
    for (int end : ends) ms += end - start == 2 ? 1.9 : double(end - start), start = end;  // pairs gain only
    for (const auto& [cut, extra] : penalty)
      if (!std::binary_search(barriers.begin(), barriers.end(), cut)) ms += extra;
    return ms;
  }
};

Expected<BarrierRefinement> placed_and_refined(const ir::Graph& g, const Schedule& s, CostModel& model,
                                               RefineOptions options = {}) {
  ASSIGN_OR_RETURN(BarrierPlacement placed, place_barriers(g, s, model, BarrierOptions{2, 1}));
  EXPECT_EQ(placed.barriers, (std::vector<int>{2, 4, 6, 8}));
  return refine_barriers(g, s, model, placed, options);
}

TEST(Dataflow, RefineBarriersRestoresABarrierTheWholeNetworkNeeds) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.5}};  // stages 2 and 3 overlap well alone, badly between their neighbours
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 3, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, m.network(refined->barriers));
  EXPECT_DOUBLE_EQ(refined->placed_ms, 4 * 1.9 + 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(refined->every_barrier_ms, 9.0);
  // One barrier out, then the other two improving ones at once.
  EXPECT_EQ(refined->passes, 2);
}

TEST(Dataflow, RefineBarriersKeepsEveryBarrierUnlessTheNetworkRunsFasterWithout) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{1, 0.2}, {3, 0.2}, {5, 0.2}, {7, 0.2}};
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, 9.0);
  EXPECT_EQ(refined->passes, 1);
}

TEST(Dataflow, RefineBarriersDropsEveryBarrierWhenTheWholeNetworkOverlapsBestWithout) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  // Overlaps across many stages that no segment of 2 can see: only the set without barriers shows them.
  TableCostModel model([](const ir::Graph&, const Stage&) { return 1.0; },
                       [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 2 ? 1.9 : 1.0; },
                       [&](const std::vector<int>& barriers) { return barriers.empty() ? 8.0 : m.network(barriers); });
  auto refined = placed_and_refined(g, s, model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_TRUE(refined->barriers.empty());
  EXPECT_DOUBLE_EQ(refined->measured_ms, 8.0);
}

TEST(Dataflow, RefineBarriersTriesEveryImprovingToggleAtOnce) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{1, 0.45}, {5, 0.25}};  // the first pass removes one barrier, the next the other one too
  auto refined = placed_and_refined(g, s, m.model, RefineOptions{2, 24, 0.005, 1});
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{1, 2, 4, 5, 6, 8}));
  EXPECT_EQ(refined->passes, 2);
}

// A GPU of its own with `inner`'s figures, counting the segments it was asked.
class DeviceModel : public CostModel {
 public:
  DeviceModel(CostModel& inner, std::string device) : inner_(inner), device_(std::move(device)) {}
  std::string name() const override { return "device"; }
  std::string timing_device() const override { return device_; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int batch) override {
    return inner_.stage_latency_ms(g, st, batch);
  }
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<Stage>>& segments,
                                                     int batch) override {
    segments_asked += int64_t(segments.size());
    return inner_.segment_latencies_ms(g, segments, batch);
  }
  // Its figures `slower` times the inner model's: another GPU of the same model, a little slower.
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override {
    sets_asked += int64_t(barrier_sets.size());
    requests.push_back(barrier_sets);
    ASSIGN_OR_RETURN(std::vector<double> ms, inner_.network_latencies_ms(g, s, barrier_sets, batch));
    for (double& x : ms) x *= slower;
    if (answers_short && !ms.empty()) ms.pop_back();
    return ms;
  }
  std::atomic<int64_t> segments_asked{0};
  int64_t sets_asked = 0;
  std::vector<std::vector<std::vector<int>>> requests;
  double slower = 1;
  bool answers_short = false;  // one latency fewer than the sets asked: a broken model

 private:
  CostModel& inner_;
  std::string device_;
};

TEST(TimingDevices, OnePerDeviceKeepsEachGpusFirstModelAndEveryModelWithoutADevice) {
  TableCostModel table([](const ir::Graph&, const Stage&) { return 1.0; });
  DeviceModel a0(table, "cuda:0"), a1(table, "cuda:0"), b(table, "cuda:1");
  EXPECT_EQ(one_per_device({&a0, &a1, &b, &table, &table}), (std::vector<CostModel*>{&a0, &b, &table, &table}));
}

TEST(TimingDevices, ChunksCoverTheRangeInOrderWithSizesDifferingByOneAtMost) {
  for (size_t n : {0, 1, 3, 10, 11}) {
    const std::vector<Chunk> chunks = chunks_of(n, 4);
    EXPECT_EQ(chunks.size(), std::min<size_t>(n, 4)) << n;
    size_t next = 0, smallest = n, largest = 0;
    for (const Chunk& c : chunks) {
      EXPECT_EQ(c.begin, next) << n;
      next = c.end;
      smallest = std::min(smallest, c.size()), largest = std::max(largest, c.size());
    }
    EXPECT_EQ(next, n);
    if (!chunks.empty()) {
      EXPECT_LE(largest - smallest, 1u) << n;
    }
  }
}

TEST(TimingDevices, PlaceBarriersOnTwoGpusTimesEachSegmentOnceAndPlacesAsOneGpu) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1"), sibling(m.model, "cuda:1");
  auto one = place_barriers(g, s, m.model, BarrierOptions{2, 1});
  auto two = place_barriers(g, s, std::vector<CostModel*>{&gpu0, &gpu1, &sibling}, BarrierOptions{2, 1});
  ASSERT_TRUE(one && two);
  EXPECT_EQ(two->barriers, one->barriers);
  EXPECT_DOUBLE_EQ(two->dataflow_ms, one->dataflow_ms);
  EXPECT_EQ(gpu0.segments_asked + gpu1.segments_asked, one->segments);
  EXPECT_GT(gpu0.segments_asked, 0);
  EXPECT_GT(gpu1.segments_asked, 0);
  EXPECT_EQ(sibling.segments_asked, 0) << "a second model on one GPU would time beside the first";
}

TEST(TimingDevices, RefineBarriersOnTwoGpusComparesEachSetWithTheCurrentOneTimedOnItsGpu) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.5}};
  auto placed = place_barriers(g, s, m.model, BarrierOptions{2, 1});
  ASSERT_TRUE(placed);
  auto one = refine_barriers(g, s, m.model, *placed, RefineOptions{});
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1"), sibling(m.model, "cuda:1");
  gpu1.slower = 1.1;  // as slow as ten times the threshold: it must not decide which set wins
  auto two = refine_barriers(g, s, std::vector<CostModel*>{&gpu0, &gpu1, &sibling}, *placed, RefineOptions{});
  ASSERT_TRUE(one && two) << (one ? two.status() : one.status()).to_string();
  EXPECT_EQ(two->barriers, one->barriers);
  EXPECT_EQ(two->passes, one->passes);
  EXPECT_NEAR(two->measured_ms, one->measured_ms, 1e-12);
  EXPECT_EQ(sibling.sets_asked, 0) << "a second model on one GPU would time beside the first";
  ASSERT_EQ(gpu0.requests.size(), size_t(two->passes));
  ASSERT_EQ(gpu1.requests.size(), size_t(two->passes));
  for (int pass = 0; pass < two->passes; ++pass) {
    EXPECT_EQ(gpu1.requests[pass].front(), gpu0.requests[pass].front()) << "both GPUs time the current set";
    EXPECT_GT(gpu1.requests[pass].size(), 1u);
  }
  // Each set once, the current one once more per pass on the second GPU.
  EXPECT_EQ(gpu0.sets_asked + gpu1.sets_asked, two->sets_timed + two->passes);
}

TEST(TimingDevices, SpreadNetworkLatenciesOnOneDeviceIsOneRequestOfEverySet) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0");
  gpu0.slower = 1.1;
  const std::vector<std::vector<int>> sets{{1, 2}, {}, {2}};
  auto ms = spread_network_latencies(g, s, {&gpu0}, sets, 1);
  ASSERT_TRUE(ms);
  ASSERT_EQ(gpu0.requests.size(), 1u);
  EXPECT_EQ(gpu0.requests[0], sets);
  for (size_t i = 0; i < sets.size(); ++i) EXPECT_DOUBLE_EQ((*ms)[i], 1.1 * m.network(sets[i]));
  EXPECT_TRUE(spread_network_latencies(g, s, {&gpu0}, {}, 1)->empty());
}

TEST(TimingDevices, SpreadNetworkLatenciesNamesADeviceThatAnswersShort) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1");
  gpu1.answers_short = true;
  // The second GPU is asked the first set and the last of the other three.
  auto ms = spread_network_latencies(g, s, {&gpu0, &gpu1}, {{1, 2}, {}, {2}, {1}}, 1);
  ASSERT_FALSE(ms);
  EXPECT_NE(ms.status().message().find("answered 1 latencies for 2 barrier sets"), std::string::npos)
      << ms.status().to_string();
}

TEST(Dataflow, RefineBarriersIgnoresGainsUnderTheThreshold) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.12}};  // keeping barrier 3 beside the DP's set gains 0.2 %: noise
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined);
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(refined->passes, 2);
  EXPECT_EQ(refined->sets_timed, (3 + 4) + (2 + 4));  // the current, the DP's and none / the combined set; toggles
  EXPECT_FALSE(placed_and_refined(g, s, m.model, RefineOptions{-1, 24, 0.005, 1}));
}

TEST(Dataflow, RefineBarriersTogglesOnlyTheFirstCutsItIsAllowed) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{7, 0.3}};
  auto all = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->barriers, (std::vector<int>{2, 4, 6, 7, 8}));
  // Equal expected gains: the earliest cut comes first, so with one toggle barrier 7 is never tried.
  auto one = placed_and_refined(g, s, m.model, RefineOptions{3, 1, 0.005, 1});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(one->sets_timed, 4 + 2);
}

TEST(Dataflow, RefineBarriersWithoutANetworkModelKeepsTheSearchSet) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  // No network function: sets are priced by their segments, the DP's own view, where its set is optimal.
  TableCostModel model(
      [](const ir::Graph&, const Stage&) { return 1.0; },
      [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 2 ? 1.9 : double(seg.size()); });
  auto refined = placed_and_refined(g, s, model);
  ASSERT_TRUE(refined);
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, 4 * 1.9 + 1.0);
  EXPECT_EQ(refined->passes, 2);
}

TEST(Dataflow, StageCacheReusesNetworkTimingsOnlyForTheSameComparison) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  StageCache cache(m.model, "test");
  const std::vector<std::vector<int>> sets{{2, 4, 6, 8}, {1, 2, 3, 4, 5, 6, 7, 8}};
  auto first = cache.network_latencies_ms(g, s, sets, 1);
  auto again = cache.network_latencies_ms(g, s, sets, 1);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(m.model.network_requests(), 1);
  // The same set beside another one is timed again: figures are compared only with those timed with them.
  auto other = cache.network_latencies_ms(g, s, {sets[0], {2, 3, 4, 6, 8}}, 1);
  ASSERT_TRUE(other);
  EXPECT_EQ(m.model.network_requests(), 2);
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
