#include "scheduler/dataflow.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace ios::sched {

namespace {

class AncestorSets {
 public:
  explicit AncestorSets(size_t n) : words_((n + 63) / 64), bits_(n * words_, 0) {}
  bool has(size_t k, size_t j) const { return (bits_[k * words_ + j / 64] >> (j % 64)) & 1; }
  // j and every ancestor of j become ancestors of k.
  void inherit(size_t k, size_t j) {
    for (size_t w = 0; w < words_; ++w) bits_[k * words_ + w] |= bits_[j * words_ + w];
    bits_[k * words_ + j / 64] |= uint64_t{1} << (j % 64);
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

bool any_overlap(const std::vector<Region>& a, const std::vector<Region>& b, const MemoryPlan& memory) {
  for (const Region& x : a)
    for (const Region& y : b)
      if (regions_overlap(x, y, memory)) return true;
  return false;
}

bool conflict(const LaunchAccess& a, const LaunchAccess& b, const MemoryPlan& memory) {
  return any_overlap(a.writes, b.reads, memory) || any_overlap(a.writes, b.writes, memory) ||
         any_overlap(a.reads, b.writes, memory);
}

}  // namespace

int DataflowGraph::edges() const {
  int n = 0;
  for (const auto& d : deps) n += int(d.size());
  return n;
}

bool regions_overlap(const Region& a, const Region& b, const MemoryPlan& memory) {
  if (a.buffer == b.buffer) return a.begin < b.end && b.begin < a.end;
  const size_t a0 = memory.buffer_offset[size_t(a.buffer)], b0 = memory.buffer_offset[size_t(b.buffer)];
  return a0 < b0 + memory.buffer_bytes[size_t(b.buffer)] && b0 < a0 + memory.buffer_bytes[size_t(a.buffer)];
}

std::vector<LaunchAccess> launch_accesses(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& memory) {
  std::vector<LaunchAccess> out(plan.steps.size());
  auto slice = [&](const ir::Value& v) {
    const Placement& p = memory.placement[size_t(v.node)];
    return Region{p.buffer, p.begin + v.begin, p.begin + v.end};
  };
  auto whole = [](int buffer) { return Region{buffer, 0, INT_MAX}; };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& st = plan.steps[i];
    const LaunchMemory& lm = memory.launch[i];
    if (st.kind != PlanStep::Kind::kLaunch || lm.elided) continue;
    LaunchAccess& a = out[i];
    for (ir::NodeId id : st.ops) {
      const ir::Node& n = g.node(id);
      a.writes.push_back(slice(ir::Value{id, 0, n.output_shape.c}));
      for (const ir::Term& term : n.inputs)
        for (const ir::Value& v : term) a.reads.push_back(slice(v));
    }
    if (lm.residual.node != ir::kNoNode) a.reads.push_back(slice(lm.residual));
    if (lm.input_scratch >= 0) a.writes.push_back(whole(lm.input_scratch));
    for (int b : lm.step_buffers) a.writes.push_back(whole(b));
  }
  return out;
}

Expected<DataflowGraph> dataflow_graph(const ir::Graph& g, const ExecutionPlan& plan, const MemoryPlan& memory,
                                       const std::vector<LaunchResources>& resources) {
  RETURN_ERROR_IF(!resources.empty() && resources.size() != plan.steps.size(), ErrorCode::kInvalidArgument,
                  "dataflow graph: resources for " + std::to_string(resources.size()) + " steps, plan has " +
                      std::to_string(plan.steps.size()));
  RETURN_ERROR_IF(memory.launch.size() != plan.steps.size(), ErrorCode::kInvalidArgument,
                  "dataflow graph: the memory plan was made for another plan");
  std::vector<int> launches;  // plan step of each launch
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == PlanStep::Kind::kLaunch) launches.push_back(int(i));
  RETURN_ERROR_IF(launches.size() > size_t(kMaxDataflowLaunches), ErrorCode::kInvalidArgument,
                  "dataflow execution supports up to " + std::to_string(kMaxDataflowLaunches) +
                      " launches, the plan has " + std::to_string(launches.size()) + " (use the staged mode)");
  const std::vector<LaunchAccess> access = launch_accesses(g, plan, memory);
  auto resource = [&](int step) { return resources.empty() ? LaunchResources{} : resources[size_t(step)]; };

  DataflowGraph d;
  d.deps.assign(plan.steps.size(), {});
  d.lane.assign(plan.steps.size(), -1);
  AncestorSets ancestors(launches.size());
  auto add_edge = [&](size_t k, size_t j) {
    d.deps[size_t(launches[k])].push_back(launches[j]);
    ancestors.inherit(k, j);
  };
  std::vector<size_t> lane_user;  // per lane: the launch that ran on it last
  for (size_t k = 0; k < launches.size(); ++k) {
    const int step = launches[k];
    // Latest first: an earlier conflict already implied by a kept edge is dropped (transitive reduction).
    for (size_t j = k; j-- > 0;) {
      if (ancestors.has(k, j)) continue;
      const int other = launches[j];
      const bool barrier =
          plan.steps[size_t(step)].barrier && plan.steps[size_t(other)].stage < plan.steps[size_t(step)].stage;
      if (barrier || conflict(access[size_t(other)], access[size_t(step)], memory)) add_edge(k, j);
    }
    if (resource(step).empty) continue;
    // Of the lanes free for it, the one with the largest workspace, so that workspaces grow least.
    int lane = -1;
    for (size_t l = 0; l < lane_user.size(); ++l)
      if (ancestors.has(k, lane_user[l]) && (lane < 0 || d.lane_bytes[l] > d.lane_bytes[size_t(lane)])) lane = int(l);
    if (lane < 0 && lane_user.size() < kMaxLanes) {
      lane = int(lane_user.size());
      lane_user.push_back(k);
      d.lane_bytes.push_back(0);
    }
    if (lane < 0) {  // every lane busy on a concurrent branch: wait for the one used earliest
      lane = int(std::min_element(lane_user.begin(), lane_user.end()) - lane_user.begin());
      add_edge(k, lane_user[size_t(lane)]);
    }
    lane_user[size_t(lane)] = k;
    d.lane_bytes[size_t(lane)] = std::max(d.lane_bytes[size_t(lane)], resource(step).workspace_bytes);
    d.lane[size_t(step)] = lane;
  }
  return d;
}

}  // namespace ios::sched
