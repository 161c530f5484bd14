// The search's machinery around the DP: the stage-timing stop rule, identical parts solved once,
// parts spread over worker threads (one per GPU) with one shared stage cache, and progress.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "models/models.h"
#include "scheduler/idle_workers.h"
#include "scheduler/part_search.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

namespace ios::sched {
namespace {

// ---------- the stop rule ----------

// 3..6 rounds of 2 replays until the spread is within 5%.
const StageTimingRule kThreeToSix{1, 2, 3, 6, 0.05, 0};

// The default L2 mode follows the network's footprint: weights the L2 cannot hold are cold in every replay,
// weights it holds are cold only by the calibrated share; a mode the user named stays.
TEST(StageTiming, TheDefaultTimesWeightsColdWhereTheyExceedTheL2AndByTheShareWhereTheyFit) {
  const StageTimingRule rule;
  EXPECT_EQ(rule.l2, L2Timing::kByFootprint);
  const int64_t l2 = 50 << 20;
  const StageTimingRule big = rule.for_footprint(95'000'000, l2), small = rule.for_footprint(13'000'000, l2);
  EXPECT_EQ(big.l2, L2Timing::kColdWeights);
  EXPECT_EQ(small.l2, L2Timing::kColdShare);
  EXPECT_EQ(rule.for_footprint(l2, l2).l2, L2Timing::kColdShare);  // exactly the L2: it holds them
  ASSERT_TRUE(big.footprint);
  EXPECT_EQ(big.footprint->weight_bytes, 95'000'000);
  EXPECT_NE(big.describe().find("activations read back"), std::string::npos) << big.describe();
  EXPECT_NE(big.describe().find("95.0 MB, exceed the L2's 52.4 MB"), std::string::npos) << big.describe();
  EXPECT_NE(small.describe().find("13.0 MB, fit the L2's"), std::string::npos) << small.describe();
  for (const char* named : {"adaptive,l2-share", "adaptive,warm", "adaptive,cold-l2", "ios"}) {
    const StageTimingRule r = *parse_stage_timing(named);
    EXPECT_EQ(r.for_footprint(95'000'000, l2).l2, r.l2) << named;
    EXPECT_FALSE(r.for_footprint(95'000'000, l2).footprint) << named;
  }
  // Its figures are other numbers than the share's: a stage cache file of either is not reused for the other.
  EXPECT_NE(rule.cache_tag(), parse_stage_timing("adaptive,l2-share")->cache_tag());
  EXPECT_NE(rule.cache_tag(), "");
}

TEST(StageTiming, SteadyRoundsStopAtTheMinimum) {
  const StageTimingRule rule = kThreeToSix;
  EXPECT_FALSE(timing_settled({1.00, 1.01}, rule));
  EXPECT_TRUE(timing_settled({1.00, 1.01, 1.04}, rule));
  const StageTimingRule adaptive;  // 2..4 rounds
  EXPECT_FALSE(timing_settled({1.00}, adaptive));
  EXPECT_TRUE(timing_settled({1.00, 1.04}, adaptive));
  EXPECT_TRUE(timing_settled({1.0, 1.3, 1.0, 1.0}, adaptive));  // the maximum
}

TEST(StageTiming, NoisyRoundsContinueUntilSteadyOrTheMaximum) {
  const StageTimingRule rule = kThreeToSix;
  EXPECT_FALSE(timing_settled({1.0, 1.3, 1.0}, rule));
  EXPECT_FALSE(timing_settled({1.0, 1.3, 1.0, 1.0, 1.0}, rule));  // the outlier stays in the spread
  EXPECT_TRUE(timing_settled({1.0, 1.3, 1.0, 1.0, 1.0, 1.0}, rule));
  EXPECT_DOUBLE_EQ(median_of({1.0, 1.3, 1.0, 1.0, 1.0, 1.0}), 1.0);  // the outlier does not move it
}

TEST(StageTiming, RoundsAllPastTheirLimitStopAtTheMinimumSpreadOrNot) {
  const StageTimingRule adaptive;  // 2..4 rounds, 5 %
  const std::vector<double> noisy = {1.0, 1.3};
  EXPECT_FALSE(timing_settled(noisy, adaptive));
  EXPECT_TRUE(timing_settled(noisy, adaptive, 0.9));    // both rounds past 0.9 + 5 %
  EXPECT_FALSE(timing_settled(noisy, adaptive, 0.96));  // the faster round is within 5 % of the limit
  StageTimingRule two_rounds = adaptive;
  two_rounds.one_round_margin = 0;
  EXPECT_FALSE(timing_settled({1.3}, two_rounds, 0.5));  // without the one-round margin, never before the minimum
  StageTimingStats stats;
  stats.add(noisy, adaptive, 0, 0.9);
  stats.add(noisy, adaptive, 0, 0.96);       // would have gone on: not counted as stopped by its limit
  stats.add({1.0, 1.01}, adaptive, 0, 0.5);  // settled by its spread
  EXPECT_EQ(stats.unsettled, 2);
  EXPECT_EQ(stats.stopped_past_limit, 1);
}

TEST(StageTiming, AStageWithALimitStartsWithOneRoundAndStopsThereOnlyFarPastIt) {
  const StageTimingRule adaptive;  // 2..4 rounds, one-round margin 10 %
  const double none = std::numeric_limits<double>::infinity();
  EXPECT_EQ(first_rounds(adaptive, 0, 1.0), 1);
  EXPECT_EQ(first_rounds(adaptive, 0, none), 2);  // no limit: the minimum rounds
  EXPECT_EQ(first_rounds(adaptive, 1, 1.0), 1);   // a screening round counts as the first
  EXPECT_TRUE(timing_settled({1.2}, adaptive, 1.0));
  EXPECT_FALSE(timing_settled({1.08}, adaptive, 1.0));  // past the limit but within the margin: on to the minimum
  EXPECT_FALSE(timing_settled({1.2}, adaptive));        // no limit
  StageTimingRule off = adaptive;
  off.one_round_margin = 0;
  EXPECT_EQ(first_rounds(off, 0, 1.0), 2);
  EXPECT_EQ(first_rounds(StageTimingRule::ios(), 0, 1.0), 6);  // IOS's rule times every stage alike
  StageTimingStats stats;
  stats.add({1.2}, adaptive, 0, 1.0);
  stats.add({1.0, 1.3}, adaptive, 0, 0.5);  // past its limit at the minimum rounds: not early
  EXPECT_EQ(stats.stopped_early, 1);
  EXPECT_EQ(stats.stopped_past_limit, 1);
}

TEST(StageTiming, AbsoluteToleranceSettlesShortStagesWhoseRelativeSpreadIsLarge) {
  StageTimingRule rule = kThreeToSix;
  rule.abs_tolerance_ms = 0.002;
  const std::vector<double> short_stage = {0.010, 0.0115, 0.010};  // 15% but 1.5 us
  EXPECT_TRUE(timing_settled(short_stage, rule));
  EXPECT_FALSE(timing_settled({1.0, 1.1, 1.0}, rule));  // 10% of a millisecond is 100 us
  rule.abs_tolerance_ms = 0;
  EXPECT_FALSE(timing_settled(short_stage, rule));
  StageTimingStats stats;
  stats.add(short_stage, rule);
  EXPECT_EQ(stats.unsettled, 1);
  rule.abs_tolerance_ms = 0.002;
  stats.add(short_stage, rule);
  EXPECT_EQ(stats.unsettled, 1);  // within the absolute tolerance: settled
}

TEST(StageTiming, IosRuleAlwaysTimesSixRounds) {
  const StageTimingRule ios = StageTimingRule::ios();
  EXPECT_EQ(ios.warmup, 2);
  EXPECT_EQ(ios.number, 6);
  EXPECT_FALSE(timing_settled({1, 1, 1, 1, 1}, ios));
  EXPECT_TRUE(timing_settled({1, 1, 1, 1, 1, 1}, ios));
}

TEST(StageTiming, TheHeadStartDoublesWhenTheGpuCaughtUpAndShrinksWhenTheHostKeptAhead) {
  HeadStart h;
  EXPECT_DOUBLE_EQ(h.ms(), HeadStart::kFirstMs);
  h.caught_up();
  EXPECT_DOUBLE_EQ(h.ms(), 2 * HeadStart::kFirstMs);
  h.kept_ahead();
  EXPECT_DOUBLE_EQ(h.ms(), 1.8 * HeadStart::kFirstMs);
  for (int i = 0; i < 40; ++i) h.caught_up();  // a host that never keeps ahead: capped
  EXPECT_DOUBLE_EQ(h.ms(), HeadStart::kMaxMs);
  for (int i = 0; i < 400; ++i) h.kept_ahead();  // one that always does: a few microseconds
  EXPECT_DOUBLE_EQ(h.ms(), HeadStart::kMinMs);
}

TEST(StageTiming, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(relative_spread({2, 1, 3}), 1.0);
  EXPECT_DOUBLE_EQ(relative_spread({5}), 0.0);
}

TEST(StageTiming, ParseAcceptsNamesAndTuplesAndNamesTheFlagOnGarbage) {
  auto a = parse_stage_timing("adaptive");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->min_rounds, StageTimingRule{}.min_rounds);
  auto t = parse_stage_timing("0/4/2-10/0.05");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->warmup, 0);
  EXPECT_EQ(t->number, 4);
  EXPECT_EQ(t->min_rounds, 2);
  EXPECT_EQ(t->max_rounds, 10);
  EXPECT_DOUBLE_EQ(t->tolerance, 0.05);
  EXPECT_EQ(t->l2, L2Timing::kByFootprint);  // the default wherever a round has a warm replay
  EXPECT_EQ(a->l2, L2Timing::kByFootprint);
  EXPECT_EQ(parse_stage_timing("0/1/2-10/0.05")->l2, L2Timing::kWarm);
  EXPECT_EQ(parse_stage_timing("0/4/2-10/0.05,warm")->l2, L2Timing::kWarm);
  EXPECT_EQ(parse_stage_timing("ios")->l2, L2Timing::kWarm);
  EXPECT_EQ(parse_stage_timing("fast")->l2, L2Timing::kWarm);
  auto cold = parse_stage_timing("ios,cold-l2");
  ASSERT_TRUE(cold);
  EXPECT_EQ(cold->l2, L2Timing::kFlushed);
  EXPECT_EQ(cold->cache_tag(), "|cold-l2");
  EXPECT_EQ(cold->max_rounds, StageTimingRule::ios().max_rounds);
  EXPECT_NE(cold->describe().find("L2 flushed"), std::string::npos);
  auto weights = parse_stage_timing("1/2/2-4/0.05,cold-weights");
  ASSERT_TRUE(weights);
  EXPECT_EQ(weights->l2, L2Timing::kColdWeights);
  EXPECT_EQ(weights->max_rounds, 4);
  EXPECT_NE(weights->describe().find("activations read back"), std::string::npos);
  EXPECT_NE(weights->cache_tag(), cold->cache_tag());
  EXPECT_EQ(StageTimingRule::ios().cache_tag(), "");
  EXPECT_FALSE(parse_stage_timing("adaptive,cold-weights,cold-l2"));
  auto share = parse_stage_timing("adaptive,l2-share");
  ASSERT_TRUE(share);
  EXPECT_EQ(share->l2, L2Timing::kColdShare);
  EXPECT_EQ(share->cache_tag(), "|l2-share");
  StageTimingRule prefetching = *share;  // calibrated against prefetching graphs too: other figures
  prefetching.prefetch_ahead = 2;
  EXPECT_EQ(prefetching.cache_tag(), "|l2-share|prefetch2");
  EXPECT_NE(prefetching.describe().find("prefetched"), std::string::npos);
  EXPECT_EQ(share->describe().find("prefetched"), std::string::npos);
  auto one_replay = parse_stage_timing("fast,l2-share");  // a cold replay needs a warm one beside it
  ASSERT_FALSE(one_replay);
  EXPECT_NE(one_replay.status().to_string().find("N >= 2"), std::string::npos);
  auto fast = parse_stage_timing("fast");
  ASSERT_TRUE(fast);
  EXPECT_EQ(fast->describe(), parse_stage_timing("1/1/3-6/0.05/2")->describe());
  auto abs = parse_stage_timing("1/1/3-6/0.05/2");
  ASSERT_TRUE(abs);
  EXPECT_EQ(abs->number, 1);
  EXPECT_DOUBLE_EQ(abs->abs_tolerance_ms, 0.002);
  EXPECT_NE(abs->describe().find("or 2 us"), std::string::npos) << abs->describe();
  for (const char* bad :
       {"", "quick", "1/3/3-8", "1/0/3-8/0.1", "1/3/5-2/0.1", "1/3/3-8/-1", "1/3/3-8/0.1x", ",cold-l2", "quick,cold-l2",
        "adaptive,cold-l2,cold-l2", "1/1/3-6/0.05/-2", "1/1/3-6/0.05/2x", "1/1/3-6/0.05/2/3"}) {
    auto r = parse_stage_timing(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.status().message().find("--stage-timing"), std::string::npos) << r.status().message();
  }
}

