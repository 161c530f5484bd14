// An engine plan file: everything a process needs to run a built engine without searching or tuning again
// (the graph, its weights, the schedule, how it executes, each convolution's tuned engine) and what it was
// built for (GPU and library versions, which the kernel choices are only valid on). Plain C++: written and
// read on any machine, tested on the CPU.
//
// Layout: the 8 bytes "IOSPLAN1", the header's length (uint64, little-endian), the header (JSON), then the
// weights as ir::write_weights writes them.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "common/exec_config.h"
#include "ir/graph.h"
#include "ir/weights.h"
#include "runtime/kernel_cache.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"

namespace ios::engine {

// How the schedule executes: the variant the builder kept, and the executor's switches.
struct Execution {
  sched::ExecMode mode = sched::ExecMode::kStaged;
  int prefetch_ahead = 0;  // stages ahead whose weights a CUDA graph prefetches (0: none)
  bool cuda_graph = true;  // the plan captured into one CUDA graph
  bool fused_sums = true;  // sums fused into the convolutions' epilogues (memory plan)
  bool shared_concats = true;
  bool operator==(const Execution&) const = default;
};

// What the plan was built with and for. An empty environment: built without a GPU (no kernel choices); it
// runs on any GPU, tuning there.
struct BuildInfo {
  std::string environment;           // rt::kernel_environment() of the GPU that tuned the kernels
  std::string device;                // rt::device_description(), for reports
  std::string libraries;             // rt::library_versions(), for reports
  std::string conv_engine = "auto";  // the --conv-engine setting the kernel-cache keys were made with
  bool own_kernels = false;          // and --own-kernels (absent: off, cuDNN-only keys)
  std::string schedule_label;        // "IOS-Both", "Sequential": the policy that made the schedule
  std::string ios_version;           // the version of the program that built it
  bool operator==(const BuildInfo&) const = default;
};

struct EnginePlan {
  ir::Graph graph;
  // Never null. The plans of one file of batch buckets share it: one copy in memory however many plans.
  std::shared_ptr<const ir::Weights> weights;
  sched::Schedule schedule;
  ExecConfig config;  // precision, layout, batch, how concatenations are written
  Execution execution;
  std::map<std::string, rt::KernelChoice> kernels;  // by kernel-cache key
  BuildInfo info;
};

// Written atomically: a failed write leaves any file at `path` as it was.
Status save_engine_plan(const EnginePlan& plan, const std::string& path);
// Every part checked (the graph and schedule as their own files are, the weights against the graph, each
// kernel choice's fields); errors name the file and the part.
Expected<EnginePlan> load_engine_plan(const std::string& path);
// The same from a stream; `path` names it in errors.
Expected<EnginePlan> read_engine_plan(std::istream& in, const std::string& path);

// A file of several plans of one network, one per batch size (engine/buckets.h): the 8 bytes "IOSBKTS2",
// their count (uint32, little-endian), then each plan as save_engine_plan writes it, except that a later plan
// with the first plan's graph and weights says so in its header ("weights") and holds no weights of its own.
// "IOSBKTS1" files, every plan with its weights, still read.
inline constexpr int kMaxPlansPerFile = 64;
Status save_engine_plans(const std::vector<const EnginePlan*>& plans, const std::string& path);
Expected<std::vector<EnginePlan>> load_engine_plans(const std::string& path);
Expected<std::vector<EnginePlan>> read_engine_plans(std::istream& in, const std::string& path);

enum class PlanFileKind : uint8_t { kEngine, kBuckets };
// Which of the two a file is, from its first bytes; an error for anything else.
Expected<PlanFileKind> plan_file_kind(const std::string& path);

}  // namespace ios::engine
