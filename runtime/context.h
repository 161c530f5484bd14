// Streams, cuDNN/cuBLAS handles, per-stream workspaces and the convolution kernels, shared by every
// executor of a process that runs one data type and math mode: the measured cost model builds
// thousands of stage executors, and creating handles or tuning kernels would dominate its time.
// Workspaces only grow; a replaced one is kept alive, so graphs captured earlier stay valid. The
// context owns the kernel cache: built kernels by spec in memory, engine choices in a file.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/exec_config.h"
#include "runtime/conv_kernel.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

struct ContextOptions {
  DataType dtype = DataType::kF32;
  MathMode math = MathMode::kStrict;
  ConvEngine conv_engine = ConvEngine::kAuto;  // resolved for dtype and math when the context is made
  bool own_kernels = true;                     // ConvBuildOptions::own_kernels
  std::string kernel_cache_path;               // empty: choices are kept for this process only
  // Choices that come with the network (an engine plan's), by kernel-cache key: used before the file's,
  // never written to it.
  std::map<std::string, KernelChoice> preset_kernels;
  bool verbose = false;                        // report engine choices and fallbacks on stderr
  size_t workspace_limit = size_t{256} << 20;  // per convolution engine
};

// The stream every stage timing on one GPU goes to, shared by the search workers on that GPU (sibling
// contexts): their replays run one after another, never beside each other, while their host threads
// build the next stages in parallel (building a stage takes about as long as timing it). Other GPU work
// of a worker (kernel tuning, first runs) takes the timing stream exclusively (Context::conv_kernels).
class TimingStream {
 public:
  static Expected<std::shared_ptr<TimingStream>> create();  // on the current device
  cudaStream_t stream() const { return stream_; }
  // Held while one stage's warm-up and rounds are queued, so that a round spans only its own replays.
  std::mutex& queue_mutex() { return mutex_; }
  // The spin rounds are queued behind on this timing stream, kept from pass to pass; under queue_mutex().
  sched::HeadStart& head_start() { return head_start_; }
  // What a stage's timed spans (StageTimer: replays between two events) hold beyond the stage inside the
  // network's graph, in ms. A stage replays as a CUDA graph of its own behind a lead kernel
  // (ExecutorOptions::lead_kernel) in gap + k + edge + stage, where a graph of the lead alone replays in
  // gap + k; inside the network the stage takes edge + stage after the stage before it ends. A span also
  // holds the event recorded at its end, once however many replays it has.
  struct Boundary {
    double graph_ms = 0;  // gap + k
    double event_ms = 0;
    double span_ms(int replays) const { return replays * graph_ms + event_ms; }
  };
  // Measured once per GPU, with nothing else on the timing stream: spans of 1 and of 16 replays of the lead's graph.
  Expected<Boundary> stage_boundary();

 private:
  explicit TimingStream(Stream s) : stream_(std::move(s)) {}
  Stream stream_;
  std::mutex mutex_;
  sched::HeadStart head_start_;
  std::optional<Boundary> boundary_;  // not measured yet
};

struct KernelStats {
  int tuned = 0;         // convolutions autotuned in this process
  int from_file = 0;     // built from the kernel cache file's choice
  int retuned = 0;       // of from_file: tuned once more, the result discarded (Context::build_kernel says why)
  int plans_loaded = 0;  // of from_file: loaded as compiled plans (KernelCache::plan), nothing compiled
  int reused = 0;        // already built by this context
  int fused = 0;         // of tuned + from_file: bias/activation inside the engine
  int legacy = 0;        // of tuned + from_file: on the legacy API
  TuningStats tuning;    // over tuned and retuned
  double clock_warm_up_seconds = 0;  // bringing the SM clock to its top before the first kernel (bring_up_clocks)
  int compile_ahead_processes = 0;   // started before the first tuning (set_before_tuning)
};

class Context {
 public:
  static Expected<std::shared_ptr<Context>> create(const ContextOptions& options);
  // Another context on this one's device with its options, streams and handles of its own, sharing its
  // kernel choices, built kernels and timing stream: one more search worker on the same GPU.
  Expected<std::shared_ptr<Context>> sibling() const;
  ~Context();  // writes new kernel choices to the cache file (a failure is reported on stderr)

  Status ensure_streams(int count);
  // The workspace of `stream`, at least `bytes` large.
  Expected<void*> workspace(int stream, size_t bytes);
  // Evicts the L2 cache on `stream`: reads a buffer twice its size (allocated on first use). Reading
  // leaves clean lines; a memset left dirty ones, whose write-back then slowed the replay timed next.
  Status flush_l2(cudaStream_t stream);
  Expected<size_t> l2_bytes() const;

