#include "runtime/executor.h"

#include "runtime/executor_impl.h"

namespace ios::rt {

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

namespace {

Expected<std::unique_ptr<Executor::Impl>> built_impl(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options,
                                                     bool specs_only) {
  RETURN_IF_ERROR(require_gpu());
  RETURN_ERROR_IF(options.config.batch < 1, ErrorCode::kInvalidArgument, "batch must be at least 1");
  RETURN_ERROR_IF(w.per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument,
                  "weights were made for another graph");
  auto impl = std::make_unique<Executor::Impl>();
  impl->g = &g;
  impl->opt = options;
  impl->cfg = options.config;
  impl->plan = plan;
  impl->store = options.store ? options.store : std::make_shared<DeviceStore>();
  impl->weight_store = options.weight_store ? options.weight_store : impl->store;
  impl->specs_only = specs_only;
  RETURN_IF_ERROR(impl->build(w));
  return impl;
}

}  // namespace

Expected<std::unique_ptr<Executor>> Executor::create(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, built_impl(g, w, plan, options, false));
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Expected<std::vector<ConvSpec>> Executor::conv_specs(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, built_impl(g, w, plan, options, true));
  std::vector<ConvSpec> specs;
  for (const Context::ConvRequest& r : impl->conv_requests) specs.push_back(r.spec);
  return specs;
}

