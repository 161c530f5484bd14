// The `ios` subcommands' entry points; ios_main.cc wires their options. Each returns the exit code.
// Internal to cli/.
#pragma once

#include <string>

#include "cli/options.h"

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

#ifdef IOS_WITH_RUNTIME
struct RunArgs {
  OptimizeArgs opt;
  std::string schedule_file;
  int warmup = 20, iters = 200;
  double warmup_ms = 0, duration_s = 0;
  std::string export_times;
  int chaos = 0;
  std::string exec = "staged";
  bool check = false, check_nodes = false, no_graph = false, no_fused_sums = false, no_shared_concats = false;
  std::string trace_file, graph_dot_file;
  std::string input_file, output_file;
  std::string device = "gpu";
};

int cmd_run(RunArgs& a);
// One --compile-ahead process: its shard of the network's runtime-compiled engines built, nothing run.
int cmd_compile_ahead(const OptimizeArgs& a, const std::string& shard, const std::string& plans_dir);
#endif

}  // namespace ios::cli