  // The convolution kernels for `requests`, in order: each built once per device (siblings share them), tuned
  // on its buffers unless the cache file has a choice for it. Those not built yet are built under one hold
  // of the GPU's timing stream, which first waits for a sibling's queued rounds to finish: an executor asks
  // for all its convolutions at once, not one hold (and one wait) per kernel.
  struct ConvRequest {
    ConvSpec spec;
    ConvBuffers buffers;
  };
  Expected<std::vector<std::shared_ptr<ConvKernel>>> conv_kernels(const std::vector<ConvRequest>& requests);
  Status save_kernel_cache() const;
  // What set_before_tuning's hook starts, kept until stop_tuning_companions (or the last sibling's end):
  // dropping it stops the work.
  struct TuningCompanions {
    std::shared_ptr<void> running;
    int processes = 0;      // KernelStats::compile_ahead_processes
    std::string plans_dir;  // where they leave the plans they build (ConvBuildOptions::ahead_plans_dir)
  };
  // Called once, before the first convolution this context or a sibling tunes (one the cache file has no
  // choice for): work a process that finds every kernel in the file never needs.
  void set_before_tuning(std::function<TuningCompanions()> hook);
  // Stops what the hook started (and starts nothing later): --compile-ahead's processes compile a network's
  // kernels, so nothing is left for them once it is built, and they hold GPU contexts that should not run
  // beside the stage timing that follows (left running, that timing came out 5 % low; H100).
  void stop_tuning_companions();

  const ContextOptions& options() const { return options_; }
  bool matches(const ExecConfig& c) const { return c.dtype == options_.dtype && c.math == options_.math; }
  const KernelStats& kernel_stats() const { return stats_; }
  const std::string& cache_warning() const { return cache_warning_; }
  int device() const { return device_; }  // the CUDA device it was made on (current when created)
  const std::shared_ptr<TimingStream>& timing_stream() const { return timing_stream_; }
  int streams() const { return static_cast<int>(streams_.size()); }
  cudaStream_t stream(int i) const { return streams_[size_t(i)]; }
  cudnnHandle_t cudnn(int i) const { return cudnn_[size_t(i)]; }
  cublasHandle_t cublas(int i) const { return cublas_[size_t(i)]; }

 private:
  Context(const ContextOptions& o, std::shared_ptr<KernelCache> cache) : options_(o), cache_(std::move(cache)) {}
  // Holds `timing_stream_` with nothing left running on it: GPU work of this context will not overlap timed replays.
  Expected<std::unique_lock<std::mutex>> take_timing_stream();
  // One kernel not built yet, with the timing stream held: clocks brought up first, from the cache file or tuned.
  Expected<std::shared_ptr<ConvKernel>> build_kernel(const ConvSpec& spec, const ConvBuffers& buffers);
  ContextOptions options_;
  int device_ = 0;
  std::shared_ptr<KernelCache> cache_;
  std::shared_ptr<TimingStream> timing_stream_;
  std::string cache_warning_;
  // The kernels built on this device, shared with the context's siblings: a kernel runs with any handle of
  // its device, and each sibling building its own built a network's kernels once per worker.
  struct Kernels {
    std::mutex mutex;
    std::unordered_map<ConvSpec, std::shared_ptr<ConvKernel>, ConvSpecHash, SameConvKey> by_spec;
    bool warmed = false;                              // the clocks were brought up (bring_up_clocks)
    bool tuned_once = false;                          // a convolution was tuned (see build_kernel)
    std::function<TuningCompanions()> before_tuning;  // set_before_tuning's, called once
    std::shared_ptr<void> companions;                 // what it started, until stop_tuning_companions
    std::string ahead_plans_dir;                      // theirs, as long as they run
    LosingEngines losing;                             // what tuning on this device learned
  };
  std::shared_ptr<Kernels> kernels_ = std::make_shared<Kernels>();
  KernelStats stats_;  // this context's requests, under kernels_->mutex
  std::vector<Stream> streams_;
  std::vector<CudnnHandle> cudnn_;
  std::vector<CublasHandle> cublas_;
  std::vector<DeviceMemory> cublas_workspace_, workspace_, retired_;
  DeviceMemory l2_flush_;
  size_t l2_flush_bytes_ = 0;
  std::vector<size_t> workspace_size_;
};

// Brings the current device's SM clock to its top before anything is tuned or timed (tuning at idle clocks
// ranks engines by noise): spins of 2 ms (in cycles at the top clock, so slower while the clock is lower)
// queued back to back on `s` and each timed, until one runs within 5 % of 2 ms, or for 300 ms (a GPU held
// below its top clock never gets there). Returns the seconds it took. A fixed 300 ms spin did this before,
// in every context's first convolution: on every GPU of a search, and in every `ios run`.
Expected<double> bring_up_clocks(cudaStream_t s);

// "NVIDIA H100 80GB HBM3|132 SMs|driver 13000|cuDNN 91900|frontend 13200": what the kernel cache is keyed by.
std::string kernel_environment();

}  // namespace ios::rt
