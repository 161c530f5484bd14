// The policies: IOS's DP against brute force, its endings, pruning and budgets; greedy, Opara, and the
// properties every policy's schedules keep.
#include "scheduler/policies.h"

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
#include "test_graphs.h"
#include "test_processes.h"

namespace ios::sched {
namespace {

using ir::NodeId;

// ---------- brute force ----------

// A deterministic pseudo-random latency per (kind, op set): any function of the stage works, as
// long as the DP and the brute force see the same one.
double table_latency(const ir::Graph&, const Stage& st) {
  auto ops = st.ops();
  std::sort(ops.begin(), ops.end());
  uint64_t h = st.kind == StageKind::kMerge ? 0x51ull : 0x7ull;
  for (NodeId id : ops) h = (h ^ static_cast<uint64_t>(id)) * 0x100000001B3ull + 0x9E37ull;
  h ^= h >> 29;
  return 0.2 + static_cast<double>(h % 1000) / 1000.0 * static_cast<double>(ops.size());
}

// A cost shaped like a GPU's: each op has a fixed work figure, a concurrent stage costs a launch
// overhead plus its slowest group's summed work, a merge anything. It never prices a concurrent
// stage under the DP's floor, so bound pruning must stay exact with it.
double physical_latency(const ir::Graph& g, const Stage& st) {
  if (st.kind == StageKind::kMerge) return table_latency(g, st);
  auto work = [](NodeId id) { return 0.1 + double((uint64_t(id) * 0x9E3779B97F4A7C15ull >> 40) % 1000) / 1000.0; };
  double slowest = 0;
  for (const auto& group : st.groups) {
    double sum = 0;
    for (NodeId id : group) sum += work(id);
    slowest = std::max(slowest, sum);
  }
  return 0.05 + slowest;
}

using LatencyFn = double (*)(const ir::Graph&, const Stage&);

// Exhaustive optimum over all staged schedules: every stage is a successor-closed subset of the ops
// left (taken from the back), its weakly connected components are the groups (at most s of at most
// r ops), or a legal merge of sinks.
// `fits(s, t)`: whether stage t may run with the ops of s - t done (the memory budget).

class BruteForce {
 public:
  using Fits = std::function<bool(uint32_t, uint32_t)>;
  BruteForce(
      const ir::Graph& g, std::vector<NodeId> ops, int r, int s, DpMode mode, LatencyFn latency,
      Fits fits = [](uint32_t, uint32_t) { return true; })
      : g_(g), ops_(std::move(ops)), r_(r), s_(s), mode_(mode), latency_(latency), fits_(std::move(fits)) {
    n_ = static_cast<int>(ops_.size());
    succ_.assign(size_t(n_), 0);
    for (int i = 0; i < n_; ++i)
      for (NodeId p : g.producers(ops_[size_t(i)]))
        for (int j = 0; j < n_; ++j)
          if (ops_[size_t(j)] == p) succ_[size_t(j)] |= 1u << i;
  }

  double best(uint32_t s) {
    if (s == 0) return 0;
    if (auto it = memo_.find(s); it != memo_.end()) return it->second;
    double best = 1e300;
    for (uint32_t t = s; t; t = (t - 1) & s) {
      bool closed = true;
      for (int i = 0; i < n_; ++i)
        if ((t >> i & 1) && (succ_[size_t(i)] & s & ~t)) closed = false;
      if (!closed || !fits_(s, t)) continue;
      if (mode_ != DpMode::kMerge) {
        auto comps = components(t);
        bool ok = static_cast<int>(comps.size()) <= s_;
        for (uint32_t c : comps) ok &= std::popcount(c) <= r_;
        if (ok) best = std::min(best, this->best(s & ~t) + latency_(g_, concurrent(comps)));
      } else if (std::popcount(t) == 1) {
        best = std::min(best, this->best(s & ~t) + latency_(g_, concurrent({t})));
      }
      if (mode_ != DpMode::kParallel && std::popcount(t) >= 2) {
        std::vector<NodeId> ids;
        bool sinks = true;
        for (int i = 0; i < n_; ++i)
          if (t >> i & 1) {
            ids.push_back(ops_[size_t(i)]);
            sinks &= (succ_[size_t(i)] & s) == 0;
          }
        if (sinks && can_merge(g_, ids))
          best = std::min(best, this->best(s & ~t) + latency_(g_, Stage{StageKind::kMerge, {ids}}));
      }
    }
    memo_[s] = best;
    return best;
  }

