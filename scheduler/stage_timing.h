// When the measured cost model may stop timing a stage, as pure arithmetic over the rounds it has
// timed (the GPU loop lives in the runtime). A round is `number` back-to-back replays between two
// events; its figure is their mean. The stage's latency is the median round.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ios::sched {

// From `min_rounds` rounds on, timing stops as soon as the rounds' relative spread
// ((max - min) / median) is within `tolerance`, or their absolute spread within `abs_tolerance_ms`; a
// noisy stage gets up to `max_rounds`. The absolute term exists because a stage of a few microseconds
// jitters by tens of percent from launch to launch while an error that small cannot change which
// schedule wins. IOS's own rule is warmup 2, number 6 and six rounds: {2, 6, 6, 6, 0, 0}.
enum class L2Timing { kWarm, kFlushed, kColdWeights, kColdShare, kByFootprint };

struct StageTimingRule {
  // The default ("adaptive"): on the H100 its schedules ran within 0.6 % of those of 3-6 rounds on
  // SqueezeNet, GoogLeNet, Inception V3 and NasNet and 3.5 % faster on RandWire, for 25-45 % less search
  // time; rules with one replay per round lost 3.5-7 % on NasNet.
  // No warm-up replay: the stage's graph is uploaded before its first round instead (StageTimer), which
  // is what the warm-up paid for. On the H100 that cut RandWire's search from 58.6-61.8 to 52.1-54.6 s
  // (3.7 replays a stage instead of 4.9-5.1), and the schedules of RandWire, NasNet, Inception V3,
  // GoogLeNet and SqueezeNet, fp32 and tf32, ran within the spread of those searched with one.
  int warmup = 0;
  int number = 2;
  int min_rounds = 2;
  int max_rounds = 4;
  double tolerance = 0.05;
  double abs_tolerance_ms = 0;
  // What the L2 holds when a replay starts. Replayed back to back (kWarm), a stage finds its weights
  // and activations in the L2; inside a network whose weights exceed the L2, the stages before it
  // evicted its weights, while the activations it reads were just written. kFlushed: each replay after
  // an L2 flush, timed alone (the round is the mean of its replays). kColdWeights: the same, then the
  // stage's activations read back into the L2 before the replay. kColdShare: each round's first replay as
  // kColdWeights, the others right behind it (warm), weighed by the share of the network's weights the
  // L2 cannot hold (the measured cost model's cold share): a stage whose weights are evicted only part
  // of the time costs in between. On the H100 it brought the search's prediction within 1.6 % of the
  // end-to-end latency on Inception V3, NasNet and RandWire (warm: 11-18 % under) and its schedules ran
  // 1.0-2.8 % faster. kByFootprint, the default: kColdWeights where
  // the network's weights exceed the L2, else kColdShare (resolved, below). A network replayed back to back
  // whose weights exceed the L2 finds every stage's weights evicted by the stages before it, while the share
  // calibrated on the sequential schedule came out near 0 for Inception V3 and NasNet at tf32 and left
  // IOS-Both's prediction 9-12 % under the network; with kColdWeights it came within 3 % on Inception V3
  // (fp32, tf32), NasNet and RandWire, the schedules as fast (H100).
  L2Timing l2 = L2Timing::kByFootprint;
  // A stage asked with a limit (the figure past which it loses to the best ending so far) is timed for
  // one round first; a round past the limit by more than this fraction stops it there (far_past_limit),
  // any other goes on to min_rounds. Most stages the DP asks lose by far, and for them the second round
  // only confirms a loss. The margin is twice the rule's usual tolerance because one round has no spread
  // to check it against. 0: every stage gets min_rounds.
  double one_round_margin = 0.10;
  // Under kColdShare, whether the schedule may run with each stage's weights prefetched into the L2 this
  // many stages ahead (rt::ExecutorOptions::prefetch_ahead; 0: it will not). The cold share is then
  // calibrated against the faster of the sequential schedule run with and without prefetching, as
  // `ios run --prefetch-weights auto` keeps the faster graph: where prefetching hides most of the misses
  // the share falls, and the stages are priced as they will run.
  int prefetch_ahead = 0;

