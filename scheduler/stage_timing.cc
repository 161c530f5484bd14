#include "scheduler/stage_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace ios::sched {

std::string StageTimingRule::describe() const {
  char text[200];
  if (min_rounds >= max_rounds)
    std::snprintf(text, sizeof text, "warmup %d, %d replays per round, %d rounds", warmup, number, max_rounds);
  else
    std::snprintf(text, sizeof text, "warmup %d, %d replays per round, %d-%d rounds until spread <= %.0f%%", warmup,
                  number, min_rounds, max_rounds, tolerance * 100);
  std::string out = text;
  if (min_rounds < max_rounds && abs_tolerance_ms > 0) {
    std::snprintf(text, sizeof text, " or %.3g us", abs_tolerance_ms * 1e3);
    out += text;
  }
  if (one_round_margin > 0 && min_rounds > 1) {
    std::snprintf(text, sizeof text, ", a limited stage's first round past its limit by %.0f%% stops it",
                  one_round_margin * 100);
    out += text;
  }
  switch (l2) {
    case L2Timing::kWarm:
      return out;
    case L2Timing::kFlushed:
      return out + ", L2 flushed before each replay";
    case L2Timing::kColdWeights:
      out += ", L2 flushed and activations read back before each replay";
      break;
    case L2Timing::kColdShare:
      out +=
          ", each round's first replay after an L2 flush (activations read back), weighed by the cold share "
          "(calibrated end to end" +
          std::string(prefetch_ahead > 0 ? ", with or without weights prefetched, whichever ran faster)" : ")");
      break;
    case L2Timing::kByFootprint:
      return out +
             ", every replay's weights cold where the network's weights exceed the L2, else each round's first "
             "replay cold weighed by the cold share";
  }
  if (footprint) {
    std::snprintf(text, sizeof text, " (the network's weights, %.1f MB, %s the L2's %.1f MB)",
                  double(footprint->weight_bytes) / 1e6,
                  footprint->weight_bytes > footprint->l2_bytes ? "exceed" : "fit", double(footprint->l2_bytes) / 1e6);
    out += text;
  }
  return out;
}

StageTimingRule StageTimingRule::for_footprint(int64_t weight_bytes, int64_t l2_bytes) const {
  if (l2 != L2Timing::kByFootprint) return *this;
  StageTimingRule r = *this;
  r.l2 = weight_bytes > l2_bytes ? L2Timing::kColdWeights : L2Timing::kColdShare;
  r.footprint = Footprint{weight_bytes, l2_bytes};
  return r;
}

std::string StageTimingRule::cache_tag() const {
  switch (l2) {
    case L2Timing::kWarm:
      return "";
    case L2Timing::kFlushed:
      return "|cold-l2";
    case L2Timing::kColdWeights:
      return "|cold-weights";
    case L2Timing::kColdShare:  // the share follows from the network, precision and device, all in the key
      return "|l2-share" + (prefetch_ahead > 0 ? "|prefetch" + std::to_string(prefetch_ahead) : std::string());
    case L2Timing::kByFootprint:  // resolved by the network, precision and device, all in the key
      return "|l2-footprint" + (prefetch_ahead > 0 ? "|prefetch" + std::to_string(prefetch_ahead) : std::string());
  }
  return "";
}

