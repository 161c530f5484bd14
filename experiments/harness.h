// What every experiment binary shares: one process and one GPU context for all variants (so the
// algorithm cache is shared and comparisons are interleaved in one run), schedules from the
// measured or analytic cost model with one stage cache per network and batch, correctness checks
// against the CPU reference, and result tables written as CSV + JSON with the environment.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"
#include "models/models.h"
#include "runtime/executor.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

namespace ios::exp {

struct CommonArgs {
  std::string out_dir = "experiments/results/latest";
  std::string cost_model = "auto";         // measured with a GPU, else analytic
  std::string precision = "fp32";          // fp32 | tf32 | fp16 | bf16
  std::string layout = "auto";             // nchw | nhwc | auto
  std::string concat_writes = "in-place";  // in-place | conv-copy
  std::string conv_engine = "auto";
  bool own_kernels = true;   // our kernels compete with cuDNN's in tuning
  std::string kernel_cache;  // empty: the default file; "none": not persisted
  bool verbose = false;
  std::string randwire_graphs = "../shared/ios_randwire_graphs";
  int warmup = 50, iters = 100, rounds = 5;  // timing: rounds x iters replays, interleaved
  sched::StageTimingRule stage_timing;       // measured cost model
  int max_part_size = 50;                    // IOS's experiments
  bool check = true;
  void add_to(CLI::App& app);
};

// IOS's log line: Model: m | Optimization: o | Batchsize: b | Optimization cost: N sec | Latency: X.XX ms
std::string ios_log_line(const std::string& model, const std::string& opt, int batch, double search_s,
                         double latency_ms);

// GPU name, clocks read now (nvidia-smi), driver/CUDA/cuDNN versions, the command line, the date.
nlohmann::json environment(int argc, char** argv);

class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add(const std::vector<nlohmann::json>& row);
  // Columns with one value for every row (the run's precision, layout, engine), appended at the end.
  void add_constant_columns(const std::vector<std::string>& names, const std::vector<nlohmann::json>& values);
  // <dir>/<stem>.csv and <dir>/<stem>.json (rows + environment).
  Status write(const std::string& dir, const std::string& stem, const nlohmann::json& env) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<nlohmann::json>> rows_;
  std::vector<nlohmann::json> constants_;
};

struct Scheduled {
  sched::Schedule schedule;
  double search_s = 0;
  long long stages_costed = 0;  // new stages the cost model had to cost (measured: timed on the GPU)
};

struct Measured {
  double median_ms = 0, min_ms = 0, p90_ms = 0;
  double peak_mib = 0, no_reuse_mib = 0;
  double error = -1;     // relative L2 vs CPU reference; -1 when not checked
  int graph_edges = -1;  // dataflow CUDA graphs: dependency edges
};

class Bench {
 public:
  static Expected<std::unique_ptr<Bench>> create(const CommonArgs& args);
  ~Bench();

  Expected<const ir::Graph*> model(const std::string& name);
  const ir::Weights& weights(const ir::Graph& g);
  std::string cost_model_name() const { return cost_model_; }
  // The run's configuration at `batch`, and its precision / layout / engine as table columns.
  ExecConfig config(int batch) const;
  std::vector<nlohmann::json> config_columns() const;
  const std::shared_ptr<rt::Context>& context() const;
  static std::vector<std::string> config_column_names() {
    return {"precision", "layout", "conv_engine", "concat_writes"};
  }

  // With `fresh`, the search starts from an empty stage cache (honest search times); otherwise
  // stages timed by earlier searches of this network and batch are reused.
  Expected<Scheduled> optimize(const ir::Graph& g, sched::Policy policy, int batch, int r = 3, int s = 8,
                               bool fresh = false);
  // Times every schedule at `batch`, interleaved: rounds x (each executor, iters replays); `modes` gives
  // each schedule's execution mode (empty: all staged), `prefetch_ahead` how many stages ahead its CUDA
  // graph prefetches each stage's weights (rt::ExecutorOptions::prefetch_ahead; empty: none does).
  Expected<std::vector<Measured>> measure(const ir::Graph& g, const std::vector<const sched::Schedule*>& schedules,
                                          int batch, const std::vector<sched::ExecMode>& modes = {},
                                          const std::vector<int>& prefetch_ahead = {});
  // The longest path of per-op figures, each op timed alone in a CUDA graph, less the stage boundary
  // (measured, whatever model the searches use; concats count zero: they are written in place).
  // Warm (`l2_as_in_network` false): its weights in the L2, a floor for any schedule that does not merge. As in the
  // network: each op priced as the measured search prices it (its rule's L2 mode; under l2-share, weighed
  // by the cold share calibrated on the network end to end): what a schedule could reach if running ops
  // side by side cost nothing. That is an estimate, not a bound: the share is an average over the network
  // (DenseNet-121 has run faster than it).
  Expected<double> critical_path_ms(const ir::Graph& g, int batch, bool l2_as_in_network = false);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::string cost_model_;
  explicit Bench(std::unique_ptr<Impl> impl, std::string cost_model);
};

std::vector<std::string> split_list(const std::string& csv);
// "1,16,32" -> {1, 16, 32}; every item a positive integer, else an error naming `flag`.
Expected<std::vector<int>> parse_positive_list(const std::string& csv, const std::string& flag);
// Runs a main body, printing the error and returning 1 when it fails.
int run_main(const std::function<Status()>& body);

}  // namespace ios::exp