  // IOS's rule, timed as IOS did (warm, every stage six rounds).
  static StageTimingRule ios() { return {2, 6, 6, 6, 0.0, 0.0, L2Timing::kWarm, 0.0}; }
  // One replay per round (5.5-6.6 replays per stage measured); on the H100 its NasNet schedules ran
  // 5-7% slower than those of two replays per round. Warm: l2-share
  // needs a warm replay beside the cold one.
  static StageTimingRule fast() { return {1, 1, 3, 6, 0.05, 0.002, L2Timing::kWarm}; }

  // Where kByFootprint chose, what it compared: the network's weights at the run's precision and the L2.
  struct Footprint {
    int64_t weight_bytes = 0, l2_bytes = 0;
  };
  std::optional<Footprint> footprint = std::nullopt;
  // kByFootprint resolved for a network of `weight_bytes` of weights on a GPU of `l2_bytes` of L2 (and the
  // comparison kept in `footprint`); any other rule unchanged.
  StageTimingRule for_footprint(int64_t weight_bytes, int64_t l2_bytes) const;
  std::string describe() const;
  bool flushes() const { return l2 != L2Timing::kWarm; }
  // What the rule adds to a stage-cache file key: cold timings are other numbers than warm ones.
  std::string cache_tag() const;
};

// "adaptive" (the defaults above), "ios", "fast", or "W/N/MIN-MAX/TOL[/ABS_US]" (e.g. "1/2/3-6/0.05" or
// "1/1/3-6/0.05/2": 5% or 2 microseconds), each optionally followed by ",warm", ",cold-l2" (kFlushed),
// ",cold-weights" or ",l2-share" (which needs N >= 2). Without one: kByFootprint where N >= 2, else warm
// (ios and fast: warm).
Expected<StageTimingRule> parse_stage_timing(const std::string& text);
// What --stage-timing accepts, for every command line that takes it.
inline constexpr const char* kStageTimingHelp =
    "measured cost model: adaptive | ios (IOS's 2/6/6) | fast (1/1/3-6/0.05/2) | W/N/MIN-MAX/TOL[/ABS_US], then "
    "optionally ,l2-share | ,warm | ,cold-weights | ,cold-l2 (where N >= 2 the default: cold-weights where the "
    "network's weights exceed the GPU's L2, else l2-share)";

double median_of(std::vector<double> values);
double relative_spread(const std::vector<double>& rounds);  // (max - min) / median; 0 for fewer than 2
// True when the rounds' spread is within either tolerance of the rule.
bool within_tolerance(const std::vector<double>& rounds, const StageTimingRule& rule);
// True when every round is past `limit` by more than the rule's tolerance: where the stage was asked
// for, any figure past the limit loses, so a more precise one would lose too.
bool past_limit(const std::vector<double>& rounds, const StageTimingRule& rule, double limit);
// True when the rule's one_round_margin is on and every round is past `limit` by more than it.
bool far_past_limit(const std::vector<double>& rounds, const StageTimingRule& rule, double limit);
// Rounds a stage is first queued for, `prior` rounds already timed: one when it has a limit and the rule
// stops far_past_limit stages early, else up to min_rounds (at least one).
int first_rounds(const StageTimingRule& rule, int prior, double limit);
// True once `rounds` (per-replay means, in order) satisfy the rule: before min_rounds when far_past_limit,
// from min_rounds on when within tolerance or past_limit, at max_rounds always.
bool timing_settled(const std::vector<double>& rounds, const StageTimingRule& rule,
                    double limit = std::numeric_limits<double>::infinity());

// How much GPU work (a spin) a stage's rounds are queued behind, so that the host has queued a round
// before the GPU reaches it: a round the GPU reached early may hold an idle gap and is queued again
// (rt::StageTimer), at most three times, then kept. Queued behind nothing but the round before, 3 of 37
// Inception V3 tf32 searches on the H100 caught up with 2.6-2.9 rounds a stage; their kept
// rounds held gaps (in the two compared stage by stage, 400-500 figures ~30 us high), and their schedules
// ran 25 % slower.
// Starts at kFirstMs; doubles each time the GPU caught up, shrinks by a tenth each time it did not, within
// [kMinMs, kMaxMs]: where the host keeps ahead a stage pays a few microseconds of spin.
class HeadStart {
 public:
  static constexpr double kFirstMs = 0.01, kMinMs = 0.005, kMaxMs = 1.0;
  double ms() const { return ms_; }
  void caught_up() { ms_ = std::min(kMaxMs, 2 * ms_); }
  void kept_ahead() { ms_ = std::max(kMinMs, 0.9 * ms_); }

