// Executes an ExecutionPlan with cuDNN / cuBLAS on CUDA streams, eagerly or as one captured CUDA
// graph. Weights come from ir::Weights (the CPU reference's), so outputs compare directly.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"
#include "runtime/context.h"
#include "runtime/device_store.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

class LaunchObserver;

struct ExecutorOptions {
  ExecConfig config;                 // data type, math, layout, batch
  bool use_graph = true;             // capture the plan into a CUDA graph
  bool reuse_memory = true;          // stream-aware buffer reuse (off: one buffer per tensor)
  bool keep_all = false;             // every node stays readable after a run
  bool fuse_sums = true;             // convolutions add a sum's other value in their epilogue (memory plan)
  bool share_concats = true;         // concatenations read as prefixes of one shared buffer (memory plan)
  std::shared_ptr<Context> context;  // shared streams/handles/kernels; null: made from context_options
  // Weights and the activation arena from a store that outlives this executor (the measured cost
  // model's stage executors); null: a store of the executor's own.
  std::shared_ptr<DeviceStore> store;
  // Weights from this store instead, where given: executors of one engine (its execution contexts) upload
  // them once and read them side by side; each keeps its activation arena in `store`.
  std::shared_ptr<DeviceStore> weight_store;
  // Zero the activation arena when built. The measured cost model does not: a stage's latency does not
  // depend on the values it reads, and the memset would run beside sibling workers' timed replays.
  bool zero_arena = true;
  ContextOptions context_options;      // dtype and math are taken from `config`
  LaunchObserver* observer = nullptr;  // told which plan step issues each kernel (CUPTI)
  // Chaos mode: a delay kernel on the step's stream before every plan step (launches, and the event
  // records that join streams), its length drawn anew by Executor::perturb. A missing dependency or an
  // unsafe buffer reuse then changes the output; a correct plan gives the same bits whatever the delays.
  bool chaos = false;
  // CUDA graphs of staged schedules, when above 0: one more kernel node per stage asks the L2 for the
  // weights of the stage's launches, starting with the stage `prefetch_ahead` stages before it and
  // running beside it (sm_90: bulk prefetches from 8 blocks), so that a network whose weights exceed
  // the L2 does not fetch them from memory on its critical path. Plans without stages (Opara's) get none.
  // Whether it pays depends on the network and precision: time it (`ios run --prefetch-weights auto`;
  // experiments/RESULTS.md, "Weights prefetched into the L2").
  int prefetch_ahead = 0;
  // CUDA graphs only: the graph starts with one empty kernel that every launch of the plan follows. A
  // stage inside a network follows the stage before it, and the GPU takes in its launches while that
  // one runs; replayed as a graph of its own, a stage of w branches waits for its w first launches to be
  // taken in one after another, and a graph's first launch costs a graph launch. The measured cost model
  // times stages behind this kernel and takes off a graph of it alone (TimingStream::stage_boundary).
  bool lead_kernel = false;
};

// What the executor's convolutions run on: engine name -> convolutions using it, how many outputs
// were written straight into a concatenation's slice rather than copied, and where fused sums ran.
struct KernelReport {
  std::map<std::string, int> engines;
  int convs = 0, fused = 0, legacy = 0;
  int own = 0;            // on our kernels (ConvBuildOptions::own_kernels)
  int output_copied = 0;  // engines writing a packed tensor that our kernel copies into a strided slice
  int concat_inputs_in_place = 0, concat_inputs_copied = 0;
  int sums_in_conv = 0, sums_in_epilogue = 0;  // fused sums (memory plan): in the cuDNN graph, or our kernel
};

// Hears, while a plan is issued or captured, which plan step the following work belongs to.
class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  virtual void begin_step(int plan_step) = 0;
  virtual void end_step() = 0;
};

struct Timing {
  double median_ms = 0, min_ms = 0, p90_ms = 0, mean_ms = 0;
  int iterations = 0;
  int warmup_runs = 0;
  std::vector<double> samples_ms;  // every timed inference, in order
};

// trtexec's rules: warm up for at least `warmup_runs` runs and `warmup_ms`; then time at least
// `iterations` inferences and keep going until `min_seconds` of timed work have passed.
struct TimingOptions {
  int warmup_runs = 20;
  double warmup_ms = 0;
  int iterations = 200;
  double min_seconds = 0;
  // Replays back to back between one pair of events, the sample their mean: the host's launch of each is
  // then hidden behind the replay before it (rt::time_stage_marginals).
  int replays_per_sample = 1;
};

