// Checks shared by the memory-plan tests: an independent reachability over a plan's steps, against which
// no two buffers that share memory may be live at once, and schedules and plans of the test graphs.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "scheduler/memory_plan.h"
#include "scheduler/merge.h"
#include "scheduler/policies.h"

namespace ios::sched::memory_checks {

// reach[a][b]: step b is ordered after step a by stream order and record -> wait edges.
inline std::vector<std::vector<bool>> reachability(const ExecutionPlan& p) {
  const size_t n = p.steps.size();
  std::vector<std::vector<size_t>> next(n);
  std::vector<int> last_on_stream(size_t(p.streams), -1);
  std::vector<int> record_of(size_t(p.events), -1);
  for (size_t i = 0; i < n; ++i) {
    const PlanStep& st = p.steps[i];
    if (last_on_stream[size_t(st.stream)] >= 0) next[size_t(last_on_stream[size_t(st.stream)])].push_back(i);
    last_on_stream[size_t(st.stream)] = int(i);
    if (st.kind == PlanStep::Kind::kRecord) record_of[size_t(st.event)] = int(i);
    if (st.kind == PlanStep::Kind::kWait && record_of[size_t(st.event)] >= 0)
      next[size_t(record_of[size_t(st.event)])].push_back(i);
  }
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t i = n; i-- > 0;)
    for (size_t j : next[i]) {
      reach[i][j] = true;
      for (size_t k = 0; k < n; ++k)
        if (reach[j][k]) reach[i][k] = true;
    }
  return reach;
}

inline std::vector<std::vector<int>> accesses(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m) {
  std::vector<std::vector<int>> acc(m.buffer_bytes.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].kind != PlanStep::Kind::kLaunch) continue;
    auto touch = [&](int b) {
      if (b >= 0) acc[size_t(b)].push_back(int(i));
    };
    for (ir::NodeId id : p.steps[i].ops) {
      touch(m.placement[size_t(id)].buffer);
      for (ir::NodeId q : g.producers(id)) touch(m.placement[size_t(q)].buffer);
    }
    touch(m.launch[i].input_scratch);
    for (int b : m.launch[i].step_buffers) touch(b);
    if (m.launch[i].residual.node != ir::kNoNode) touch(m.placement[size_t(m.launch[i].residual.node)].buffer);
  }
  return acc;
}

// Every pair of buffers whose regions overlap is ordered: all of one's accesses before the other's.
inline void expect_no_overlap_in_time(const ir::Graph& g, const ExecutionPlan& p, const MemoryPlan& m) {
  const auto reach = reachability(p);
  const auto acc = accesses(g, p, m);
  auto ordered = [&](size_t a, size_t b) {
    for (int x : acc[a])
      for (int y : acc[b])
        if (!reach[size_t(x)][size_t(y)]) return false;
    return true;
  };
  for (size_t a = 0; a < m.buffer_bytes.size(); ++a)
    for (size_t b = a + 1; b < m.buffer_bytes.size(); ++b) {
      const bool overlap = m.buffer_offset[a] < m.buffer_offset[b] + m.buffer_bytes[b] &&
                           m.buffer_offset[b] < m.buffer_offset[a] + m.buffer_bytes[a];
      if (!overlap) continue;
      EXPECT_FALSE(m.buffer_pinned[a] || m.buffer_pinned[b]) << g.name << ": a pinned buffer is shared";
      EXPECT_TRUE(ordered(a, b) || ordered(b, a))
          << g.name << ": buffers " << a << " and " << b << " share memory but may be live at the same time";
    }
}

inline Schedule schedule_for(const ir::Graph& g, Policy policy) {
  AnalyticCostModel model;
  OptimizeOptions o;
  o.policy = policy;
  o.max_part_size = 20;
  auto r = optimize(g, o, model);
  EXPECT_TRUE(r) << r.status().to_string();
  return r->schedule;
}

inline ExecutionPlan plan_for(const ir::Graph& g, Policy policy) {
  auto p = compile_plan(g, schedule_for(g, policy));
  EXPECT_TRUE(p);
  return *p;
}

// SqueezeNet's sequential schedule with each fire module's two expand convolutions merged, as IOS-Both
// chose on the H100: the merged launch writes its fire module's concatenation, which launches nothing
// (copying it cost two kernels per module, 12 % of the network at tf32).
inline Schedule with_adjacent_sibling_convs_merged(const ir::Graph& g, Schedule s, int& merges) {
  merges = 0;
  for (BlockSchedule& b : s.blocks) {
    std::vector<Stage> stages;
    for (const Stage& st : b.stages) {
      const bool after_one = !stages.empty() && stages.back().kind == StageKind::kConcurrent &&
                             stages.back().ops().size() == 1 && st.ops().size() == 1;
      const std::vector<ir::NodeId> pair =
          after_one ? std::vector<ir::NodeId>{stages.back().ops()[0], st.ops()[0]} : std::vector<ir::NodeId>{};
      if (after_one && can_merge(g, pair)) {
        stages.back() = Stage{StageKind::kMerge, {pair}};
        ++merges;
      } else {
        stages.push_back(st);
      }
    }
    b.stages = std::move(stages);
  }
  return s;
}

// The measured cost model times each stage alone: it must not gather a concatenation the whole network
// reads in place (or the other way round), or its figures time copies the network never makes.
// Whether the plan's launch of `op` (a concatenation) copies nothing: its producers write in place.
inline bool elided(const ExecutionPlan& plan, const MemoryPlan& m, ir::NodeId op) {
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == PlanStep::Kind::kLaunch && plan.steps[i].ops == std::vector<ir::NodeId>{op})
      return m.launch[i].elided;
  ADD_FAILURE() << "op " << op << " is not launched alone by the plan";
  return false;
}

}  // namespace ios::sched::memory_checks