namespace {

// The rule named by `base` (a name or a tuple); errors quote the whole flag value `text`.
Expected<StageTimingRule> parse_rule(const std::string& base, const std::string& text) {
  if (base == "adaptive") return StageTimingRule{};
  if (base == "ios") return StageTimingRule::ios();
  if (base == "fast") return StageTimingRule::fast();
  StageTimingRule r;
  double abs_us = 0;
  int used = -1, abs_used = -1;
  std::sscanf(base.c_str(), "%d/%d/%d-%d/%lf%n", &r.warmup, &r.number, &r.min_rounds, &r.max_rounds, &r.tolerance,
              &used);
  if (r.number < 2) r.l2 = L2Timing::kWarm;
  if (used > 0 && base[size_t(used)] == '/' && std::sscanf(base.c_str() + used, "/%lf%n", &abs_us, &abs_used) == 1)
    used += abs_used;
  RETURN_ERROR_IF(used <= 0 || size_t(used) != base.size(), ErrorCode::kInvalidArgument,
                  "--stage-timing must be adaptive, ios, fast or W/N/MIN-MAX/TOL[/ABS_US] (e.g. 1/2/3-6/0.05 or "
                  "1/1/3-6/0.05/2), optionally followed by ',warm', ',cold-l2', ',cold-weights' or ',l2-share', got '" +
                      text + "'");
  RETURN_ERROR_IF(r.warmup < 0 || r.number < 1 || r.min_rounds < 1 || r.max_rounds < r.min_rounds ||
                      r.max_rounds > 1000 || r.number > 1000 || r.warmup > 1000 || !(r.tolerance >= 0) ||
                      !(abs_us >= 0) || abs_us > 1e6,
                  ErrorCode::kInvalidArgument,
                  "--stage-timing '" + text + "': need 0 <= W, 1 <= N, 1 <= MIN <= MAX <= 1000, TOL >= 0, 0 <= ABS_US");
  r.abs_tolerance_ms = abs_us * 1e-3;
  return r;
}

}  // namespace

Expected<StageTimingRule> parse_stage_timing(const std::string& text) {
  static const std::pair<std::string, L2Timing> kSuffixes[] = {{",warm", L2Timing::kWarm},
                                                               {",cold-l2", L2Timing::kFlushed},
                                                               {",cold-weights", L2Timing::kColdWeights},
                                                               {",l2-share", L2Timing::kColdShare}};
  for (const auto& [suffix, l2] : kSuffixes) {
    if (text.size() < suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    ASSIGN_OR_RETURN(StageTimingRule r, parse_rule(text.substr(0, text.size() - suffix.size()), text));
    r.l2 = l2;
    RETURN_ERROR_IF(l2 == L2Timing::kColdShare && r.number < 2, ErrorCode::kInvalidArgument,
                    "--stage-timing '" + text + "': ',l2-share' needs at least 2 replays per round (N >= 2)");
    return r;
  }
  return parse_rule(text, text);
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2) return *mid;
  // The lower middle is the largest element before `mid` once nth_element has partitioned.
  return (*mid + *std::max_element(values.begin(), mid)) / 2;
}