class Executor {
 public:
  // Ops the plan launches get real buffers and weights; values the plan reads but does not produce
  // (the graph input, or a stage's outside inputs when timing one stage) get zeroed input buffers.
  static Expected<std::unique_ptr<Executor>> create(const ir::Graph& g, const ir::Weights& w,
                                                    const sched::ExecutionPlan& plan, const ExecutorOptions& options);
  // The convolutions such an executor asks its context for, in order, without building their kernels
  // (weights uploaded, activations placed): what rt::compile_shard's processes compile.
  static Expected<std::vector<ConvSpec>> conv_specs(const ir::Graph& g, const ir::Weights& w,
                                                    const sched::ExecutionPlan& plan, const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  Status set_input(const std::vector<float>& batch_nchw);  // float NCHW, converted to the config's storage
  Status poison_activations();  // fills every activation with NaN so stale data cannot pass a check
  Status run();                 // one inference, synchronised
  // Chaos mode only: draws every delay for the next runs from `seed` (0: no delay), half of them zero and
  // the rest uniform up to `max_us` microseconds.
  Status perturb(uint64_t seed, double max_us = 20.0);
  Expected<std::vector<float>> read(ir::NodeId node) const;  // float NCHW, whatever the storage
  Expected<std::vector<float>> output() const;
  // One inference queued on `stream` and not waited for: `input` (device, float32 NCHW, batch x the graph's
  // input shape) converted into the plan's input buffer, the plan run, its output converted into `output`
  // (device, float32 NCHW). Inferences of one executor share its buffers: queue them on one stream.
  Status enqueue(const float* input, float* output, cudaStream_t stream);

  // Each iteration timed alone with events on the main stream, after the warm-up.
  Expected<Timing> time(const TimingOptions& options);
  Expected<Timing> time(int warmup, int iterations) { return time(TimingOptions{warmup, 0, iterations, 0}); }
  // One replay of the CUDA graph queued on `stream` and not waited for (StageTimer's replays, which go
  // to a stream shared by the search's workers). Needs ExecutorOptions::use_graph.
  Status replay_on(cudaStream_t stream);
  // The CUDA graph's work uploaded to the device on `stream` without running it, so that its first
  // replay there costs what the others do (cudaGraphUpload).
  Status upload_on(cudaStream_t stream);
  // Reads the activation arena on `stream` (after an L2 flush: the activations warm, the weights cold,
  // as a stage finds them inside a network whose weights exceed the L2).
  Status warm_activations_on(cudaStream_t stream);
  cudaStream_t main_stream() const;
  // The CUDA graph as Graphviz (cudaGraphDebugDotPrint, verbose: kernels, launch parameters, edges).
  Status write_graph_dot(const std::string& path) const;

  size_t activation_bytes() const;           // peak: the arena of the memory plan
  size_t activation_bytes_no_reuse() const;  // the same tensors, each in its own buffer
  size_t workspace_bytes() const;            // workspaces (convolutions, reductions), summed over streams or lanes
  int graph_edges() const;                   // dataflow CUDA graphs: dependency edges kept; else -1
  int graph_nodes() const;                   // CUDA graph nodes; -1 without a graph
  int prefetch_nodes() const;                // nodes added by ExecutorOptions::prefetch_ahead
  int programmatic_edges() const;            // edges cuDNN's launches captured as PDL, made full ones
  size_t weight_bytes() const;
  const sched::MemoryPlan& memory_plan() const;
  const ExecConfig& config() const;
  const Context& context() const;  // whose kernels it runs (their tuning figures: Context::kernel_stats)
  KernelReport kernel_report() const;
  // The tuned engine of each convolution, by kernel-cache key (ContextOptions::preset_kernels).
  std::map<std::string, KernelChoice> kernel_choices() const;
  const sched::BuildTimes& build_times() const;  // host seconds create() spent, by part

  struct Impl;

 private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

std::string device_description();  // "NVIDIA H100 80GB HBM3, SM clock 1980 MHz, ..."
std::string library_versions();    // "CUDA runtime 13.0, cuDNN 9.19.0, driver ..."

}  // namespace ios::rt
