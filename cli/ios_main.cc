// `ios`: the command-line front end. Subcommands: models, export, show.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/run_reference.h"
#include "common/file_io.h"
#include "common/tensor_file.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/json_io.h"
#include "models/models.h"
#include "reference/reference_executor.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/compile_ahead.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#include "runtime/stage_marginals.h"
#endif

namespace {

using ios::Expected;
using ios::Status;
using ios::ir::Graph;

#ifdef IOS_WITH_RUNTIME
using ContextPtr = Expected<std::shared_ptr<ios::rt::Context>>;
#else
using ContextPtr = Expected<int>;  // no runtime: never asked for
#endif

std::string version_text() {
  std::string v = std::string("ios ") + IOS_VERSION + " (git " + IOS_GIT_HASH + ")";
#ifdef IOS_WITH_RUNTIME
  v += ", built with CUDA " IOS_CUDA_VERSION ", cuDNN " IOS_CUDNN_VERSION " for sm " IOS_CUDA_ARCHITECTURES;
#else
  v += ", built without the GPU runtime";
#endif
  return v;
}

int fail(const Status& s) {
  std::fprintf(stderr, "ios: error: %s\n", s.to_string().c_str());
  return 1;
}

// Where a command's report goes: text lines, and with --json every figure as one JSON object, to a
// file or to stdout (the text then goes to stderr, so the JSON can be piped).
struct Report {
  std::string json_path;
  nlohmann::json json = nlohmann::json::object();

  void add_to(CLI::App* cmd) {
    cmd->add_option("--json", json_path, "also write every figure as JSON to FILE (-: stdout, text to stderr)");
  }
  FILE* text() const { return json_path == "-" ? stderr : stdout; }
  int finish(int rc = 0) const {
    if (json_path.empty()) return rc;
    // Paths the user gave are reported as given; bytes that are not UTF-8 are replaced (U+FFFD).
    const std::string text = json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (json_path == "-") {
      std::printf("%s\n", text.c_str());
      return rc;
    }
    if (Status s = ios::write_text_file(json_path, text + "\n"); !s) return fail(s);
    return rc;
  }
};

bool is_dp(ios::sched::Policy p) {
  return p == ios::sched::Policy::kDpBoth || p == ios::sched::Policy::kDpParallel || p == ios::sched::Policy::kDpMerge;
}

// A network and, where the source has them, its own weights (ONNX initializers, --weights); other
// networks run with the seeded weights of ir/weights.h.
struct LoadedModel {
  Graph graph;
  std::optional<ios::ir::Weights> own_weights;
  std::vector<std::string> notes;  // what an import folded or dropped
  // Moves the model's own weights out (an imported model's can be 100 MB), or makes the seeded ones.
  ios::ir::Weights take_weights() { return own_weights ? std::move(*own_weights) : ios::ir::make_weights(graph); }
};

struct GraphSource {
  std::string model;
  std::string graph_file;
  std::string onnx_file;
  std::string weights_file;
  ios::models::ModelOptions options;

  void add_to(CLI::App* cmd) {
    auto* m = cmd->add_option("--model", model, "network name (see `ios models`)");
    auto* f = cmd->add_option("--graph", graph_file, "graph file in IOS's JSON format");
    auto* o = cmd->add_option("--onnx", onnx_file, "ONNX model (opsets 11-21), run with its own weights");
    m->excludes(f)->excludes(o);
    f->excludes(o);
    cmd->add_option("--weights", weights_file, "weights file for --model/--graph (from `ios import --weights-out`)")
        ->excludes(o);
    cmd->add_option("--randwire-graphs", options.randwire_graphs_dir,
                    "folder holding IOS's four RandWire graph files (ws-*.txt)");
    cmd->add_option("--nasnet-filters", options.nasnet_filters, "NasNet filters (IOS: 168)");
    cmd->add_option("--nasnet-stem-filters", options.nasnet_stem_filters, "NasNet stem filters (IOS: 96)");
  }

  // The graph, and the weights the source brings (--onnx, --weights: read and checked here).
  Expected<LoadedModel> load_model() const {
    LoadedModel m;
    if (!onnx_file.empty()) {
      auto imported = ios::onnx_import::import_file(onnx_file);
      if (!imported) return imported.status();
      m.graph = std::move(imported->graph);
      m.own_weights = std::move(imported->weights);
      m.notes = std::move(imported->notes);
      return m;
    }
    auto g = !graph_file.empty() ? ios::ir::load_graph(graph_file)
             : model.empty()     ? Expected<Graph>(ios::error(ios::ErrorCode::kInvalidArgument,
                                                              "give --model NAME, --graph FILE or --onnx FILE"))
                                 : ios::models::build_model(model, options);
    if (!g) return g.status();
    m.graph = std::move(*g);
    if (!weights_file.empty()) {
      auto w = ios::ir::load_weights(m.graph, weights_file);
      if (!w) return w.status();
      m.own_weights = std::move(*w);
    }
    return m;
  }

