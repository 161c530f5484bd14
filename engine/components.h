// The parts a Builder assembles, for programs that search without building an engine (`ios optimize`,
// which adds workers on more GPUs) or time stages themselves (the experiment harness).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/exec_config.h"
#include "ir/graph.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {
class Context;
}

namespace ios::engine {

using GpuContext = Expected<std::shared_ptr<rt::Context>>;

// Streams, handles and the convolution kernels of one data type and math mode on the current GPU (tuned
// once, kept in `kernel_cache` unless it is empty or "none"). Errors without a GPU runtime or a GPU.
// `own_kernels`: our kernels compete with cuDNN's in tuning (rt::ConvBuildOptions::own_kernels).
GpuContext make_gpu_context(const ExecConfig& config, const std::string& conv_engine, bool own_kernels,
                            const std::string& kernel_cache, bool verbose);

// `kind`: analytic | measured | auto (measured where there is a GPU runtime and a GPU, else analytic). The
// measured model times stages on `context()`'s GPU, asked for only when it is the one made.
Expected<std::unique_ptr<sched::CostModel>> make_cost_model(const ir::Graph& g, std::string kind,
                                                            const ExecConfig& config,
                                                            const sched::StageTimingRule& rule,
                                                            const std::function<GpuContext()>& context);

// Whether this build has the GPU runtime and the machine a GPU it can use.
bool gpu_present();

}  // namespace ios::engine