 private:
  std::vector<uint32_t> components(uint32_t t) const {
    std::vector<uint32_t> out;
    uint32_t left = t;
    while (left) {
      uint32_t comp = left & -left, grown = 0;
      while (grown != comp) {
        grown = comp;
        for (int i = 0; i < n_; ++i)
          if (comp >> i & 1) comp |= succ_[size_t(i)] & t;
        for (int i = 0; i < n_; ++i)
          if ((t >> i & 1) && (succ_[size_t(i)] & comp)) comp |= 1u << i;
      }
      out.push_back(comp);
      left &= ~comp;
    }
    return out;
  }
  Stage concurrent(const std::vector<uint32_t>& comps) const {
    Stage st;
    for (uint32_t c : comps) {
      std::vector<NodeId> grp;
      for (int i = 0; i < n_; ++i)
        if (c >> i & 1) grp.push_back(ops_[size_t(i)]);
      st.groups.push_back(grp);
    }
    return st;
  }

  const ir::Graph& g_;
  std::vector<NodeId> ops_;
  int r_, s_, n_;
  DpMode mode_;
  LatencyFn latency_;
  Fits fits_;
  std::vector<uint32_t> succ_;
  std::map<uint32_t, double> memo_;
};

// Live elements while stage t runs after the ops of s - t (of a one-block graph), straight from the
// definition: the input and every op done or running whose value is being written, is the output or
// has a reader not done yet; plus what each running op but an identity gathers (a sum of inputs; an
// identity writes the sum as its output) and its steps.
int64_t naive_live(const ir::Graph& g, const std::vector<NodeId>& ops, uint32_t s, uint32_t t) {
  std::set<NodeId> done = {g.input()}, running;
  for (size_t i = 0; i < ops.size(); ++i)
    if (s >> i & 1) (t >> i & 1 ? running : done).insert(ops[i]);
  const auto consumers = g.consumers();
  int64_t live = 0;
  for (const auto* set : {&done, &running})
    for (NodeId v : *set) {
      bool needed = running.count(v) || v == g.output();
      for (NodeId c : consumers[size_t(v)]) needed |= !done.count(c);
      if (needed) live += g.node(v).output_shape.numel();
    }
  for (NodeId v : running) {
    const ir::Node& n = g.node(v);
    for (const ir::Term& term : n.inputs)
      if (term.size() > 1 && !n.is<ir::IdentityAttrs>()) {
        live += n.input_shape.numel();
        break;
      }
    for (size_t k = 0; k + 1 < n.step_shapes.size(); ++k) live += n.step_shapes[k].numel();
  }
  return live;
}

// The sequential schedule's peak under naive_live: each op alone, in id order.
int64_t naive_sequential_peak(const ir::Graph& g, const std::vector<NodeId>& ops) {
  int64_t peak = 0;
  for (size_t k = 0; k < ops.size(); ++k) peak = std::max(peak, naive_live(g, ops, (2u << k) - 1, 1u << k));
  return peak;
}

// Random DAG of 1x1 convs and sums; a third of the ops read exactly one value, so merges appear.
ir::Graph random_dag(int ops, uint32_t seed) {
  std::mt19937 rng(seed);
  ir::GraphBuilder g("random", {4, 3, 3});
  g.begin_block();
  std::vector<ir::Value> values = {g.input()};
  for (int i = 0; i < ops; ++i) {
    const bool last = i == ops - 1;
    if (last) {
      // The exit sums every value nobody reads yet, so the block has one sink.
      values.erase(values.begin());
      g.end_block(g.identity(ir::add(values)));
      break;
    }
    if (rng() % 3 == 0) {
      const ir::Value src = values[rng() % values.size()];
      const int k = 1 + 2 * int(rng() % 2);
      values.push_back(g.conv(src, ir::Conv(4).kernel(k).pad(k / 2)));
    } else {
      std::vector<ir::Value> picks;
      for (int k = 0; k < 1 + int(rng() % 2); ++k) picks.push_back(values[rng() % values.size()]);
      values.push_back(g.conv(ir::add(picks), ir::Conv(4)));
    }
  }
  auto built = g.build();
  EXPECT_TRUE(built) << built.status().to_string();
  return *built;
}

struct BruteCase {
  int r, s;
  DpMode mode;
  bool bound_pruning = false;  // with the GPU-shaped cost; without it, arbitrary costs
  double memory_budget = 0;    // x the sequential peak; 0: none
};

class DpMatchesBruteForce : public ::testing::TestWithParam<BruteCase> {};

TEST_P(DpMatchesBruteForce, OnRandomDagsUpToTenOps) {
  const BruteCase c = GetParam();
  int64_t skipped = 0;
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    const int ops = 4 + int(seed % 7);  // 4..10
    ir::Graph g = random_dag(ops, seed);
    const LatencyFn latency = c.bound_pruning ? physical_latency : table_latency;
    TableCostModel model(latency);
    DpOptions options;
    options.mode = c.mode;
    options.r = c.r;
    options.s = c.s;
    options.bound_pruning = c.bound_pruning;
    options.memory_budget = c.memory_budget;
    DpStats stats;
    auto bs = optimize_block(g, 0, options, model, stats);
    ASSERT_TRUE(bs) << bs.status().to_string();
    const std::vector<NodeId> members = g.blocks[0].members();
    const auto budget = static_cast<int64_t>(std::ceil(c.memory_budget * double(naive_sequential_peak(g, members))));
    auto fits = [&](uint32_t prefix, uint32_t stage) {
      return c.memory_budget == 0 || naive_live(g, members, prefix, stage) <= budget;
    };
    BruteForce brute(g, members, c.r, c.s, c.mode, latency, fits);
    const double optimum = brute.best((1u << members.size()) - 1);
    EXPECT_NEAR(stats.latency_ms, optimum, 1e-9) << "seed " << seed << " ops " << ops;
    skipped += stats.memory_skipped;
    Schedule s;
    s.blocks.push_back(*bs);
    EXPECT_TRUE(validate(g, s).is_ok()) << validate(g, s).to_string();
    double summed = 0;
    uint32_t prefix = 0;
    for (const Stage& st : bs->stages) {
      summed += latency(g, st);
      uint32_t stage = 0;
      for (NodeId id : st.ops()) stage |= 1u << (std::find(members.begin(), members.end(), id) - members.begin());
      prefix |= stage;
      EXPECT_TRUE(fits(prefix, stage)) << "seed " << seed << ": a stage past the memory budget";
    }
    EXPECT_NEAR(summed, optimum, 1e-9) << "the returned schedule must cost what the DP says";
  }
  if (c.memory_budget > 0) {
    EXPECT_GT(skipped, 0) << "the budget never bound: the case tests nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(Bounds, DpMatchesBruteForce,
                         ::testing::Values(BruteCase{10, 10, DpMode::kBoth}, BruteCase{10, 10, DpMode::kParallel},
                                           BruteCase{10, 10, DpMode::kMerge}, BruteCase{2, 2, DpMode::kBoth},
                                           BruteCase{3, 8, DpMode::kParallel}, BruteCase{1, 3, DpMode::kBoth},
                                           BruteCase{10, 10, DpMode::kBoth, true},
                                           BruteCase{3, 8, DpMode::kParallel, true},
                                           BruteCase{2, 2, DpMode::kBoth, true}));

INSTANTIATE_TEST_SUITE_P(MemoryBudgets, DpMatchesBruteForce,
                         ::testing::Values(BruteCase{10, 10, DpMode::kBoth, false, 1.0},
                                           BruteCase{10, 10, DpMode::kBoth, false, 1.3},
                                           BruteCase{10, 10, DpMode::kMerge, false, 1.0},
                                           BruteCase{3, 8, DpMode::kParallel, true, 1.2}));

TEST(Dp, BoundPruningCostsFewerStagesForTheSameOptimum) {
  for (const char* name : {"inception_v3", "googlenet", "squeezenet"}) {
    auto g = models::build_model(name);
    ASSERT_TRUE(g);
    double latency[2];
    int64_t costed[2];
    for (bool prune : {false, true}) {
      AnalyticCostModel model;
      OptimizeOptions options;
      options.max_part_size = 50;
      options.bound_pruning = prune;
      auto r = optimize(*g, options, model);
      ASSERT_TRUE(r) << r.status().to_string();
      latency[prune] = r->schedule.meta.latency_ms;
      costed[prune] = r->stats.stages_costed;
    }
    EXPECT_NEAR(latency[1], latency[0], 1e-9) << name;
    EXPECT_LT(costed[1], costed[0]) << name;
  }
}

// Two searches of each network, the only difference being DpOptions::measured_floors: the optimum and
// the stages they cost. `noise` (a fraction) jitters every figure by a fixed pseudo-random amount per stage.
struct FloorComparison {
  double latency[2];
  int64_t costed[2];
};
FloorComparison compare_floors(const ir::Graph& g, double noise) {
  FloorComparison out{};
  AnalyticCostModel analytic;
  const TableCostModel::Fn jittered = [&](const ir::Graph& graph, const Stage& stage) {
    uint64_t h = 1469598103934665603ull + uint64_t(stage.kind);
    for (const auto& group : stage.groups)
      for (NodeId id : group) h = (h ^ uint64_t(id + 1)) * 1099511628211ull;
    const double unit = double(h % 2001) / 1000.0 - 1.0;  // [-1, 1]
    return *analytic.stage_latency_ms(graph, stage, 1) * (1 + noise * unit);
  };
  for (bool measured : {false, true}) {
    TableCostModel model(jittered);
    OptimizeOptions options;
    options.max_part_size = 50;
    options.measured_floors = measured;
    auto r = optimize(g, options, model);
    EXPECT_TRUE(r) << r.status().to_string();
    if (!r) return out;
    out.latency[measured] = r->schedule.meta.latency_ms;
    out.costed[measured] = r->stats.stages_costed;
  }
  return out;
}

void expect_same_optimum_with_fewer_stages(std::initializer_list<const char*> networks, double noise) {
  for (const char* name : networks) {
    auto g = models::build_model(name);
    ASSERT_TRUE(g);
    const FloorComparison c = compare_floors(*g, noise);
    EXPECT_NEAR(c.latency[1], c.latency[0], 1e-9) << name;
    EXPECT_LT(c.costed[1], c.costed[0]) << name;
  }
}

TEST(Dp, MeasuredFloorsCostFewerStagesForTheSameOptimum) {
  expect_same_optimum_with_fewer_stages({"inception_v3", "googlenet", "squeezenet", "nasnet"}, 0);
}

// The floors give up 5 % + 2 us of a costed stage's figure: figures that jitter by less keep the optimum.
TEST(Dp, MeasuredFloorsKeepTheOptimumWhenFiguresJitterWithinTheirSlack) {
  expect_same_optimum_with_fewer_stages({"inception_v3", "googlenet"}, 0.02);
}

// ---------- IOS issue #10 ----------

TEST(Endings, IncludeOverlappingRootsThatIosMissed) {
  // input -> a, b -> concat(a, b): the ending {a, b, concat} has roots a and b whose descendant sets
  // overlap in the concat. IOS's enumerator drops it; union-find merges them into one group.
  ir::Graph g = testing::diamond();
  DpOptions options;
  options.mode = DpMode::kParallel;
  auto endings = enumerate_endings(g, g.blocks[0].members(), g.blocks[0].members(), options);
  bool found = false;
  for (const Stage& st : endings) found |= st.ops().size() == 3;
  EXPECT_TRUE(found);
  options.r = 2;  // r is rechecked after merging: the 3-op group is then out of bounds
  endings = enumerate_endings(g, g.blocks[0].members(), g.blocks[0].members(), options);
  for (const Stage& st : endings) EXPECT_LT(st.ops().size(), 3u);
}

TEST(Endings, MergeOfInceptionEOneByThreeAndThreeByOne) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const ir::Block& e = g->blocks[10];
  // 1x3 and 3x1 read the same 1x1 conv: they merge into a 3x3.
  std::vector<NodeId> pair = {e.inner[2], e.inner[3]};
  ASSERT_TRUE(can_merge(*g, pair)) << merge_violation(*g, pair);
  const ir::ConvAttrs m = merged_conv(*g, pair);
  EXPECT_EQ(m.kh, 3);
  EXPECT_EQ(m.kw, 3);
  EXPECT_EQ(m.out_channels, 768);
  EXPECT_FALSE(can_merge(*g, {e.inner[0], e.inner[2]}));  // different inputs
}

// A budget too large for 64-bit arithmetic (--memory-budget 1e15) is no limit: the same schedule as none.
TEST(Dp, AMemoryBudgetPastInt64IsNoLimit) {
  auto g = models::build_model("inception_v3");
  ASSERT_TRUE(g);
  AnalyticCostModel analytic;
  std::vector<double> latencies;
  for (double budget : {0.0, 1e15, 1e300}) {
    OptimizeOptions options;
    options.memory_budget = budget;
    auto r = optimize(*g, options, analytic);
    ASSERT_TRUE(r) << budget << ": " << r.status().to_string();
    latencies.push_back(r->schedule.meta.latency_ms);
  }
  EXPECT_EQ(latencies[1], latencies[0]);
  EXPECT_EQ(latencies[2], latencies[0]);
}

// ---------- policies on every model ----------

class PolicyProperties : public ::testing::TestWithParam<std::string> {};

TEST_P(PolicyProperties, EverySchedulesValidatesAndDpBeatsBaselinesWithinTheMemoryBudget) {
  auto g = models::build_model(GetParam());
  ASSERT_TRUE(g);
  AnalyticCostModel analytic;
  StageCache model(analytic, "test");
  std::map<Policy, double> latency;
  std::map<Policy, size_t> activations;
  for (Policy p :
       {Policy::kSequential, Policy::kGreedy, Policy::kDpMerge, Policy::kDpParallel, Policy::kDpBoth, Policy::kOpara}) {
    OptimizeOptions options;
    options.policy = p;
    options.max_part_size = 50;
    auto r = optimize(*g, options, model);
    ASSERT_TRUE(r) << policy_flag_name(p) << ": " << r.status().to_string();
    EXPECT_TRUE(validate(*g, r->schedule).is_ok());
    auto plan = compile_plan(*g, r->schedule);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->launches() >= 1, true);
    latency[p] = r->schedule.meta.latency_ms;
    auto memory = plan_memory(*g, *plan, MemoryOptions{});
    ASSERT_TRUE(memory) << memory.status().to_string();
    activations[p] = memory->arena_bytes;
  }
  // The DP's budget (its live-value model) must hold for the memory plan's real arena.
  const double budget = OptimizeOptions{}.memory_budget * double(activations[Policy::kSequential]);
  for (Policy p : {Policy::kDpMerge, Policy::kDpParallel, Policy::kDpBoth})
    EXPECT_LE(double(activations[p]), budget) << policy_flag_name(p);
  EXPECT_LE(latency[Policy::kDpBoth], latency[Policy::kSequential] + 1e-9);
  EXPECT_LE(latency[Policy::kDpBoth], latency[Policy::kGreedy] + 1e-9);
  EXPECT_LE(latency[Policy::kDpParallel], latency[Policy::kGreedy] + 1e-9);
  EXPECT_LE(latency[Policy::kDpMerge], latency[Policy::kSequential] + 1e-9);
  EXPECT_LE(latency[Policy::kDpBoth], latency[Policy::kDpParallel] + 1e-9);
}

