// Engine and ExecutionContext: a plan loaded, saved, and run on the GPU or the CPU reference.
#include "engine/engine.h"

#include "engine/components.h"
#include "reference/reference_executor.h"
#ifdef IOS_WITH_RUNTIME
#include "engine/gpu_state.h"
#include "runtime/executor.h"
#include "runtime/kernel_cache.h"
#endif

namespace ios::engine {

Expected<Device> parse_device(const std::string& name) {
  if (name == "gpu") return Device::kGpu;
  if (name == "cpu") return Device::kCpu;
  return error(ErrorCode::kInvalidArgument, "--device must be gpu or cpu, got '" + name + "'");
}

Expected<std::vector<sched::ExecMode>> parse_exec_modes(const std::string& name) {
  if (name == "auto") return std::vector<sched::ExecMode>{sched::ExecMode::kStaged, sched::ExecMode::kDataflow};
  ASSIGN_OR_RETURN(sched::ExecMode mode, sched::parse_exec_mode(name));
  return std::vector<sched::ExecMode>{mode};
}

Expected<std::vector<ConcatWrites>> parse_concat_writes_variants(const std::string& name) {
  if (name == "auto") return std::vector<ConcatWrites>{ConcatWrites::kInPlace, ConcatWrites::kConvCopy};
  Expected<ConcatWrites> writes = parse_concat_writes(name);
  RETURN_ERROR_IF(!writes, ErrorCode::kInvalidArgument,
                  "concatenation writes must be in-place, conv-copy or auto, got '" + name + "'");
  return std::vector<ConcatWrites>{*writes};
}

Expected<std::vector<int>> parse_prefetch_aheads(const std::string& mode, int ahead) {
  RETURN_ERROR_IF(mode != "off" && mode != "on" && mode != "auto", ErrorCode::kInvalidArgument,
                  "must be off, on or auto, got '" + mode + "'");
  if (mode == "off") return std::vector<int>{0};
  RETURN_ERROR_IF(ahead < 1 || ahead > 99, ErrorCode::kInvalidArgument,
                  "prefetch ahead must be 1-99 stages, got " + std::to_string(ahead));
  return mode == "on" ? std::vector<int>{ahead} : std::vector<int>{0, ahead};
}

std::string default_kernel_cache() {
#ifdef IOS_WITH_RUNTIME
  const std::string path = rt::default_kernel_cache_path();
  return path == "none" ? "" : path;
#else
  return "";
#endif
}

std::string variant_name(const Execution& e, ConcatWrites writes) {
  std::string text = sched::exec_mode_name(e.mode);
  text += sched::prefetch_suffix(e.prefetch_ahead);
  if (writes != ConcatWrites::kInPlace) text += std::string("/") + concat_writes_name(writes);
  return text;
}

#ifndef IOS_WITH_RUNTIME
struct Engine::GpuState {};
struct ExecutionContext::GpuState {};
#endif

Engine::Engine(EnginePlan plan, Device device) : plan_(std::move(plan)), device_(device) {}
Engine::~Engine() = default;

size_t Engine::input_size() const { return size_t(plan_.graph.input_shape().numel()) * size_t(plan_.config.batch); }
size_t Engine::output_size() const { return size_t(plan_.graph.output_shape().numel()) * size_t(plan_.config.batch); }

Status Engine::save(const std::string& path) const { return save_engine_plan(plan_, path); }

Expected<std::shared_ptr<Engine>> Engine::load(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(EnginePlan plan, load_engine_plan(path));
  return from_plan(std::move(plan), options, path);
}

Expected<std::shared_ptr<Engine>> Engine::from_plan(EnginePlan plan, const LoadOptions& options,
                                                    const std::string& path) {
  std::shared_ptr<Engine> e(new Engine(std::move(plan), options.device));
  if (options.device == Device::kCpu) return e;
#ifdef IOS_WITH_RUNTIME
  RETURN_IF_ERROR(rt::require_gpu());
  const BuildInfo& info = e->plan_.info;
  const std::string here = rt::kernel_environment();
  RETURN_ERROR_IF(!info.environment.empty() && info.environment != here, ErrorCode::kInvalidArgument,
                  path + ": its kernels were tuned on '" + info.environment + "', this machine is '" + here +
                      "': build the engine again here (`ios build`), or run it on the CPU (--device cpu)");
  ASSIGN_OR_RETURN(rt::ConvEngine conv_engine, rt::parse_conv_engine(info.conv_engine));
  rt::ContextOptions co;
  co.dtype = e->plan_.config.dtype;
  co.math = e->plan_.config.math;
  co.conv_engine = conv_engine;
  co.own_kernels = info.own_kernels;
  co.kernel_cache_path = options.kernel_cache == "none" ? "" : options.kernel_cache;
  co.preset_kernels = e->plan_.kernels;
  co.verbose = options.verbose;
  e->gpu_ = std::make_unique<GpuState>();
  ASSIGN_OR_RETURN(e->gpu_->context, rt::Context::create(co));
  e->gpu_->weights = std::make_shared<rt::DeviceStore>();
  return e;
#else
  return error(ErrorCode::kUnavailable, path + ": this build has no GPU runtime; run the engine with --device cpu");
#endif
}

void Engine::share_device_weights([[maybe_unused]] const Engine& first) {
#ifdef IOS_WITH_RUNTIME
  if (gpu_ && first.gpu_ && plan_.weights == first.plan_.weights) gpu_->weights = first.gpu_->weights;
#endif
}

Expected<std::unique_ptr<ExecutionContext>> Engine::create_context(const DebugOptions& debug) {
  return create_context(device_, debug);
}

Expected<std::unique_ptr<ExecutionContext>> Engine::create_context(Device device, const DebugOptions& debug) {
  std::unique_ptr<ExecutionContext> c(new ExecutionContext(shared_from_this(), device));
  if (device == Device::kCpu) return c;
#ifdef IOS_WITH_RUNTIME
  RETURN_ERROR_IF(!gpu_, ErrorCode::kUnavailable,
                  "the engine was built or loaded for the CPU: load it for the GPU to run it there");
  c->gpu_ = std::make_unique<ExecutionContext::GpuState>();
  if (gpu_->built && gpu_->built_debug == debug) {  // the builder's, already captured
    c->gpu_->executor = std::move(gpu_->built);
    ++gpu_->contexts_made;
    return c;
  }
  // Contexts after the first get streams and workspaces of their own, so that they can run side by side.
  std::shared_ptr<rt::Context> context = gpu_->context;
  if (gpu_->contexts_made > 0) {
    ASSIGN_OR_RETURN(context, gpu_->context->sibling());
  }
  ASSIGN_OR_RETURN(c->gpu_->executor, build_executor(plan_.graph, *plan_.weights, plan_.schedule, plan_.config,
                                                     plan_.execution, context, debug, gpu_->weights));
  ++gpu_->contexts_made;
  return c;
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime: create the context with Device::kCpu");
#endif
}

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine, Device device)
    : engine_(std::move(engine)), device_(device) {}
