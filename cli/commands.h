// The `ios` subcommands' entry points; ios_main.cc wires their options. Each returns the exit code.
// Internal to cli/.
#pragma once

#include <string>

#include "cli/options.h"
#include "engine/engine.h"

namespace ios::cli {

int cmd_import(const std::string& onnx_file, const std::string& out, const std::string& weights_out);
int cmd_models();
int cmd_show(const Graph& g, const std::string& dot_file, const std::string& schedule_file);
int cmd_export(const GraphSource& src, int batch, const std::string& out);
int cmd_validate(const GraphSource& src, const std::string& schedule_file, Report& report);
int cmd_optimize(OptimizeArgs& a);
// `ios run --device cpu`: the graph and its weights (the source's own, or the seeded ones) through the CPU
// reference executor.
int cmd_run_reference(const GraphSource& src, int batch, const std::string& input_file, const std::string& output_file,
                      Report& report);

// How `ios build` and `ios run` make an engine: the network, the search (or --schedule) and how it executes.
struct BuildArgs {
  OptimizeArgs opt;
  std::string schedule_file;
  std::string exec = "staged";
  bool no_graph = false, no_fused_sums = false, no_shared_concats = false;
  std::string device = "gpu";
  void add_to(CLI::App* cmd);
};

struct RunArgs {
  BuildArgs build;
  std::string plan_file;
  bool batch_given = false;  // --batch given: with --plan, it must be the engine's (or one of its buckets)
  int warmup = 20, iters = 200;
  double warmup_ms = 0, duration_s = 0;
  std::string export_times;
  int chaos = 0;
  bool check = false, check_nodes = false;
  std::string trace_file, graph_dot_file;
  std::string input_file, output_file;
  void add_to(CLI::App* cmd);
};

// The engine `ios build` and `ios run` make, and what the build decided (for the report).
struct BuiltEngine {
  std::shared_ptr<ios::engine::Engine> engine;
  ios::engine::BuildReport build;
};
// The flags build_engine reads, checked (on any machine, before a GPU is looked for).
Status check_build_flags(const BuildArgs& a);
Expected<BuiltEngine> build_engine(BuildArgs& a, const ios::engine::DebugOptions& debug, Report& report);

// `ios build --save FILE`: the engine built and written as a plan file.
// `batches` not empty: batch buckets (engine/buckets.h), one engine per batch size, in one file.
int cmd_build(BuildArgs& a, const std::string& save_file, const std::vector<int>& batches);
int cmd_run(RunArgs& a);
#ifdef IOS_WITH_RUNTIME
// One --compile-ahead process: its shard of the network's runtime-compiled engines built, nothing run.
int cmd_compile_ahead(const OptimizeArgs& a, const std::string& shard, const std::string& plans_dir);
#endif

}  // namespace ios::cli