// Replays are counted by the timer that queued them (rt::StageTimer::replays).
TEST(StageTiming, StatsCountRoundsGpuTimeAndStagesAboveTolerance) {
  const StageTimingRule rule = kThreeToSix;
  StageTimingStats stats;
  stats.add({1.0, 1.0, 1.0}, rule);
  stats.add({1.0, 2.0, 1.0, 1.0, 1.0, 1.0}, rule);
  EXPECT_EQ(stats.stages, 2);
  EXPECT_EQ(stats.rounds, 9);
  EXPECT_EQ(stats.unsettled, 1);
  EXPECT_DOUBLE_EQ(stats.gpu_seconds, 10.0 * rule.number * 1e-3);
  EXPECT_DOUBLE_EQ(stats.spread_percentile(0.9), 1.0);
  EXPECT_EQ(stats.first_over_second, (std::vector<double>{1.0, 0.5}));
  EXPECT_NE(stats.summary().find("2 stages timed"), std::string::npos) << stats.summary();
  EXPECT_NE(stats.summary().find("first round / second 0.750"), std::string::npos) << stats.summary();
}

TEST(StageTiming, StatsCountAScreeningRoundOnceWhenItsStageIsSettledOnTheSameExecutor) {
  const StageTimingRule rule = kThreeToSix;
  StageTimingStats stats;
  stats.add({2.0}, rule);                                         // screened: one round
  stats.add({2.0, 1.0, 1.0}, rule, 1);                            // settled, the screening round first
  EXPECT_EQ(stats.rounds, 1 + 3);                                 // the settled figure is the median of three rounds
  EXPECT_DOUBLE_EQ(stats.gpu_seconds, 4.0 * rule.number * 1e-3);  // three rounds ran, not four
  EXPECT_TRUE(stats.first_over_second.empty());  // a round settled after screening has no first of its own
}