 private:
  double ms_ = kFirstMs;
};

// Host seconds spent building an executor (rt::Executor::create), by part: the measured search builds one
// per stage, so these say where its host time goes.
struct BuildTimes {
  double setup = 0;        // context, streams, events
  double memory = 0;       // memory plan, arena, views
  double kernels = 0;      // launch units: convolution kernels (from the context's cache)
  double weights = 0;      // of the launch units' time: weights packed and uploaded (the first time a store sees them)
  double capture = 0;      // workspaces, and issuing the plan into a CUDA graph
  double instantiate = 0;  // cudaGraphInstantiate
  BuildTimes& operator+=(const BuildTimes& o);
};

// What building the whole schedule's executors took for the measured cost model's share calibration: wall
// seconds (the plan compiled too), and the executors' own parts.
struct NetworkBuild {
  double seconds = 0;
  BuildTimes parts;
};

// The measured cost model's calibration time (rt::MeasuredCostModel::calibration_time); all 0 for others.
struct CalibrationTime {
  double seconds = 0;  // the search's, shared with its workers (they wait for it); 0 when adopted from a file
  // The last share calibration's, by slot (the first also times the network): when each was done, from the
  // calibration's start.
  std::vector<double> slot_seconds;
  NetworkBuild network_build;  // the first slot's
};

// What timing a whole search's stages cost and how noisy they were.
struct StageTimingStats {
  int64_t stages = 0, rounds = 0, replays = 0;
  int64_t passes = 0;              // batches of stages timed with one wait (rt::StageTimer)
  int64_t unsettled = 0;           // stages whose rounds ended with their spread above tolerance
  int64_t stopped_past_limit = 0;  // of unsettled, stopped before max_rounds: every round was past their limit
  int64_t stopped_early = 0;       // stopped before min_rounds: far past their limit (one_round_margin)
  int64_t requeued = 0;            // rounds queued again: the GPU may have reached them before they were all queued
  int64_t unproven = 0;            // rounds kept after the last retry, reached early: they may hold a gap
  double max_head_start_ms = 0;    // the longest spin rounds were queued behind (HeadStart)
  int64_t screened = 0;            // of stages, timed for one round only (CostModel::screen_latencies_ms)
  int64_t reused_screened = 0;     // settled on their screening executor (no build), screening round counted
  // Host wall time making stage executors (the GPU replays earlier stages meanwhile), and waiting for
  // the GPU after the last stage of a pass; GPU time inside timed rounds (each round's figure times its
  // replays: under l2-share a weighted figure, so an estimate; L2 flushes are not counted).
  double build_seconds = 0, wait_seconds = 0, gpu_seconds = 0;
  // GPU time from each pass's first queued work to its last event (warm-ups, L2 flushes and gaps
  // inside a pass included): the search's wall time beyond it is GPU idle.
  double gpu_span_seconds = 0;
  BuildTimes build_parts;       // of build_seconds
  double queue_seconds = 0;     // host wall time queueing replays and events (rt::StageTimer::add)
  std::vector<double> spreads;  // per stage of two rounds or more
  // Per stage timed from its first round: first round / second. Above 1 in the median, first rounds
  // pay for something later ones do not (a warm-up too short).
  std::vector<double> first_over_second;

  // One stage's rounds (its replays are counted by whoever queued them). The first `prior` rounds were
  // timed earlier (a screening round, already added): they count among the stage's rounds and spread,
  // not again in the GPU time.
  void add(const std::vector<double>& rounds, const StageTimingRule& rule, int prior = 0,
           double limit = std::numeric_limits<double>::infinity());
  void merge(const StageTimingStats& other);
  double spread_percentile(double p) const;  // p in [0, 1]
  double first_over_second_median() const;   // 1 when no stage had two rounds of its own
  std::string summary() const;               // one line for logs
};

}  // namespace ios::sched
