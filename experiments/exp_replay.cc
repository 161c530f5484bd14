// Replays a measured IOS-Both search on the CPU from the stage cache file it saved (`ios optimize
// --stage-cache F`), to compare DP variants on real measured figures without a GPU: how many distinct
// stages each variant would have timed, and the optimum it finds. A stage the original search never
// timed is a miss: priced by the analytic model, or (--misses high) so high that no schedule picks it,
// which makes the optimum an upper bound on what the variant would have found. With --schedule it prints
// instead each stage's figure in the file, in the schedule's order (the stage numbers of `ios run --trace`),
// to set a stage sum beside a timeline of the network.
//   exp_replay --model nasnet --stage-cache nasnet_stages.json --floors alone,measured
//   exp_replay --model densenet121 --stage-cache densenet121_stages.json --schedule densenet121.json
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "models/models.h"
#include "scheduler/cost_model.h"
#include "scheduler/policies.h"

namespace {

using namespace ios;

// Answers what the stage cache does not hold, and counts those stages.
class MissModel : public sched::CostModel {
 public:
  explicit MissModel(bool high) : high_(high) {}
  std::string name() const override { return "measured"; }  // the cache file's model
  Expected<double> stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) override {
    ++misses_;
    if (high_) return 1e3;
    return analytic_.stage_latency_ms(g, stage, batch);
  }
  int64_t misses() const { return misses_; }

 private:
  bool high_;
  sched::AnalyticCostModel analytic_;
  int64_t misses_ = 0;
};

// Counts the distinct stages (by signature, as the stage cache keys them) the search asks for.
class DistinctStages : public sched::CostModel {
 public:
  explicit DistinctStages(sched::CostModel& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Expected<double> stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) override {
    note(g, stage);
    return inner_.stage_latency_ms(g, stage, batch);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                   int batch) override {
    for (const sched::Stage& stage : stages) note(g, stage);
    return inner_.stage_latencies_ms(g, stages, batch);
  }
  size_t count() const { return seen_.size(); }

 private:
  void note(const ir::Graph& g, const sched::Stage& stage) {
    if (keys_of_ != &g) keys_ = sched::op_keys(g), keys_of_ = &g;
    seen_.insert(sched::signature_hash(sched::stage_signature(g, keys_, stage)));
  }
  sched::CostModel& inner_;
  const ir::Graph* keys_of_ = nullptr;
  sched::OpKeys keys_;
  std::set<std::string> seen_;
};

// The key a stage cache file was saved under: a cache made with it takes the file's entries.
Expected<std::string> stage_cache_key(const nlohmann::json& stages, const std::string& cache_file) {
  RETURN_ERROR_IF(!stages.is_object() || !stages.contains("key") || !stages["key"].is_string(),
                  ErrorCode::kInvalidArgument, "'" + cache_file + "' is not a stage cache file (no \"key\")");
  return stages["key"].get<std::string>();
}

Status load_stages(sched::StageCache& cache, const nlohmann::json& stages, const std::string& cache_file) {
  RETURN_IF_ERROR(cache.load_json(stages, cache_file));
  RETURN_ERROR_IF(cache.size() == 0, ErrorCode::kInvalidArgument, "'" + cache_file + "' holds no stage");
  return Status::ok();
}

Status replay(const ir::Graph& g, const nlohmann::json& stages, const std::string& cache_file, bool measured_floors,
              bool misses_high, const sched::OptimizeOptions& base) {
  ASSIGN_OR_RETURN(std::string key, stage_cache_key(stages, cache_file));
  MissModel miss(misses_high);
  sched::StageCache cache(miss, key);
  RETURN_IF_ERROR(load_stages(cache, stages, cache_file));
  DistinctStages counted(cache);
  sched::OptimizeOptions options = base;
  options.measured_floors = measured_floors;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(sched::OptimizeResult r, sched::optimize(g, options, counted));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSIGN_OR_RETURN(double predicted, sched::estimate_latency_ms(g, r.schedule, cache, options.batch));
  std::printf(
      "%s | floors %s | distinct stages %zu (%lld not in the file, priced %s) | stages asked %lld in %lld "
      "requests | optimum %.4f ms, %d stages | %.1f s\n",
      g.name.c_str(), measured_floors ? "measured" : "alone", counted.count(), static_cast<long long>(miss.misses()),
      misses_high ? "high" : "analytic", static_cast<long long>(r.stats.stages_costed),
      static_cast<long long>(r.stats.cost_requests), predicted, r.schedule.stage_count(), seconds);
  return Status::ok();
}

