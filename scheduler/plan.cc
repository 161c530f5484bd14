#include "scheduler/plan.h"

#include <set>

#include "common/limits.h"

namespace ios::sched {

int ExecutionPlan::launches() const {
  int n = 0;
  for (const auto& s : steps) n += s.kind == PlanStep::Kind::kLaunch;
  return n;
}

namespace {

void add(ExecutionPlan& p, PlanStep::Kind kind, int stream, int event, std::vector<ir::NodeId> ops = {},
         int stage = -1) {
  p.steps.push_back(PlanStep{kind, stream, event, std::move(ops), stage});
}

}  // namespace

ExecutionPlan compile_stages(const std::vector<Stage>& stages) {
  ExecutionPlan p;
  std::set<int> active = {0};  // streams that did work since the last join
  int stage_index = 0;
  for (const Stage& st : stages) {
    const int width = static_cast<int>(st.groups.size());
    // Join: every side stream that ran in the previous stage hands its work to stream 0...
    for (int stream : active)
      if (stream != 0) {
        add(p, PlanStep::Kind::kRecord, stream, p.events);
        add(p, PlanStep::Kind::kWait, 0, p.events++);
      }
    // ... and fork: side streams of this stage start after everything before it.
    if (width > 1) {
      const int fork = p.events++;
      add(p, PlanStep::Kind::kRecord, 0, fork);
      for (int j = 1; j < width; ++j) add(p, PlanStep::Kind::kWait, j, fork);
    }
    active.clear();
    for (int j = 0; j < width; ++j) {
      active.insert(j);
      if (st.kind == StageKind::kMerge) {
        add(p, PlanStep::Kind::kLaunch, j, -1, st.groups[size_t(j)], stage_index);
      } else {
        for (ir::NodeId id : st.groups[size_t(j)]) add(p, PlanStep::Kind::kLaunch, j, -1, {id}, stage_index);
      }
    }
    p.streams = std::max(p.streams, width);
    ++stage_index;
  }
  for (int stream : active)
    if (stream != 0) {
      add(p, PlanStep::Kind::kRecord, stream, p.events);
      add(p, PlanStep::Kind::kWait, 0, p.events++);
    }
  return p;
}

namespace {

ExecutionPlan compile_streams(const ir::Graph& g, const StreamSchedule& ss) {
  ExecutionPlan p;
  const auto consumers = g.consumers();
  const int main_stream = ss.stream_of[0];
  auto remap = [&](int stream) { return stream == main_stream ? 0 : (stream == 0 ? main_stream : stream); };
  std::vector<int> event_of(g.nodes.size(), -1);
  std::set<int> used;
  int streams = 1;
  for (int st : ss.stream_of) streams = std::max(streams, st + 1);
  p.streams = streams;
  // Fork: every stream that does not begin with the input waits for the main stream's start.
  const int fork = p.events++;
  add(p, PlanStep::Kind::kRecord, 0, fork);
  std::set<int> forked = {0};
  for (ir::NodeId v : ss.launch_order) {
    const int stream = remap(ss.stream_of[size_t(v)]);
    if (forked.insert(stream).second) add(p, PlanStep::Kind::kWait, stream, fork);
    std::set<int> waited;
    for (ir::NodeId u : g.producers(v))
      if (remap(ss.stream_of[size_t(u)]) != stream && event_of[size_t(u)] >= 0 &&
          waited.insert(event_of[size_t(u)]).second)
        add(p, PlanStep::Kind::kWait, stream, event_of[size_t(u)]);
    add(p, PlanStep::Kind::kLaunch, stream, -1, {v});
    used.insert(stream);
    bool cross = false;
    for (ir::NodeId c : consumers[size_t(v)]) cross |= remap(ss.stream_of[size_t(c)]) != stream;
    if (cross) {
      event_of[size_t(v)] = p.events++;
      add(p, PlanStep::Kind::kRecord, stream, event_of[size_t(v)]);
    }
  }
  // Join every stream back into the main stream.
  for (int stream : used)
    if (stream != 0) {
      add(p, PlanStep::Kind::kRecord, stream, p.events);
      add(p, PlanStep::Kind::kWait, 0, p.events++);
    }
  return p;
}

}  // namespace

Status validate_plan(const ExecutionPlan& p) {
  RETURN_ERROR_IF(p.streams < 1 || p.streams > limits::kMaxStreams || p.events < 0, ErrorCode::kInvalidSchedule,
                  "plan: " + std::to_string(p.streams) + " streams and " + std::to_string(p.events) + " events");
  std::vector<bool> recorded(size_t(p.events), false);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& st = p.steps[i];
    const std::string where = "plan step " + std::to_string(i);
    RETURN_ERROR_IF(st.stream < 0 || st.stream >= p.streams, ErrorCode::kInvalidSchedule,
                    where + ": stream " + std::to_string(st.stream) + " out of range");
    if (st.kind == PlanStep::Kind::kLaunch) {
      RETURN_ERROR_IF(st.ops.empty(), ErrorCode::kInvalidSchedule, where + ": a launch without ops");
      continue;
    }
    RETURN_ERROR_IF(st.event < 0 || st.event >= p.events, ErrorCode::kInvalidSchedule,
                    where + ": event " + std::to_string(st.event) + " out of range");
    if (st.kind == PlanStep::Kind::kRecord) recorded[size_t(st.event)] = true;
    RETURN_ERROR_IF(st.kind == PlanStep::Kind::kWait && !recorded[size_t(st.event)], ErrorCode::kInvalidSchedule,
                    where + ": waits on event " + std::to_string(st.event) + " before it is recorded");
  }
  return Status::ok();
}

Expected<ExecutionPlan> compile_plan(const ir::Graph& g, const Schedule& s) {
  RETURN_IF_ERROR(validate(g, s));
  ExecutionPlan plan;
  if (s.is_stream_level()) {
    plan = compile_streams(g, *s.streams);
  } else {
    std::vector<Stage> stages;
    for (const BlockSchedule& b : s.blocks) stages.insert(stages.end(), b.stages.begin(), b.stages.end());
    plan = compile_stages(stages);
  }
  RETURN_IF_ERROR(validate_plan(plan));
  return plan;
}

}  // namespace ios::sched
