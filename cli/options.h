// The `ios` command's shared option groups: where a network comes from (GraphSource), how a search and a run
// are configured (OptimizeArgs), and where a command's report goes (Report). Internal to cli/.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "engine/engine.h"
#include "engine/network.h"
#include "engine/search.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/json_io.h"
#include "ir/weights.h"
#include "models/models.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/compile_ahead.h"
#include "runtime/device.h"
#endif

namespace ios::cli {

using ir::Graph;

// Prints the error and returns the exit code 1.
int fail(const Status& s);

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

using ios::sched::is_dp;

// A network and, where the source has them, its own weights (ONNX initializers, --weights); other
// networks run with the seeded weights of ir/weights.h.
using LoadedModel = ios::engine::Network;

struct GraphSource {
  std::string model;
  std::string graph_file;
  std::string onnx_file;
  std::string weights_file;
  ios::models::ModelOptions options;

  // Its options are listed under this heading in --help; `ios run --device cpu` takes all of them.
  static constexpr const char* kGroup = "Network";

  void add_to(CLI::App* cmd) {
    auto* m = cmd->add_option("--model", model, "network name (see `ios models`)")->group(kGroup);
    auto* f = cmd->add_option("--graph", graph_file, "graph file in IOS's JSON format")->group(kGroup);
    auto* o =
        cmd->add_option("--onnx", onnx_file, "ONNX model (opsets 11-21), run with its own weights")->group(kGroup);
    m->excludes(f)->excludes(o);
    f->excludes(o);
    cmd->add_option("--weights", weights_file, "weights file for --model/--graph (from `ios import --weights-out`)")
        ->excludes(o)
        ->group(kGroup);
    cmd->add_option("--randwire-graphs", options.randwire_graphs_dir,
                    "folder holding IOS's four RandWire graph files (ws-*.txt)")
        ->group(kGroup);
    cmd->add_option("--nasnet-filters", options.nasnet_filters, "NasNet filters (IOS: 168)")->group(kGroup);
    cmd->add_option("--nasnet-stem-filters", options.nasnet_stem_filters, "NasNet stem filters (IOS: 96)")
        ->group(kGroup);
  }

  // The graph, and the weights the source brings (--onnx, --weights: read and checked here).
  Expected<LoadedModel> load_model() const {
    RETURN_ERROR_IF(model.empty() && graph_file.empty() && onnx_file.empty(), ios::ErrorCode::kInvalidArgument,
                    "give --model NAME, --graph FILE or --onnx FILE");
    return ios::engine::open_network({model, graph_file, onnx_file, weights_file, options});
  }

  Expected<Graph> load() const {
    auto m = load_model();
    if (!m) return m.status();
    return std::move(m->graph);
  }
};

// The kernel cache file `--kernel-cache` defaults to (none without the GPU runtime).
std::string default_kernel_cache();

constexpr const char* kDeviceHelp =
    "gpu | cpu: the CPU reference executor (fp32, direct loops, slow; for checking an import or producing "
    "expected outputs, not a CPU backend; only the network's flags, --plan, --batch, --input, --output and --json "
    "apply, any other is an error)";

struct OptimizeArgs {
  GraphSource src;
  std::string policy = "dp_parallel_merge";
  std::string cost_model = "auto";
  std::string precision = "fp32";
  std::string layout = "auto";
  std::string concat_writes = "in-place";
  std::string conv_engine = "auto";
  std::string own_kernels = "on";  // on | off
  bool own_kernels_on() const { return own_kernels == "on"; }
  std::string kernel_cache;
  // auto | N: rt::CompileAheadProcesses. A machine's first tf32 search of Inception V3 took 8.7-9.3 s with 8
  // against 9.6-10.5 s without, NasNet 34-37 s against 50-54 s (H100), and searches with and without them,
  // alternated, predict with the same spread (1.100-1.131 against 1.092-1.122), so they are on where they
  // can pay.
  std::string compile_ahead = "auto";
  bool verbose = false;
  std::string out;
  ios::sched::StageTimingRule stage_timing;
  std::optional<double> one_round_margin;  // --one-round-margin; unset: the rule's
  std::string prefetch_weights = "off";    // off | on | auto
  int prefetch_ahead = 1;
  bool measure_schedule = true;
  bool stage_marginals = false;            // ios optimize --stage-marginals
  int dataflow_segment = -1;               // -1: by cost model (see --dataflow-segment)
  ios::engine::SearchResources resources;  // --devices, --workers-per-gpu, --stage-cache
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
    cmd->add_option("--own-kernels", own_kernels,
                    "on (our depthwise and pointwise convolution kernels are timed against cuDNN's engines and kept "
                    "where faster) | off (cuDNN only)")
        ->capture_default_str()
        ->check(CLI::IsMember({"on", "off"}));
    kernel_cache = default_kernel_cache();
    cmd->add_option("--kernel-cache", kernel_cache, "file of tuned convolution engines (none: do not persist)")
        ->capture_default_str();
    cmd->add_flag("--verbose", verbose, "report each convolution's engine and every fallback");
    cmd->add_option("--compile-ahead", compile_ahead,
                    "processes compiling the network's runtime-compiled cuDNN engines while its kernels are first "
                    "tuned, where the engine setting compiles at run time (tf32, fp16, bf16): 0 (none) | N | auto "
                    "(half the cores, at most 8; none where every kernel is in the cache file)")
        ->capture_default_str();
    cmd->add_option("--stage-cache", resources.stage_cache, "JSON file persisting stage latencies between runs");
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
           "--devices", resources.devices,
           "measured cost model: GPUs that time stages, all or a list (0,1,...); --workers-per-gpu DP workers each")
        ->capture_default_str();
    cmd->add_option("--workers-per-gpu", resources.workers_per_gpu,
                    "measured cost model: DP workers per GPU; they build stages side by side and take turns "
                    "timing them")
        ->default_str(std::to_string(ios::engine::SearchResources::kDefaultWorkersPerGpu) +
                      " for a measured DP search, else 1")
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
  // both that ios run times (engine::parse_prefetch_aheads). Call check_prefetch_weights first.
  std::vector<int> prefetch_aheads() const {
    Expected<std::vector<int>> aheads = ios::engine::parse_prefetch_aheads(prefetch_weights, prefetch_ahead);
    return aheads ? *aheads : std::vector<int>{0};
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
    return ios::engine::parse_prefetch_aheads(prefetch_weights, prefetch_ahead)
        .status()
        .with_context("--prefetch-weights");
  }
};

}  // namespace ios::cli
