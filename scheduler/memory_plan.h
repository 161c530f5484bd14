// Where every activation of an execution plan lives: logical buffers packed into one arena, reused
// by liveness that respects streams. A region is shared only when every access of the earlier buffer
// happens before every access of the later one through stream order and event waits, so concurrent
// groups never share memory. Concatenations cost no copy where they can: a producer writes straight
// into its channel slice of the concat's buffer (the concat itself launches nothing). A slice that is
// the sum of two values is written the same way by a convolution producing one of them, which adds the
// other (already complete) in its epilogue: the residual/bypass add costs no launch either. Ops that
// read a concatenation directly and whose producer lists extend one another (DenseNet's layers) share
// one buffer: each producer writes its slice once, each op reads its channel prefix in place.
#pragma once

#include <cstddef>
#include <vector>

#include "common/exec_config.h"
#include "ir/graph.h"
#include "scheduler/plan.h"

namespace ios::sched {

// A channel slice of a buffer: the node's channels are [begin, begin + c) of `channels`.
struct Placement {
  int buffer = -1;
  int channels = 0;
  int begin = 0;
  bool placed() const { return buffer >= 0; }
};

struct LaunchMemory {
  int input_scratch = -1;         // the op's gathered input (sums and concatenations it reads)
  std::vector<int> step_buffers;  // sequential ops: outputs of every step but the last
  bool elided = false;            // a concat whose producers all wrote in place: nothing to launch
  ir::Value residual;             // a fused sum: added to the op's output as it is written (none: node -1)
};

struct MemoryOptions {
  ExecConfig config;          // batch, element size and layout of every buffer
  bool reuse = true;          // off: every buffer its own region (the no-reuse baseline)
  bool keep_all = false;      // every node's output stays readable after a run (per-op tests)
  bool fuse_sums = true;      // a convolution may write a sum, adding the other value (off: the A/B baseline)
  bool share_concats = true;  // ops reading concatenations that extend one another share one buffer (off: A/B)
};

struct MemoryPlan {
  std::vector<size_t> buffer_bytes;   // per logical buffer
  std::vector<size_t> buffer_offset;  // in the arena
  std::vector<bool> buffer_pinned;    // graph input, external inputs, outputs: never shared
  std::vector<Placement> placement;   // per node; unplaced when the plan neither runs nor reads it
  std::vector<LaunchMemory> launch;   // per plan step
  size_t arena_bytes = 0;             // peak activation memory
  size_t no_reuse_bytes = 0;          // the same buffers without sharing
  int elided_concats = 0;             // concats whose producers all wrote in place
  int terms_in_place = 0;             // concat inputs written in place (of elided or partly copied concats)
  int concat_terms = 0;               // inputs of the concats (and sums) the plan tried to write in place,
                                      // and of the concatenations ops read directly
  int fused_sums = 0;                 // of those, sums of two values written by a convolution adding the other
  int shared_concat_buffers = 0;      // buffers whose channel prefixes ops read as concatenations (DenseNet)
};

// Whether an op reads its input straight from its producer's buffer (else it gathers into scratch).
bool reads_in_place(const ir::Graph& g, ir::NodeId op, const std::vector<Placement>& placement,
                    const ExecConfig& config);

// Whether a channel slice starts and steps on 16-byte boundaries, which vectorised and tensor-core
// convolution engines need of the tensors they write.
bool slice_aligned(const ExecConfig& config, int buffer_channels, int begin, const ir::Shape& shape);

// One level of the concatenations that take a value's whole output in place: the concatenation, and
// the first channel of the value in it.
struct ConcatLevel {
  ir::NodeId concat = ir::kNoNode;
  int begin = 0;
};
// From the graph alone, innermost first: the concatenation that, alone among the concatenations reading
// `value`, reads it once and whole as a term of its own; then the one reading that concatenation so; and
// so on. The whole network's plan writes the value into the outermost one's buffer where every slice on
// the way is aligned and the value is launched alone; a stage timed without those concatenations is
// given the same buffer (plan_memory), and its signature names the chain (stage_signature).
// `consumers`: g.consumers(), computed once by callers that ask for many values.
std::vector<ConcatLevel> concat_chain(const ir::Graph& g, ir::NodeId value,
                                      const std::vector<std::vector<ir::NodeId>>& consumers);

Expected<MemoryPlan> plan_memory(const ir::Graph& g, const ExecutionPlan& plan, const MemoryOptions& options);

}  // namespace ios::sched
