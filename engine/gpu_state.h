// The runtime objects behind Engine, ExecutionContext and Builder in builds with the GPU runtime. Internal
// to engine/.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "runtime/context.h"
#include "runtime/executor.h"

namespace ios::engine {

struct Engine::GpuState {
  std::shared_ptr<rt::Context> context;  // the builder's or the loader's: its kernels are the plan's
  std::unique_ptr<rt::Executor> built;   // the builder's executor, until the first context takes it
  DebugOptions built_debug;              // what it was built with
  int contexts_made = 0;
  // Every context's weights, uploaded once (made with the engine); batch buckets of one network share it.
  std::shared_ptr<rt::DeviceStore> weights;
};

struct ExecutionContext::GpuState {
  std::unique_ptr<rt::Executor> executor;
};

struct Builder::GpuState {
  std::shared_ptr<rt::Context> context;
  std::shared_ptr<rt::DeviceStore> weights;  // where the engine's weights go; null: a store of the engine's own
};

// The schedule compiled for `execution` and built on `context`: its weights in `weights` (shared by the
// engine's contexts), its activations in `store` where given (variants timed one after another), else its own.
Expected<std::unique_ptr<rt::Executor>> build_executor(const ir::Graph& g, const ir::Weights& w,
                                                       const sched::Schedule& schedule, const ExecConfig& config,
                                                       const Execution& execution, std::shared_ptr<rt::Context> context,
                                                       const DebugOptions& debug,
                                                       std::shared_ptr<rt::DeviceStore> weights,
                                                       std::shared_ptr<rt::DeviceStore> store = nullptr);

}  // namespace ios::engine
