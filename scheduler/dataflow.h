// The dependency graph of an execution plan without stream order: launch b follows launch a exactly
// when they touch overlapping memory and one of them writes it (read after write: the data edges;
// write after read / write: the edges the memory plan's reuse needs), or when b is a barrier launch
// (PlanStep::barrier) of a later stage than a. The runtime builds its CUDA
// graph from these edges in dataflow mode, so the GPU runs whatever is ready.
#pragma once

#include <cstddef>
#include <vector>

#include "ir/graph.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"

namespace ios::sched {

// Channels [begin, end) of one memory-plan buffer.
struct Region {
  int buffer = -1;
  int begin = 0, end = 0;
};

struct LaunchAccess {
  std::vector<Region> reads, writes;
};

// What each plan step reads and writes (empty for records, waits and elided concatenations).
std::vector<LaunchAccess> launch_accesses(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& memory);

// Whether two regions share bytes: channel ranges of one buffer, or arena ranges of two buffers.
bool regions_overlap(const Region& a, const Region& b, const MemoryPlan& memory);

// Per plan step, what the runtime adds to the memory plan's accesses.
struct LaunchResources {
  size_t workspace_bytes = 0;  // scratch of its own while it runs (convolution workspace)
  bool serial = false;         // must not overlap another serial launch (they share one cuBLAS handle)
};

struct DataflowGraph {
  std::vector<std::vector<int>> deps;  // per plan step: the earlier launch steps it waits for (reduced)
  std::vector<int> workspace_slot;     // per plan step: -1, or the workspace it uses
  std::vector<size_t> slot_bytes;      // per workspace slot: the largest workspace of its launches
  int edges() const;
};

// Dataflow plans of more launches are refused (the reduction keeps an ancestor set per launch).
constexpr int kMaxDataflowLaunches = 16384;

// Conflicting launch pairs, reduced to the edges not implied by others. Two launches share a workspace
// slot only when one is an ancestor of the other; `resources` is per plan step (empty: none).
Expected<DataflowGraph> dataflow_graph(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& memory,
                                       const std::vector<LaunchResources>& resources = {});

}  // namespace ios::sched