Status Executor::set_input(const std::vector<float>& data) {
  const ir::Shape s = impl_->g->input_shape();
  const size_t n = size_t(s.numel()) * size_t(impl_->cfg.batch);
  RETURN_ERROR_IF(data.size() != n, ErrorCode::kInvalidArgument,
                  "input has " + std::to_string(data.size()) + " floats, expected " + std::to_string(n));
  const std::vector<uint8_t> bytes =
      pack_tensor(data.data(), impl_->cfg.batch, s.c, s.h, s.w, impl_->cfg.dtype, impl_->cfg.layout);
  CHECK_CUDA(
      cudaMemcpyAsync(impl_->views[0].base, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::poison_activations() {
  const sched::MemoryPlan& m = impl_->memory;
  const int input = m.placement[size_t(impl_->g->input())].buffer;
  for (size_t b = 0; b < m.buffer_bytes.size(); ++b)
    if (int(b) != input)
      CHECK_CUDA(cudaMemsetAsync(static_cast<char*>(impl_->arena) + m.buffer_offset[b], 0xFF, m.buffer_bytes[b],
                                 impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::perturb(uint64_t seed, double max_us) {
  RETURN_ERROR_IF(!impl_->opt.chaos, ErrorCode::kInvalidArgument, "perturb needs an executor made with chaos on");
  std::vector<long long> cycles(impl_->plan.steps.size(), 0);
  if (seed != 0) {
    std::mt19937_64 rng(seed);
    const double max_cycles = max_us * device_cycles_per_us();
    for (long long& c : cycles)
      if (rng() & 1) c = static_cast<long long>(double(rng() >> 11) * (1.0 / 9007199254740992.0) * max_cycles);
  }
  // The previous run has finished (run() synchronises), so no delay kernel is reading the array.
  CHECK_CUDA(cudaMemcpyAsync(impl_->chaos_cycles.get(), cycles.data(), cycles.size() * sizeof(long long),
                             cudaMemcpyHostToDevice, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::replay_on(cudaStream_t stream) {
  RETURN_ERROR_IF(!impl_->graph_exec.get(), ErrorCode::kInvalidArgument,
                  "replay_on needs an executor built with a CUDA graph");
  CHECK_CUDA(cudaGraphLaunch(impl_->graph_exec, stream));
  return Status::ok();
}

Status Executor::upload_on(cudaStream_t stream) {
  RETURN_ERROR_IF(!impl_->graph_exec.get(), ErrorCode::kInvalidArgument,
                  "upload_on needs an executor built with a CUDA graph");
  CHECK_CUDA(cudaGraphUpload(impl_->graph_exec, stream));
  return Status::ok();
}

Status Executor::warm_activations_on(cudaStream_t stream) {
  launch_l2_touch(impl_->arena, impl_->memory.arena_bytes, stream);
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

cudaStream_t Executor::main_stream() const { return impl_->stream(0); }

Status Executor::run() {
  RETURN_IF_ERROR(impl_->run_once());
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

Expected<std::vector<float>> Executor::read(ir::NodeId node) const {
  const View& v = impl_->views[size_t(node)];
  RETURN_ERROR_IF(!v.base, ErrorCode::kNotFound, "node '" + impl_->g->node(node).name + "' has no buffer in this plan");
  const ir::Shape& s = impl_->g->node(node).output_shape;
  const int buffer = impl_->memory.placement[size_t(node)].buffer;
  std::vector<uint8_t> bytes(impl_->memory.buffer_bytes[size_t(buffer)]);
  CHECK_CUDA(cudaMemcpyAsync(bytes.data(), v.base, bytes.size(), cudaMemcpyDeviceToHost, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  const SliceLayout l = impl_->layout_of(v);
  const DataType t = impl_->cfg.dtype;
  const size_t eb = impl_->eb();
  std::vector<float> out(size_t(s.numel()) * size_t(impl_->cfg.batch));
  size_t i = 0;
  for (int b = 0; b < impl_->cfg.batch; ++b)
    for (int c = 0; c < s.c; ++c)
      for (int y = 0; y < s.h; ++y)
        for (int x = 0; x < s.w; ++x)
          out[i++] = load_element(bytes.data() + size_t(l.offset + b * l.n + c * l.c + y * l.h + x * l.w) * eb, t);
  return out;
}

Expected<std::vector<float>> Executor::output() const { return read(impl_->g->output()); }

// Without a CUDA graph the plan is issued on the context's streams, which fork from and join stream 0:
// events put that between the caller's stream's work before and after.
Status Executor::enqueue(const float* input, float* output, cudaStream_t stream) {
  Impl& m = *impl_;
  const View& in = m.views[size_t(m.g->input())];
  const View& out = m.views[size_t(m.g->output())];
  const ir::Shape in_shape = m.g->input_shape(), out_shape = m.g->output_shape();
  launch_from_float(m.cfg.dtype, input, m.dev(in), Extent{m.cfg.batch, in_shape.c, in_shape.h * in_shape.w, false},
                    stream);
  CHECK_CUDA(cudaGetLastError());
  if (m.graph_exec.get()) {
    CHECK_CUDA(cudaGraphLaunch(m.graph_exec, stream));
  } else {
    if (!m.io_fork.get()) {
      ASSIGN_OR_RETURN(m.io_fork, make_event(false));
      ASSIGN_OR_RETURN(m.io_join, make_event(false));
    }
    CHECK_CUDA(cudaEventRecord(m.io_fork, stream));
    CHECK_CUDA(cudaStreamWaitEvent(m.stream(0), m.io_fork, 0));
    RETURN_IF_ERROR(m.issue_plan());
    CHECK_CUDA(cudaEventRecord(m.io_join, m.stream(0)));
    CHECK_CUDA(cudaStreamWaitEvent(stream, m.io_join, 0));
  }
  launch_to_float(m.cfg.dtype, m.dev(out), output, Extent{m.cfg.batch, out_shape.c, out_shape.h * out_shape.w, false},
                  stream);
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

Expected<Timing> Executor::time(const TimingOptions& o) {
  RETURN_ERROR_IF(o.iterations < 1, ErrorCode::kInvalidArgument, "--iters must be at least 1");
  RETURN_ERROR_IF(o.replays_per_sample < 1, ErrorCode::kInvalidArgument, "replays per sample must be at least 1");
  Timing r;
  const auto warmup_start = std::chrono::steady_clock::now();
  auto elapsed_ms = [](std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  };
  while (r.warmup_runs < o.warmup_runs || elapsed_ms(warmup_start) < o.warmup_ms) {
    RETURN_IF_ERROR(run());
    ++r.warmup_runs;
  }
  ASSIGN_OR_RETURN(Event start, make_event(true));
  ASSIGN_OR_RETURN(Event stop, make_event(true));
  const auto timed_start = std::chrono::steady_clock::now();
  while (int(r.samples_ms.size()) < o.iterations || elapsed_ms(timed_start) < 1000 * o.min_seconds) {
    CHECK_CUDA(cudaEventRecord(start, impl_->stream(0)));
    for (int i = 0; i < o.replays_per_sample; ++i) RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->stream(0)));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    r.samples_ms.push_back(t / o.replays_per_sample);
  }
  std::vector<double> sorted = r.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  r.iterations = int(sorted.size());
  r.median_ms = sorted[sorted.size() / 2];
  r.min_ms = sorted.front();
  r.p90_ms = sorted[std::min(sorted.size() - 1, sorted.size() * 9 / 10)];
  for (double t : sorted) r.mean_ms += t / double(sorted.size());
  return r;
}

const Context& Executor::context() const { return *impl_->ctx; }
size_t Executor::activation_bytes() const { return impl_->memory.arena_bytes; }
size_t Executor::activation_bytes_no_reuse() const { return impl_->memory.no_reuse_bytes; }
size_t Executor::workspace_bytes() const {
  size_t total = 0;
  for (size_t b : impl_->dataflow_graph_mode() ? impl_->dataflow.lane_bytes : impl_->stream_workspace) total += b;
  return total;
}
Status Executor::write_graph_dot(const std::string& path) const {
  RETURN_ERROR_IF(!impl_->graph.get(), ErrorCode::kInvalidArgument,
                  "--graph-dot: the executor has no CUDA graph (built with --no-graph)");
  const cudaError_t written = cudaGraphDebugDotPrint(impl_->graph.get(), path.c_str(), cudaGraphDebugDotFlagsVerbose);
  RETURN_ERROR_IF(written != cudaSuccess, ErrorCode::kIoError,
                  "--graph-dot: cannot write '" + path + "': " + cudaGetErrorString(written));
  return Status::ok();
}

int Executor::graph_edges() const { return impl_->dataflow_graph_mode() ? impl_->dataflow.edges() : -1; }

int Executor::prefetch_nodes() const { return impl_->prefetch_nodes; }

int Executor::programmatic_edges() const { return impl_->programmatic_edges; }

int Executor::graph_nodes() const {
  size_t n = 0;
  if (!impl_->graph.get() || cudaGraphGetNodes(impl_->graph.get(), nullptr, &n) != cudaSuccess) return -1;
  return int(n);
}
size_t Executor::weight_bytes() const { return impl_->weight_total; }
const sched::MemoryPlan& Executor::memory_plan() const { return impl_->memory; }
const ExecConfig& Executor::config() const { return impl_->cfg; }

const sched::BuildTimes& Executor::build_times() const { return impl_->build_times; }

std::map<std::string, KernelChoice> Executor::kernel_choices() const {
  std::map<std::string, KernelChoice> out;
  for (size_t i = 0; i < impl_->conv_steps.size(); ++i) {
    const Impl::ConvStep& c = impl_->conv_steps[i];
    const KernelChoice& k = impl_->units[c.unit].steps[c.step].conv->choice();
    if (k.backend == kElementwiseBackend) continue;  // our kernel: nothing tuned
    const ContextOptions& o = impl_->ctx->options();
    out[kernel_cache_key(impl_->conv_requests[i].spec, o.conv_engine, o.own_kernels)] = k;
  }
  return out;
}

KernelReport Executor::kernel_report() const {
  KernelReport r;
  for (const Unit& u : impl_->units)
    for (const StepPlan& st : u.steps) {
      if (!st.conv) continue;
      const KernelChoice& c = st.conv->choice();
      ++r.engines[c.name];
      ++r.convs;
      r.fused += c.fused;
      r.legacy += c.backend == kLegacyBackend;
      r.own += c.backend == kOwnBackend;
      r.output_copied += c.output_copied;
      if (st.residual) ++(c.fused ? r.sums_in_conv : r.sums_in_epilogue);
    }
  r.concat_inputs_in_place = impl_->memory.terms_in_place;
  r.concat_inputs_copied = impl_->memory.concat_terms - impl_->memory.terms_in_place;
  return r;
}

std::string device_description() {
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return "no GPU";
  }
  int clock_khz = 0, mem_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
  std::ostringstream os;
  os << prop.name << ", " << prop.multiProcessorCount << " SMs, max SM clock " << clock_khz / 1000
     << " MHz, memory clock " << mem_khz / 1000 << " MHz";
  return os.str();
}

std::string library_versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::ostringstream os;
  const size_t cudnn = cudnnGetVersion();
  os << "CUDA runtime " << runtime / 1000 << "." << (runtime % 1000) / 10 << ", driver API " << driver / 1000 << "."
     << (driver % 1000) / 10 << ", cuDNN " << cudnn / 10000 << "." << (cudnn % 10000) / 100 << "." << cudnn % 100;
  return os.str();
}

}  // namespace ios::rt
