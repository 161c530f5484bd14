// The stage timing rule: when a stage's rounds stop, the head start, parsing, statistics.
#include "search_test_support.h"

namespace ios::sched {
namespace {

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

}  // namespace
}  // namespace ios::sched
