// Schedules of the test graphs shared by the scheduler tests.
#pragma once

#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::sched::schedule_cases {

// The inception block's ops 1..9, one stage each, in id order.
inline Schedule one_op_stages(const ir::Graph& g) {
  Schedule s = sequential_schedule(g);
  s.blocks[0].stages.clear();
  for (ir::NodeId id = 1; id <= 9; ++id) s.blocks[0].stages.push_back(Stage{StageKind::kConcurrent, {{id}}});
  return s;
}

}  // namespace ios::sched::schedule_cases