  Expected<Graph> load() const {
    auto m = load_model();
    if (!m) return m.status();
    return std::move(m->graph);
  }
};

// `ios import`: an ONNX model as an IOS graph file and a weights file, with what the import did.
int cmd_import(const std::string& onnx_file, const std::string& out, const std::string& weights_out) {
  const auto start = std::chrono::steady_clock::now();
  auto m = ios::onnx_import::import_file(onnx_file);
  if (!m) return fail(m.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Graph& g = m->graph;
  std::printf(
      "imported %s (opset %d) in %.2f s: %d ops in %zu blocks, %.3f GFLOPs, %.1f M parameters, input %s, "
      "output %s\n",
      onnx_file.c_str(), m->opset, seconds, g.op_count(), g.blocks.size(), g.total_flops() / 1e9,
      m->weights.parameter_count() / 1e6, g.input_shape().to_string().c_str(), g.output_shape().to_string().c_str());
  for (const auto& note : m->notes) std::printf("  %s\n", note.c_str());
  if (!out.empty()) {
    if (Status s = ios::write_text_file(out, ios::ir::graph_to_json(g).dump(1) + "\n"); !s) return fail(s);
    std::printf("wrote %s\n", out.c_str());
  }
  if (!weights_out.empty()) {
    if (Status s = ios::ir::save_weights(m->weights, weights_out); !s) return fail(s);
    std::printf("wrote %s\n", weights_out.c_str());
  }
  return 0;
}

int cmd_models() {
  std::printf("%-14s %7s %5s %9s %8s  %s\n", "name", "blocks", "ops", "GFLOPs", "input", "description");
  for (const auto& info : ios::models::model_list()) {
    Expected<Graph> g = ios::models::build_model(info.name);
    if (!g) return fail(g.status());
    std::printf("%-14s %7zu %5d %9.2f %8s  %s\n", info.name.c_str(), g->blocks.size(), g->op_count(),
                g->total_flops() / 1e9, g->input_shape().to_string().c_str(), info.description.c_str());
  }
  return 0;
}

int cmd_show(const Graph& g, const std::string& dot_file, const std::string& schedule_file) {
  if (!schedule_file.empty()) {
    Expected<ios::sched::Schedule> s = ios::sched::load_schedule_for(g, schedule_file);
    if (!s) return fail(s.status());
    std::printf("%s", ios::sched::describe_schedule(g, *s).c_str());
    return 0;
  }
  std::printf("graph %s: %zu blocks, %d ops, %.3f GFLOPs, input %s, output %s\n", g.name.c_str(), g.blocks.size(),
              g.op_count(), g.total_flops() / 1e9, g.input_shape().to_string().c_str(),
              g.output_shape().to_string().c_str());
  // parts: the DP's explicit parts of the block ("-": none, the DP cuts it by --max-part-size).
  std::printf("%-6s %-7s %-7s %6s %10s  %s\n", "block", "ops", "parts", "convs", "MFLOPs", "exit shape");
  for (size_t b = 0; b < g.blocks.size(); ++b) {
    const auto& blk = g.blocks[b];
    int convs = 0;
    double flops = 0;
    for (auto id : blk.members()) {
      flops += g.cost(id).flops;
      const auto kind = g.node(id).kind();
      convs += kind == ios::ir::OpKind::kConv || kind == ios::ir::OpKind::kSequential;
    }
    const std::string parts = blk.parts.empty() ? "-" : std::to_string(blk.parts.size());
    std::printf("%-6zu %-7zu %-7s %6d %10.1f  %s\n", b, blk.members().size(), parts.c_str(), convs, flops / 1e6,
                g.node(blk.exit).output_shape.to_string().c_str());
  }
  if (!dot_file.empty()) {
    Status s = ios::write_text_file(dot_file, ios::ir::graph_to_dot(g));
    if (!s) return fail(s);
    std::printf("wrote %s\n", dot_file.c_str());
  }
  return 0;
}

#ifdef IOS_WITH_RUNTIME
// One context per process: streams, handles and the convolution kernels (tuned once, persisted).
Expected<std::shared_ptr<ios::rt::Context>> make_context(const ios::ExecConfig& config, const std::string& engine,
                                                         const std::string& kernel_cache, bool verbose) {
  auto e = ios::rt::parse_conv_engine(engine);
  if (!e) return e.status();
  ios::rt::ContextOptions co;
  co.dtype = config.dtype;
  co.math = config.math;
  co.conv_engine = *e;
  co.kernel_cache_path = kernel_cache == "none" ? "" : kernel_cache;
  co.verbose = verbose;
  return ios::rt::Context::create(co);
}
#endif

// `auto` picks the measured model where a GPU runtime and a GPU exist, else the analytic one.
Expected<std::unique_ptr<ios::sched::CostModel>> make_cost_model(const Graph& g, std::string kind,
                                                                 const ios::ExecConfig& config,
                                                                 const ios::sched::StageTimingRule& rule,
                                                                 const std::function<ContextPtr()>& context) {
#ifdef IOS_WITH_RUNTIME
  if (kind == "auto") kind = ios::rt::gpu_available() ? "measured" : "analytic";
  if (kind == "measured") {
    if (Status s = ios::rt::require_gpu(); !s) return s.with_context("--cost-model measured");
    ContextPtr ctx = context();
    if (!ctx) return ctx.status();
    ios::rt::MeasuredCostModel::Params params;
    params.config = config;
    params.rule = rule;
    return std::unique_ptr<ios::sched::CostModel>(new ios::rt::MeasuredCostModel(g, params, *ctx));
  }
#else
  if (kind == "auto") kind = "analytic";
  if (kind == "measured")
    return ios::error(ios::ErrorCode::kUnavailable,
                      "--cost-model measured needs the GPU runtime, which this build does not include");
#endif
  if (kind == "analytic") return std::unique_ptr<ios::sched::CostModel>(new ios::sched::AnalyticCostModel());
  return ios::error(ios::ErrorCode::kInvalidArgument,
                    "--cost-model must be analytic, measured or auto, got '" + kind + "'");
}

std::string default_kernel_cache() {
#ifdef IOS_WITH_RUNTIME
  return ios::rt::default_kernel_cache_path();
#else
  return "none";
#endif
}

// `ios run --device cpu`: the graph and its weights (the source's own, or the seeded ones) through the CPU
// reference executor.
int cmd_run_reference(const GraphSource& src, int batch, const std::string& input_file, const std::string& output_file,
                      Report& report) {
  Expected<LoadedModel> model = src.load_model();
  if (!model) return fail(model.status());
  const ios::ir::Weights weights = model->take_weights();
  const ios::cli::ReferenceRunOptions options{batch, input_file, output_file};
  if (Status s = ios::cli::run_reference(model->graph, weights, options, report.text(), report.json); !s)
    return fail(s);
  return report.finish();
}

constexpr const char* kDeviceHelp =
    "gpu | cpu: the CPU reference executor (fp32, direct loops, slow; for checking an import or producing "
    "expected outputs, not a CPU backend; only --input, --output, --batch and --json apply)";

struct OptimizeArgs {
  GraphSource src;
  std::string policy = "dp_parallel_merge";
  std::string cost_model = "auto";
  std::string precision = "fp32";
  std::string layout = "auto";
  std::string concat_writes = "in-place";
  std::string conv_engine = "auto";
  std::string kernel_cache;
  // auto | N: rt::CompileAheadProcesses. A machine's first tf32 search of Inception V3 took 8.7-9.3 s with 8
  // against 9.6-10.5 s without, NasNet 34-37 s against 50-54 s (H100), and searches with and without them,
  // alternated, predict with the same spread (1.100-1.131 against 1.092-1.122), so they are on where they
  // can pay.
  std::string compile_ahead = "auto";
  bool verbose = false;
  std::string out;
  std::string stage_cache;
  ios::sched::StageTimingRule stage_timing;
  std::optional<double> one_round_margin;  // --one-round-margin; unset: the rule's
  std::string prefetch_weights = "off";    // off | on | auto
  int prefetch_ahead = 1;
  bool measure_schedule = true;
  bool stage_marginals = false;  // ios optimize --stage-marginals
  int dataflow_segment = -1;     // -1: by cost model (see --dataflow-segment)
  std::string devices = "0";
  // Unset: kDefaultWorkersPerGpu for a measured DP search. Two workers on one H100 searched NasNet fp32
  // 1.31x faster than one (13.4-14.6 s against 18.0-18.3 s) and Inception V3 tf32 at 0.96x (2.6-2.8 against
  // 2.4-2.9 s); their schedules ran as fast (NasNet 7.32-7.35 against 7.31-7.37 ms staged, 7.29-7.36 against
  // 7.20-7.29 dataflow; Inception V3 0.523-0.531 against 0.527-0.534 ms),
  // experiments/results/h100/workers_s33/.
  std::optional<int> workers_per_gpu;
  static constexpr int kDefaultWorkersPerGpu = 2;
  ios::sched::OptimizeOptions options;
  bool quiet = false;
  Report report;

  void add_to(CLI::App* cmd) {
    src.add_to(cmd);
    cmd->add_option("--opt", policy,
                    "sequential | greedy | dp_merge | dp_parallel | dp_parallel_merge (ios-both) | opara");
    cmd->add_option("--batch", options.batch, "batch size")->check(CLI::Range(1, 65536));
    cmd->add_option("--r", options.r, "IOS r: max ops per group")->check(CLI::Range(1, 64));
    cmd->add_option("--s", options.s, "IOS s: max groups per stage")->check(CLI::Range(1, 64));
    cmd->add_option("--max-part-size", options.max_part_size, "DP part size (IOS: 100; its experiments: 50)")
        ->check(CLI::Range(1, 128));
    cmd->add_option("--greedy-streams", options.greedy_max_streams, "greedy's stream cap")->check(CLI::Range(1, 64));
    cmd->add_option("--cost-model", cost_model, "auto (measured with a GPU, else analytic) | analytic | measured");
    cmd->add_option("--precision", precision, "fp32 (strict) | tf32 | fp16 | bf16")->capture_default_str();
    cmd->add_option("--layout", layout, "nchw | nhwc | auto (nhwc with tensor cores, else nchw)")
        ->capture_default_str();
    cmd->add_option("--concat-writes", concat_writes,
                    "in-place (producers write their slices of a concatenation) | conv-copy (convolutions writing a "
                    "strided slice write their own tensor, the concatenation copies) | auto (ios run: both timed, the "
                    "faster kept)")
        ->capture_default_str();
    cmd->add_option(
           "--conv-engine", conv_engine,
           "auto (graph-exhaustive for strict fp32, graph-rtc otherwise) | graph (cudnn-frontend, the heuristics' "
           "candidates autotuned) | graph-exhaustive (also every other engine and split-K variants: slower "
           "tuning, kept in the kernel cache) | graph-rtc (graph, led on strided NHWC slices by the engines cuDNN "
           "compiles at run time) | legacy (cudnnFind)")
        ->capture_default_str()
#ifdef IOS_WITH_RUNTIME
        // Checked when parsed: with the analytic model no context is made to reject a wrong value.
        ->check([](const std::string& s) {
          auto e = ios::rt::parse_conv_engine(s);
          return e ? std::string() : e.status().message();
        })
#endif
        ;
    kernel_cache = default_kernel_cache();
    cmd->add_option("--kernel-cache", kernel_cache, "file of tuned convolution engines (none: do not persist)")
        ->capture_default_str();
    cmd->add_flag("--verbose", verbose, "report each convolution's engine and every fallback");
    cmd->add_option("--compile-ahead", compile_ahead,
                    "processes compiling the network's runtime-compiled cuDNN engines while its kernels are first "
                    "tuned, where the engine setting compiles at run time (tf32, fp16, bf16): 0 (none) | N | auto "
                    "(half the cores, at most 8; none where every kernel is in the cache file)")
        ->capture_default_str();
    cmd->add_option("--stage-cache", stage_cache, "JSON file persisting stage latencies between runs");
    cmd->add_option_function<std::string>(
           "--stage-timing",
           [this](const std::string& text) {
             Expected<ios::sched::StageTimingRule> rule = ios::sched::parse_stage_timing(text);
             if (!rule) throw CLI::ValidationError(rule.status().message());
             stage_timing = *rule;
           },
           ios::sched::kStageTimingHelp)
        ->default_str("adaptive");
    cmd->add_option(
           "--devices", devices,
           "measured cost model: GPUs that time stages, all or a list (0,1,...); --workers-per-gpu DP workers each")
        ->capture_default_str();
    cmd->add_option("--workers-per-gpu", workers_per_gpu,
                    "measured cost model: DP workers per GPU; they build stages side by side and take turns "
                    "timing them")
        ->default_str(std::to_string(kDefaultWorkersPerGpu) + " for a measured DP search, else 1")
        ->check(CLI::Range(1, 16));
    cmd->add_option("--search-budget", options.max_transitions,
                    "DP transitions one part may consider; a part past it is split in halves (noted)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    cmd->add_option("--memory-budget", options.memory_budget,
                    "DP: a stage's live activations at most this multiple of the sequential schedule's peak "
                    "(0: no limit)")
        ->capture_default_str();
    cmd->add_option("--stage-batch", options.stage_batch,
                    "DP: stages asked of the cost model at once (measured: timed in one pass over the GPU)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--states-together", options.states_together,
                    "DP: states of one size solved side by side, their stages asked in one request (0: all)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 30));
    cmd->add_option("--screen-margin", options.screen_margin,
                    "DP, measured cost model: time each stage one round first, trusted within this fraction (+2 us), "
                    "and settle only stages that could still win (0: settle every stage)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--dataflow-segment", dataflow_segment,
                    "staged schedules: which stage barriers dataflow execution keeps, from segments of up to this "
                    "many stages timed without barriers (0: keep none; default 4 with the measured cost model, "
                    "else 0)")
        ->check(CLI::Range(0, 64));
    cmd->add_option("--dataflow-margin", options.dataflow_margin,
                    "dataflow barriers: a segment of several stages must win with its latency raised by this "
                    "fraction")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 0.99));
    cmd->add_option("--dataflow-refine", options.dataflow_refine,
                    "dataflow barriers: passes of a local search that times the whole network with sets one barrier "
                    "away from the segment DP's and keeps the fastest (0: the DP's set)")
        ->capture_default_str()
        ->check(CLI::Range(0, 100));
    cmd->add_flag("!--exhaustive", options.bound_pruning,
                  "cost every DP ending (default: skip endings whose floor cannot win)");
    cmd->add_flag("!--alone-floors", options.measured_floors,
                  "DP: floor a stage by its ops timed alone only (default: also by costed stages it contains, "
                  "less 5 % + 2 us)");
    cmd->add_flag("!--full-timing", options.limited_timing,
                  "measured cost model: time every stage until its rounds settle (default: a stage whose rounds "
                  "are all past what would beat the best ending so far stops at its minimum rounds)");
    cmd->add_option_function<double>(
           "--one-round-margin", [this](double m) { one_round_margin = m; },
           "measured cost model: a stage asked with a limit (see --full-timing) is timed one round first and stops "
           "there when that round is past the limit by more than this fraction (0: it gets the rule's minimum "
           "rounds)")
        ->default_str("the rule's: 0.1, ios: 0")
        ->check(CLI::Range(0.0, 10.0));
    cmd->add_flag("--quiet", quiet, "no progress line on stderr");
    cmd->add_flag("!--no-measure", measure_schedule,
                  "measured cost model: do not time the chosen schedule end to end beside its prediction");
    cmd->add_option("--prefetch-weights", prefetch_weights,
                    "off | on (one more CUDA graph node per stage asks the L2 for the stage's weights while the "
                    "stage before it runs; pays where the weights exceed the L2) | auto (ios run: built both ways "
                    "and timed, the faster kept; with --exec auto, every combination). On or auto, the measured "
                    "search calibrates its cold share against the faster of the sequential schedule with and "
                    "without prefetching")
        ->capture_default_str();
    cmd->add_option("--prefetch-ahead", prefetch_ahead,
                    "with --prefetch-weights on or auto: each stage's weights are prefetched beside the stage this "
                    "many stages before it")
        ->check(CLI::Range(1, 99))
        ->capture_default_str();
    report.add_to(cmd);
  }

  // How many stages ahead the graphs --prefetch-weights names prefetch (0: not at all): one, or for auto
  // both that ios run times. Call check_prefetch_weights first.
  std::vector<int> prefetch_aheads() const {
    if (prefetch_weights == "off") return {0};
    if (prefetch_weights == "on") return {prefetch_ahead};
    return {0, prefetch_ahead};
  }

  ios::sched::StageTimingRule timing_rule() const {
    ios::sched::StageTimingRule rule = stage_timing;
    if (one_round_margin) rule.one_round_margin = *one_round_margin;
    rule.prefetch_ahead = prefetch_aheads().back();  // the search may price stages for prefetching
    return rule;
  }

  // --compile-ahead as a number of processes (auto: rt::default_compile_ahead_processes where there is a GPU
  // runtime, else 0).
  Expected<int> compile_ahead_processes() const {
    if (compile_ahead == "auto") {
#ifdef IOS_WITH_RUNTIME
      return ios::rt::default_compile_ahead_processes();
#else
      return 0;
#endif
    }
    int processes = -1;
    size_t used = 0;
    try {
      processes = std::stoi(compile_ahead, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RETURN_ERROR_IF(used != compile_ahead.size() || processes < 0 || processes > 64, ios::ErrorCode::kInvalidArgument,
                    "--compile-ahead must be auto or a number of processes from 0 to 64, got '" + compile_ahead + "'");
    return processes;
  }

  Status check_prefetch_weights() const {
    RETURN_ERROR_IF(prefetch_weights != "off" && prefetch_weights != "on" && prefetch_weights != "auto",
                    ios::ErrorCode::kInvalidArgument,
                    "--prefetch-weights must be off, on or auto, got '" + prefetch_weights + "'");
    return Status::ok();
  }
};

// The run's configuration and, on first use, its GPU context (made once, shared by the measured
// cost model, Opara's profile and the executor).
struct Session {
  ios::ExecConfig config;
  const OptimizeArgs* args = nullptr;
  std::optional<ContextPtr> context_;
#ifdef IOS_WITH_RUNTIME

  // Has --compile-ahead's processes started on `g` when the context first tunes a convolution, where tuning
  // compiles cuDNN engines at run time; they stop once the network is built (the measured search's
  // calibration network, Context::stop_tuning_companions; ios run's executor). Not before: with every kernel
  // in the cache file they only cost (Inception V3 tf32 searched again in 2.8-3.0 s against 1.8-2.4 with 8
  // processes started at once, H100). A failure to start them is reported; tuning goes on.
  Status compile_ahead_on_tuning(const Graph& g) {
    auto engine = ios::rt::parse_conv_engine(args->conv_engine);
    if (!engine) return engine.status();
    Expected<int> processes = args->compile_ahead_processes();
    if (!processes) return processes.status();
    if (*processes == 0 || !ios::rt::compiles_at_run_time(config, *engine)) return Status::ok();
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) return Status::ok();  // nowhere to start them from: tuning compiles as it always did
    const std::vector<std::string> config_args = {"--precision",     config.precision(),
                                                  "--layout",        ios::layout_name(config.layout),
                                                  "--concat-writes", ios::concat_writes_name(config.concat_writes),
                                                  "--conv-engine",   args->conv_engine,
                                                  "--batch",         std::to_string(config.batch),
                                                  "--kernel-cache",  args->kernel_cache};
    ContextPtr ctx = context();
    if (!ctx) return ctx.status();
    (*ctx)->set_before_tuning([&g, self, config_args, n = *processes]() -> ios::rt::Context::TuningCompanions {
      auto started = ios::rt::CompileAheadProcesses::start(self, g, config_args, n);
      if (!started) {
        std::fprintf(stderr, "warning: %s\n", started.status().with_context("--compile-ahead").to_string().c_str());
        return {};
      }
      const int count = (*started)->processes();
      std::string plans_dir = (*started)->plans_dir();
      return {std::shared_ptr<ios::rt::CompileAheadProcesses>(std::move(*started)), count, std::move(plans_dir)};
    });
    return Status::ok();
  }
#endif

  ContextPtr context() {
#ifdef IOS_WITH_RUNTIME
    if (!context_) context_ = make_context(config, args->conv_engine, args->kernel_cache, args->verbose);
    return *context_;
#else
    return ios::error(ios::ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
  }
};

// `ios run --concat-writes auto` searches (where it searches) with the default and times both at the end.
Expected<Session> make_session(const OptimizeArgs& a) {
  const std::string writes = a.concat_writes == "auto" ? "in-place" : a.concat_writes;
  auto config = ios::make_exec_config(a.precision, a.layout, a.options.batch, writes);
  if (!config) return config.status();
  Session s;
  s.config = *config;
  s.args = &a;
  return s;
}

std::string display_name(const OptimizeArgs& a, ios::sched::Policy p) {
  std::string name = ios::sched::policy_display_name(p);
  const bool dp = p == ios::sched::Policy::kDpBoth || p == ios::sched::Policy::kDpParallel;
  if (dp && (a.options.r != 3 || a.options.s != 8))
    name += "(r=" + std::to_string(a.options.r) + ", s=" + std::to_string(a.options.s) + ")";
  return name;
}

// Opara orders launches by each op's shared memory: measured with CUPTI where there is a GPU (and
// the cost model is not forced to the analytic one), else estimated (noted in the schedule).
Status attach_opara_profile(const Graph& g, OptimizeArgs& a, Session& session) {
  if (a.options.policy != ios::sched::Policy::kOpara || a.cost_model == "analytic") return Status::ok();
#ifdef IOS_WITH_RUNTIME
  if (!ios::rt::gpu_available()) return Status::ok();
  auto ctx = session.context();
  if (!ctx) return ctx.status();
  ios::rt::ExecutorOptions eo;
  eo.config = session.config;
  eo.context = *ctx;
  auto profile = ios::rt::measure_resource_profile(g, ios::ir::make_weights(g), eo);
  if (!profile) return profile.status().with_context("Opara's CUPTI profile");
  a.options.profile = *profile;
#endif
  return Status::ok();
}

// Where the search's time went: the policy (with several DP workers, their load), the measured cost model's
// calibration (inside the policy's time; the other workers wait for it), dataflow barriers, final estimate.
void print_search_time(OptimizeArgs& a, const ios::sched::OptimizeResult& r,
                       const ios::sched::CalibrationTime& calibration) {
  const size_t workers = a.options.extra_models.size() + 1;
  const ios::sched::WorkerLoad load = ios::sched::worker_load(r.timeline, workers);
  std::string parts;
  if (workers > 1 && !r.timeline.empty()) {
    parts = " (" + load.summary();
    if (a.options.idle_workers) {
      const ios::sched::IdleWorkers::Stats lent = a.options.idle_workers->stats();
      parts += "; workers out of parts timed " + std::to_string(lent.stages_lent) + " stages for the others in " +
               std::to_string(lent.chunks_lent) + " chunks";
      a.report.json["search_time"]["stages_lent"] = lent.stages_lent;
      a.report.json["search_time"]["chunks_lent"] = lent.chunks_lent;
    }
    parts += ")";
  }
  std::string calibrating;
  const std::vector<double>& slots = calibration.slot_seconds;
  if (calibration.seconds > 0) {
    char text[256];
    const ios::sched::BuildTimes& built = calibration.network_build.parts;
    std::snprintf(text, sizeof text,
                  ", of it %.2f s calibrating the cost model (%.2f s building the network: kernels %.2f, weights "
                  "%.2f, capture %.2f, instantiate %.2f",
                  calibration.seconds, calibration.network_build.seconds, built.kernels, built.weights, built.capture,
                  built.instantiate);
    calibrating = text;
    if (slots.size() > 1) {  // the network with some ops, then more ops, slots shared by the workers
      std::snprintf(text, sizeof text, "; it and its ops done after %.2f s, the last of %zu slots after %.2f s",
                    slots[0], slots.size(), *std::max_element(slots.begin(), slots.end()));
      calibrating += text;
    }
    calibrating += ")";
  }
  std::fprintf(a.report.text(), "Search time: %.2f s policy%s%s | %.2f s dataflow barriers | %.2f s final estimate\n",
               r.policy_seconds, parts.c_str(), calibrating.c_str(), r.barrier_seconds, r.estimate_seconds);
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& t : r.timeline)
    timeline.push_back({{"worker", t.worker}, {"ops", t.ops}, {"start_s", t.start_s}, {"end_s", t.end_s}});
  a.report.json["search_time"].update({{"policy_seconds", r.policy_seconds},
                                       {"calibration_seconds", calibration.seconds},
                                       {"calibration_slot_seconds", calibration.slot_seconds},
                                       {"calibration_network_build_seconds", calibration.network_build.seconds},
                                       {"calibration_network_build_parts",
                                        {{"setup", calibration.network_build.parts.setup},
                                         {"memory", calibration.network_build.parts.memory},
                                         {"kernels", calibration.network_build.parts.kernels},
                                         {"weights", calibration.network_build.parts.weights},
                                         {"capture", calibration.network_build.parts.capture},
                                         {"instantiate", calibration.network_build.parts.instantiate}}},
                                       {"barrier_seconds", r.barrier_seconds},
                                       {"estimate_seconds", r.estimate_seconds},
                                       {"worker_busy_seconds", load.busy_s},
                                       {"parts", timeline}});
}

// IOS's summary line, the search's statistics (DP policies only) and the memory plan, as text and JSON.
void print_optimize(OptimizeArgs& a, const Graph& g, ios::sched::Policy policy, const ios::sched::OptimizeResult& r,
                    const ios::sched::StageCache& cache, const ios::sched::ExecutionPlan& plan,
                    const ios::sched::MemoryPlan& memory) {
  const auto& sched = r.schedule;
  FILE* out = a.report.text();
  // Opara's figure is its own contention-free estimate: say so rather than print it as a DP optimum.
  const bool opara = policy == ios::sched::Policy::kOpara;
  std::fprintf(out, "Model: %s | Optimization: %s | Batchsize: %d | Optimization cost: %.2f sec | Latency: %.2f ms%s\n",
               g.name.c_str(), display_name(a, policy).c_str(), a.options.batch, sched.meta.search_seconds,
               sched.meta.latency_ms, opara ? " (Opara's contention-free estimate, not comparable with the DP's)" : "");
  if (is_dp(policy)) {
    char budget[96] = "no memory budget";
    if (a.options.memory_budget > 0)
      std::snprintf(budget, sizeof budget, "%lld over the memory budget of %.2fx sequential",
                    static_cast<long long>(r.stats.memory_skipped), a.options.memory_budget);
    std::fprintf(out,
                 "Parts: %zu (%zu took an identical part's solution) | DP workers: %zu | States: %lld | "
                 "Transitions: %lld (%s) | Stages asked by the search: %lld in %lld requests (%lld screened, then "
                 "settled) | ",
                 r.parts, r.parts_reused, a.options.extra_models.size() + 1, static_cast<long long>(r.stats.states),
                 static_cast<long long>(r.stats.transitions), budget, static_cast<long long>(r.stats.stages_costed),
                 static_cast<long long>(r.stats.cost_requests), static_cast<long long>(r.stats.stages_settled));
  }
  if (sched.is_stream_level()) {  // Opara: no stages, launches on streams
    std::fprintf(out, "Launches: %zu on %d streams | ", sched.streams->launch_order.size(), plan.streams);
  } else {
    std::fprintf(out, "Stages: %d | ", sched.stage_count());
  }
  std::fprintf(out, "Cost model: %s, %zu stages costed, %zu answered by the stage cache (search and final estimate)\n",
               cache.name().c_str(), cache.misses(), cache.hits());
  std::fprintf(out,
               "Memory: peak activations %.1f MiB (%.1f MiB without reuse) | concats in place: %d whole, %d inputs "
               "(%d sums fused into convolutions, %d shared concat buffers)\n",
               memory.arena_bytes / 1048576.0, memory.no_reuse_bytes / 1048576.0, memory.elided_concats,
               memory.terms_in_place, memory.fused_sums, memory.shared_concat_buffers);
  for (const auto& note : sched.meta.notes) std::fprintf(out, "Note: %s\n", note.c_str());
  nlohmann::json& j = a.report.json;
  j["model"] = g.name;
  j["policy"] = ios::sched::policy_flag_name(policy);
  j["batch"] = a.options.batch;
  j["precision"] = sched.meta.precision;
  j["layout"] = sched.meta.layout;
  j["search_seconds"] = sched.meta.search_seconds;
  j["latency_ms"] = sched.meta.latency_ms;
  j["latency_kind"] = opara ? "opara_estimate" : "cost_model_sum";
  if (sched.is_stream_level()) {
    j["launches"] = sched.streams->launch_order.size();
    j["streams"] = plan.streams;
  } else {
    j["stages"] = sched.stage_count();
  }
  if (is_dp(policy))
    j["dp"] = {{"parts", r.parts},
               {"parts_reused", r.parts_reused},
               {"workers", a.options.extra_models.size() + 1},
               {"states", r.stats.states},
               {"transitions", r.stats.transitions},
               {"stages_asked", r.stats.stages_costed},
               {"cost_requests", r.stats.cost_requests},
               {"budget_splits", r.stats.budget_splits},
               {"memory_budget", a.options.memory_budget},
               {"stage_batch", a.options.stage_batch},
               {"states_together", a.options.states_together},
               {"screen_margin", a.options.screen_margin},
               {"stages_settled", r.stats.stages_settled},
               {"memory_skipped", r.stats.memory_skipped}};
  j["cost_model"] = {{"name", cache.name()}, {"stages_costed", cache.misses()}, {"stage_cache_hits", cache.hits()}};
  j["memory"] = {{"peak_activation_bytes", memory.arena_bytes},
                 {"no_reuse_bytes", memory.no_reuse_bytes},
                 {"elided_concats", memory.elided_concats},
                 {"concat_inputs_in_place", memory.terms_in_place},
                 {"fused_sums", memory.fused_sums},
                 {"shared_concat_buffers", memory.shared_concat_buffers}};
  j["notes"] = sched.meta.notes;
}

#ifdef IOS_WITH_RUNTIME
// The corrections every figure got (MeasuredCostModel): the stage boundary taken off, and the cold share
// with the sums it was calibrated on.
std::string calibration_text(const ios::rt::MeasuredCostModel& m, int batch) {
  std::string out;
  char text[320];
  if (std::optional<ios::rt::TimingLane::Boundary> boundary = m.stage_boundary()) {
    std::snprintf(text, sizeof text, "; figures less the stage boundary, %.2f us a replay and %.2f us a span",
                  boundary->graph_ms * 1e3, boundary->event_ms * 1e3);
    out += text;
  }
  std::optional<ios::rt::MeasuredCostModel::ShareCalibration> c = m.cold_share(batch);
  if (c && m.rule().l2 == ios::sched::L2Timing::kColdShare) {
    std::snprintf(text, sizeof text,
                  "; cold share %.0f %%: the ops alone add up to %.3f ms warm and %.3f ms cold, the sequential "
                  "schedule runs %.3f ms end to end",
                  c->share * 100, c->ops_warm_ms, c->ops_cold_ms, c->network_ms);
    out += text;
    if (c->prefetched_network_ms > 0) {
      if (c->prefetched_network_ms <= c->network_ms) {
        out += " (with weights prefetched, which ran faster than without)";
      } else {
        std::snprintf(text, sizeof text, " (without prefetching; with weights prefetched it runs %.3f ms)",
                      c->prefetched_network_ms);
        out += text;
      }
    }
  }
  return out;
}

// "109 engines tuned in 8.0 s (3.4 s timing 895 candidates, 662 cut short; 0.9 s listing, 3.5 s building
// plans (3.4 s compiling at run time), 0.2 s first runs), clocks brought up in 0.01 s".
std::string tuning_text(const ios::rt::KernelStats& k) {
  const ios::rt::TuningStats& t = k.tuning;
  char text[320];
  std::snprintf(text, sizeof text,
                "%d engines tuned in %.1f s (%.1f s timing %d candidates, %d cut short; %.1f s listing, %.1f s "
                "building plans (%.1f s compiling at run time), %.1f s first runs), clocks brought up in %.2f s",
                k.tuned, t.seconds, t.timing_seconds, t.candidates, t.cut_short, t.list_seconds, t.build_seconds,
                t.compile_seconds, t.first_run_seconds, k.clock_warm_up_seconds);
  std::string out = text;
  if (t.skipped_losing > 0)
    out += ", " + std::to_string(t.skipped_losing) + " runtime-compiled candidates not compiled (they keep losing)";
  if (k.compile_ahead_processes > 0)
    out += ", " + std::to_string(k.compile_ahead_processes) + " processes compiling ahead (" +
           std::to_string(t.taken_ahead) + " of their plans loaded instead of compiled)";
  return out;
}

nlohmann::json tuning_json(const ios::rt::KernelStats& k) {
  return {{"engines_tuned", k.tuned},
          {"compile_ahead_processes", k.compile_ahead_processes},
          {"seconds", k.tuning.seconds},
          {"timing_seconds", k.tuning.timing_seconds},
          {"candidates", k.tuning.candidates},
          {"cut_short", k.tuning.cut_short},
          {"list_seconds", k.tuning.list_seconds},
          {"build_seconds", k.tuning.build_seconds},
          {"compile_seconds", k.tuning.compile_seconds},
          {"first_run_seconds", k.tuning.first_run_seconds},
          {"skipped_losing", k.tuning.skipped_losing},
          {"taken_ahead", k.tuning.taken_ahead},
          {"clock_warm_up_seconds", k.clock_warm_up_seconds}};
}

// How the stages were timed (measured cost model, summed over every device): counts, rounds, spread,
// host time.
void report_stage_timing(const ios::sched::CostModel& model, const std::vector<const ios::sched::CostModel*>& more,
                         int batch, Report& report) {
  const auto* measured = dynamic_cast<const ios::rt::MeasuredCostModel*>(&model);
  if (!measured) return;
  ios::sched::StageTimingStats t = measured->stats();
  for (const ios::sched::CostModel* m : more)
    if (const auto* other = dynamic_cast<const ios::rt::MeasuredCostModel*>(m)) t.merge(other->stats());
  std::string rule = measured->rule().describe() + calibration_text(*measured, batch);
  std::fprintf(report.text(), "Stage timing (%s): %s\n", rule.c_str(), t.summary().c_str());
  ios::rt::KernelStats kernels = measured->context().kernel_stats();
  for (const ios::sched::CostModel* m : more)
    if (const auto* other = dynamic_cast<const ios::rt::MeasuredCostModel*>(m)) {
      kernels.tuned += other->context().kernel_stats().tuned;
      kernels.tuning += other->context().kernel_stats().tuning;
      kernels.clock_warm_up_seconds += other->context().kernel_stats().clock_warm_up_seconds;
      kernels.compile_ahead_processes += other->context().kernel_stats().compile_ahead_processes;
    }
  std::fprintf(report.text(), "Kernels: %s\n", tuning_text(kernels).c_str());
  report.json["stage_timing"] = {{"rule", measured->rule().describe()},
                                 {"stages", t.stages},
                                 {"rounds", t.rounds},
                                 {"replays", t.replays},
                                 {"above_tolerance", t.unsettled},
                                 {"stopped_past_limit", t.stopped_past_limit},
                                 {"stopped_early", t.stopped_early},
                                 {"requeued", t.requeued},
                                 {"unproven", t.unproven},
                                 {"max_head_start_ms", t.max_head_start_ms},
                                 {"spread_median", t.spread_percentile(0.5)},
                                 {"spread_p90", t.spread_percentile(0.9)},
                                 {"passes", t.passes},
                                 {"gpu_seconds", t.gpu_seconds},
                                 {"gpu_span_seconds", t.gpu_span_seconds},
                                 {"first_over_second_median", t.first_over_second_median()},
                                 {"build_seconds", t.build_seconds},
                                 {"wait_seconds", t.wait_seconds},
                                 {"calibration", measured->calibration()}};
  report.json["kernel_tuning"] = tuning_json(kernels);
}

// Executors of the whole network on the session's context, whose kernels the search tuned.
Expected<ios::rt::ExecutorOptions> network_options(Session& session) {
  auto context = session.context();
  if (!context) return context.status();
  ios::rt::ExecutorOptions options;
  options.config = session.config;
  options.context = *context;
  return options;
}

// The plan end to end as `ios run` runs it under the flags' --prefetch-weights: without prefetching,
// with it, or (auto) the faster of the two.
Expected<ios::rt::Timing> end_to_end(const Graph& g, const ios::ir::Weights& weights,
                                     const ios::sched::ExecutionPlan& plan, ios::rt::ExecutorOptions options,
                                     const OptimizeArgs& a) {
  std::optional<ios::rt::Timing> best;
  for (int v : a.prefetch_aheads()) {
    options.prefetch_ahead = v;
    ASSIGN_OR_RETURN(auto exec, ios::rt::Executor::create(g, weights, plan, options));
    ASSIGN_OR_RETURN(ios::rt::Timing t, exec->time(ios::rt::TimingOptions{}));
    if (!best || t.median_ms < best->median_ms) best = t;
  }
  return *best;
}

// Fidelity: the chosen schedule run end to end beside the cost model's prediction (the sum of its stages).
// `weights` are the measured cost model's (seeded: timing does not depend on values).
Status report_fidelity(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                       const ios::sched::ExecutionPlan& plan, Session& session, const OptimizeArgs& a, Report& report) {
  ASSIGN_OR_RETURN(const ios::rt::ExecutorOptions options, network_options(session));
  ASSIGN_OR_RETURN(ios::rt::Timing t, end_to_end(g, weights, plan, options, a));
  const std::string prefetching = a.prefetch_weights == "off" ? "" : ", prefetching weights " + a.prefetch_weights;
  const double predicted = sched.meta.latency_ms, ratio = t.median_ms / predicted;
  std::fprintf(report.text(),
               "Fidelity: predicted %.3f ms (sum of its stages) | measured end to end %.3f ms (CUDA graph%s, median "
               "of %d) | measured / predicted %.3f\n",
               predicted, t.median_ms, prefetching.c_str(), t.iterations, ratio);
  report.json["fidelity"] = {{"predicted_ms", predicted},
                             {"measured_ms", t.median_ms},
                             {"ratio", ratio},
                             {"prefetch_weights", a.prefetch_weights}};
  if (sched.meta.dataflow_latency_ms <= 0) return Status::ok();
  // Dataflow execution with the barriers the search kept, predicted by the sum of its segments.
  ASSIGN_OR_RETURN(ios::sched::ExecutionPlan dataflow_plan,
                   ios::sched::compile_plan(g, sched, ios::sched::ExecMode::kDataflow));
  ASSIGN_OR_RETURN(ios::rt::Timing d, end_to_end(g, weights, dataflow_plan, options, a));
  const double dataflow_predicted = sched.meta.dataflow_latency_ms, dataflow_ratio = d.median_ms / dataflow_predicted;
  std::fprintf(report.text(),
               "Fidelity, dataflow with %zu barriers: predicted %.3f ms (sum of its segments) | measured end to end "
               "%.3f ms | measured / predicted %.3f | dataflow / staged measured %.3f\n",
               sched.dataflow_barriers.size(), dataflow_predicted, d.median_ms, dataflow_ratio,
               d.median_ms / t.median_ms);
  report.json["fidelity"]["dataflow"] = {
      {"predicted_ms", dataflow_predicted}, {"measured_ms", d.median_ms}, {"ratio", dataflow_ratio}};
  return Status::ok();
}

// --stage-marginals: what each stage adds to the staged network it runs in, beside its figure (the stage timed
// alone), and the sums: where the prediction and the network part, stage by stage, without a tracer's
// overhead (CUPTI added 7-18 % at fp32 and tf32).
Status report_stage_marginals(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                              ios::sched::CostModel& figures, Session& session, int batch, bool quiet, Report& report) {
  ASSIGN_OR_RETURN(const ios::rt::ExecutorOptions options, network_options(session));
  const std::vector<ios::sched::Stage> stages = ios::sched::all_stages(sched);
  ios::rt::MarginalOptions marginal;
  if (!quiet)
    marginal.on_round = [&](int done, double seconds) {
      if (done == 0)
        std::fprintf(stderr, "[stage marginals] %zu networks built; timing them in %d rounds\n", stages.size() + 1,
                     marginal.rounds);
      else
        std::fprintf(stderr, "[stage marginals] round %d/%d, %.1f s | ETA %.0f s\n", done, marginal.rounds, seconds,
                     seconds / done * (marginal.rounds - done));
    };
  ASSIGN_OR_RETURN(ios::rt::StageMarginals m, ios::rt::time_stage_marginals(g, weights, stages, options, marginal));
  FILE* out = report.text();
  std::fprintf(out, "Stage marginals (the staged network %.3f ms less the network without the stage; %d rounds):\n",
               m.network_ms, marginal.rounds);
  std::fprintf(out, "  stage  kind        groups  ops  figure us  in network us  difference us  spread us\n");
  double figures_sum = 0, marginals_sum = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < stages.size(); ++k) {
    ASSIGN_OR_RETURN(const double figure, figures.stage_latency_ms(g, stages[k], batch));
    const ios::rt::StageMarginal& s = m.stages[k];
    const size_t ops = stages[k].ops().size();
    const char* kind = stages[k].kind == ios::sched::StageKind::kMerge ? "merge" : "concurrent";
    std::fprintf(out, "  %5zu  %-10s  %6zu  %3zu  %9.2f  %13.2f  %13.2f  %9.2f\n", k, kind, stages[k].groups.size(),
                 ops, figure * 1e3, s.in_network_ms * 1e3, (s.in_network_ms - figure) * 1e3, s.spread_ms * 1e3);
    rows.push_back({{"kind", kind},
                    {"groups", stages[k].groups.size()},
                    {"ops", ops},
                    {"figure_ms", figure},
                    {"in_network_ms", s.in_network_ms},
                    {"spread_ms", s.spread_ms}});
    figures_sum += figure;
    marginals_sum += s.in_network_ms;
  }
  std::fprintf(out, "  sums: figures %.3f ms, in network %.3f ms, the network %.3f ms\n", figures_sum, marginals_sum,
               m.network_ms);
  report.json["stage_marginals"] = {{"network_ms", m.network_ms}, {"stages", rows}};
  return Status::ok();
}
#endif

// The search's progress on stderr, once a second after the first: parts done (and reused), stages
// costed, and an ETA from the share of ops in finished parts and, in the parts being searched, the share
// of their states solved.
class ProgressLine {
 public:
  ProgressLine(const ios::sched::StageCache& cache, bool quiet) : cache_(cache) {
    if (!quiet) ticker_ = std::thread([this] { tick(); });
  }
  ~ProgressLine() { stop(); }
  void update(const ios::sched::SearchProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    progress_ = p;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

 private:
  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool printed = false;
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopped_; })) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      const auto& p = progress_;
      const double done = double(p.ops_done) + p.ops_running;  // parts in flight by their states solved
      std::string eta = "ETA once states are solved";
      if (done > 0 && double(p.ops_total) > done)
        eta = "ETA " + std::to_string(int(t / done * (double(p.ops_total) - done))) + " s";
      std::fprintf(stderr, "\r[search %.0f s] parts %zu/%zu (%zu reused) | states %lld | stages costed %zu | %s   ", t,
                   p.parts_done, p.parts_total, p.parts_reused, static_cast<long long>(p.stats.states), cache_.misses(),
                   eta.c_str());
      printed = true;
    }
    if (printed) std::fprintf(stderr, "\n");
  }

  const ios::sched::StageCache& cache_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  ios::sched::SearchProgress progress_;
  bool stopped_ = false;
  std::thread ticker_;
};

