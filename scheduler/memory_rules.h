// What the memory plan asks of ops and plans: which ops may write a strided channel slice or read their
// input in place, which concatenations a value is written into, when one plan step happens before another.
// Internal to scheduler/: memory_plan.cc's passes use it; other code includes memory_plan.h.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "scheduler/memory_plan.h"

namespace ios::sched::memory_rules {

constexpr size_t kAlignment = 256;
inline size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Vector clocks over streams: step a happens before step b iff b's stream has seen a's position on
// a's stream, by stream order or by waiting on an event recorded after a.
class HappensBefore {
 public:
  explicit HappensBefore(const ExecutionPlan& p)
      : stream_(p.steps.size()), seq_(p.steps.size()), clock_(p.steps.size()) {
    std::vector<std::vector<int>> current(size_t(p.streams), std::vector<int>(size_t(p.streams), 0));
    std::vector<std::vector<int>> recorded(size_t(p.events), std::vector<int>(size_t(p.streams), 0));
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const PlanStep& st = p.steps[i];
      auto& clock = current[size_t(st.stream)];
      seq_[i] = ++clock[size_t(st.stream)];
      stream_[i] = st.stream;
      if (st.kind == PlanStep::Kind::kRecord) recorded[size_t(st.event)] = clock;
      if (st.kind == PlanStep::Kind::kWait)
        for (size_t s = 0; s < clock.size(); ++s) clock[s] = std::max(clock[s], recorded[size_t(st.event)][s]);
      clock_[i] = clock;
    }
  }
  bool before(int a, int b) const { return a != b && clock_[size_t(b)][size_t(stream_[size_t(a)])] >= seq_[size_t(a)]; }

 private:
  std::vector<int> stream_, seq_;
  std::vector<std::vector<int>> clock_;
};

size_t tensor_bytes(const ir::Shape& s, const ExecConfig& c);

// Ops that can write their output into a channel slice of a larger buffer (strided descriptors).
bool writes_strided(const ir::Node& n);

bool ends_with_conv(const ir::Node& n);

// Whether `writer` may write its output as the channel slice [begin, begin + c) of a buffer with
// `buffer_channels` channels and `shape`'s pixels: aligned as vectorised and tensor-core engines need,
// and, where the config has convolutions copy (ConcatWrites::kConvCopy), dense for a convolution
// (cuDNN wraps a strided output in copy kernels; our own kernels write strides directly).
// `conv`: the writer ends with a convolution; `channels`: how many it writes.
bool may_write_channels(bool conv, int channels, const ExecConfig& config, int buffer_channels, int begin,
                        const ir::Shape& shape);

bool may_write_slice(const ir::Node& writer, const ExecConfig& config, int buffer_channels, int begin,
                     const ir::Shape& shape);

// True when `reader` is the only op that reads `value` (a stage's plan is placed per stage, hundreds of
// thousands of times in a measured search: no consumer lists of the whole graph).
bool read_only_by(const ir::Graph& g, ir::NodeId value, ir::NodeId reader);

// The producers of a concatenation an op reads directly (no Identity node between: DenseNet's layers
// read the block input and every earlier layer's output), each term one whole value of a distinct
// producer; nullopt for any other input.
std::optional<std::vector<ir::NodeId>> concat_read(const ir::Graph& g, const ir::Node& n);

// Producer lists of the concatenations ops read directly, grouped so that one list extends every
// list of its group (DenseNet: layer k reads x0, y1 .. y(k-1); the transition reads them all). A
// producer joins one group at one position; a list sharing a producer with a longer one joins no
// group (it reads in place when it is a prefix of that group, else it gathers as before).
std::vector<std::vector<ir::NodeId>> prefix_groups(const ir::Graph& g, const ExecutionPlan& plan);

int channels_of(const ir::Graph& g, const std::vector<ir::NodeId>& producers);

// The longest prefix of a group whose slices are all aligned in a buffer holding just that prefix
// (the buffer's channel count sets the strides, so shortening the group can realign it).
size_t aligned_prefix(const ir::Graph& g, std::vector<ir::NodeId> list, const ExecConfig& config);

// Per op of the plan: the outermost concatenation outside the plan whose buffer the network writes its
// output into, and its first channel there (a timed stage's branches, concatenated in a later stage);
// nullopt for the rest. Merged launches write their own buffer. Readers are found by scanning the nodes
// after each value: a measured search plans every stage it times, and a consumer list of the whole graph
// per plan cost more than the rest of the plan.
std::vector<std::optional<ConcatLevel>> outside_concat_slices(const ir::Graph& g, const ExecutionPlan& plan,
                                                              const std::vector<int>& step_of,
                                                              const ExecConfig& config);

}  // namespace ios::sched::memory_rules