ExecutionContext::~ExecutionContext() = default;

rt::Executor* ExecutionContext::executor() {
#ifdef IOS_WITH_RUNTIME
  return gpu_ ? gpu_->executor.get() : nullptr;
#else
  return nullptr;
#endif
}

int ExecutionContext::gpu_index() const {
#ifdef IOS_WITH_RUNTIME
  if (gpu_) return gpu_->executor->context().device();
#endif
  return -1;
}

Status ExecutionContext::enqueue(const float* input, float* output, cudaStream_t stream) {
#ifdef IOS_WITH_RUNTIME
  RETURN_ERROR_IF(device_ != Device::kGpu, ErrorCode::kInvalidArgument,
                  "enqueue takes device pointers: this context runs on the CPU (use run)");
  return gpu_->executor->enqueue(input, output, stream);
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime: use run on a CPU context");
#endif
}

Expected<std::vector<float>> ExecutionContext::run(const std::vector<float>& input) {
  RETURN_ERROR_IF(input.size() != engine_->input_size(), ErrorCode::kInvalidArgument,
                  "input has " + std::to_string(input.size()) + " floats, the engine takes " +
                      std::to_string(engine_->input_size()) + " (batch " + std::to_string(engine_->config().batch) +
                      " x " + engine_->graph().input_shape().to_string() + ")");
  if (device_ == Device::kCpu) {
    reference::Tensor in(engine_->config().batch, engine_->graph().input_shape());
    in.data = input;
    ASSIGN_OR_RETURN(reference::Tensor out, reference::run(engine_->graph(), *engine_->plan().weights, in));
    return std::move(out.data);
  }
#ifdef IOS_WITH_RUNTIME
  rt::Executor& exec = *gpu_->executor;
  RETURN_IF_ERROR(exec.set_input(input));
  RETURN_IF_ERROR(exec.run());
  return exec.output();
#else
  return error(ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
}

}  // namespace ios::engine
