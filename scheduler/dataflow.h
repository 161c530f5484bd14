// The dependency graph of an execution plan without stream order: launch b follows launch a exactly
// when they touch overlapping memory and one of them writes it (read after write: the data edges;
// write after read / write: the edges the memory plan's reuse needs), or when b is a barrier launch
// (PlanStep::barrier) of a later stage than a, or (past kMaxLanes concurrent launches) when b takes a's
// lane. The runtime builds its CUDA graph from these edges in dataflow mode, so the GPU runs whatever is
// ready.
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
  bool empty = false;          // launches no work (a concatenation written in place): needs no lane
};

// Every launch that runs work runs on a lane: a stream of the runtime's context with a cuDNN handle, a
// cuBLAS handle and a workspace of its own. Launches that may overlap never share a lane: a workspace
// or a cuBLAS handle serves one launch at a time, and cuDNN orders the work of one handle across
// launches (its FFT convolutions wait for the handle's previous FFT convolution; with one handle for
// all, Inception V3's dataflow graph gained 278 such orderings and ran 14 % slower than staged).
// A lane is reused by a launch ordered after its last user; past this many lanes the one used earliest
// is reused with an edge added, trading concurrency for streams, handles and workspace memory.
constexpr size_t kMaxLanes = 32;

struct DataflowGraph {
  std::vector<std::vector<int>> deps;  // per plan step: the earlier launch steps it waits for (reduced)
  std::vector<int> lane;               // per plan step: -1, or the lane it runs on
  std::vector<size_t> lane_bytes;      // per lane: the largest workspace of its launches
  int edges() const;
};

// Dataflow plans of more launches are refused (the reduction keeps an ancestor set per launch).
constexpr int kMaxDataflowLaunches = 16384;

// Conflicting launch pairs, reduced to the edges not implied by others. Two launches share a lane only
// when one is an ancestor of the other; `resources` is per plan step (empty: no workspaces).
Expected<DataflowGraph> dataflow_graph(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& memory,
                                       const std::vector<LaunchResources>& resources = {});

}  // namespace ios::sched