#ifdef IOS_WITH_RUNTIME
// Further DP workers: --workers-per-gpu on every GPU of --devices, the session's model being the first
// device's first worker. Each has a measured cost model behind its own view of the shared stage cache,
// on a context of its own: a new one per further GPU, a sibling of that GPU's first (shared kernel
// choices and timing lane) for further workers on one GPU.
struct ExtraWorkers {
  std::vector<std::shared_ptr<ios::rt::Context>> contexts;
  std::vector<std::unique_ptr<ios::sched::CostModel>> models, views;

  Status add(OptimizeArgs& a, const ios::rt::MeasuredCostModel& first_model, Session& session,
             ios::sched::StageCache& cache, ios::sched::IdleWorkers& idle) {
    auto devices = ios::rt::select_devices(a.devices);
    if (!devices) return devices.status();
    auto first = session.context();
    if (!first) return first.status();
    RETURN_ERROR_IF((*first)->device() != (*devices)[0], ios::ErrorCode::kInvalidArgument,
                    "--devices must list the current device (" + std::to_string((*first)->device()) + ") first");
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<ios::rt::Context>> others, other_devices(a, session, *devices));
    for (size_t i = 0; i < devices->size(); ++i) {
      std::shared_ptr<ios::rt::Context> device_first = i == 0 ? *first : others[i - 1];
      if (i > 0) add_worker(device_first, first_model, a, session, cache, idle);
      for (int w = 1; w < a.workers_per_gpu.value_or(OptimizeArgs::kDefaultWorkersPerGpu); ++w) {
        auto sibling = device_first->sibling();
        if (!sibling) return sibling.status().with_context("device " + std::to_string((*devices)[i]));
        add_worker(*sibling, first_model, a, session, cache, idle);
      }
    }
    CHECK_CUDA(cudaSetDevice((*devices)[0]));
    if (!models.empty()) a.options.idle_workers = &idle;
    return Status::ok();
  }

 private:
  // A context on each device after the first, made side by side: made one after another, three of them
  // added 0.3-0.4 s more to a search's wall time (4 x H200).
  static Expected<std::vector<std::shared_ptr<ios::rt::Context>>> other_devices(const OptimizeArgs& a,
                                                                                const Session& session,
                                                                                const std::vector<int>& devices) {
    std::vector<std::optional<Expected<std::shared_ptr<ios::rt::Context>>>> made(devices.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < devices.size(); ++i)
      threads.emplace_back([&, i] {
        const cudaError_t set = cudaSetDevice(devices[i]);
        made[i].emplace(set != cudaSuccess ? ios::rt::cuda_error(set, "cudaSetDevice", __FILE__, __LINE__)
                                           : make_context(session.config, a.conv_engine, a.kernel_cache, a.verbose));
      });
    for (std::thread& t : threads) t.join();
    CHECK_CUDA(cudaSetDevice(devices[0]));
    std::vector<std::shared_ptr<ios::rt::Context>> out;
    for (size_t i = 1; i < devices.size(); ++i) {
      if (!*made[i]) return made[i]->status().with_context("device " + std::to_string(devices[i]));
      out.push_back(**made[i]);
    }
    return out;
  }

  void add_worker(std::shared_ptr<ios::rt::Context> ctx, const ios::rt::MeasuredCostModel& first_model, OptimizeArgs& a,
                  Session& session, ios::sched::StageCache& cache, ios::sched::IdleWorkers& idle) {
    ios::rt::MeasuredCostModel::Params params;
    params.config = session.config;
    params.rule = a.timing_rule();
    contexts.push_back(ctx);
    models.push_back(std::make_unique<ios::rt::MeasuredCostModel>(first_model, params, std::move(ctx)));
    views.push_back(cache.worker(idle.add(*models.back())));
    a.options.extra_models.push_back(views.back().get());
  }
};
#endif

