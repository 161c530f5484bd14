// Google Benchmark: IOS-Both search time with the analytic cost model (r=3, s=8, part size 50),
// the setting of IOS's experiments. Targets (2-core CPU machine): Inception V3 < 2 s, NasNet and
// RandWire < 20 s. BM_CachedResearch times the same search answered entirely by a filled stage cache,
// which is what a re-search from a measured search's cache file costs on the host.
#include <benchmark/benchmark.h>

#include <optional>

#include "models/models.h"
#include "scheduler/policies.h"

namespace {

std::optional<ios::ir::Graph> model_or_skip(benchmark::State& state, const char* name) {
  auto g = ios::models::build_model(name);
  if (!g) {
    state.SkipWithError(g.status().to_string().c_str());
    return std::nullopt;
  }
  return std::move(*g);
}

// IOS-Both at IOS's experiment setting (r=3, s=8, part size 50); the error goes to `state`.
std::optional<ios::sched::OptimizeResult> search_or_skip(benchmark::State& state, const ios::ir::Graph& g,
                                                         ios::sched::CostModel& model) {
  ios::sched::OptimizeOptions options;
  options.policy = ios::sched::Policy::kDpBoth;
  options.max_part_size = 50;
  auto r = ios::sched::optimize(g, options, model);
  if (!r) {
    state.SkipWithError(r.status().to_string().c_str());
    return std::nullopt;
  }
  return std::move(*r);
}

void BM_IosBothSearch(benchmark::State& state, const char* name) {
  const auto g = model_or_skip(state, name);
  if (!g) return;
  for (auto _ : state) {
    ios::sched::AnalyticCostModel analytic;
    ios::sched::StageCache cache(analytic, "bench");  // fresh per run: the search is timed cold
    const auto r = search_or_skip(state, *g, cache);
    if (!r) return;
    state.counters["states"] = static_cast<double>(r->stats.states);
    state.counters["transitions"] = static_cast<double>(r->stats.transitions);
    state.counters["stages_costed"] = static_cast<double>(r->stats.stages_costed);
    state.counters["latency_ms"] = r->schedule.meta.latency_ms;
  }
}

void BM_CachedResearch(benchmark::State& state, const char* name) {
  const auto g = model_or_skip(state, name);
  if (!g) return;
  ios::sched::AnalyticCostModel analytic;
  ios::sched::StageCache cache(analytic, "bench");
  if (!search_or_skip(state, *g, cache)) return;  // fills the cache
  const size_t misses = cache.misses();
  for (auto _ : state) {
    const auto r = search_or_skip(state, *g, cache);
    if (!r) return;
    state.counters["stages_asked"] = static_cast<double>(r->stats.stages_costed);
  }
  if (cache.misses() != misses) state.SkipWithError("the re-search measured stages the first search had not");
}

BENCHMARK_CAPTURE(BM_IosBothSearch, inception_v3, "inception_v3")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_IosBothSearch, squeezenet, "squeezenet")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_IosBothSearch, nasnet, "nasnet")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_IosBothSearch, randwire, "randwire")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_CachedResearch, nasnet, "nasnet")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_CachedResearch, randwire, "randwire")->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
