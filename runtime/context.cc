#include "runtime/context.h"

#include <cudnn_frontend_version.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "common/wall_clock.h"
#include "runtime/kernels.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

std::string kernel_environment() {
  int dev = 0, driver = 0;
  cudaDeviceProp prop{};
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  cudaDriverGetVersion(&driver);
  return std::string(prop.name) + "|" + std::to_string(prop.multiProcessorCount) + " SMs|sm_" +
         std::to_string(prop.major * 10 + prop.minor) + "|driver " + std::to_string(driver) + "|cuDNN " +
         std::to_string(cudnnGetVersion()) + "|frontend " + std::to_string(CUDNN_FRONTEND_VERSION);
}

Expected<std::shared_ptr<TimingStream>> TimingStream::create() {
  ASSIGN_OR_RETURN(Stream s, make_stream());
  return std::shared_ptr<TimingStream>(new TimingStream(std::move(s)));
}

namespace {

// A CUDA graph of one one-thread kernel that returns at once: a timed stage's lead kernel alone.
Expected<CudaGraphExec> empty_kernel_graph(cudaStream_t s) {
  cudaGraph_t raw = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  launch_empty(s);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t end = cudaStreamEndCapture(s, &raw);
  CudaGraph graph(raw);  // owned before any early return
  CHECK_CUDA(launched);
  CHECK_CUDA(end);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  return CudaGraphExec(exec);
}

// Median GPU time of spans of `replays` replays of `graph` each, as a stage's warm rounds are timed: back to
// back, each span ending at an event that the next one starts from. Spans of each count in `replays` are
// interleaved, kRounds of each, queued behind a spin of `head_start_ms` so that the host is ahead of the GPU
// throughout; `caught_up` where the GPU had reached the first span before the last was queued (a span may
// then hold a gap in which the GPU waited for the host).
struct Spans {
  std::vector<double> median_ms;
  bool caught_up = false;
};
Expected<Spans> span_ms(const CudaGraphExec& graph, const std::vector<int>& replays, double head_start_ms,
                        cudaStream_t s) {
  constexpr int kRounds = 25;
  std::vector<Event> events;
  auto record = [&]() -> Expected<cudaEvent_t> {
    ASSIGN_OR_RETURN(Event e, make_event(true));
    CHECK_CUDA(cudaEventRecord(e, s));
    events.push_back(std::move(e));
    return events.back().get();
  };
  launch_spin(head_start_ms, s);
  ASSIGN_OR_RETURN(cudaEvent_t mark, record());
  const cudaEvent_t first = mark;
  std::vector<std::vector<std::pair<cudaEvent_t, cudaEvent_t>>> spans(replays.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t i = 0; i < replays.size(); ++i) {
      for (int r = 0; r < replays[i]; ++r) CHECK_CUDA(cudaGraphLaunch(graph, s));
      ASSIGN_OR_RETURN(cudaEvent_t end, record());
      spans[i].emplace_back(mark, end);
      mark = end;
    }
  const cudaError_t reached = cudaEventQuery(first);
  if (reached != cudaErrorNotReady) CHECK_CUDA(reached);
  CHECK_CUDA(cudaStreamSynchronize(s));
  Spans out;
  out.caught_up = reached == cudaSuccess;
  for (const auto& list : spans) {
    std::vector<double> ms;
    for (const auto& [begin, end] : list) {
      float elapsed = 0;
      CHECK_CUDA(cudaEventElapsedTime(&elapsed, begin, end));
      ms.push_back(double(elapsed));
    }
    out.median_ms.push_back(sched::median_of(ms));
  }
  return out;
}

}  // namespace

Expected<double> bring_up_clocks(cudaStream_t s) {
  constexpr double kChunkMs = 2, kAtTop = 1.05, kMaxMs = 300;
  constexpr size_t kQueued = 4;  // chunks ahead of the one waited for, so that the GPU never idles
  const auto start = WallClock::now();
  std::deque<std::pair<Event, Event>> chunks;
  auto queue_chunk = [&]() -> Status {
    ASSIGN_OR_RETURN(Event begin, make_event(true));
    ASSIGN_OR_RETURN(Event end, make_event(true));
    CHECK_CUDA(cudaEventRecord(begin, s));
    launch_spin(kChunkMs, s);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(end, s));
    chunks.emplace_back(std::move(begin), std::move(end));
    return Status::ok();
  };
  for (bool at_top = false; !at_top && seconds_since(start) * 1e3 < kMaxMs;) {
    while (chunks.size() < kQueued) RETURN_IF_ERROR(queue_chunk());
    CHECK_CUDA(cudaEventSynchronize(chunks.front().second));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, chunks.front().first, chunks.front().second));
    chunks.pop_front();
    at_top = ms <= kAtTop * kChunkMs;
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  return seconds_since(start);
}

