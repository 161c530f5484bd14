#include "scheduler/plan.h"

#include <algorithm>
#include <set>

#include "common/limits.h"
#include "scheduler/memory_plan.h"

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

ExecutionPlan compile_stages_without(const std::vector<Stage>& stages, size_t left_out) {
  std::vector<Stage> kept;
  for (size_t i = 0; i < stages.size(); ++i)
    if (i != left_out) kept.push_back(stages[i]);
  return compile_stages(kept);
}

namespace {

struct Launch {
  int stream = 0;
  std::vector<ir::NodeId> ops;
  int stage = -1;
  bool barrier = false;  // PlanStep::barrier
};

// Every stream that ran since the plan's start joins into stream 0, which forks `fork` for the streams
// to wait for before their next launch: a barrier in the plan's streams and events.
void join_all(ExecutionPlan& p, const std::set<int>& used, std::vector<int>& pending_fork) {
  for (int stream : used)
    if (stream != 0) {
      add(p, PlanStep::Kind::kRecord, stream, p.events);
      add(p, PlanStep::Kind::kWait, 0, p.events++);
    }
  const int fork = p.events++;
  add(p, PlanStep::Kind::kRecord, 0, fork);
  std::fill(pending_fork.begin(), pending_fork.end(), fork);
  pending_fork[0] = -1;
}

// Launches in the given order on their streams, each waiting (through an event) only for the launches
// on other streams that produce what it reads, and at a barrier for everything before it; every stream
// forks from and joins into stream 0.
ExecutionPlan compile_launches(const ir::Graph& g, const std::vector<Launch>& launches) {
  ExecutionPlan p;
  std::vector<int> stream_of(g.nodes.size(), -1);
  for (const Launch& l : launches) {
    p.streams = std::max(p.streams, l.stream + 1);
    for (ir::NodeId id : l.ops) stream_of[size_t(id)] = l.stream;
  }
  const auto consumers = g.consumers();
  std::vector<int> event_of(g.nodes.size(), -1);
  std::set<int> used;
  // Fork: a stream whose first launch reads only the input still starts after the main stream does.
  const int fork = p.events++;
  add(p, PlanStep::Kind::kRecord, 0, fork);
  std::set<int> forked = {0};
  std::vector<int> pending_fork(size_t(p.streams), -1);
  int barrier_stage = -1;
  for (const Launch& l : launches) {
    if (l.barrier && l.stage != barrier_stage) {
      barrier_stage = l.stage;
      join_all(p, used, pending_fork);
    }
    if (forked.insert(l.stream).second) add(p, PlanStep::Kind::kWait, l.stream, fork);
    if (int& f = pending_fork[size_t(l.stream)]; f >= 0) {
      add(p, PlanStep::Kind::kWait, l.stream, f);
      f = -1;
    }
    std::set<int> waited;
    for (ir::NodeId v : l.ops)
      for (ir::NodeId u : g.producers(v))
        if (stream_of[size_t(u)] != l.stream && event_of[size_t(u)] >= 0 && waited.insert(event_of[size_t(u)]).second)
          add(p, PlanStep::Kind::kWait, l.stream, event_of[size_t(u)]);
    add(p, PlanStep::Kind::kLaunch, l.stream, -1, l.ops, l.stage);
    p.steps.back().barrier = l.barrier;
    used.insert(l.stream);
    bool cross = false;
    for (ir::NodeId v : l.ops)
      for (ir::NodeId c : consumers[size_t(v)]) cross |= stream_of[size_t(c)] != l.stream;
    if (cross) {
      const int event = p.events++;
      for (ir::NodeId v : l.ops) event_of[size_t(v)] = event;
      add(p, PlanStep::Kind::kRecord, l.stream, event);
    }
  }
  for (int stream : used)
    if (stream != 0) {
      add(p, PlanStep::Kind::kRecord, stream, p.events);
      add(p, PlanStep::Kind::kWait, 0, p.events++);
    }
  return p;
}

// The schedule's main stream (the input's) becomes stream 0.
ExecutionPlan compile_streams(const ir::Graph& g, const StreamSchedule& ss) {
  const int main_stream = ss.stream_of[0];
  auto remap = [&](int stream) { return stream == main_stream ? 0 : (stream == 0 ? main_stream : stream); };
  std::vector<Launch> launches;
  for (ir::NodeId v : ss.launch_order) launches.push_back(Launch{remap(ss.stream_of[size_t(v)]), {v}});
  return compile_launches(g, launches);
}

// A staged schedule without its barriers but those listed (increasing stage indices): group j of every
// stage on stream j, merges as one launch.
ExecutionPlan compile_dataflow(const ir::Graph& g, const std::vector<Stage>& stages, const std::vector<int>& barriers) {
  std::vector<Launch> launches;
  auto next_barrier = barriers.begin();
  for (size_t k = 0; k < stages.size(); ++k) {
    const bool barrier = next_barrier != barriers.end() && *next_barrier == int(k);
    next_barrier += barrier;
    for (size_t j = 0; j < stages[k].groups.size(); ++j) {
      const auto& group = stages[k].groups[j];
      if (stages[k].kind == StageKind::kMerge) {
        launches.push_back(Launch{int(j), group, int(k), barrier});
      } else {
        for (ir::NodeId id : group) launches.push_back(Launch{int(j), {id}, int(k), barrier});
      }
    }
  }
  return compile_launches(g, launches);
}

// `p` (ending on stream 0, every stream joined) followed by the concatenations outside it that copy a
// merged launch's outputs in the network (compile_timed_stages).
ExecutionPlan with_merged_concat_copies(const ir::Graph& g, ExecutionPlan p) {
  std::vector<bool> launched(g.nodes.size(), false);
  bool merges = false;
  int last_stage = -1;
  for (const PlanStep& st : p.steps) {
    if (st.kind != PlanStep::Kind::kLaunch) continue;
    for (ir::NodeId id : st.ops) launched[size_t(id)] = true;
    merges |= st.ops.size() > 1;
    last_stage = std::max(last_stage, st.stage);
  }
  if (!merges) return p;  // the common case: no consumer lists to build
  const std::vector<std::vector<ir::NodeId>> consumers = g.consumers();
  std::set<ir::NodeId> concats;
  for (const PlanStep& st : p.steps)
    if (st.kind == PlanStep::Kind::kLaunch && st.ops.size() > 1)
      for (ir::NodeId id : st.ops)
        if (const std::vector<ConcatLevel> chain = concat_chain(g, id, consumers);
            !chain.empty() && !launched[size_t(chain[0].concat)])
          concats.insert(chain[0].concat);
  for (ir::NodeId concat : concats) add(p, PlanStep::Kind::kLaunch, 0, -1, {concat}, last_stage);
  return p;
}

}  // namespace