// --dataflow-segment, or its default for the run's cost model.
int dataflow_segment(const OptimizeArgs& a, const ios::sched::CostModel& model) {
  return a.dataflow_segment >= 0 ? a.dataflow_segment : ios::sched::default_dataflow_segment(model.name());
}

int cmd_optimize(OptimizeArgs& a) {
  Expected<Graph> g = a.src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Policy> policy = ios::sched::parse_policy(a.policy);
  if (!policy) return fail(policy.status().with_context("--opt"));
  if (Status st = a.check_prefetch_weights(); !st) return fail(st);
  if (Expected<int> ahead = a.compile_ahead_processes(); !ahead) return fail(ahead.status());
  if (a.concat_writes == "auto")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--concat-writes auto times both ways of writing concatenations as a schedule is run: "
                           "ios run only; ios optimize takes in-place or conv-copy"));
  a.options.policy = *policy;
  auto session = make_session(a);
  if (!session) return fail(session.status());
#ifdef IOS_WITH_RUNTIME
  if (a.cost_model == "measured" || (a.cost_model == "auto" && ios::rt::gpu_available()))
    if (Status s = session->compile_ahead_on_tuning(*g); !s) return fail(s);
#endif
  auto model = make_cost_model(*g, a.cost_model, session->config, a.timing_rule(), [&] { return session->context(); });
  if (!model) return fail(model.status());
  if ((a.devices != "0" || a.workers_per_gpu.value_or(1) != 1) && !((*model)->name() == "measured" && is_dp(*policy)))
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           std::string(a.devices != "0" ? "--devices" : "--workers-per-gpu") +
                               " spreads a measured DP search over GPU workers; this run uses the " + (*model)->name() +
                               " cost model with " + display_name(a, *policy)));
  if (a.stage_marginals && *policy == ios::sched::Policy::kOpara)
    return fail(ios::error(
        ios::ErrorCode::kInvalidArgument,
        "--stage-marginals times a schedule's stages: " + display_name(a, *policy) + " schedules streams, not stages"));
  if (a.stage_marginals && (*model)->name() != "measured")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--stage-marginals times stages in the network on the GPU: it needs --cost-model measured "
                           "(this run: " +
                               (*model)->name() + ")"));
  std::string cache_key =
      (*model)->name() + "|" + session->config.plan_key() + "|" + ios::sched::StageCache::kKeyFormat;