Expected<TimingStream::Boundary> TimingStream::stage_boundary() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (boundary_) return *boundary_;
  // At the top clock, as every stage it is taken off, and with the host ahead of the GPU throughout: behind
  // a fixed 0.2 ms spin, a second worker's driver calls on the host (or the clock's climb from idle) left
  // gaps in the spans, and boundaries of 2.4-5.6 us a replay instead of ~1.5 took that much off every
  // figure: those searches' figures summed 17-25 % under the others' and predicted 6.17 ms for a NasNet
  // schedule that ran 7.67 (H100). The head start grows until the GPU
  // has not reached the first span when the last is queued.
  RETURN_IF_ERROR(bring_up_clocks(stream_).status());
  ASSIGN_OR_RETURN(CudaGraphExec lead_alone, empty_kernel_graph(stream_));
  constexpr int kLong = 16;
  // Kept behind the longest head start even if the GPU caught up there too: a boundary a little high
  // beats no search.
  constexpr double kFirstHeadStartMs = 2, kMaxHeadStartMs = 128;
  Spans spans;
  for (double head = kFirstHeadStartMs; head <= kMaxHeadStartMs && (head == kFirstHeadStartMs || spans.caught_up);
       head *= 4) {
    ASSIGN_OR_RETURN(spans, span_ms(lead_alone, {1, kLong}, head, stream_));
  }
  const std::vector<double>& ms = spans.median_ms;
  Boundary b;
  b.graph_ms = std::max(0.0, (ms[1] - ms[0]) / (kLong - 1));
  b.event_ms = std::max(0.0, ms[0] - b.graph_ms);
  boundary_ = b;
  return b;
}

Expected<std::shared_ptr<Context>> Context::create(const ContextOptions& options) {
  RETURN_IF_ERROR(require_gpu());
  ContextOptions resolved = options;
  resolved.conv_engine = resolve_conv_engine(options.conv_engine, options.dtype, options.math);
  std::shared_ptr<Context> c(new Context(resolved, std::make_shared<KernelCache>(kernel_environment())));
  CHECK_CUDA(cudaGetDevice(&c->device_));
  if (!options.kernel_cache_path.empty()) {
    c->cache_warning_ = c->cache_->load(options.kernel_cache_path);
    if (!c->cache_warning_.empty()) std::fprintf(stderr, "warning: %s\n", c->cache_warning_.c_str());
  }
  for (const auto& [key, choice] : options.preset_kernels) c->cache_->preset(key, choice);
  if (resolved.conv_engine == ConvEngine::kGraphRuntimeCompiled)
    if (const std::string jit = jit_cache_warning(); !jit.empty()) std::fprintf(stderr, "warning: %s\n", jit.c_str());
  ASSIGN_OR_RETURN(c->timing_stream_, TimingStream::create());
  RETURN_IF_ERROR(c->ensure_streams(1));
  return c;
}

Expected<std::shared_ptr<Context>> Context::sibling() const {
  CHECK_CUDA(cudaSetDevice(device_));
  std::shared_ptr<Context> c(new Context(options_, cache_));
  c->device_ = device_;
  c->timing_stream_ = timing_stream_;
  c->kernels_ = kernels_;
  RETURN_IF_ERROR(c->ensure_streams(1));
  return c;
}

Expected<std::unique_lock<std::mutex>> Context::take_timing_stream() {
  std::unique_lock<std::mutex> held(timing_stream_->queue_mutex());
  CHECK_CUDA(cudaStreamSynchronize(timing_stream_->stream()));
  return held;
}

Context::~Context() {
  const Status saved = save_kernel_cache();
  if (!saved.is_ok()) std::fprintf(stderr, "warning: %s\n", saved.to_string().c_str());
}

Status Context::save_kernel_cache() const {
  if (options_.kernel_cache_path.empty() || !cache_->dirty()) return Status::ok();
  return cache_->save(options_.kernel_cache_path);
}