// ---------- the part-level search ----------

// A deterministic latency shaped like a GPU's that depends on what the stage computes, never on op
// ids: identical cells get identical costs, as on a GPU.
double signature_latency(const ir::Graph& g, const Stage& st) {
  auto work = [&](ir::NodeId id) { return 1e-3 + g.cost(id).flops * 1e-12; };
  double longest = 0, total = 0;
  for (const auto& group : st.groups) {
    double t = 0;
    for (ir::NodeId id : group) t += work(id);
    longest = std::max(longest, t);
    total += t;
  }
  if (st.kind == StageKind::kMerge) return 2e-3 + 0.8 * total;
  return 2e-3 + longest + 5e-4 * double(st.groups.size());
}

std::vector<std::vector<std::vector<ir::NodeId>>> stage_lists(const Schedule& s) {
  std::vector<std::vector<std::vector<ir::NodeId>>> out;
  for (const auto& b : s.blocks)
    for (const auto& st : b.stages) out.push_back(st.groups);
  return out;
}

TEST(PartSearch, IdenticalCellsTakeTheFirstCellsSolutionWithTheSameSchedule) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  OptimizeOptions searched_all;
  searched_all.reuse_parts = false;
  StageCache cache_all(table, "t");
  auto all = optimize(*g, searched_all, cache_all);
  StageCache cache_reuse(table, "t");
  auto reused = optimize(*g, OptimizeOptions{}, cache_reuse);
  ASSERT_TRUE(all && reused);
  EXPECT_GT(reused->parts_reused, 0u);
  EXPECT_EQ(all->parts_reused, 0u);
  EXPECT_LT(reused->stats.states, all->stats.states);
  EXPECT_EQ(stage_lists(reused->schedule), stage_lists(all->schedule));
  EXPECT_DOUBLE_EQ(reused->schedule.meta.latency_ms, all->schedule.meta.latency_ms);
}

TEST(PartSearch, InceptionV3HasExactlyOnePairOfIdenticalParts) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> signatures;
  size_t parts = 0;
  for (size_t b = 0; b < g->blocks.size(); ++b)
    for (auto part : block_parts(*g, b, 100)) {
      std::sort(part.begin(), part.end());
      signatures.insert(part_signature(*g, keys, part));
      ++parts;
    }
  // Of Inception V3's modules only two 17x17 ones (160 channels) are identical, inputs included.
  EXPECT_EQ(signatures.size(), parts - 1);
}

// Counts every stage it is asked to cost, from any thread, and sleeps a little so workers overlap.
class CountingModel : public CostModel {
 public:
  explicit CountingModel(const ir::Graph& g) : keys_(op_keys(g)) {}
  std::string name() const override { return "counting"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    std::this_thread::yield();  // lets the workers interleave
    std::string signature = stage_signature(g, keys_, st);
    std::lock_guard<std::mutex> lock(mutex_);
    asked_.push_back(std::move(signature));
    return signature_latency(g, st);
  }
  std::vector<std::string> asked() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return asked_;
  }

 private:
  OpKeys keys_;
  mutable std::mutex mutex_;
  std::vector<std::string> asked_;
};

struct WorkerRun {
  Expected<OptimizeResult> result;
  std::vector<std::string> asked;
};

WorkerRun search_with_workers(const ir::Graph& g, int workers) {
  std::vector<std::unique_ptr<CountingModel>> inner;
  for (int i = 0; i < workers; ++i) inner.push_back(std::make_unique<CountingModel>(g));
  StageCache cache(*inner[0], "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (int i = 1; i < workers; ++i) {
    views.push_back(cache.worker(*inner[size_t(i)]));
    o.extra_models.push_back(views.back().get());
  }
  WorkerRun run{optimize(g, o, cache), {}};
  for (const auto& m : inner) {
    auto a = m->asked();
    run.asked.insert(run.asked.end(), a.begin(), a.end());
  }
  return run;
}

TEST(PartSearch, FourWorkersGiveOneWorkersScheduleAndMeasureEachStageOnce) {
  for (const char* name : {"nasnet", "inception_v3"}) {
    models::ModelOptions mo;
    mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    const WorkerRun one = search_with_workers(*g, 1);
    const WorkerRun four = search_with_workers(*g, 4);
    ASSERT_TRUE(one.result && four.result) << name;
    EXPECT_EQ(stage_lists(four.result->schedule), stage_lists(one.result->schedule)) << name;
    EXPECT_EQ(four.result->stats.states, one.result->stats.states) << name;
    // Every stage measured exactly once over all workers: the same set as one worker measured.
    std::multiset<std::string> a(one.asked.begin(), one.asked.end()), b(four.asked.begin(), four.asked.end());
    EXPECT_EQ(a, b) << name;
    EXPECT_EQ(std::set<std::string>(b.begin(), b.end()).size(), b.size()) << name << ": a stage was measured twice";
  }
}

TEST(PartSearch, TheTimelineHasEverySearchedPartOnceOnAWorkerThatExists) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  auto g = models::build_model("nasnet", mo);
  ASSERT_TRUE(g);
  const WorkerRun four = search_with_workers(*g, 4);
  ASSERT_TRUE(four.result);
  const OptimizeResult& r = *four.result;
  EXPECT_EQ(r.timeline.size(), r.parts - r.parts_reused);
  std::set<size_t> workers;
  for (const PartTiming& t : r.timeline) {
    EXPECT_LT(t.worker, 4u);
    EXPECT_GT(t.ops, 0u);
    EXPECT_LE(t.start_s, t.end_s);
    EXPECT_LE(t.end_s, r.policy_seconds);
    workers.insert(t.worker);
  }
  EXPECT_GT(workers.size(), 1u) << "the parts went to one worker";
}

