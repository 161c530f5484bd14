// The search a Builder runs and `ios optimize` reports on: a cost model behind a stage cache (kept in a file
// where one is named) and, for a measured DP search, further workers on every GPU asked for, pooled so that
// workers out of parts time stages for the others (sched::IdleWorkers).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/exec_config.h"
#include "engine/components.h"
#include "ir/graph.h"
#include "scheduler/cost_model.h"
#include "scheduler/idle_workers.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

namespace ios::engine {

// Where a search times its stages and keeps their figures.
struct SearchResources {
  std::string devices = "0";           // measured DP search: GPUs that time stages, "all" or a list "0,1,..."
  std::optional<int> workers_per_gpu;  // DP workers per GPU; unset: kDefaultWorkersPerGpu for a measured DP, else 1
  // Two workers on one H100 searched NasNet fp32 1.31x faster than one (13.4-14.6 s against 18.0-18.3 s) and
  // Inception V3 tf32 at 0.96x (2.6-2.8 against 2.4-2.9 s); their schedules ran as fast
  // (experiments/results/h100/workers_s33/).
  static constexpr int kDefaultWorkersPerGpu = 2;
  std::string stage_cache;  // JSON file of stage latencies kept between searches; empty: none
};

// What a search is made of besides the graph.
struct SearchSetupOptions {
  ExecConfig config;
  sched::StageTimingRule rule;
  SearchResources resources;
  bool dp = false;  // the policy is one of IOS's DPs: only they spread over workers
  // A new context on the current GPU, for a further GPU's first worker (make_gpu_context with the first's
  // settings). The first worker's context is the measured model's own.
  std::function<GpuContext()> new_context;
};

// The stage cache's key: what its figures were measured under (the model, the configuration, the key format,
// and for measured figures the GPU, the library versions, the timing rule and the figure format). Files of
// another key are ignored.
std::string stage_cache_key(const sched::CostModel& model, const ExecConfig& config,
                            const sched::StageTimingRule& rule);

class Search {
 public:
  // `model`: the first worker's (make_cost_model). Errors where workers or devices are asked of a search
  // that is not a measured DP, or where the stage cache file cannot be read.
  static Expected<std::unique_ptr<Search>> create(std::unique_ptr<sched::CostModel> model,
                                                  const SearchSetupOptions& options);
  ~Search();
  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

  // The model every query of the search goes through (the stage cache in front of the first worker's).
  sched::StageCache& cache() { return *cache_; }
  // The first worker's model, and the further workers' (for reports of their timing).
  sched::CostModel& first_model() { return *model_; }
  std::vector<const sched::CostModel*> further_models() const;
  // sched::optimize with the further workers and their pool, which `options` gains (its extra_models and
  // idle_workers: the search report reads them).
  Expected<sched::OptimizeResult> run(const ir::Graph& g, sched::OptimizeOptions& options);
  // The stage cache written to its file, where one is named (after the search and whatever else was timed).
  Status save_cache() const;

 private:
  struct Workers;
  explicit Search(std::unique_ptr<sched::CostModel> model, SearchSetupOptions options);
  std::unique_ptr<sched::CostModel> model_;
  SearchSetupOptions options_;
  // Every worker's measuring model, pooled; it outlives the cache and the views that measure through it.
  sched::IdleWorkers idle_;
  std::unique_ptr<sched::StageCache> cache_;
  std::unique_ptr<Workers> workers_;
};

}  // namespace ios::engine
