// A search command's execution config and, on first use, its GPU context, shared by the cost model and
// the reports of `ios optimize`. Internal to cli/.
#pragma once

#include <functional>
#include <memory>

#include "cli/options.h"
#include "common/exec_config.h"
#include "engine/components.h"
#include "scheduler/cost_model.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/context.h"
#endif

namespace ios::cli {

using ContextPtr = ios::engine::GpuContext;

#ifdef IOS_WITH_RUNTIME
// Has --compile-ahead's processes started on `g` when `context` first tunes a convolution, where tuning
// compiles cuDNN engines at run time; they stop once the network is built (the measured search's
// calibration network, Context::stop_tuning_companions; the engine's executor). Not before: with every kernel
// in the cache file they only cost (Inception V3 tf32 searched again in 2.8-3.0 s against 1.8-2.4 with 8
// processes started at once, H100). A failure to start them is reported; tuning goes on.
Status start_compile_ahead_on_tuning(const Graph& g, const OptimizeArgs& args, const ios::ExecConfig& config,
                                     ios::rt::Context& context);
#endif

// The run's configuration and, on first use, its GPU context (made once, shared by the measured
// cost model, Opara's profile and the executor).
struct SearchSetup {
  ios::ExecConfig config;
  const OptimizeArgs* args = nullptr;
  std::optional<ContextPtr> context_;
#ifdef IOS_WITH_RUNTIME

  // --compile-ahead's processes started on `g` when the context first tunes a convolution (see
  // start_compile_ahead_on_tuning).
  Status compile_ahead_on_tuning(const Graph& g) {
    ContextPtr ctx = context();
    if (!ctx) return ctx.status();
    return start_compile_ahead_on_tuning(g, *args, config, **ctx);
  }
#endif

  ContextPtr context() {
    if (!context_)
      context_ = ios::engine::make_gpu_context(config, args->conv_engine, args->own_kernels_on(), args->kernel_cache,
                                               args->verbose);
    return *context_;
  }
};

// `ios run --concat-writes auto` searches (where it searches) with the default and times both at the end.
Expected<SearchSetup> make_search_setup(const OptimizeArgs& a);

// The policy's name as IOS prints it, with r and s where they are not IOS's.
std::string display_name(const OptimizeArgs& a, ios::sched::Policy p);

// Opara orders launches by each op's shared memory: measured with CUPTI where there is a GPU (and
// the cost model is not forced to the analytic one), else estimated (noted in the schedule).
Status attach_opara_profile(const Graph& g, OptimizeArgs& a, SearchSetup& setup);

// --dataflow-segment, or its default for the run's cost model.
int dataflow_segment(const OptimizeArgs& a, const ios::sched::CostModel& model);

}  // namespace ios::cli