TEST(PartSearch, WithNoMorePartsThanWorkersThePartsGoOneToEachGpuBeforeAnyGpuGetsASecond) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  auto alone = optimize(*g, OptimizeOptions{}, table);
  ASSERT_TRUE(alone);
  const size_t parts = alone->parts - alone->parts_reused;
  class OnDevice : public TableCostModel {
   public:
    explicit OnDevice(std::string device) : TableCostModel(signature_latency), device_(std::move(device)) {}
    std::string timing_device() const override { return device_; }
    Expected<double> stage_latency_ms(const ir::Graph& graph, const Stage& st, int batch) override {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // a part takes long enough to be seen
      return TableCostModel::stage_latency_ms(graph, st, batch);
    }

   private:
    std::string device_;
  };
  // As many workers as parts: the first half on GPU 0, the second on GPU 1.
  const size_t workers = parts + parts % 2;
  std::vector<std::unique_ptr<OnDevice>> inner;
  for (size_t w = 0; w < workers; ++w)
    inner.push_back(std::make_unique<OnDevice>(w < workers / 2 ? "cuda:0" : "cuda:1"));
  StageCache cache(*inner[0], "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (size_t w = 1; w < workers; ++w) {
    views.push_back(cache.worker(*inner[w]));
    o.extra_models.push_back(views.back().get());
  }
  auto r = optimize(*g, o, cache);
  ASSERT_TRUE(r) << r.status().to_string();
  std::vector<PartTiming> by_size = r->timeline;  // the search's order: largest first, then search order
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.ops > b.ops; });
  ASSERT_GE(by_size.size(), 2u);
  // The devices' first workers, 0 and workers / 2, take the two largest.
  EXPECT_EQ(std::set<size_t>({by_size[0].worker, by_size[1].worker}), std::set<size_t>({0, workers / 2}))
      << "the two largest parts: workers " << by_size[0].worker << " and " << by_size[1].worker;
}

TEST(PartSearch, WorkerLoadSumsBusyTimePerWorkerAndNamesThePartThatEndedLast) {
  const std::vector<PartTiming> timeline = {
      {0, 40, 0.0, 3.0}, {1, 30, 0.0, 1.0}, {1, 20, 1.0, 1.5}, {0, 10, 3.0, 3.2}, {2, 8, 0.5, 4.0}};
  const WorkerLoad load = worker_load(timeline, 3);
  EXPECT_DOUBLE_EQ(load.span_s, 4.0);
  ASSERT_EQ(load.busy_s.size(), 3u);
  EXPECT_NEAR(load.busy_s[0], 3.2, 1e-12);
  EXPECT_NEAR(load.busy_s[1], 1.5, 1e-12);
  EXPECT_NEAR(load.busy_s[2], 3.5, 1e-12);
  EXPECT_NEAR(load.idle_s(), 12.0 - 8.2, 1e-12);
  EXPECT_EQ(load.last.ops, 8u);
  EXPECT_EQ(load.last.worker, 2u);
  EXPECT_NE(load.summary().find("busy 3.2, 1.5, 3.5 s"), std::string::npos) << load.summary();
}

TEST(PartSearch, AWorkersFailureEndsTheSearchWithItsError) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel fine(signature_latency);
  class Failing : public CostModel {
   public:
    std::string name() const override { return "failing"; }
    Expected<double> stage_latency_ms(const ir::Graph&, const Stage&, int) override {
      return error(ErrorCode::kRuntimeError, "GPU 3 fell off the bus");
    }
  } broken;
  StageCache cache(fine, "t");
  auto view = cache.worker(broken);
  OptimizeOptions o;
  o.extra_models = {view.get()};
  auto r = optimize(*g, o, cache);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("fell off the bus"), std::string::npos) << r.status().message();
}

TEST(PartSearch, ProgressCountsEveryPartOnceAndEndsAtTheTotals) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  std::vector<SearchProgress> seen;
  OptimizeOptions o;
  o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().parts_done, 0u);  // the totals come first
  size_t parts_reported = 0;
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_LE(seen[i].parts_done, seen[i - 1].parts_done + 1);  // one callback per part done
    EXPECT_GE(seen[i].parts_done, seen[i - 1].parts_done);
    parts_reported += seen[i].parts_done > seen[i - 1].parts_done;
  }
  EXPECT_EQ(parts_reported, r->parts);
  EXPECT_EQ(seen.back().parts_done, r->parts);
  EXPECT_EQ(seen.back().ops_done, seen.back().ops_total);
  EXPECT_EQ(seen.back().ops_running, 0.0);
  EXPECT_EQ(seen.back().parts_reused, r->parts_reused);
}

// The ops done, counting the parts being searched by the share of their states solved.
double ops_progress(const SearchProgress& p) { return double(p.ops_done) + p.ops_running; }

TEST(PartSearch, ProgressInsideAPartGrowsWithItsStatesSolvedBeforeThePartEnds) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  for (int workers : {1, 2}) {
    // A part's states take a while, so that the calling thread reports between a part's sizes.
    class Slow : public CostModel {
     public:
      std::string name() const override { return "slow"; }
      Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        return signature_latency(g, st);
      }
    };
    Slow model, second;
    std::vector<SearchProgress> seen;
    OptimizeOptions o;
    o.max_part_size = 50;
    if (workers > 1) o.extra_models = {&second};
    o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
    auto r = optimize(*g, o, model);
    ASSERT_TRUE(r) << r.status().to_string();
    bool inside = false;
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(ops_progress(seen[i]), ops_progress(seen[i - 1]) - 1e-9) << workers << " workers";
      inside = inside || (seen[i].ops_running > 0 && seen[i].parts_done == seen[i - 1].parts_done);
    }
    EXPECT_TRUE(inside) << workers << " workers: no progress reported inside a part";
    EXPECT_DOUBLE_EQ(ops_progress(seen.back()), double(seen.back().ops_total));
  }
}

TEST(PartSearch, APartSplitByTheBudgetReportsEachHalfAsHalfItsProgress) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  std::vector<SearchProgress> seen;
  OptimizeOptions o;
  o.max_part_size = 50;
  o.max_transitions = 300;
  o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r) << r.status().to_string();
  ASSERT_GT(r->stats.budget_splits, 0);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(ops_progress(seen[i]), ops_progress(seen[i - 1]) - 1e-9);
}

TEST(PartSearch, ASmallSearchBudgetSplitsPartsAndTheNoteNamesTheFlag) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  OptimizeOptions o;
  o.max_transitions = 200;
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_GT(r->stats.budget_splits, 0);
  ASSERT_FALSE(r->schedule.meta.notes.empty());
  EXPECT_NE(r->schedule.meta.notes.back().find("--search-budget"), std::string::npos);
  EXPECT_TRUE(validate(*g, r->schedule));
}

// ---------- stages asked in batches (DpOptions::stage_batch) ----------

// Records the size and the stages of every request; latencies from signature_latency.
class BatchRecordingModel : public CostModel {
 public:
  std::string name() const override { return "batch-recording"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    requests.push_back({st});
    return signature_latency(g, st);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages, int) override {
    if (fail_next) {
      fail_next = false;
      return error(ErrorCode::kRuntimeError, "the GPU timed out");
    }
    requests.push_back(stages);
    std::vector<double> out;
    for (const Stage& st : stages) out.push_back(signature_latency(g, st));
    return out;
  }
  std::vector<std::vector<Stage>> requests;
  bool fail_next = false;
};

