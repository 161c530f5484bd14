// Schedules: per block, a list of stages. A stage either merges sibling convolutions into one
// (IOS's "merge") or runs groups concurrently, each group a chain of ops on one stream.
// Stream-level schedules (Opara) assign every op a stream and a launch order instead.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::sched {

enum class StageKind : uint8_t { kConcurrent, kMerge };

struct Stage {
  StageKind kind = StageKind::kConcurrent;
  // Concurrent: groups run side by side, the ops of a group in order. Merge: one group, the
  // convolutions merged into one.
  std::vector<std::vector<ir::NodeId>> groups;

  std::vector<ir::NodeId> ops() const;
  bool operator==(const Stage&) const = default;
};

struct BlockSchedule {
  std::vector<Stage> stages;
  bool operator==(const BlockSchedule&) const = default;
};

// Opara-style: launch order over the whole graph and a stream per op.
struct StreamSchedule {
  std::vector<ir::NodeId> launch_order;  // every op once, topological
  std::vector<int> stream_of;            // indexed by node id; the input node included
  bool operator==(const StreamSchedule&) const = default;
};

struct ScheduleMeta {
  std::string policy;
  int r = 0, s = 0, max_part_size = 0;
  int batch = 1;
  std::string precision = "fp32";  // ExecConfig::precision()
  std::string layout = "nchw";     // layout_name()
  std::string cost_model;
  std::string device;
  std::string library_versions;
  double latency_ms = 0;           // what the cost model (or a measurement) gave for the whole schedule
  double dataflow_latency_ms = 0;  // the same for dataflow execution with Schedule::dataflow_barriers (0: not placed)
  double search_seconds = 0;       // wall time of the optimisation
  std::vector<std::string> notes;
};

struct Schedule {
  std::vector<BlockSchedule> blocks;      // staged schedules
  std::optional<StreamSchedule> streams;  // stream-level schedules (then `blocks` is empty)
  // Dataflow execution of a staged schedule: the stages (indices over all blocks, increasing, from 1) whose
  // launches still wait for every launch of the stages before them (place_barriers' choice). Empty: a
  // launch waits only for what it reads. Staged execution has a barrier before every stage anyway.
  std::vector<int> dataflow_barriers;
  ScheduleMeta meta;

  bool is_stream_level() const { return streams.has_value(); }
  int stage_count() const;
};

// Checks every rule: each op exactly once, no op before its producers, concurrent groups
// independent, merged ops legal to merge; for stream schedules, a topological launch order.
// Errors name the block, the stage, the op and the rule.
Status validate(const ir::Graph& g, const Schedule& s);

// IOS's schedule shape: the graph file with per-block "stages" (groups of op names), plus
// "stage_kinds" and a "schedule" object of metadata (and "streams" for stream-level schedules).
nlohmann::json schedule_to_json(const ir::Graph& g, const Schedule& s);
Expected<Schedule> schedule_from_json(const ir::Graph& g, const nlohmann::json& j);
Status save_schedule(const ir::Graph& g, const Schedule& s, const std::string& path);
// Reads the graph and the schedule from one file.
struct LoadedSchedule {
  ir::Graph graph;
  Schedule schedule;
};
Expected<LoadedSchedule> load_schedule(const std::string& path);

// A readable listing: one line per stage ("merge" or "parallel", groups in brackets, ops by name and
// kind), or per stream for stream-level schedules, after a header with the policy and predicted latency.
std::string describe_schedule(const ir::Graph& g, const Schedule& s);
// Reads only the schedule of a file, checked against a graph the caller already has.
Expected<Schedule> load_schedule_for(const ir::Graph& g, const std::string& path);

}  // namespace ios::sched