#ifdef IOS_WITH_RUNTIME
  if ((*model)->name() == "measured")
    cache_key += "|" + ios::rt::device_description() + "|" + ios::rt::library_versions() + a.timing_rule().cache_tag() +
                 "|" + ios::rt::MeasuredCostModel::kFigureFormat;
#endif
  if (Status s = attach_opara_profile(*g, a, *session); !s) return fail(s);
  // Every worker's measuring model, pooled so that workers out of parts time stages for the others; it
  // outlives the cache and the views that measure through it.
  ios::sched::IdleWorkers idle_workers;
  ios::sched::StageCache cache(idle_workers.add(**model), cache_key);
#ifdef IOS_WITH_RUNTIME
  const auto* measured = dynamic_cast<const ios::rt::MeasuredCostModel*>(model->get());
  ExtraWorkers extra;
  if (measured && is_dp(*policy))
    if (Status s = extra.add(a, *measured, *session, cache, idle_workers); !s) return fail(s);
#endif
  if (!a.stage_cache.empty())
    if (Status s = cache.load(a.stage_cache); !s) return fail(s);

  a.options.dataflow_segment = dataflow_segment(a, **model);
  ProgressLine progress(cache, a.quiet);
  a.options.on_part = [&progress](const ios::sched::SearchProgress& p) { progress.update(p); };
  auto result = ios::sched::optimize(*g, a.options, cache);
  progress.stop();
  if (!result) return fail(result.status());
  auto& sched = result->schedule;
  sched.meta.precision = session->config.precision();
  sched.meta.layout = ios::layout_name(session->config.layout);