TEST(StageBatch, BatchedRequestsGiveTheScheduleOfOneStageAtATimeInFewerRequests) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "googlenet"}) {
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
    for (int batched : {0, 1}) {
      TableCostModel table(signature_latency);
      OptimizeOptions o;
      o.max_part_size = 50;
      o.stage_batch = batched ? 8 : 1;
      r[batched] = optimize(*g, o, table);
      ASSERT_TRUE(r[batched]) << r[batched].status().to_string();
    }
    EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule)) << name;
    EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms) << name;
    EXPECT_EQ(r[1]->stats.states, r[0]->stats.states) << name;
    EXPECT_LT(r[1]->stats.cost_requests, r[0]->stats.cost_requests) << name;
    // Speculation: a batch may hold stages a better ending among them prunes; few, with the first
    // candidate of a state asked alone.
    EXPECT_GE(r[1]->stats.stages_costed, r[0]->stats.stages_costed) << name;
    EXPECT_LE(double(r[1]->stats.stages_costed), 1.1 * double(r[0]->stats.stages_costed)) << name;
  }
}

TEST(StageBatch, OneStateAtATimeRequestsHoldAtMostTheBatchExceptTheSingleOpFloors) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  for (bool prune : {true, false}) {
    BatchRecordingModel model;
    OptimizeOptions o;
    o.max_part_size = 50;
    o.stage_batch = 4;
    o.states_together = 1;
    o.bound_pruning = prune;
    ASSERT_TRUE(optimize(*g, o, model));
    size_t largest = 0;
    for (const auto& request : model.requests) {
      const bool floors = std::all_of(request.begin(), request.end(),
                                      [](const Stage& st) { return st.groups.size() == 1 && st.ops().size() == 1; });
      if (!floors) {
        EXPECT_LE(request.size(), 4u);
      }
      largest = std::max(largest, request.size());
    }
    EXPECT_GT(largest, 1u) << "no request was batched";
  }
}

// The largest request that is not the single-op floors.
size_t largest_request(const std::vector<std::vector<Stage>>& requests) {
  size_t largest = 0;
  for (const auto& request : requests) {
    const bool floors = std::all_of(request.begin(), request.end(),
                                    [](const Stage& st) { return st.groups.size() == 1 && st.ops().size() == 1; });
    if (!floors) largest = std::max(largest, request.size());
  }
  return largest;
}

TEST(StatesTogether, StatesOfOneSizeAskInOneRequestAndGiveTheScheduleOfOneStateAtATime) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "randwire"}) {  // wide blocks: many states of a size
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
    size_t largest[2] = {0, 0};
    for (int together : {0, 1}) {
      BatchRecordingModel model;
      OptimizeOptions o;
      o.max_part_size = 50;
      o.stage_batch = 4;
      o.states_together = together ? 0 : 1;
      r[together] = optimize(*g, o, model);
      ASSERT_TRUE(r[together]) << name << ": " << r[together].status().to_string();
      largest[together] = largest_request(model.requests);
    }
    EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule)) << name;
    EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms) << name;
    EXPECT_EQ(r[1]->stats.states, r[0]->stats.states) << name;
    EXPECT_EQ(r[1]->stats.transitions, r[0]->stats.transitions) << name;
    EXPECT_LE(largest[0], 4u) << name;
    EXPECT_GT(largest[1], 4u) << name;
    // Every state prunes by its own bound, as alone: the requests are fewer, the stages about as many.
    EXPECT_LT(2 * r[1]->stats.cost_requests, r[0]->stats.cost_requests) << name;
    EXPECT_LE(double(r[1]->stats.stages_costed), 1.1 * double(r[0]->stats.stages_costed)) << name;
    EXPECT_GE(double(r[1]->stats.stages_costed), 0.9 * double(r[0]->stats.stages_costed)) << name;
  }
}

TEST(StatesTogether, RequestsHoldAtMostTheBatchForEachStateTogether) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  BatchRecordingModel model;
  OptimizeOptions o;
  o.max_part_size = 50;
  o.stage_batch = 2;
  o.states_together = 3;
  ASSERT_TRUE(optimize(*g, o, model));
  EXPECT_LE(largest_request(model.requests), 6u);
  EXPECT_GT(largest_request(model.requests), 2u);
}

TEST(StatesTogether, ANegativeCountIsRejectedByName) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  OptimizeOptions o;
  o.states_together = -1;
  auto r = optimize(*g, o, table);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("--states-together"), std::string::npos);
}

TEST(StageBatch, TheCacheMeasuresEachMissingStageOnceAndCountsTheRestAsHits) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}}, c{StageKind::kConcurrent, {{3}}};
  BatchRecordingModel inner;
  StageCache cache(inner, "t");
  auto first = cache.stage_latencies_ms(*g, {a, b, a}, 1);
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_EQ(inner.requests.size(), 1u);
  EXPECT_EQ(inner.requests[0].size(), 2u);  // a's second copy waits for the first
  EXPECT_DOUBLE_EQ((*first)[0], (*first)[2]);
  EXPECT_DOUBLE_EQ((*first)[1], signature_latency(*g, b));
  auto second = cache.stage_latencies_ms(*g, {b, c}, 1);
  ASSERT_TRUE(second);
  ASSERT_EQ(inner.requests.size(), 2u);
  EXPECT_EQ(inner.requests[1].size(), 1u);
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(StageBatch, AFailedRequestLeavesItsStagesToBeMeasuredAgain) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  BatchRecordingModel inner;
  StageCache cache(inner, "t");
  inner.fail_next = true;
  auto failed = cache.stage_latencies_ms(*g, {a, b}, 1);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.status().message().find("timed out"), std::string::npos);
  EXPECT_EQ(cache.size(), 0u);
  auto again = cache.stage_latencies_ms(*g, {a, b}, 1);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(inner.requests.size(), 1u);
  EXPECT_EQ(cache.size(), 2u);
}

// ---------- limits (DpOptions::limited_timing) ----------

// signature_latency's figures; records each stage asked and its limit (infinity: asked without one).
class LimitRecordingModel : public CostModel {
 public:
  std::string name() const override { return "limit-recording"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    asked.push_back({signature_latency(g, st), kNone});
    return asked.back().first;
  }
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           const std::vector<double>& limits, int) override {
    std::vector<double> out;
    for (size_t i = 0; i < stages.size(); ++i) {
      out.push_back(signature_latency(g, stages[i]));
      asked.push_back({out.back(), limits[i]});
    }
    return out;
  }
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, double>> asked;  // (figure, limit)
};

TEST(DpLimits, StagesAreAskedWithWhatWouldBeatTheBestEndingSoFarAndTheOptimumIsUnchanged) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  OptimizeOptions o;
  o.max_part_size = 50;
  LimitRecordingModel model;
  auto limited = optimize(*g, o, model);
  ASSERT_TRUE(limited) << limited.status().to_string();
  int64_t finite = 0, past = 0;
  for (const auto& [figure, limit] : model.asked) {
    if (std::isinf(limit)) continue;
    ++finite;
    past += figure > limit;
    EXPECT_GT(limit, 0) << "a limit lies above the stage's floor, itself at least 0";
  }
  EXPECT_GT(finite, int64_t(model.asked.size()) / 2);
  EXPECT_GT(past, 0) << "some stages asked lose to the best ending so far";
  // The model ignores the limits: the same search without them finds the same schedule.
  TableCostModel table(signature_latency);
  auto plain = optimize(*g, o, table);
  ASSERT_TRUE(plain);
  EXPECT_EQ(stage_lists(limited->schedule), stage_lists(plain->schedule));
  EXPECT_DOUBLE_EQ(limited->schedule.meta.latency_ms, plain->schedule.meta.latency_ms);
}

