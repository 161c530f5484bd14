// Opara (Chen et al., IEEE TC 2025): Alg. 2 orders launches by alternating memory- and
// compute-intensive ready lists, each time taking the op whose first kernel needs the least shared
// memory; Alg. 1 then gives each op the stream of its first predecessor that has not yet handed its
// stream on, or a new stream. Ops are classified by type, not by name.
#pragma once

#include <map>

#include "scheduler/schedule.h"

namespace ios::sched {

// Shared memory per block (bytes) of each op's first kernel, as the GPU profiler measures it.
struct ResourceProfile {
  std::map<ir::NodeId, double> shared_memory_bytes;
  std::string source;  // "cupti", "estimate", ...
};

bool is_memory_intensive(const ir::Node& n);
// Documented estimate used without a GPU profile: convolutions and linear layers as an implicit-GEMM
// tile (4 KiB per 16 output channels, 8 to 48 KiB); memory-bound ops use none.
ResourceProfile estimate_resource_profile(const ir::Graph& g);

std::vector<ir::NodeId> opara_launch_order(const ir::Graph& g, const ResourceProfile& profile);
// Alg. 1 over a launch order; returns the stream of every node (the input node included).
std::vector<int> opara_streams(const ir::Graph& g, const std::vector<ir::NodeId>& launch_order);

StreamSchedule opara_schedule(const ir::Graph& g, const ResourceProfile& profile);

}  // namespace ios::sched
