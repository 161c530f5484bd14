// `ios`: the command-line front end. main wires each subcommand's options to its entry point
// (cli/commands.h); the commands live in cli/cmd_*.cc.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

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

#ifdef IOS_WITH_RUNTIME
  auto* run = app.add_subcommand("run", "execute a network on the GPU and time it");
  RunArgs run_args;
  run_args.opt.add_to(run);
  run->add_option("--schedule", run_args.schedule_file, "run this schedule file instead of optimising");
  run->add_option("--warmup", run_args.warmup, "warm-up runs")->check(CLI::Range(0, 1000000));
  run->add_option("--iters,--iterations", run_args.iters, "timed runs (at least)")->check(CLI::Range(1, 100000000));
  run->add_option("--warmUp", run_args.warmup_ms, "warm up for at least this many milliseconds too (trtexec)")
      ->check(CLI::Range(0.0, 3.6e6));
  run->add_option("--duration", run_args.duration_s,
                  "keep timing until at least this many seconds have passed (trtexec)")
      ->check(CLI::Range(0.0, 86400.0));
  run->add_option("--exportTimes", run_args.export_times, "write every timed inference's latency as JSON (trtexec)");
  run->add_option("--input", run_args.input_file,
                  "input batch: .npy (float32, N x C x H x W) or raw float32 (default: seeded uniform [-1, 1])");
  run->add_option("--output", run_args.output_file, "write the output batch: .npy, or raw float32 for other names");
  run->add_flag("--check", run_args.check, "compare the output with the CPU reference");
  run->add_flag("--check-nodes", run_args.check_nodes,
                "compare every node's output with the CPU reference and name those past the tolerance (keeps every "
                "activation: more memory)");
  run->add_option("--device", run_args.device, kDeviceHelp)->check(CLI::IsMember({"gpu", "cpu"}));
  run->add_flag("--no-graph", run_args.no_graph, "issue launches on streams instead of replaying a CUDA graph");
  run->add_option("--exec", run_args.exec,
                  "staged (each stage waits for the previous one, as IOS runs) | dataflow (each launch waits only "
                  "for what it reads; the CUDA graph keeps exactly the data and memory-reuse edges) | "
                  "dataflow-ordered (dataflow, keeping the order of launches on each of the schedule's streams) | "
                  "auto (staged and dataflow built and timed, the faster kept)");
  run->add_flag("--no-fused-sums", run_args.no_fused_sums,
                "compute every sum with its own kernel (default: a convolution adds it in its epilogue)");
  run->add_flag("--no-shared-concats", run_args.no_shared_concats,
                "gather every concatenation an op reads (default: ops whose concatenations extend one another, as "
                "DenseNet's layers, read prefixes of one shared buffer)");
  run->add_option("--trace", run_args.trace_file, "write a Chrome-trace timeline (CUPTI) of one inference");
  run->add_option("--graph-dot", run_args.graph_dot_file,
                  "write the CUDA graph as Graphviz (every node with its launch parameters, every edge)");
  run->add_option("--chaos", run_args.chaos,
                  "instead of timing: N replays with random delays before every plan step, each output compared "
                  "bit for bit with the unperturbed run (exit 3 if any differs)")
      ->check(CLI::Range(0, 100000));
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
#else
  // Listed so that `ios run` says why it cannot run here rather than printing the general help.
  // Without the GPU runtime only the CPU reference runs.
  auto* run = app.add_subcommand(
      "run", "execute a network on the GPU (not in this build: no GPU runtime; --device cpu runs the CPU reference)");
  run->allow_extras();  // the GPU's flags: named in the error below rather than refused as unknown
  GraphSource run_src;
  run_src.add_to(run);
  int run_batch = 1;
  std::string run_input_file, run_output_file, run_device = "gpu";
  Report run_report;
  run->add_option("--batch", run_batch, "batch size")->check(CLI::Range(1, 65536));
  run->add_option("--input", run_input_file,
                  "input batch: .npy (float32, N x C x H x W) or raw float32 (default: seeded uniform [-1, 1])");
  run->add_option("--output", run_output_file, "write the output batch: .npy, or raw float32 for other names");
  run->add_option("--device", run_device, kDeviceHelp)->check(CLI::IsMember({"gpu", "cpu"}));
  run_report.add_to(run);
#endif

  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {  // bare `ios`: what it can do, not an error
    std::printf("%s", app.help().c_str());
    return 0;
  }
#ifdef IOS_WITH_RUNTIME
  if (app.got_subcommand("run")) return cmd_run(run_args);
  if (app.got_subcommand("compile-ahead")) return cmd_compile_ahead(ahead_args, ahead_shard, ahead_plans_dir);
#else
  if (app.got_subcommand("run")) {
    if (run_device == "cpu") {
      if (!run->remaining().empty())
        return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                               "ios run --device cpu takes --model/--graph/--onnx, --weights, --batch, --input, "
                               "--output and --json; '" +
                                   run->remaining().front() + "' applies to the GPU only"));
      return cmd_run_reference(run_src, run_batch, run_input_file, run_output_file, run_report);
    }
    return fail(ios::error(ios::ErrorCode::kUnavailable,
                           "ios run on the GPU needs the GPU runtime, which this build does not include (configure "
                           "with CUDA); --device cpu runs the CPU reference"));
  }
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