TEST(DpLimits, NoLimitsWithFullTimingOrWithoutBoundPruning) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  for (bool prune : {true, false}) {
    OptimizeOptions o;
    o.bound_pruning = prune;
    o.limited_timing = !prune;  // full timing when pruning; limits asked for but no bound to give them
    LimitRecordingModel model;
    ASSERT_TRUE(optimize(*g, o, model));
    EXPECT_TRUE(std::all_of(model.asked.begin(), model.asked.end(), [](const auto& a) { return std::isinf(a.second); }))
        << "prune " << prune;
  }
}

TEST(DpLimits, TheStageCachePassesTheLimitsOfTheStagesItMeasures) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  LimitRecordingModel inner;
  StageCache cache(inner, "t");
  ASSERT_TRUE(cache.stage_latencies_ms(*g, {a}, 1));
  auto both = cache.limited_stage_latencies_ms(*g, {a, b}, {0.5, 0.25}, 1);
  ASSERT_TRUE(both) << both.status().to_string();
  ASSERT_EQ(inner.asked.size(), 2u);  // a from the cache
  EXPECT_DOUBLE_EQ(inner.asked[1].second, 0.25);
  EXPECT_DOUBLE_EQ((*both)[1], signature_latency(*g, b));
  auto mismatched = cache.limited_stage_latencies_ms(*g, {a, b}, {0.5}, 1);
  ASSERT_FALSE(mismatched);
  EXPECT_NE(mismatched.status().message().find("1 limits for 2 stages"), std::string::npos);
}

// ---------- screening (DpOptions::screen_margin) ----------

// Settled figures: signature_latency scaled to real stage latencies (0.1-5 ms, so that the margin's
// 2 us is small beside them); screening figures off by up to `error` either way, the same for a stage
// every time. Records every stage it settled.
double scaled_latency(const ir::Graph& g, const Stage& st) { return 100 * signature_latency(g, st); }

class ScreeningModel : public CostModel {
 public:
  explicit ScreeningModel(double error) : error_(error) {}
  std::string name() const override { return "screening"; }
  bool screens() const override { return true; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    settled.insert(signature(g, st));
    return scaled_latency(g, st);
  }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                    int) override {
    std::vector<double> out;
    for (const Stage& st : stages) {
      const std::string h = signature_hash(signature(g, st));
      const double unit = double(std::stoull(h.substr(0, 8), nullptr, 16)) / double(0xFFFFFFFFull);  // [0, 1]
      out.push_back(scaled_latency(g, st) * (1 + error_ * (2 * unit - 1)));
      ++screened;
    }
    return out;
  }
  std::string signature(const ir::Graph& g, const Stage& st) {
    if (keys_.attrs.size() != g.nodes.size()) keys_ = op_keys(g);
    return stage_signature(g, keys_, st);
  }
  std::set<std::string> settled;
  int64_t screened = 0;

 private:
  double error_;
  OpKeys keys_;
};

TEST(Screening, FiguresWithinTheMarginGiveTheScheduleOfSettlingEveryStageWithFewerSettled) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "googlenet"}) {
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    TableCostModel table(scaled_latency);
    OptimizeOptions o;
    o.max_part_size = 50;
    auto all_settled = optimize(*g, o, table);
    ASSERT_TRUE(all_settled) << all_settled.status().to_string();
    ScreeningModel screening(0.08);
    o.screen_margin = 0.1;
    auto screened = optimize(*g, o, screening);
    ASSERT_TRUE(screened) << screened.status().to_string();
    EXPECT_EQ(stage_lists(screened->schedule), stage_lists(all_settled->schedule)) << name;
    EXPECT_NEAR(screened->schedule.meta.latency_ms, all_settled->schedule.meta.latency_ms, 1e-9) << name;
    EXPECT_GT(screened->stats.stages_settled, 0) << name;
    EXPECT_LT(screening.settled.size(), size_t(all_settled->stats.stages_costed)) << name;
    std::printf("[screening] %s: %zu stages settled of %lld screened; %lld settled without screening\n", name,
                screening.settled.size(), static_cast<long long>(screening.screened),
                static_cast<long long>(all_settled->stats.stages_costed));
  }
}

TEST(Screening, EveryStageOfTheChosenScheduleWasSettled) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  ScreeningModel screening(0.3);  // figures off by more than the margin: choices may differ, never unsettled
  OptimizeOptions o;
  o.screen_margin = 0.1;
  auto r = optimize(*g, o, screening);
  ASSERT_TRUE(r) << r.status().to_string();
  for (const auto& block : r->schedule.blocks)
    for (const Stage& st : block.stages) EXPECT_TRUE(screening.settled.count(screening.signature(*g, st)));
}

TEST(Screening, AModelThatDoesNotScreenIsSettledAtOnce) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
  for (int margin : {0, 1}) {
    TableCostModel table(signature_latency);
    OptimizeOptions o;
    o.screen_margin = margin ? 0.1 : 0.0;
    r[margin] = optimize(*g, o, table);
    ASSERT_TRUE(r[margin]) << r[margin].status().to_string();
  }
  EXPECT_EQ(r[1]->stats.stages_settled, 0);
  EXPECT_EQ(r[1]->stats.stages_costed, r[0]->stats.stages_costed);
  EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule));
}

TEST(Screening, TheStageCacheAnswersAScreeningRequestWithASettledFigureButNeverTheReverse) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  ScreeningModel inner(0.5);
  StageCache cache(inner, "t");
  ASSERT_TRUE(cache.stage_latencies_ms(*g, {a}, 1));  // a settled
  auto screened = cache.screen_latencies_ms(*g, {a, b}, 1);
  ASSERT_TRUE(screened);
  EXPECT_DOUBLE_EQ((*screened)[0], scaled_latency(*g, a));  // the settled figure
  EXPECT_EQ(inner.screened, 1);                             // only b was screened
  auto settled = cache.stage_latencies_ms(*g, {b}, 1);
  ASSERT_TRUE(settled);
  EXPECT_DOUBLE_EQ((*settled)[0], scaled_latency(*g, b));  // b timed again, settled
  EXPECT_EQ(inner.settled.size(), 2u);
}

// A stage's signature leaves out which of its groups share an outside input; a one-stage segment's
// keeps it. Over the stages a NasNet search asks (analytic model), the stage signatures are far fewer.
TEST(StageCacheKeys, StagesThatDifferOnlyInSharedInputsAreMeasuredOnceOverARealSearch) {
  auto g = models::nasnet();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> stages, with_links;
  TableCostModel record([&](const ir::Graph& graph, const Stage& st) {
    stages.insert(stage_signature(graph, keys, st));
    with_links.insert(segment_signature(graph, keys, {st}));
    return signature_latency(graph, st);
  });
  OptimizeOptions o;
  o.max_part_size = 50;
  ASSERT_TRUE(optimize(*g, o, record));
  std::printf("[signatures] nasnet: %zu distinct stages, %zu with shared-input links\n", stages.size(),
              with_links.size());
  EXPECT_LT(4 * stages.size(), 3 * with_links.size());  // 24,244 of 42,234 when written
}

