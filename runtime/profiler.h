// CUPTI kernel activity, attributed to plan steps. Create the profiler before the executor and pass
// it as the executor's LaunchObserver: in eager mode kernels are matched through the correlation ids
// of the driver launch calls made while a step was issued; in a CUDA graph through the graph nodes
// CUPTI saw created while a step was being captured (and their clones in the instantiated graph). One profiler at a
// time per process.
#pragma once

#include <memory>
#include <vector>

#include "runtime/executor.h"
#include "runtime/trace.h"

namespace ios::rt {

class KernelProfiler final : public LaunchObserver {
 public:
  static Expected<std::unique_ptr<KernelProfiler>> create();
  ~KernelProfiler() override;
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  void begin_step(int plan_step) override;
  void end_step() override;

  Status start_recording();
  // Flushes and returns the kernels since start_recording(); `replay` tags them.
  Expected<std::vector<KernelRecord>> stop_recording(int replay = 0);

  struct State;

 private:
  KernelProfiler();
  std::unique_ptr<State> state_;
};

// Runs `executor` `inferences` times under the profiler (after one unprofiled run) and returns
// every kernel, each tagged with its inference.
Expected<std::vector<KernelRecord>> profile_runs(Executor& executor, KernelProfiler& profiler, int inferences);

// Opara's per-op shared-memory profile, measured: the sequential plan run eagerly under CUPTI.
Expected<sched::ResourceProfile> measure_resource_profile(const ir::Graph& g, const ir::Weights& w,
                                                          const ExecutorOptions& options);

}  // namespace ios::rt