double relative_spread(const std::vector<double>& rounds) {
  if (rounds.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(rounds.begin(), rounds.end());
  const double median = median_of(rounds);
  return median > 0 ? (*hi - *lo) / median : 0;
}

bool within_tolerance(const std::vector<double>& rounds, const StageTimingRule& rule) {
  if (relative_spread(rounds) <= rule.tolerance) return true;
  const auto [lo, hi] = std::minmax_element(rounds.begin(), rounds.end());
  return *hi - *lo <= rule.abs_tolerance_ms;
}

bool past_limit(const std::vector<double>& rounds, const StageTimingRule& rule, double limit) {
  return !rounds.empty() && *std::min_element(rounds.begin(), rounds.end()) > limit * (1 + rule.tolerance);
}

bool far_past_limit(const std::vector<double>& rounds, const StageTimingRule& rule, double limit) {
  return rule.one_round_margin > 0 && !rounds.empty() &&
         *std::min_element(rounds.begin(), rounds.end()) > limit * (1 + rule.one_round_margin);
}

int first_rounds(const StageTimingRule& rule, int prior, double limit) {
  if (prior == 0 && rule.one_round_margin > 0 && std::isfinite(limit)) return 1;
  return std::max(1, rule.min_rounds - prior);
}

bool timing_settled(const std::vector<double>& rounds, const StageTimingRule& rule, double limit) {
  const int n = static_cast<int>(rounds.size());
  if (n >= rule.max_rounds) return true;
  if (n < rule.min_rounds) return far_past_limit(rounds, rule, limit);
  return within_tolerance(rounds, rule) || past_limit(rounds, rule, limit);
}

void StageTimingStats::add(const std::vector<double>& rounds, const StageTimingRule& rule, int prior, double limit) {
  ++stages;
  const auto n = static_cast<int64_t>(rounds.size());
  this->rounds += n;
  for (size_t i = size_t(prior); i < rounds.size(); ++i) gpu_seconds += rounds[i] * rule.number * 1e-3;
  const bool settled = within_tolerance(rounds, rule);
  unsettled += !settled;
  stopped_past_limit += !settled && int(n) < rule.max_rounds && past_limit(rounds, rule, limit);
  stopped_early += int(n) < rule.min_rounds;
  if (n >= 2) spreads.push_back(relative_spread(rounds));  // one round has no spread to tell
  if (prior == 0 && rounds.size() >= 2 && rounds[1] > 0) first_over_second.push_back(rounds[0] / rounds[1]);
}

BuildTimes& BuildTimes::operator+=(const BuildTimes& o) {
  setup += o.setup, memory += o.memory, kernels += o.kernels, weights += o.weights, capture += o.capture;
  instantiate += o.instantiate;
  return *this;
}

void StageTimingStats::merge(const StageTimingStats& o) {
  stages += o.stages, rounds += o.rounds, replays += o.replays, passes += o.passes, unsettled += o.unsettled;
  stopped_past_limit += o.stopped_past_limit, stopped_early += o.stopped_early;
  requeued += o.requeued, screened += o.screened, reused_screened += o.reused_screened;
  unproven += o.unproven, max_head_start_ms = std::max(max_head_start_ms, o.max_head_start_ms);
  build_seconds += o.build_seconds, wait_seconds += o.wait_seconds, gpu_seconds += o.gpu_seconds;
  gpu_span_seconds += o.gpu_span_seconds;
  first_over_second.insert(first_over_second.end(), o.first_over_second.begin(), o.first_over_second.end());
  build_parts += o.build_parts;
  queue_seconds += o.queue_seconds;
  spreads.insert(spreads.end(), o.spreads.begin(), o.spreads.end());
}

double StageTimingStats::spread_percentile(double p) const {
  if (spreads.empty()) return 0;
  std::vector<double> sorted = spreads;
  std::sort(sorted.begin(), sorted.end());
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * double(sorted.size())))];
}

double StageTimingStats::first_over_second_median() const {
  return first_over_second.empty() ? 1.0 : median_of(first_over_second);
}

std::string StageTimingStats::summary() const {
  char text[1024];
  std::snprintf(
      text, sizeof text,
      "%lld stages timed (%lld screened, %lld settled on their screening executor) in %lld passes, %.2f "
      "rounds and %.1f replays each, spread median %.1f%% p90 %.1f%%, "
      "%lld above tolerance (%lld stopped past their limit), %lld stopped before the minimum rounds, far "
      "past their limit, first round / second %.3f (median), %lld queued again (%lld kept unproven, spin ahead up to "
      "%.0f us) | GPU: %.1f s in timed rounds, "
      "%.1f s busy in passes | host: %.1f s building (setup %.1f, "
      "memory plan %.1f, kernels %.1f, weights %.1f, capture %.1f, instantiate %.1f), %.1f s queueing, %.1f s waiting",
      static_cast<long long>(stages), static_cast<long long>(screened), static_cast<long long>(reused_screened),
      static_cast<long long>(passes), stages ? double(rounds) / double(stages) : 0.0,
      stages ? double(replays) / double(stages) : 0.0, 100 * spread_percentile(0.5), 100 * spread_percentile(0.9),
      static_cast<long long>(unsettled), static_cast<long long>(stopped_past_limit),
      static_cast<long long>(stopped_early), first_over_second_median(), static_cast<long long>(requeued),
      static_cast<long long>(unproven), 1e3 * max_head_start_ms, gpu_seconds, gpu_span_seconds, build_seconds,
      build_parts.setup, build_parts.memory, build_parts.kernels, build_parts.weights, build_parts.capture,
      build_parts.instantiate, queue_seconds, wait_seconds);
  return text;
}

}  // namespace ios::sched