INSTANTIATE_TEST_SUITE_P(AllModels, PolicyProperties,
                         ::testing::Values("inception_v3", "squeezenet", "nasnet", "randwire", "googlenet"));

TEST(Dp, InceptionSearchSizeMatchesIos) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  OptimizeOptions options;      // r=3, s=8, part size 100
  options.reuse_parts = false;  // IOS searches every part, also its two identical ones
  auto r = optimize(*g, options, model);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stats.states, 1206);  // IOS's count (ios.md §3); transitions differ: we dedupe endings
}

TEST(Dp, StageCacheCostsIdenticalCellsOnce) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  AnalyticCostModel analytic;
  StageCache cache(analytic, "test");
  OptimizeOptions options;
  auto r = optimize(*g, options, cache);
  ASSERT_TRUE(r);
  EXPECT_GT(cache.hits(), cache.misses());  // repeated normal cells reuse their stage latencies
  const std::string path = ::testing::TempDir() + "/stages.json";
  ASSERT_TRUE(cache.save(path).is_ok());
  StageCache reloaded(analytic, "test");
  ASSERT_TRUE(reloaded.load(path).is_ok());
  EXPECT_EQ(reloaded.size(), cache.size());
  StageCache other_key(analytic, "other-device");
  ASSERT_TRUE(other_key.load(path).is_ok());
  EXPECT_EQ(other_key.size(), 0u);
}