bool reads_merged_slice(const ir::Node& reader) { return !reader.is<ir::IdentityAttrs>(); }

std::vector<ir::NodeId> merged_output_readers(const ir::Graph& g, const Stage& stage) {
  if (stage.kind != StageKind::kMerge) return {};
  const std::vector<std::vector<ir::NodeId>> consumers = g.consumers();
  std::set<ir::NodeId> readers;
  for (ir::NodeId id : stage.ops())
    for (ir::NodeId c : consumers[size_t(id)])
      if (reads_merged_slice(g.node(c))) readers.insert(c);
  return {readers.begin(), readers.end()};
}

ExecutionPlan compile_merge_with_readers(const ir::Graph& g, const Stage& merge,
                                         const std::vector<ir::NodeId>& readers) {
  ExecutionPlan plan = compile_timed_stages(g, {merge}, ExecMode::kStaged);
  for (ir::NodeId r : readers) add(plan, PlanStep::Kind::kLaunch, 0, -1, {r}, 0);
  return plan;
}

ExecutionPlan compile_timed_stages(const ir::Graph& g, const std::vector<Stage>& stages, ExecMode mode) {
  ExecutionPlan plan = with_merged_concat_copies(
      g, mode == ExecMode::kStaged ? compile_stages(stages) : compile_dataflow(g, stages, {}));
  plan.mode = mode;
  return plan;
}

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

Expected<ExecMode> parse_exec_mode(const std::string& name) {
  if (name == "staged") return ExecMode::kStaged;
  if (name == "dataflow") return ExecMode::kDataflow;
  if (name == "dataflow-ordered") return ExecMode::kDataflowOrdered;
  return error(ErrorCode::kInvalidArgument,
               "execution mode must be staged, dataflow or dataflow-ordered, got '" + name + "'");
}

const char* exec_mode_name(ExecMode m) {
  switch (m) {
    case ExecMode::kStaged:
      return "staged";
    case ExecMode::kDataflow:
      return "dataflow";
    case ExecMode::kDataflowOrdered:
      return "dataflow-ordered";
  }
  return "?";
}

Expected<ExecutionPlan> compile_plan(const ir::Graph& g, const Schedule& s, ExecMode mode) {
  RETURN_IF_ERROR(validate(g, s));
  ExecutionPlan plan;
  if (s.is_stream_level()) {
    plan = compile_streams(g, *s.streams);
  } else {
    std::vector<Stage> stages;
    for (const BlockSchedule& b : s.blocks) stages.insert(stages.end(), b.stages.begin(), b.stages.end());
    plan = mode == ExecMode::kStaged ? compile_stages(stages) : compile_dataflow(g, stages, s.dataflow_barriers);
  }
  plan.mode = mode;
  RETURN_IF_ERROR(validate_plan(plan));
  return plan;
}

std::string prefetch_suffix(int ahead) {
  if (ahead <= 0) return "";
  return ahead == 1 ? "+prefetch" : "+prefetch" + std::to_string(ahead);
}

Expected<PrefetchVariant> split_prefetch_suffix(const std::string& name) {
  const std::string suffix = "+prefetch";
  const size_t at = name.find(suffix);
  if (at == std::string::npos) return PrefetchVariant{name, 0};
  const std::string digits = name.substr(at + suffix.size());
  const bool number = !digits.empty() && digits.size() <= 2 &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  RETURN_ERROR_IF(!digits.empty() && (!number || std::stoi(digits) < 1), ErrorCode::kInvalidArgument,
                  "'" + name + "': +prefetch is followed by nothing or by how many stages ahead (1-99)");
  return PrefetchVariant{name.substr(0, at), digits.empty() ? 1 : std::stoi(digits)};
}

}  // namespace ios::sched