#ifdef IOS_WITH_RUNTIME
  if (cache.name() == "measured") {
    sched.meta.device = ios::rt::device_description();
    sched.meta.library_versions = ios::rt::library_versions();
  }
#endif
  auto plan = ios::sched::compile_plan(*g, sched);
  if (!plan) return fail(plan.status());
  ios::sched::MemoryOptions memory_options;
  memory_options.config = session->config;
  auto memory = ios::sched::plan_memory(*g, *plan, memory_options);
  if (!memory) return fail(memory.status());
  ios::sched::CalibrationTime calibration;
#ifdef IOS_WITH_RUNTIME
  if (measured) calibration = measured->calibration_time();
#endif
  print_optimize(a, *g, *policy, *result, cache, *plan, *memory);
  print_search_time(a, *result, calibration);
#ifdef IOS_WITH_RUNTIME
  std::vector<const ios::sched::CostModel*> more_models;
  for (const auto& m : extra.models) more_models.push_back(m.get());
  report_stage_timing(**model, more_models, a.options.batch, a.report);
  if (measured && a.measure_schedule && !sched.is_stream_level())
    if (Status s = report_fidelity(*g, *measured->weights(), sched, *plan, *session, a, a.report); !s) return fail(s);
  if (a.stage_marginals) {
    if (Status s = report_stage_marginals(*g, *measured->weights(), sched, cache, *session, a.options.batch, a.quiet,
                                          a.report);
        !s)
      return fail(s);
  }
#endif
  if (!a.stage_cache.empty())
    if (Status s = cache.save(a.stage_cache); !s) return fail(s);
  if (!a.out.empty()) {
    if (Status s = ios::sched::save_schedule(*g, sched, a.out); !s) return fail(s);
    std::fprintf(a.report.text(), "wrote %s\n", a.out.c_str());
    a.report.json["schedule_file"] = a.out;
  }
  return a.report.finish();
}

int cmd_validate(const GraphSource& src, const std::string& schedule_file, Report& report) {
  Expected<Graph> g = src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Schedule> s = ios::sched::load_schedule_for(*g, schedule_file);
  if (!s) return fail(s.status());
  const char* kind = s->is_stream_level() ? "stream-level" : "staged";
  std::fprintf(report.text(), "%s: valid %s schedule (%s), %d stages\n", schedule_file.c_str(), kind,
               s->meta.policy.c_str(), s->stage_count());
  // Peak activation memory (fp32, batch 1) beside the sequential schedule's: what concurrency costs.
  auto peak = [&](const ios::sched::Schedule& schedule) -> Expected<size_t> {
    ASSIGN_OR_RETURN(ios::sched::ExecutionPlan plan, ios::sched::compile_plan(*g, schedule));
    ASSIGN_OR_RETURN(ios::sched::MemoryPlan memory, ios::sched::plan_memory(*g, plan, {}));
    return memory.arena_bytes;
  };
  Expected<size_t> own = peak(*s), sequential = peak(ios::sched::sequential_schedule(*g));
  if (!own) return fail(own.status());
  if (!sequential) return fail(sequential.status());
  std::fprintf(report.text(),
               "Memory: peak activations %.1f MiB at fp32 batch 1 (sequential schedule: %.1f MiB, %.2fx)\n",
               *own / 1048576.0, *sequential / 1048576.0, double(*own) / double(*sequential));
  report.json = {{"schedule_file", schedule_file},
                 {"valid", true},
                 {"kind", kind},
                 {"policy", s->meta.policy},
                 {"model", g->name},
                 {"stages", s->stage_count()},
                 {"latency_ms", s->meta.latency_ms},
                 {"precision", s->meta.precision},
                 {"peak_activation_bytes", *own},
                 {"sequential_peak_activation_bytes", *sequential}};
  return report.finish();
}

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

void print_kernels(const ios::rt::Executor& exec, const ios::rt::Context& ctx, Report& report) {
  const ios::rt::KernelReport r = exec.kernel_report();
  const ios::rt::KernelStats& k = ctx.kernel_stats();
  std::fprintf(
      report.text(),
      "Convolutions: %d (%d with bias/activation fused, %d on the legacy API, %d writing a packed output our kernel "
      "copies into its slice) | %s, from the kernel cache file %d (%d "
      "of them compiled plans loaded; %d tuned again, kept from the file) | concat inputs written in place %d, copied "
      "%d | sums fused into convolutions "
      "%d (%d in the cuDNN graph)\n",
      r.convs, r.fused, r.legacy, r.output_copied, tuning_text(k).c_str(), k.from_file, k.plans_loaded, k.retuned,
      r.concat_inputs_in_place, r.concat_inputs_copied, r.sums_in_conv + r.sums_in_epilogue, r.sums_in_conv);
  if (ctx.options().verbose)
    for (const auto& [name, count] : r.engines)
      std::fprintf(report.text(), "  engine %-48s x%d\n", name.c_str(), count);
}

// One way to run a schedule: its execution mode, how many stages ahead the CUDA graph prefetches each
// stage's weights (0: not at all), and how its concatenations are written.
struct RunVariant {
  ios::sched::ExecMode mode = ios::sched::ExecMode::kStaged;
  int prefetch_ahead = 0;
  ios::ConcatWrites concat_writes = ios::ConcatWrites::kInPlace;
  std::string name() const {
    std::string text = std::string(ios::sched::exec_mode_name(mode)) + ios::rt::prefetch_suffix(prefetch_ahead);
    if (concat_writes != ios::ConcatWrites::kInPlace) text += std::string("/") + ios::concat_writes_name(concat_writes);
    return text;
  }
};

// "cuda-graph, dataflow (412 edges)" / "streams, staged" / "cuda-graph, auto: staged+prefetch".
std::string mode_text(const ios::rt::Executor& exec, const RunArgs& a, const RunVariant& v) {
  const bool automatic = a.exec == "auto" || a.opt.prefetch_weights == "auto" || a.opt.concat_writes == "auto";
  std::string text = std::string(a.no_graph ? "streams" : "cuda-graph") + ", " + (automatic ? "auto: " : "") + v.name();
  if (exec.graph_edges() >= 0) text += " (" + std::to_string(exec.graph_edges()) + " edges)";
  if (exec.programmatic_edges() > 0)
    text += ", " + std::to_string(exec.programmatic_edges()) + " programmatic edges made full";
  if (v.prefetch_ahead > 0)
    text += exec.prefetch_nodes() > 0 ? ", " + std::to_string(exec.prefetch_nodes()) + " prefetch nodes"
                                      : ", nothing prefetched: the schedule has no stages with weights";
  return text;
}

// How --concat-writes may write concatenations: one way, or both for auto.
Expected<std::vector<ios::ConcatWrites>> concat_writes_variants(const std::string& flag) {
  if (flag == "auto") return std::vector<ios::ConcatWrites>{ios::ConcatWrites::kInPlace, ios::ConcatWrites::kConvCopy};
  Expected<ios::ConcatWrites> writes = ios::parse_concat_writes(flag);
  if (!writes)
    return ios::error(ios::ErrorCode::kInvalidArgument,
                      "--concat-writes must be in-place, conv-copy or auto, got '" + flag + "'");
  return std::vector<ios::ConcatWrites>{*writes};
}

