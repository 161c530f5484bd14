// Kernel activity as the GPU profiler reports it, attributed to plan steps, and what we derive from
// it: a Chrome-trace timeline, a utilization summary and Opara's per-op shared-memory profile.
// Plain C++ (no CUDA headers), so the analysis is tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "ir/graph.h"
#include "scheduler/opara.h"
#include "scheduler/plan.h"

namespace ios::rt {

struct KernelRecord {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device_stream = 0;  // the CUDA stream it ran on (graph replays use their own)
  int grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int registers = 0;
  int static_shared = 0, dynamic_shared = 0;
  int plan_step = -1;  // -1: could not be attributed
  int replay = 0;      // which inference of a profiled sequence it belongs to
};

struct Utilization {
  double span_us = 0;           // first kernel start to last kernel end, per inference
  double busy_us = 0;           // time with at least one kernel running
  double kernel_us = 0;         // summed kernel durations
  double busy_fraction = 0;     // busy / span
  double mean_concurrency = 0;  // kernel / busy: kernels running at once, on average while busy
  int max_concurrency = 0;
  int kernels = 0;
  std::vector<double> time_at_concurrency_us;  // [k]: time with exactly k kernels running
};

// Per inference (records of one replay), then averaged over replays.
Utilization summarize_utilization(const std::vector<KernelRecord>& records);

// One row per plan stream; each kernel named after its op(s), with stage, grid, block, registers and
// shared memory as arguments. Opens in Perfetto / chrome://tracing.
std::string chrome_trace_json(const ir::Graph& g, const sched::ExecutionPlan& plan,
                              const std::vector<KernelRecord>& records);

// Opara's profile: shared memory per block of each op's first kernel.
sched::ResourceProfile resource_profile_from(const ir::Graph& g, const sched::ExecutionPlan& plan,
                                             const std::vector<KernelRecord>& records);

}  // namespace ios::rt
