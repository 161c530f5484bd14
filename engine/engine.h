// The engine API, after TensorRT's builder -> engine -> execution context:
//
//   auto builder = engine::Builder::create(options);            // precision, layout, policy, cost model, ...
//   auto built = (*builder)->build(graph, weights);             // searches a schedule, tunes its kernels
//   (*built)->save("m.plan");                                   // one file: graph, weights, schedule, kernels
//   auto loaded = engine::Engine::load("m.plan");               // another process, no search, no tuning
//   auto ctx = (*loaded)->create_context();                     // buffers and a CUDA graph of its own
//   ctx->enqueue(d_input, d_output, stream);                    // device float32 NCHW in and out
//
// The CLI (`ios build`, `ios run`), the experiment harness and examples/ drive the engine through this.
// Without a GPU an engine is built with the analytic cost model and runs on the CPU reference executor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan_file.h"
#include "engine/search.h"
#include "scheduler/cost_model.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;  // as cuda_runtime.h declares it

namespace ios::rt {
class Context;
class Executor;
class LaunchObserver;
}  // namespace ios::rt

namespace ios::engine {

// Where an engine is built and an execution context runs: the GPU (cuDNN, CUDA graphs), or the CPU
// reference executor (fp32 loops: for checking and for machines without a GPU, not for speed).
enum class Device : uint8_t { kGpu, kCpu };
Expected<Device> parse_device(const std::string& name);  // "gpu" | "cpu"

// How an engine is built (trtexec's build and system options). Strings take the CLI's spellings.
struct BuildOptions {
  Device device = Device::kGpu;
  std::string precision = "fp32";   // fp32 (strict) | tf32 | fp16 | bf16
  std::string layout = "auto";      // nchw | nhwc | auto
  sched::OptimizeOptions search;    // policy, r, s, batch and the DP's limits
  std::string cost_model = "auto";  // analytic | measured | auto (measured on a GPU)
  sched::StageTimingRule timing_rule;
  int dataflow_segment = -1;  // -1: the cost model's default (sched::default_dataflow_segment)
  SearchResources resources;  // the GPUs and workers a measured DP search times on, its stage cache file
  // Ways to execute the schedule: with more than one of any, every combination is built and timed on the
  // GPU (3 interleaved rounds of 100 replays) and the fastest is kept.
  std::vector<sched::ExecMode> exec_modes{sched::ExecMode::kStaged};
  std::vector<int> prefetch_aheads{0};  // stages ahead a CUDA graph prefetches weights (0: none)
  std::vector<ConcatWrites> concat_writes{ConcatWrites::kInPlace};
  bool cuda_graph = true, fused_sums = true, shared_concats = true;
  std::string conv_engine = "auto";  // rt::parse_conv_engine
  bool own_kernels = true;           // our kernels compete with cuDNN's in tuning (rt::ConvBuildOptions)
  std::string kernel_cache;          // file of tuned engines shared between builds; empty: not persisted
  bool verbose = false;              // each convolution's engine and every fallback on stderr
};

// Diagnostics an execution context's executor is built with; never saved in a plan.
struct DebugOptions {
  bool chaos = false;     // rt::ExecutorOptions::chaos
  bool keep_all = false;  // every node readable after a run
  rt::LaunchObserver* observer = nullptr;
  bool operator==(const DebugOptions&) const = default;
};

// What a build decided, for reports.
struct BuildReport {
  std::vector<std::pair<std::string, double>> variants_ms;  // each execution variant timed (several only)
  std::string variant;                                      // the one kept: "dataflow+prefetch/conv-copy"
};

// The execution variants a name asks for: "staged" | "dataflow" | "dataflow-ordered", or "auto" (staged and
// dataflow, both built and timed).
Expected<std::vector<sched::ExecMode>> parse_exec_modes(const std::string& name);
// "in-place" | "conv-copy", or "auto" (both built and timed).
Expected<std::vector<ConcatWrites>> parse_concat_writes_variants(const std::string& name);
// BuildOptions::prefetch_aheads for a prefetch mode: "off" {0}, "on" {ahead}, "auto" {0, ahead} (both built
// and timed). `ahead` (stages ahead, 1-99) is checked where the mode uses it.
Expected<std::vector<int>> parse_prefetch_aheads(const std::string& mode, int ahead);
// The kernel cache file GPU builds share unless told otherwise ($IOS_KERNEL_CACHE, else under the user's
// cache folder); empty without the GPU runtime.
std::string default_kernel_cache();

// "staged", "dataflow+prefetch", "staged/conv-copy": how `ios run` names an execution variant.
std::string variant_name(const Execution& e, ConcatWrites writes);

class ExecutionContext;

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  struct LoadOptions {
    Device device = Device::kGpu;  // kGpu: refuses a plan whose kernels were tuned on another GPU or library
    std::string kernel_cache;      // where compiled cuDNN plans may be found (the choices are the plan's)
    bool verbose = false;
  };
  static Expected<std::shared_ptr<Engine>> load(const std::string& path, const LoadOptions& options);
  static Expected<std::shared_ptr<Engine>> load(const std::string& path) { return load(path, LoadOptions{}); }
  // What load does once the plan is read; `source` names it in errors.
  static Expected<std::shared_ptr<Engine>> from_plan(EnginePlan plan, const LoadOptions& options,
                                                     const std::string& source);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status save(const std::string& path) const;
  // A context with buffers (and on the GPU streams, workspaces and a CUDA graph) of its own: contexts of one
  // engine run side by side. The engine's device unless `device` says otherwise.
  Expected<std::unique_ptr<ExecutionContext>> create_context(const DebugOptions& debug = {});
  Expected<std::unique_ptr<ExecutionContext>> create_context(Device device, const DebugOptions& debug = {});