TEST(Opara, WorkedExampleGivesFiveStreamsAndTheListedWaits) {
  ir::Graph g = testing::opara_example();
  std::vector<NodeId> order;
  for (NodeId id = 1; id <= 12; ++id) order.push_back(id);  // processed in order 1..13
  auto stream = opara_streams(g, order);
  auto paper = [](int node) { return static_cast<size_t>(node - 1); };  // paper node -> our id
  std::set<int> distinct(stream.begin(), stream.end());
  EXPECT_EQ(distinct.size(), 5u);
  for (int n : {2, 5, 7, 9, 13}) EXPECT_EQ(stream[paper(n)], stream[paper(1)]) << n;
  for (int n : {6, 8, 11}) EXPECT_EQ(stream[paper(n)], stream[paper(3)]) << n;
  std::set<std::pair<int, int>> waits;
  for (NodeId v = 1; v < 13; ++v)
    for (NodeId u : g.producers(v))
      if (stream[size_t(u)] != stream[size_t(v)]) waits.insert({u + 1, v + 1});
  const std::set<std::pair<int, int>> expected = {{1, 3},  {1, 4},   {4, 8},   {7, 10},
                                                  {8, 12}, {10, 13}, {11, 13}, {12, 13}};
  EXPECT_EQ(waits, expected);
}