TEST(StageCacheKeys, SignaturesHashToFixedWidthKeysWithoutCollisionsOverARealSearch) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> signatures, hashes;
  TableCostModel record([&](const ir::Graph& graph, const Stage& st) {
    const std::string sig = stage_signature(graph, keys, st);
    signatures.insert(sig);
    hashes.insert(signature_hash(sig));
    return signature_latency(graph, st);
  });
  OptimizeOptions o;
  o.bound_pruning = false;  // every ending costed: thousands of distinct signatures
  ASSERT_TRUE(optimize(*g, o, record));
  EXPECT_GT(signatures.size(), 3000u);
  EXPECT_EQ(hashes.size(), signatures.size());
  for (const std::string& h : hashes) EXPECT_EQ(h.size(), 32u);
  EXPECT_NE(signature_hash("a"), signature_hash("b"));
}

// ---------- idle workers ----------

// Answers signature_latency, records what it timed (and each request's size), and can be told to hold each
// request until another model has been asked (so that a waiting worker surely takes a piece) or to fail.
class GatedModel : public CostModel {
 public:
  std::string name() const override { return "gated"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    return signature_latency(g, st);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages, int) override {
    if (wait_for && !wait_for->asked_within(std::chrono::seconds(20)))
      return error(ErrorCode::kRuntimeError, "the other model was never asked");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      timed.insert(timed.end(), stages.begin(), stages.end());
      pieces.push_back(stages.size());
      asked_ = true;
    }
    asked_cv_.notify_all();
    if (fails) return error(ErrorCode::kRuntimeError, "GPU 2 fell off the bus");
    std::vector<double> out;
    for (const Stage& st : stages) out.push_back(signature_latency(g, st));
    return out;
  }
  std::string timing_device() const override { return device_name; }
  bool asked_within(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return asked_cv_.wait_for(lock, limit, [&] { return asked_; });
  }
  GatedModel* wait_for = nullptr;
  bool fails = false;
  std::string device_name;
  std::vector<Stage> timed;
  std::vector<size_t> pieces;

 private:
  std::mutex mutex_;
  std::condition_variable asked_cv_;
  bool asked_ = false;
};

std::vector<Stage> single_op_stages(int count) {
  std::vector<Stage> out;
  for (int i = 1; i <= count; ++i) out.push_back(Stage{StageKind::kConcurrent, {{ir::NodeId(i)}}});
  return out;
}

// Worker `i` of `pool` out of parts, serving on a thread of its own from construction (which returns once
// it waits) until the pool is closed.
class Serving {
 public:
  Serving(IdleWorkers& pool, size_t i) : pool_(pool) {
    const size_t before = pool.waiting();
    thread_ = std::thread([&pool, i] { pool.serve(i); });
    while (pool.waiting() == before) std::this_thread::yield();
  }
  ~Serving() {
    pool_.close();
    thread_.join();
  }

 private:
  IdleWorkers& pool_;
  std::thread thread_;
};

// Every stage of `stages` timed once by one of `models`, each model's stages in runs of consecutive ones.
void expect_shared_out(const std::vector<Stage>& stages, const std::vector<const GatedModel*>& models) {
  std::map<ir::NodeId, int> times;
  for (const GatedModel* m : models)
    for (const Stage& st : m->timed) ++times[st.groups[0][0]];
  ASSERT_EQ(times.size(), stages.size()) << "a stage was not timed";
  for (const auto& [op, n] : times) EXPECT_EQ(n, 1) << "stage of op " << op << " timed " << n << " times";
  for (const GatedModel* m : models) {
    size_t at = 0;
    for (size_t piece : m->pieces) {
      for (size_t k = at + 1; k < at + piece; ++k)
        EXPECT_EQ(m->timed[k].groups[0][0], m->timed[k - 1].groups[0][0] + 1) << "a piece is not contiguous";
      at += piece;
    }
  }
}

TEST(IdleWorkers, AWaitingWorkerTimesPiecesOfAnotherWorkersRequestAndTheAnswersKeepTheirOrder) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, idle;
  busy.wait_for = &idle;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(idle);
  pool.open();
  auto helper = std::make_unique<Serving>(pool, 1);
  EXPECT_EQ(asker.spare_workers(), 1u);
  const std::vector<Stage> stages = single_op_stages(24);
  auto ms = asker.stage_latencies_ms(*g, stages, 1);
  helper.reset();  // closes the pool
  ASSERT_TRUE(ms) << ms.status().to_string();
  ASSERT_EQ(ms->size(), stages.size());
  for (size_t i = 0; i < stages.size(); ++i) EXPECT_DOUBLE_EQ((*ms)[i], signature_latency(*g, stages[i])) << i;
  expect_shared_out(stages, {&busy, &idle});
  // The asker takes the first piece before the request is shared: the least piece, 8 of 24 over 2 takers.
  ASSERT_FALSE(busy.pieces.empty());
  EXPECT_EQ(busy.pieces[0], IdleWorkers::kMinPiece);
  EXPECT_EQ(busy.timed[0], stages[0]);
  EXPECT_FALSE(idle.timed.empty());
  EXPECT_EQ(pool.stats().chunks_lent, int64_t(idle.pieces.size()));
  EXPECT_EQ(pool.stats().stages_lent, int64_t(idle.timed.size()));
  EXPECT_EQ(asker.spare_workers(), 0u) << "closed";
}

TEST(IdleWorkers, PiecesShrinkAsFewerStagesAreLeftDownToTheLeastPiece) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, first, second;
  first.device_name = "cuda:1", second.device_name = "cuda:2";
  busy.wait_for = first.wait_for = &second;  // each helper takes a piece before the asker's first comes back
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(first);
  pool.add(second);
  pool.open();
  Serving one(pool, 1), two(pool, 2);
  const std::vector<Stage> stages = single_op_stages(96);
  ASSERT_TRUE(asker.stage_latencies_ms(*g, stages, 1));
  expect_shared_out(stages, {&busy, &first, &second});
  // Three takers: a sixth of what is left, at least 8; the asker takes the first.
  EXPECT_EQ(busy.pieces[0], 16u);
  std::vector<size_t> all;
  for (const GatedModel* m : {&busy, &first, &second}) all.insert(all.end(), m->pieces.begin(), m->pieces.end());
  std::sort(all.begin(), all.end(), std::greater<>());
  EXPECT_EQ(all, (std::vector<size_t>{16, 14, 11, 10, 8, 8, 8, 8, 8, 5}));
}

TEST(IdleWorkers, WithoutAWaitingWorkerOrAfterCloseTheAskerTimesEverything) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel own, other;
  IdleWorkers pool;
  CostModel& asker = pool.add(own);
  pool.add(other);
  pool.open();
  ASSERT_TRUE(asker.stage_latencies_ms(*g, single_op_stages(4), 1));
  pool.close();
  pool.serve(1);  // returns at once: closed
  ASSERT_TRUE(asker.stage_latencies_ms(*g, single_op_stages(4), 1));
  EXPECT_EQ(own.timed.size(), 8u);
  EXPECT_TRUE(other.timed.empty());
  EXPECT_EQ(pool.stats().chunks_lent, 0);
}