Status print_stage_figures(const ir::Graph& g, const nlohmann::json& stages, const std::string& cache_file,
                           const std::string& schedule_file) {
  ASSIGN_OR_RETURN(std::string key, stage_cache_key(stages, cache_file));
  MissModel miss(false);
  sched::StageCache cache(miss, key);
  RETURN_IF_ERROR(load_stages(cache, stages, cache_file));
  ASSIGN_OR_RETURN(sched::Schedule s, sched::load_schedule_for(g, schedule_file));
  RETURN_ERROR_IF(s.is_stream_level(), ErrorCode::kInvalidArgument,
                  "'" + schedule_file + "' is a stream-level schedule: it has no stages to print");
  int index = 0;
  double sum = 0;
  for (const sched::BlockSchedule& block : s.blocks)
    for (const sched::Stage& stage : block.stages) {
      const int64_t misses = miss.misses();
      ASSIGN_OR_RETURN(double ms, cache.stage_latency_ms(g, stage, s.meta.batch));
      RETURN_ERROR_IF(miss.misses() != misses, ErrorCode::kNotFound,
                      "stage " + std::to_string(index) + " of '" + schedule_file + "' is not in '" + cache_file + "'");
      std::printf("stage %d | %s | %zu groups, %zu ops | %.4f ms\n", index++,
                  stage.kind == sched::StageKind::kMerge ? "merge" : "concurrent", stage.groups.size(),
                  stage.ops().size(), ms);
      sum += ms;
    }
  std::printf("%s | %d stages | sum %.4f ms\n", g.name.c_str(), index, sum);
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"replay a measured IOS-Both search from its stage cache file (CPU only)"};
  std::string model, cache_file, floors = "alone,measured", misses = "analytic";
  models::ModelOptions model_options;
  sched::OptimizeOptions options;
  options.max_part_size = 50;
  options.dataflow_segment = 0;  // barriers are timed on whole networks: not in a stage cache
  options.dataflow_refine = 0;
  app.add_option("--model", model, "network name (see `ios models`)")->required();
  app.add_option("--stage-cache", cache_file, "stage cache file the measured search saved")->required();
  app.add_option("--randwire-graphs", model_options.randwire_graphs_dir, "folder of IOS's RandWire graph files")
      ->envname("RANDWIRE_GRAPHS");
  app.add_option("--floors", floors, "DP floors to replay: alone, measured, or both (comma-separated)")
      ->capture_default_str();
  app.add_option("--misses", misses, "stages not in the file: analytic (priced by the analytic model) | high")
      ->capture_default_str()
      ->check(CLI::IsMember({"analytic", "high"}));
  std::string schedule_file;
  app.add_option("--schedule", schedule_file, "print each stage's figure for this schedule instead of replaying");
  app.add_option("--max-part-size", options.max_part_size, "DP part size")->capture_default_str();
  app.add_option("--stage-batch", options.stage_batch, "DP: stages asked at once")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Expected<ir::Graph> g = models::build_model(model, model_options);
  if (!g) {
    std::fprintf(stderr, "error: %s\n", g.status().to_string().c_str());
    return 1;
  }
  Expected<nlohmann::json> stages = read_json_file(cache_file);
  if (!stages) {
    std::fprintf(stderr, "error: %s\n", stages.status().to_string().c_str());
    return 1;
  }
  if (!schedule_file.empty()) {
    if (Status s = print_stage_figures(*g, *stages, cache_file, schedule_file); !s) {
      std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
      return 1;
    }
    return 0;
  }
  std::stringstream list(floors);
  for (std::string kind; std::getline(list, kind, ',');) {
    if (kind != "alone" && kind != "measured") {
      std::fprintf(stderr, "error: --floors: '%s' is neither alone nor measured\n", kind.c_str());
      return 1;
    }
    if (Status s = replay(*g, *stages, cache_file, kind == "measured", misses == "high", options); !s) {
      std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  return 0;
}