// The variants --exec, --prefetch-weights and --concat-writes name: one, or for auto every one an engine
// builder would time.
Expected<std::vector<RunVariant>> run_variants(const RunArgs& a) {
  std::vector<ios::sched::ExecMode> modes;
  if (a.exec == "auto") {
    modes = {ios::sched::ExecMode::kStaged, ios::sched::ExecMode::kDataflow};
  } else {
    Expected<ios::sched::ExecMode> mode = ios::sched::parse_exec_mode(a.exec);
    if (!mode) return mode.status().with_context("--exec");
    modes = {*mode};
  }
  RETURN_IF_ERROR(a.opt.check_prefetch_weights());
  RETURN_IF_ERROR(a.opt.compile_ahead_processes().status());
  const std::vector<int> prefetch = a.opt.prefetch_aheads();
  Expected<std::vector<ios::ConcatWrites>> writes = concat_writes_variants(a.opt.concat_writes);
  if (!writes) return writes.status();
  RETURN_ERROR_IF(a.no_graph && a.opt.prefetch_weights != "off", ios::ErrorCode::kInvalidArgument,
                  "--prefetch-weights adds nodes to the CUDA graph; it cannot be combined with --no-graph");
  RETURN_ERROR_IF(
      modes.size() * prefetch.size() * writes->size() > 1 && (a.no_graph || a.chaos > 0 || !a.trace_file.empty()),
      ios::ErrorCode::kInvalidArgument,
      "--exec auto, --prefetch-weights auto and --concat-writes auto time the CUDA graphs they name and "
      "keep the fastest; they cannot be combined with --no-graph, --chaos or --trace");
  std::vector<RunVariant> out;
  for (ios::sched::ExecMode mode : modes)
    for (int p : prefetch)
      for (ios::ConcatWrites w : *writes) out.push_back(RunVariant{mode, p, w});
  return out;
}

struct BuiltRun {
  RunVariant variant;
  ios::sched::ExecutionPlan plan;
  std::unique_ptr<ios::rt::Executor> exec;
};

// The schedule compiled and built for each variant; with more than one, each is timed in three
// interleaved rounds of 100 replays (the candidates share one store: weights uploaded once) and the one
// with the lowest median of round medians is kept. Reported, so that a user sees what auto chose and why.
Expected<BuiltRun> build_run(const std::vector<RunVariant>& variants, const Graph& g,
                             const ios::sched::Schedule& schedule, const ios::ir::Weights& weights,
                             ios::rt::ExecutorOptions options, Report& report) {
  if (variants.size() > 1) options.store = std::make_shared<ios::rt::DeviceStore>();
  std::vector<BuiltRun> runs;
  for (const RunVariant& v : variants) {
    ASSIGN_OR_RETURN(ios::sched::ExecutionPlan plan, ios::sched::compile_plan(g, schedule, v.mode));
    options.prefetch_ahead = v.prefetch_ahead;
    options.config.concat_writes = v.concat_writes;
    ASSIGN_OR_RETURN(auto exec, ios::rt::Executor::create(g, weights, plan, options));
    runs.push_back(BuiltRun{v, std::move(plan), std::move(exec)});
  }
  if (runs.size() == 1) return std::move(runs.front());
  std::vector<std::vector<double>> rounds(runs.size());
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      ASSIGN_OR_RETURN(ios::rt::Timing t, runs[i].exec->time(ios::rt::TimingOptions{10, 0, 100, 0}));
      rounds[i].push_back(t.median_ms);
    }
  std::vector<double> ms;
  for (const std::vector<double>& r : rounds) ms.push_back(ios::sched::median_of(r));
  const size_t best = size_t(std::min_element(ms.begin(), ms.end()) - ms.begin());
  nlohmann::json timed;
  std::fprintf(report.text(), "Exec auto (3 interleaved rounds of 100):");
  for (size_t i = 0; i < runs.size(); ++i) {
    timed[runs[i].variant.name()] = ms[i];
    std::fprintf(report.text(), "%s %s %.3f ms", i ? "," : "", runs[i].variant.name().c_str(), ms[i]);
  }
  std::fprintf(report.text(), " -> %s\n", runs[best].variant.name().c_str());
  report.json["exec_auto_ms"] = timed;
  return std::move(runs[best]);
}

// Compares a GPU output with the CPU reference: exit code 2 past the precision's tolerance.
int check_output(const Graph& g, const ios::ir::Weights& weights, const std::vector<float>& input,
                 const std::vector<float>& gpu, const ios::ExecConfig& config, Report& report) {
  ios::reference::Tensor in(config.batch, g.input_shape());
  in.data = input;
  auto ref = ios::reference::run(g, weights, in);
  if (!ref) return fail(ref.status());
  const double err = ios::reference::relative_l2_error(gpu, ref->data);
  const double tol = config.tolerance();
  report.json["check"] = {{"relative_l2_error", err}, {"tolerance", tol}, {"pass", err < tol}};
  std::fprintf(report.text(), "Check: relative L2 error vs CPU reference %.3e (tolerance %.0e): %s\n", err, tol,
               err < tol ? "PASS" : "FAIL");
  return err < tol ? 0 : 2;
}

// --check-nodes: every node's GPU output against the CPU reference's, in graph order, so a wrong answer
// names the first op that computes it. Exit code 2 when any node is past the precision's tolerance.
int check_nodes(const Graph& g, const ios::ir::Weights& weights, const std::vector<float>& input,
                const ios::rt::Executor& exec, const ios::ExecConfig& config, Report& report) {
  ios::reference::Tensor in(config.batch, g.input_shape());
  in.data = input;
  auto ref = ios::reference::run_all(g, weights, in, {true});
  if (!ref) return fail(ref.status());
  const double tol = config.tolerance();
  nlohmann::json failing = nlohmann::json::array();
  for (ios::ir::NodeId id = 1; id < static_cast<ios::ir::NodeId>(g.nodes.size()); ++id) {
    auto got = exec.read(id);
    if (!got) return fail(got.status());
    const double err = ios::reference::relative_l2_error(*got, (*ref)[size_t(id)].data);
    if (err < tol) continue;
    const ios::ir::Node& n = g.node(id);
    if (failing.size() < 10)
      std::fprintf(report.text(), "Node '%s' (%s %s): relative L2 error vs CPU reference %.3e\n", n.name.c_str(),
                   ios::ir::op_kind_name(n.kind()), ios::ir::attrs_key(n.op).c_str(), err);
    failing.push_back({{"node", n.name}, {"relative_l2_error", err}});
  }
  report.json["check_nodes"] = {{"tolerance", tol}, {"failing", failing}};
  std::fprintf(report.text(), "Check nodes: %zu of %d nodes past the tolerance %.0e: %s\n", failing.size(),
               g.op_count(), tol, failing.empty() ? "PASS" : "FAIL");
  return failing.empty() ? 0 : 2;
}

// Chaos mode: the unperturbed output, then `replays` runs with random delays before every plan step, each
// output compared bit for bit (activations poisoned before every run, so a stale read cannot pass).
int run_chaos(ios::rt::Executor& exec, const std::vector<float>& input, int replays, std::vector<float>& baseline,
              Report& report) {
  auto run_with = [&](uint64_t seed) -> Expected<std::vector<float>> {
    if (Status s = exec.perturb(seed); !s) return s;
    if (Status s = exec.poison_activations(); !s) return s;
    if (Status s = exec.set_input(input); !s) return s;
    if (Status s = exec.run(); !s) return s;
    return exec.output();
  };
  auto first = run_with(0);
  if (!first) return fail(first.status());
  baseline = *first;
  int differing = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= replays; ++i) {
    auto out = run_with(uint64_t(i));
    if (!out) return fail(out.status());
    differing += std::memcmp(out->data(), baseline.data(), baseline.size() * sizeof(float)) != 0;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t > 2.0 && (i % 10 == 0 || i == replays))
      std::fprintf(stderr, "\r[chaos %d/%d] %d differ (ETA %.0f s)%s", i, replays, differing, t / i * (replays - i),
                   i == replays ? "\n" : "");
  }
  std::fprintf(report.text(),
               "Chaos: %d perturbed replays (random delays before every plan step), %d differ bit-for-bit from the "
               "unperturbed output: %s\n",
               replays, differing, differing == 0 ? "PASS" : "FAIL");
  report.json["chaos"] = {{"replays", replays}, {"differing", differing}, {"pass", differing == 0}};
  return differing == 0 ? 0 : 3;
}

// The schedule `ios run` executes: a file (checked against the network), or a search now.
Expected<ios::sched::Schedule> run_schedule(RunArgs& a, const Graph& g, Session& session, std::string& label) {
  if (!a.schedule_file.empty()) {
    auto s = ios::sched::load_schedule_for(g, a.schedule_file);
    if (!s) return s.status();
    label = s->meta.policy + " (from " + a.schedule_file + ")";
    if (!s->meta.device.empty() && s->meta.device != ios::rt::device_description())
      std::fprintf(a.opt.report.text(), "Note: schedule was optimised on another device: %s\n", s->meta.device.c_str());
    return s;
  }
  auto policy = ios::sched::parse_policy(a.opt.policy);
  if (!policy) return policy.status().with_context("--opt");
  a.opt.options.policy = *policy;
  auto model =
      make_cost_model(g, a.opt.cost_model, session.config, a.opt.timing_rule(), [&] { return session.context(); });
  if (!model) return model.status();
  if (Status s = attach_opara_profile(g, a.opt, session); !s) return s;
  a.opt.options.dataflow_segment = dataflow_segment(a.opt, **model);
  auto r = ios::sched::optimize(g, a.opt.options, **model);
  if (!r) return r.status();
  label = display_name(a.opt, *policy);
  return r->schedule;
}