TEST(Opara, GoogLeNetGets28Streams) {
  auto g = models::googlenet();
  ASSERT_TRUE(g);
  StreamSchedule s = opara_schedule(*g, estimate_resource_profile(*g));
  std::set<int> distinct(s.stream_of.begin(), s.stream_of.end());
  EXPECT_EQ(distinct.size(), 28u);
}

TEST(Opara, LaunchOrderAlternatesListsAndPrefersLessSharedMemory) {
  ir::GraphBuilder b("alt", {4, 4, 4});
  b.begin_block();
  ir::Value r1 = b.relu(b.input());
  ir::Value c1 = b.conv(b.input(), ir::Conv(4));
  ir::Value r2 = b.relu(b.input());
  ir::Value c2 = b.conv(b.input(), ir::Conv(4));
  b.end_block(b.identity(ir::cat({r1, c1, r2, c2})));
  ir::Graph g = *b.build();
  ResourceProfile p;
  p.shared_memory_bytes = {{r1.node, 0}, {r2.node, 0}, {c1.node, 32768}, {c2.node, 16384}, {5, 0}};
  auto order = opara_launch_order(g, p);
  // After the input (compute list), parity picks memory, compute, memory, compute; c2 needs less
  // shared memory than c1, so it goes first.
  EXPECT_EQ(order, (std::vector<NodeId>{r1.node, c2.node, r2.node, c1.node, 5}));
}

