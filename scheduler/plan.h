// The execution plan the runtime consumes: an ordered list of steps, each a kernel launch on a
// stream, an event record or an event wait. Staged (IOS) and stream-level (Opara) schedules both
// compile to it; a stage boundary is an event join, never a device sync. In dataflow mode there are
// no stage boundaries: a launch waits only for the launches producing what it reads.
#pragma once

#include <string>
#include <vector>

#include "scheduler/schedule.h"

namespace ios::sched {

struct PlanStep {
  enum class Kind : uint8_t { kLaunch, kRecord, kWait };
  Kind kind = Kind::kLaunch;
  int stream = 0;
  int event = -1;               // record / wait
  std::vector<ir::NodeId> ops;  // launch: one op, or the convolutions of a merge
  int stage = -1;               // global stage index (staged schedules), for traces
  bool barrier = false;         // dataflow: also waits for every launch of the stages before this one
};

// Staged: every op of a stage waits for the whole previous stage (IOS). Dataflow: a launch waits only
// for its producers, and the runtime's CUDA graph keeps exactly the data and memory-reuse edges.
// Dataflow-ordered: the same plan, its CUDA graph also keeping the order of launches on each stream.
enum class ExecMode : uint8_t { kStaged, kDataflow, kDataflowOrdered };
Expected<ExecMode> parse_exec_mode(const std::string& name);  // "staged" | "dataflow" | "dataflow-ordered"
const char* exec_mode_name(ExecMode m);

// How ios run and exp_latency name a prefetching CUDA graph: "dataflow+prefetch" (one stage ahead),
// "staged+prefetch3" (ExecutorOptions::prefetch_ahead 3); the engine names its execution variants so.
std::string prefetch_suffix(int ahead);  // "" for 0
struct PrefetchVariant {
  std::string base;  // what precedes the suffix
  int ahead = 0;
};
Expected<PrefetchVariant> split_prefetch_suffix(const std::string& name);

struct ExecutionPlan {
  ExecMode mode = ExecMode::kStaged;
  int streams = 1;
  int events = 0;
  std::vector<PlanStep> steps;
  int launches() const;
};

// A staged plan of the given stages, in order (compile_timed_stages adds what a stage timed alone misses).
ExecutionPlan compile_stages(const std::vector<Stage>& stages);
// The staged plan of every stage but `left_out`: the network less one stage, whose latency taken off the
// whole network's is that stage's cost inside it (rt::time_stage_marginals).
ExecutionPlan compile_stages_without(const std::vector<Stage>& stages, size_t left_out);
// What a cost model times for `stages` taken out of a network: their staged plan (a stage), or in
// dataflow mode the same stages without barriers between them (a segment, Schedule::dataflow_barriers);
// then, on stream 0, every concatenation outside them that takes a merged launch's output whole
// (concat_chain's innermost). The network writes such outputs into the concatenation only where the
// merge's outputs are consecutive terms of it, in its order (plan_memory); otherwise the concatenation
// copies them, which the concatenation's own stage, timed with its producers outside, counts as written
// in place. Launched here, plan_memory elides it exactly where the network does, so the copy is charged
// to the merge that makes it (Inception V3's merged 1x1 convolutions: 7 copies, 14 us at tf32 on the H100).
ExecutionPlan compile_timed_stages(const ir::Graph& g, const std::vector<Stage>& stages, ExecMode mode);
// Whether `reader`, given a merged launch's output, reads its channel slice of the merged buffer as it is:
// every op but concatenations and sums (compile_timed_stages times what those do with it).
bool reads_merged_slice(const ir::Node& reader);
// The ops outside a merge stage that read its outputs, concatenations and sums aside (compile_timed_stages
// covers those): they read a channel slice of the merged launch's buffer, strided in NHWC, which cuDNN's
// precompiled engines first copy (nhwcSliceCKernel, 1.4-2 us each on the H100) and which their own stage,
// timed alone, reads as a tensor of its own. Empty for other stages.
std::vector<ir::NodeId> merged_output_readers(const ir::Graph& g, const Stage& stage);
// The merge stage as compile_timed_stages times it, then `readers` on stream 0, each reading its slice as
// inside the network: what the merge costs its readers is this plan less the merge and the readers alone.
ExecutionPlan compile_merge_with_readers(const ir::Graph& g, const Stage& merge,
                                         const std::vector<ir::NodeId>& readers);

// Every stream and event index in range, every wait on an event recorded earlier, every launch with
// ops: what the memory plan and the runtime rely on.
Status validate_plan(const ExecutionPlan& p);

// Stream 0 is the main stream: the plan starts and ends there. Stream-level schedules have no stages,
// so both modes give them the same steps.
Expected<ExecutionPlan> compile_plan(const ir::Graph& g, const Schedule& s, ExecMode mode = ExecMode::kStaged);

}  // namespace ios::sched