TEST(IdleWorkers, OnlyWorkersOnAnotherLaneHelp) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, sibling, other_gpu;
  busy.device_name = sibling.device_name = "cuda:0";
  other_gpu.device_name = "cuda:1";
  busy.wait_for = &other_gpu;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(sibling);
  pool.add(other_gpu);
  pool.open();
  Serving on_same_gpu(pool, 1);
  EXPECT_EQ(asker.spare_workers(), 0u) << "its sibling on the same GPU counted";
  Serving on_other_gpu(pool, 2);
  EXPECT_EQ(asker.spare_workers(), 1u);
  const std::vector<Stage> stages = single_op_stages(24);
  auto ms = asker.stage_latencies_ms(*g, stages, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_TRUE(sibling.timed.empty());
  EXPECT_FALSE(other_gpu.timed.empty());
  expect_shared_out(stages, {&busy, &other_gpu});
}

TEST(IdleWorkers, ASiblingOutOfPartsHelpsWithLargeRequestsOnly) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, sibling;
  busy.device_name = sibling.device_name = "cuda:0";
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(sibling);
  pool.open();
  Serving on_same_gpu(pool, 1);
  EXPECT_EQ(asker.spare_workers(), 0u) << "the DP's batch grew for a sibling";
  const size_t n = IdleWorkers::kSiblingMinStages;
  auto small = asker.stage_latencies_ms(*g, single_op_stages(int(n - 1)), 1);
  ASSERT_TRUE(small) << small.status().to_string();
  EXPECT_TRUE(sibling.timed.empty());
  busy.wait_for = &sibling;  // so that the sibling surely takes a piece
  busy.timed.clear(), busy.pieces.clear();
  const std::vector<Stage> stages = single_op_stages(int(n));
  auto large = asker.stage_latencies_ms(*g, stages, 1);
  ASSERT_TRUE(large) << large.status().to_string();
  EXPECT_FALSE(sibling.timed.empty());
  expect_shared_out(stages, {&busy, &sibling});
}

TEST(IdleWorkers, WorkersHelpOnlyOnceEveryWorkerOfTheirGpuIsOutOfParts) {
  GatedModel busy, helper, still_searching;
  busy.device_name = "cuda:0";
  helper.device_name = still_searching.device_name = "cuda:1";
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(helper);
  pool.add(still_searching);
  pool.open();
  Serving first(pool, 1);
  EXPECT_EQ(asker.spare_workers(), 0u) << "its GPU still searches a part";
  Serving second(pool, 2);
  EXPECT_EQ(asker.spare_workers(), 2u);
}

TEST(IdleWorkers, AWaitingWorkersErrorReachesTheAsker) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, broken;
  busy.wait_for = &broken;
  broken.fails = true;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(broken);
  pool.open();
  Serving helper(pool, 1);
  auto ms = asker.stage_latencies_ms(*g, single_op_stages(16), 1);
  ASSERT_FALSE(ms);
  EXPECT_NE(ms.status().message().find("fell off the bus"), std::string::npos) << ms.status().message();
}

TEST(IdleWorkers, LimitsTravelWithTheirStages) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  class LimitRecording : public GatedModel {
   public:
    Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                             const std::vector<double>& limits, int batch) override {
      for (size_t i = 0; i < stages.size(); ++i) seen[stages[i].groups[0][0]] = limits[i];
      return stage_latencies_ms(g, stages, batch);
    }
    std::map<ir::NodeId, double> seen;
  } busy, idle;
  busy.wait_for = &idle;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(idle);
  pool.open();
  Serving helper(pool, 1);
  std::vector<double> limits;
  for (int i = 1; i <= 16; ++i) limits.push_back(10.0 * i);
  auto ms = asker.limited_stage_latencies_ms(*g, single_op_stages(16), limits, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_FALSE(idle.seen.empty());
  EXPECT_EQ(busy.seen.size() + idle.seen.size(), 16u);
  for (const auto* seen : {&busy.seen, &idle.seen})
    for (const auto& [op, limit] : *seen) EXPECT_DOUBLE_EQ(limit, 10.0 * double(op)) << "stage of op " << op;
  EXPECT_FALSE(asker.limited_stage_latencies_ms(*g, single_op_stages(4), {10}, 1)) << "one limit for four stages";
}

TEST(IdleWorkers, SpareWorkersMakeTheDpAskMoreStagesAtOnceForTheSameSchedule) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  class Spare : public BatchRecordingModel {
   public:
    size_t spare_workers() const override { return spare; }
    size_t spare = 0;
  };
  Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
  size_t largest[2] = {0, 0};
  for (int spare : {0, 1}) {
    Spare model;
    model.spare = spare ? 3 : 0;
    OptimizeOptions o;
    o.max_part_size = 50;
    o.stage_batch = 4;
    o.states_together = 1;
    r[spare] = optimize(*g, o, model);
    ASSERT_TRUE(r[spare]) << r[spare].status().to_string();
    largest[spare] = largest_request(model.requests);
  }
  EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule));
  EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms);
  EXPECT_LE(largest[0], 4u);
  EXPECT_GT(largest[1], 4u);
  EXPECT_LE(largest[1], 16u);  // the batch times (1 + 3 spare workers)
  EXPECT_LT(r[1]->stats.cost_requests, r[0]->stats.cost_requests);
}

TEST(IdleWorkers, ASearchWithWorkersLentGivesOneWorkersScheduleAndMeasuresEachStageOnce) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  auto g = models::build_model("nasnet", mo);
  ASSERT_TRUE(g);
  const WorkerRun one = search_with_workers(*g, 1);
  std::vector<std::unique_ptr<CountingModel>> inner;
  for (int i = 0; i < 4; ++i) inner.push_back(std::make_unique<CountingModel>(*g));
  IdleWorkers pool;
  StageCache cache(pool.add(*inner[0]), "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (size_t i = 1; i < inner.size(); ++i) {
    views.push_back(cache.worker(pool.add(*inner[i])));
    o.extra_models.push_back(views.back().get());
  }
  o.idle_workers = &pool;
  auto lent = optimize(*g, o, cache);
  ASSERT_TRUE(one.result && lent) << lent.status().to_string();
  EXPECT_EQ(stage_lists(lent->schedule), stage_lists(one.result->schedule));
  EXPECT_EQ(lent->stats.states, one.result->stats.states);
  std::vector<std::string> asked;
  for (const auto& m : inner) {
    auto a = m->asked();
    asked.insert(asked.end(), a.begin(), a.end());
  }
  EXPECT_EQ(std::set<std::string>(asked.begin(), asked.end()).size(), asked.size()) << "a stage was measured twice";
  EXPECT_EQ(cache.spare_workers(), 0u) << "the search closed the pool";
}

TEST(IdleWorkers, APoolOfAnotherSizeThanTheWorkersIsAnError) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel a(signature_latency), b(signature_latency);
  IdleWorkers pool;
  StageCache cache(pool.add(a), "t");
  auto view = cache.worker(b);  // not pooled
  OptimizeOptions o;
  o.extra_models = {view.get()};
  o.idle_workers = &pool;
  auto r = optimize(*g, o, cache);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("1 models pooled for 2 workers"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ios::sched