  const EnginePlan& plan() const { return plan_; }
  const ir::Graph& graph() const { return plan_.graph; }
  const ExecConfig& config() const { return plan_.config; }
  Device device() const { return device_; }
  size_t input_size() const;   // floats of one batch of input
  size_t output_size() const;  // floats of one batch of output

  struct GpuState;  // the runtime's objects (engine.cc)

 private:
  friend class Builder;
  friend class BatchBuckets;
  // Reads its weights on the device from `first`'s copy: a later batch bucket of one file, whose plan
  // holds `first`'s weights (GPU engines only; otherwise nothing changes).
  void share_device_weights(const Engine& first);
  Engine(EnginePlan plan, Device device);
  EnginePlan plan_;
  Device device_;
  std::unique_ptr<GpuState> gpu_;
};

// Runs an engine. Inferences of one context share its buffers: queue them on one stream (or wait).
class ExecutionContext {
 public:
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // GPU: one inference queued on `stream`, not waited for. `input` and `output` are device pointers to
  // float32 NCHW tensors of the engine's batch (Engine::input_size / output_size floats).
  Status enqueue(const float* input, float* output, cudaStream_t stream);
  // One inference from and to host memory, waited for; on either device.
  Expected<std::vector<float>> run(const std::vector<float>& input);
  Device device() const { return device_; }
  int gpu_index() const;  // the CUDA device the context runs on; -1 on the CPU
  const Engine& engine() const { return *engine_; }
  // GPU: the executor, for diagnostics (timing, traces, reading every node); null on the CPU.
  rt::Executor* executor();

  struct GpuState;

 private:
  friend class Engine;
  ExecutionContext(std::shared_ptr<const Engine> engine, Device device);
  std::shared_ptr<const Engine> engine_;
  Device device_;
  std::unique_ptr<GpuState> gpu_;
};

// Searches a schedule for a network, tunes its kernels and picks how it executes (TensorRT's builder).
class Builder {
 public:
  static Expected<std::unique_ptr<Builder>> create(const BuildOptions& options);
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // The schedule the options ask for; `label` gets its name ("IOS-Both", "Sequential").
  Expected<sched::Schedule> search(const ir::Graph& g, const ir::Weights& w, std::string* label = nullptr);
  // An engine of `g`, scheduled by `schedule` where given (checked against the graph) or searched. On the
  // GPU its kernels are tuned (from the kernel cache where it has them), every execution variant is built
  // and the fastest kept; its first GPU context reuses that executor when `debug` matches.
  Expected<std::shared_ptr<Engine>> build(ir::Graph g, ir::Weights w,
                                          std::optional<sched::Schedule> schedule = std::nullopt,
                                          const DebugOptions& debug = {}, BuildReport* report = nullptr);
  // The same with weights other engines hold too (batch buckets of one network).
  Expected<std::shared_ptr<Engine>> build(ir::Graph g, std::shared_ptr<const ir::Weights> w,
                                          std::optional<sched::Schedule> schedule = std::nullopt,
                                          const DebugOptions& debug = {}, BuildReport* report = nullptr);

  const BuildOptions& options() const { return options_; }
  const ExecConfig& config() const { return config_; }  // concatenations written as the first variant asks
  // Called with the GPU context when it is made (before anything is tuned): `ios` starts its compile-ahead
  // processes from here.
  void on_gpu_context(std::function<Status(rt::Context&)> hook) { on_gpu_context_ = std::move(hook); }
  // GPU builds: the context (streams, handles, kernels) shared by the measured search, Opara's profile and
  // the engine; made on first use.
  Expected<std::shared_ptr<rt::Context>> gpu_context();

  struct GpuState;

 private:
  friend class BatchBuckets;
  Builder(BuildOptions options, ExecConfig config);
  // Its engine's device weights go where `first`'s are (a later batch bucket of `first`'s network).
  void share_device_weights(const Engine& first);
  Expected<std::unique_ptr<sched::CostModel>> cost_model(const ir::Graph& g);
  Status attach_opara_profile(const ir::Graph& g, const ir::Weights& w, sched::OptimizeOptions& search);
  BuildOptions options_;
  ExecConfig config_;
  std::function<Status(rt::Context&)> on_gpu_context_;
  std::unique_ptr<GpuState> gpu_;
};

// The policy's name as IOS prints it, with r and s where they are not IOS's.
std::string schedule_label(const sched::OptimizeOptions& search);

}  // namespace ios::engine