Status Context::ensure_streams(int count) {
  constexpr size_t kCublasWorkspace = size_t{4} << 20;
  const bool strict = options_.dtype == DataType::kF32 && options_.math == MathMode::kStrict;
  while (streams() < count) {
    ASSIGN_OR_RETURN(Stream s, make_stream());
    ASSIGN_OR_RETURN(CudnnHandle h, make_cudnn());
    CHECK_CUDNN(cudnnSetStream(h, s));
    ASSIGN_OR_RETURN(CublasHandle b, make_cublas());
    CHECK_CUBLAS(cublasSetStream(b, s));
    CHECK_CUBLAS(cublasSetMathMode(b, strict ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH));
    ASSIGN_OR_RETURN(DeviceMemory cw, device_alloc(kCublasWorkspace));
    CHECK_CUBLAS(cublasSetWorkspace(b, cw.get(), kCublasWorkspace));
    streams_.push_back(std::move(s));
    cudnn_.push_back(std::move(h));
    cublas_.push_back(std::move(b));
    cublas_workspace_.push_back(std::move(cw));
    workspace_.emplace_back();
    workspace_size_.push_back(0);
  }
  return Status::ok();
}

Expected<void*> Context::workspace(int stream, size_t bytes) {
  RETURN_ERROR_IF(stream < 0 || stream >= streams(), ErrorCode::kInvalidArgument,
                  "stream " + std::to_string(stream) + " does not exist");
  if (bytes > workspace_size_[size_t(stream)]) {
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(bytes));
    if (workspace_[size_t(stream)].get()) retired_.push_back(std::move(workspace_[size_t(stream)]));
    workspace_[size_t(stream)] = std::move(m);
    workspace_size_[size_t(stream)] = bytes;
  }
  return workspace_[size_t(stream)].get();
}

Expected<size_t> Context::l2_bytes() const {
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_));
  return size_t(l2);
}