// The timing line, plan and memory figures, kernels and device; the same figures into the JSON report.
Status report_timing(const RunArgs& a, const ios::rt::Executor& exec, const ios::rt::Context& ctx,
                     const ios::sched::ExecutionPlan& plan, const ios::rt::Timing& t, Report& report) {
  FILE* out = report.text();
  std::fprintf(out, "Latency: %.3f ms (median of %d after %d warm-up runs; min %.3f, mean %.3f, p90 %.3f)\n",
               t.median_ms, t.iterations, t.warmup_runs, t.min_ms, t.mean_ms, t.p90_ms);
  std::fprintf(out,
               "Streams: %d | Launches: %d | Events: %d | Activations: %.1f MiB peak (%.1f MiB without reuse, "
               "%d concats in place) | Workspace: %.1f MiB | Weights: %.1f MiB\n",
               plan.streams, plan.launches(), plan.events, exec.activation_bytes() / 1048576.0,
               exec.activation_bytes_no_reuse() / 1048576.0, exec.memory_plan().elided_concats,
               exec.workspace_bytes() / 1048576.0, exec.weight_bytes() / 1048576.0);
  print_kernels(exec, ctx, report);
  std::fprintf(out, "Device: %s | %s\n", ios::rt::device_description().c_str(), ios::rt::library_versions().c_str());
  const ios::rt::KernelReport k = exec.kernel_report();
  nlohmann::json& j = report.json;
  j["latency_ms"] = {{"median", t.median_ms},      {"min", t.min_ms},
                     {"mean", t.mean_ms},          {"p90", t.p90_ms},
                     {"iterations", t.iterations}, {"warmup_runs", t.warmup_runs}};
  j["plan"] = {{"streams", plan.streams}, {"launches", plan.launches()}, {"events", plan.events}};
  if (exec.graph_edges() >= 0) j["plan"]["graph_edges"] = exec.graph_edges();
  j["memory"] = {{"peak_activation_bytes", exec.activation_bytes()},
                 {"no_reuse_bytes", exec.activation_bytes_no_reuse()},
                 {"workspace_bytes", exec.workspace_bytes()},
                 {"weight_bytes", exec.weight_bytes()}};
  j["kernels"] = {{"convolutions", k.convs},
                  {"fused_bias_activation", k.fused},
                  {"legacy", k.legacy},
                  {"output_copied", k.output_copied},
                  {"engines_tuned", ctx.kernel_stats().tuned},
                  {"engines_from_cache_file", ctx.kernel_stats().from_file},
                  {"engines_from_cache_file_tuned_again", ctx.kernel_stats().retuned},
                  {"engines_loaded_compiled", ctx.kernel_stats().plans_loaded},
                  {"tuning", tuning_json(ctx.kernel_stats())},
                  {"concat_inputs_in_place", k.concat_inputs_in_place},
                  {"concat_inputs_copied", k.concat_inputs_copied},
                  {"fused_sums", k.sums_in_conv + k.sums_in_epilogue},
                  {"engines", k.engines}};
  j["device"] = ios::rt::device_description();
  j["libraries"] = ios::rt::library_versions();
  if (a.export_times.empty()) return Status::ok();
  // trtexec's --exportTimes: one record per timed inference.
  nlohmann::json times = nlohmann::json::array();
  for (size_t i = 0; i < t.samples_ms.size(); ++i) times.push_back({{"iteration", i}, {"latencyMs", t.samples_ms[i]}});
  std::fprintf(out, "wrote %s (%zu inference times)\n", a.export_times.c_str(), t.samples_ms.size());
  return ios::write_text_file(a.export_times, times.dump(1) + "\n");
}

// CUPTI: one inference's kernels as a Chrome trace, and the utilization of five.
Status report_trace(const RunArgs& a, const Graph& g, ios::rt::Executor& exec, ios::rt::KernelProfiler& profiler,
                    const ios::sched::ExecutionPlan& plan, Report& report) {
  auto records = ios::rt::profile_runs(exec, profiler, 5);
  if (!records) return records.status();
  const ios::rt::Utilization u = ios::rt::summarize_utilization(*records);
  std::vector<ios::rt::KernelRecord> last;
  int attributed = 0;
  for (const auto& k : *records)
    if (k.replay == 4) {
      last.push_back(k);
      attributed += k.plan_step >= 0;
    }
  if (Status s = ios::write_text_file(a.trace_file, ios::rt::chrome_trace_json(g, plan, last)); !s) return s;
  std::fprintf(report.text(),
               "Utilization (CUPTI, mean of 5 inferences): span %.1f us | GPU busy %.1f%% | kernels %d, %.1f us "
               "summed | mean concurrency %.2f, max %d | %d/%zu kernels attributed to ops | wrote %s\n",
               u.span_us, 100 * u.busy_fraction, u.kernels, u.kernel_us, u.mean_concurrency, u.max_concurrency,
               attributed, last.size(), a.trace_file.c_str());
  report.json["utilization"] = {
      {"span_us", u.span_us},      {"busy_fraction", u.busy_fraction},       {"kernels", u.kernels},
      {"kernel_us", u.kernel_us},  {"mean_concurrency", u.mean_concurrency}, {"max_concurrency", u.max_concurrency},
      {"trace_file", a.trace_file}};
  return Status::ok();
}

// The batch the run feeds: --input's file, else the seeded input of ir/weights.h.
Expected<std::vector<float>> run_input(const RunArgs& a, const Graph& g, int batch) {
  return ios::cli::read_run_input(a.input_file, g, batch);
}

// One --compile-ahead process: its shard of the network's runtime-compiled engines built, nothing run.
int cmd_compile_ahead(const OptimizeArgs& a, const std::string& shard, const std::string& plans_dir) {
  int k = -1, n = 0;
  char slash = 0;
  std::istringstream in(shard);
  if (!(in >> k >> slash >> n) || slash != '/' || !in.eof())
    return fail(ios::error(ios::ErrorCode::kInvalidArgument, "--shard must be k/n, got '" + shard + "'"));
  Expected<Graph> g = a.src.load();
  if (!g) return fail(g.status());
  auto session = make_session(a);
  if (!session) return fail(session.status());
  auto engine = ios::rt::parse_conv_engine(a.conv_engine);
  if (!engine) return fail(engine.status());
  ios::rt::ContextOptions co;
  co.conv_engine = *engine;
  co.kernel_cache_path = a.kernel_cache == "none" ? "" : a.kernel_cache;
  auto compiled = ios::rt::compile_shard(*g, session->config, co, k, n, plans_dir);
  if (!compiled) return fail(compiled.status());
  std::printf("compiled %d plans (shard %d/%d)\n", *compiled, k, n);
  return 0;
}

int cmd_run(RunArgs& a) {
  Report& report = a.opt.report;
  if (a.device == "cpu") return cmd_run_reference(a.opt.src, a.opt.options.batch, a.input_file, a.output_file, report);
  auto variants = run_variants(a);  // flags first: a typo is reported on any machine
  if (!variants) return fail(variants.status());
  Expected<LoadedModel> model = a.opt.src.load_model();
  if (!model) return fail(model.status());
  const Graph* g = &model->graph;
  if (Status s = ios::rt::require_gpu(); !s) return fail(s);
  auto session = make_session(a.opt);
  if (!session) return fail(session.status());
  if (Status s = session->compile_ahead_on_tuning(*g); !s) return fail(s);
  auto context = session->context();
  if (!context) return fail(context.status());
  std::string label;
  auto schedule = run_schedule(a, *g, *session, label);
  if (!schedule) return fail(schedule.status());
  const ios::ir::Weights weights = model->take_weights();
  ios::rt::ExecutorOptions options;
  options.config = session->config;
  options.context = *context;
  options.use_graph = !a.no_graph;
  options.fuse_sums = !a.no_fused_sums;
  options.share_concats = !a.no_shared_concats;
  options.chaos = a.chaos > 0;
  options.keep_all = a.check_nodes;
  std::unique_ptr<ios::rt::KernelProfiler> profiler;
  if (!a.trace_file.empty()) {
    auto p = ios::rt::KernelProfiler::create();
    if (!p) return fail(p.status().with_context("--trace"));
    profiler = std::move(*p);
    options.observer = profiler.get();
  }
  auto built = build_run(*variants, *g, *schedule, weights, options, report);
  (*context)->stop_tuning_companions();  // the network has its kernels: nothing left for them to compile
  if (!built) return fail(built.status());
  ios::rt::Executor& exec = *built->exec;
  const ios::sched::ExecutionPlan& plan = built->plan;
  const ios::ExecConfig& config = exec.config();  // the variant's: how it writes concatenations
  auto input = run_input(a, *g, config.batch);
  if (!input) return fail(input.status());
  if (Status s = exec.set_input(*input); !s) return fail(s);
  if (!a.graph_dot_file.empty())
    if (Status s = exec.write_graph_dot(a.graph_dot_file); !s) return fail(s);
  std::fprintf(report.text(), "Model: %s | Optimization: %s | Batchsize: %d | Precision: %s | Layout: %s | Mode: %s\n",
               g->name.c_str(), label.c_str(), config.batch, config.precision().c_str(),
               ios::layout_name(config.layout), mode_text(exec, a, built->variant).c_str());
  report.json.update({{"model", g->name},
                      {"optimization", label},
                      {"batch", config.batch},
                      {"precision", config.precision()},
                      {"layout", ios::layout_name(config.layout)},
                      {"concat_writes", ios::concat_writes_name(config.concat_writes)},
                      {"graph", !a.no_graph},
                      {"exec", a.exec},
                      {"exec_mode", ios::sched::exec_mode_name(built->variant.mode)},
                      {"prefetch_ahead", built->variant.prefetch_ahead}});
  std::vector<float> output;
  if (a.chaos > 0) {
    if (int rc = run_chaos(exec, *input, a.chaos, output, report); rc != 0) return report.finish(rc);
  } else {
    const ios::rt::TimingOptions timing{a.warmup, a.warmup_ms, a.iters, a.duration_s};
    auto t = exec.time(timing);
    if (!t) return fail(t.status());
    if (Status s = report_timing(a, exec, **context, plan, *t, report); !s) return fail(s);
    if (profiler)
      if (Status s = report_trace(a, *g, exec, *profiler, plan, report); !s) return fail(s);
    if (a.check || a.check_nodes || !a.output_file.empty()) {
      if (Status s = exec.poison_activations(); !s) return fail(s);
      if (Status s = exec.set_input(*input); !s) return fail(s);
      if (Status s = exec.run(); !s) return fail(s);
      auto gpu = exec.output();
      if (!gpu) return fail(gpu.status());
      output = std::move(*gpu);
    }
  }
  if (!a.output_file.empty()) {
    const ios::ir::Shape out = g->output_shape();
    if (Status s = ios::write_tensor_file(a.output_file, output, {config.batch, out.c, out.h, out.w}); !s)
      return fail(s);
    std::fprintf(report.text(), "wrote %s (%d x %s float32)\n", a.output_file.c_str(), config.batch,
                 out.to_string().c_str());
    report.json["output_file"] = a.output_file;
  }
  int rc = a.check ? check_output(*g, weights, *input, output, config, report) : 0;
  if (a.check_nodes) rc = std::max(rc, check_nodes(*g, weights, *input, exec, config, report));
  return report.finish(rc);
}
#endif

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
  if (app.got_subcommand("export")) {
    Expected<Graph> g = export_src.load();
    if (!g) return fail(g.status());
    auto j = ios::ir::graph_to_json(*g);
    j["batch"] = export_batch;
    Status s = ios::write_text_file(export_out, j.dump(1) + "\n");
    if (!s) return fail(s);
    std::printf("wrote %s (%d ops)\n", export_out.c_str(), g->op_count());
    return 0;
  }
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