// ---------- schedule files and validation ----------

TEST(Policies, UnknownPolicyNamesTheAcceptedOnes) {
  auto p = parse_policy("fastest");
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("dp_parallel_merge"), std::string::npos);
  EXPECT_EQ(*parse_policy("ios-both"), Policy::kDpBoth);
}

}  // namespace
}  // namespace ios::sched

namespace ios::sched {
namespace {

// input -> `width` independent 1x1 convolutions -> concat: the DP's worst case (3^width transitions).
ir::Graph fan_out(int width) {
  ir::GraphBuilder b("fan_out", {8, 4, 4});
  b.begin_block();
  ir::Inputs terms;
  for (int i = 0; i < width; ++i) terms.push_back({b.conv(b.input(), ir::Conv(8))});
  b.end_block(b.identity(ir::In(terms)));
  return *b.build();
}

TEST(DpBudget, AWideFanOutFinishesWithinItsBudgetAndSaysItSplit) {
  const ir::Graph g = fan_out(18);
  AnalyticCostModel model;
  for (Policy p : {Policy::kDpBoth, Policy::kDpParallel, Policy::kDpMerge}) {
    OptimizeOptions o;
    o.policy = p;
    const auto start = std::chrono::steady_clock::now();
    auto r = optimize(g, o, model);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_TRUE(validate(g, r->schedule));
    EXPECT_LT(seconds, 60.0) << policy_flag_name(p);  // unbounded, width 18 took over 120 s
    if (p == Policy::kDpMerge) continue;              // merge endings are few: no split needed
    EXPECT_GT(r->stats.budget_splits, 0) << policy_flag_name(p);
    ASSERT_FALSE(r->schedule.meta.notes.empty());
    EXPECT_NE(r->schedule.meta.notes.back().find("DP budget"), std::string::npos);
  }
}

TEST(DpBudget, RealNetworksNeverReachTheBudget) {
  AnalyticCostModel model;
  for (const char* name : {"inception_v3", "squeezenet", "googlenet"}) {
    auto g = models::build_model(name);
    ASSERT_TRUE(g);
    auto r = optimize(*g, OptimizeOptions{}, model);
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_EQ(r->stats.budget_splits, 0) << name;
  }
}

TEST(Greedy, IsLinearInChainLength) {
  ir::GraphBuilder b("chain", {4, 2, 2});
  b.begin_block();
  ir::Value v = b.input();
  for (int i = 0; i < 16000; ++i) v = b.relu(v);  // near limits::kMaxNodes
  b.end_block(v);
  auto g = b.build();
  ASSERT_TRUE(g) << g.status().to_string();
  const auto start = std::chrono::steady_clock::now();
  const Schedule s = greedy_schedule(*g, 10);
  // A quadratic greedy takes tens of seconds here.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(s.stage_count(), 16000);
}

}  // namespace
}  // namespace ios::sched

namespace ios::sched {
namespace {}  // namespace
}  // namespace ios::sched