Status Context::flush_l2(cudaStream_t stream) {
  if (!l2_flush_.get()) {
    ASSIGN_OR_RETURN(size_t l2, l2_bytes());
    l2_flush_bytes_ = 2 * std::max<size_t>(l2, 1 << 20);
    ASSIGN_OR_RETURN(l2_flush_, device_alloc(l2_flush_bytes_));
    CHECK_CUDA(cudaMemsetAsync(l2_flush_.get(), 0, l2_flush_bytes_, stream));
  }
  launch_l2_touch(l2_flush_.get(), l2_flush_bytes_, stream);
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

void Context::set_before_tuning(std::function<TuningCompanions()> hook) {
  std::lock_guard<std::mutex> lock(kernels_->mutex);
  kernels_->before_tuning = std::move(hook);
}

void Context::stop_tuning_companions() {
  std::shared_ptr<void> stopping;  // stopped outside the lock: it waits for processes to end
  {
    std::lock_guard<std::mutex> lock(kernels_->mutex);
    stopping = std::move(kernels_->companions);
    kernels_->before_tuning = nullptr;
    kernels_->ahead_plans_dir.clear();  // removed with them
  }
}

Expected<std::vector<std::shared_ptr<ConvKernel>>> Context::conv_kernels(const std::vector<ConvRequest>& requests) {
  std::vector<std::shared_ptr<ConvKernel>> out(requests.size());
  std::lock_guard<std::mutex> lock(kernels_->mutex);
  // Tuning, and a kernel's first run, time or disturb the GPU: not while a sibling's stages are timed.
  std::optional<std::unique_lock<std::mutex>> held_stream;  // the timing stream, taken at the first kernel to build
  for (size_t i = 0; i < requests.size(); ++i) {
    const ConvSpec& spec = requests[i].spec;
    if (auto it = kernels_->by_spec.find(spec); it != kernels_->by_spec.end()) {
      ++stats_.reused;
      out[i] = it->second;
      continue;
    }
    if (!held_stream) {
      ASSIGN_OR_RETURN(std::unique_lock<std::mutex> held, take_timing_stream());
      held_stream.emplace(std::move(held));
    }
    ASSIGN_OR_RETURN(out[i], build_kernel(spec, requests[i].buffers));
    kernels_->by_spec.emplace(spec, out[i]);
  }
  return out;
}

Expected<std::shared_ptr<ConvKernel>> Context::build_kernel(const ConvSpec& spec, const ConvBuffers& buffers) {
  const std::string key = kernel_cache_key(spec, options_.conv_engine, options_.own_kernels);
  if (!kernels_->warmed) {
    ASSIGN_OR_RETURN(const double seconds, bring_up_clocks(stream(0)));
    stats_.clock_warm_up_seconds += seconds;
    kernels_->warmed = true;
  }
  const std::optional<KernelChoice> cached = cache_->find(key);
  if (!cached && kernels_->before_tuning) {
    TuningCompanions started = std::exchange(kernels_->before_tuning, nullptr)();
    kernels_->companions = std::move(started.running);
    kernels_->ahead_plans_dir = std::move(started.plans_dir);
    stats_.compile_ahead_processes += started.processes;
  }
  const std::vector<uint8_t> cached_plan = cached ? cache_->plan(key) : std::vector<uint8_t>();
  ASSIGN_OR_RETURN(void* ws, workspace(0, options_.workspace_limit));
  ConvBuildOptions bo;
  bo.engine = options_.conv_engine;
  bo.own_kernels = options_.own_kernels;
  bo.workspace_limit = options_.workspace_limit;
  bo.verbose = options_.verbose;
  bo.stats = &stats_.tuning;
  bo.losing = &kernels_->losing;
  bo.ahead_plans_dir = kernels_->ahead_plans_dir;
  const auto begin = WallClock::now();
  ASSIGN_OR_RETURN(std::shared_ptr<ConvKernel> k,
                   build_conv_kernel(cudnn(0), spec, buffers, ws, cached, cached_plan, bo));
  const KernelChoice& c = k->choice();
  const bool from_file = cached && *cached == c;
  if (!from_file && c.backend != kElementwiseBackend) stats_.tuning.seconds += seconds_since(begin);
  // A process whose engines all came from the cache file ran NasNet 6.6 % slower than one that tuned them
  // (7.90 vs 7.41 ms, fp32, H100; the same engines, bimodal replays), and tuning any one convolution in
  // the process, its result discarded, restored the speed of all. More runs of the cached kernels, 5 s
  // of warm-up, shifted addresses and building every candidate plan did not. The cause is in cuDNN or
  // the driver; the cure is one tuning per device (a context and its siblings share it, as they share kernels).
  if (from_file && !kernels_->tuned_once) {
    const auto retune = WallClock::now();
    ASSIGN_OR_RETURN(std::shared_ptr<ConvKernel> discarded,
                     build_conv_kernel(cudnn(0), spec, buffers, ws, std::nullopt, {}, bo));
    stats_.tuning.seconds += seconds_since(retune);
    ++stats_.retuned;
  }
  kernels_->tuned_once = kernels_->tuned_once || c.backend != kElementwiseBackend;
  // A kernel rebuilt from the cache file has never run: run it once before any CUDA graph captures it.
  // Captured unrun, the same cuDNN kernel ran up to 3x slower in every replay (NasNet, fp32, H100: 8.7
  // vs 7.6 ms end to end; tuning one convolution with that kernel in the process restored all of them).
  if (from_file) RETURN_IF_ERROR(k->run(cudnn(0), buffers, ws));
  CHECK_CUDA(cudaStreamSynchronize(stream(0)));
  const bool tuned_engine = c.backend != kElementwiseBackend;
  if (tuned_engine) ++(from_file ? stats_.from_file : stats_.tuned);
  stats_.plans_loaded += from_file && !cached_plan.empty() && k->compiled_plan_loaded();
  stats_.fused += c.fused;
  stats_.legacy += c.backend == kLegacyBackend;
  if (tuned_engine && !from_file) cache_->put(key, c);
  // A compiled plan is kept for the next process, also where the file had the choice but no plan that loads,
  // and where tuning loaded it as a compile-ahead process built it.
  if (tuned_engine && !(from_file && k->compiled_plan_loaded())) {
    Expected<std::vector<uint8_t>> compiled = k->compiled_plan();
    if (compiled && !compiled->empty()) cache_->put_plan(key, std::move(*compiled));
    if (!compiled && options_.verbose)  // the next process compiles it again: slower, not wrong
      std::fprintf(stderr, "[conv] %s: its compiled plan is not kept (%s)\n", key.c_str(),
                   compiled.status().message().c_str());
  }
  return k;
}

}  // namespace ios::rt
