// `ios`: the command-line front end. main wires each subcommand's options to its entry point
// (cli/commands.h); the commands live in cli/cmd_*.cc.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>

#include "cli/commands.h"

using ios::Expected;
using ios::Status;
using ios::ir::Graph;

namespace {

using namespace ios::cli;

std::string version_text() {
  std::string v = std::string("ios ") + IOS_VERSION + " (git " + IOS_GIT_HASH + ")";
#ifdef IOS_WITH_RUNTIME
  v += ", built with CUDA " IOS_CUDA_VERSION ", cuDNN " IOS_CUDNN_VERSION " for sm " IOS_CUDA_ARCHITECTURES;
#else
  v += ", built without the GPU runtime";
#endif
  return v;
}

// `ios run --device cpu` runs the CPU reference, which has no precision, layout, schedule or timing: a flag
// of the GPU path given with it is named in an error rather than ignored.
Status check_reference_flags(const CLI::App& run) {
  // Besides the network's own options (GraphSource's group): the run's inputs and outputs.
  static const std::set<std::string> applies = {"--device", "--batch", "--plan", "--input", "--output", "--json"};
  for (const CLI::Option* option : run.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty() || option->get_group() == GraphSource::kGroup) continue;
    const std::string flag = "--" + option->get_lnames().front();
    RETURN_ERROR_IF(
        applies.count(flag) == 0, ios::ErrorCode::kInvalidArgument,
        "ios run --device cpu runs the CPU reference (fp32, unscheduled); " + flag + " applies to the GPU only");
  }
  return Status::ok();
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"IOS inter-operator scheduler for CNN inference"};
  app.require_subcommand(0, 1);
  app.option_defaults()->always_capture_default();  // every --help shows each option's default
  app.set_version_flag("--version", version_text());

  app.add_subcommand("models", "list the built-in networks");

  auto* exp = app.add_subcommand("export", "write a network as an IOS graph file");
  GraphSource export_src;
  std::string export_out;
  int export_batch = 1;
  exp->add_option("--model", export_src.model, "network name")->required();
  exp->add_option("--randwire-graphs", export_src.options.randwire_graphs_dir, "IOS RandWire graph folder");
  exp->add_option("--batch", export_batch, "batch size recorded in the file")->check(CLI::Range(1, 65536));
  exp->add_option("--out", export_out, "output JSON file")->required();

  auto* imp = app.add_subcommand("import", "translate an ONNX model into an IOS graph file and a weights file");
  std::string import_onnx, import_out, import_weights;
  bool list_ops = false;
  imp->add_option("--onnx", import_onnx, "ONNX model file (external data files beside it)");
  imp->add_option("--out", import_out, "write the graph (IOS JSON)");
  imp->add_option("--weights-out", import_weights, "write the model's weights (for --graph FILE --weights FILE)");
  imp->add_flag("--list-ops", list_ops, "list the ONNX operators the importer supports");

  auto* show = app.add_subcommand("show", "summarise a network or graph file");
  GraphSource show_src;
  show_src.add_to(show);
  std::string dot_file;
  show->add_option("--dot", dot_file, "also write a Graphviz file");
  std::string show_schedule;
  show->add_option("--schedule", show_schedule, "list this schedule's stages (or streams) instead, ops by name");

  auto* opt = app.add_subcommand("optimize", "schedule a network with a policy");
  OptimizeArgs optimize_args;
  optimize_args.add_to(opt);
  opt->add_option("--out", optimize_args.out, "write the schedule (IOS JSON shape)");
  opt->add_flag("--stage-marginals", optimize_args.stage_marginals,
                "measured cost model: each stage's cost inside the staged network (the network less the network "
                "without it) beside its figure");

  auto* val = app.add_subcommand("validate", "check a schedule file against a network");
  GraphSource validate_src;
  validate_src.add_to(val);
  std::string validate_file;
  val->add_option("--schedule", validate_file, "schedule file")->required();
  Report validate_report;
  validate_report.add_to(val);

  auto* build = app.add_subcommand("build", "build an engine (search, tune, choose how it executes) and save its plan");
  BuildArgs build_args;
  build_args.add_to(build);
  std::string build_save;
  build->add_option("--save", build_save, "write the engine plan here (graph, weights, schedule, kernel choices)")
      ->required();
  std::vector<int> build_batches;
  build
      ->add_option("--batches", build_batches,
                   "batch buckets: one engine per batch size in this list (1,4,16), each searched and tuned at "
                   "its batch, saved in one file (instead of --batch)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));

  auto* run = app.add_subcommand("run", "execute a network (or an engine plan) on the GPU and time it");
  RunArgs run_args;
  run_args.add_to(run);
#ifdef IOS_WITH_RUNTIME
  // Started by --compile-ahead, not by users: hidden from the help.
  auto* ahead = app.add_subcommand("compile-ahead", "")->group("");
  OptimizeArgs ahead_args;
  ahead_args.add_to(ahead);
  std::string ahead_shard;
  ahead->add_option("--shard", ahead_shard, "k/n: this process compiles every n-th convolution from the k-th")
      ->required();
  std::string ahead_plans_dir;
  ahead->add_option("--plans-dir", ahead_plans_dir,
                    "folder the plans it builds are written to, for the tuning process");
#endif

  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {  // bare `ios`: what it can do, not an error
    std::printf("%s", app.help().c_str());
    return 0;
  }
  if (app.got_subcommand("build")) return cmd_build(build_args, build_save, build_batches);
  if (app.got_subcommand("run")) {
    run_args.batch_given = run->count("--batch") > 0;
    if (run_args.build.device == "cpu")
      if (Status s = check_reference_flags(*run); !s) return fail(s);
    return cmd_run(run_args);
  }
#ifdef IOS_WITH_RUNTIME
  if (app.got_subcommand("compile-ahead")) return cmd_compile_ahead(ahead_args, ahead_shard, ahead_plans_dir);
#endif

  if (app.got_subcommand("optimize")) return cmd_optimize(optimize_args);
  if (app.got_subcommand("validate")) return cmd_validate(validate_src, validate_file, validate_report);

  if (app.got_subcommand("models")) return cmd_models();
  if (app.got_subcommand("import")) {
    if (list_ops) {
      for (const auto& op : ios::onnx_import::supported_ops()) std::printf("%s\n", op.c_str());
      return 0;
    }
    if (import_onnx.empty()) return fail(ios::error(ios::ErrorCode::kInvalidArgument, "ios import: give --onnx FILE"));
    return cmd_import(import_onnx, import_out, import_weights);
  }
  if (app.got_subcommand("export")) return cmd_export(export_src, export_batch, export_out);
  if (app.got_subcommand("show")) {
    Expected<Graph> g = show_src.load();
    if (!g) return fail(g.status());
    return cmd_show(*g, dot_file, show_schedule);
  }
  return 0;
}

int main(int argc, char** argv) {
  // A write past `ulimit -f` then fails with EFBIG and is reported (the target file kept) instead of
  // killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // The backstop for an exception no reader turned into a Status: a named error and exit code 1, never
  // an abort.
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail(ios::error(ios::ErrorCode::kOutOfMemory, "out of memory"));
  } catch (const std::exception& e) {
    return fail(ios::error(ios::ErrorCode::kRuntimeError, std::string("internal error: ") + e.what()));
  } catch (...) {
    return fail(ios::error(ios::ErrorCode::kRuntimeError, "internal error: an unknown exception"));
  }
}
