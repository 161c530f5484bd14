#include "scheduler/schedule.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "common/json_fields.h"
#include "common/limits.h"
#include "ir/json_io.h"
#include "scheduler/merge.h"
#include "scheduler/policies.h"

namespace ios::sched {

using nlohmann::json;

std::vector<ir::NodeId> Stage::ops() const {
  std::vector<ir::NodeId> out;
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}

int Schedule::stage_count() const {
  int n = 0;
  for (const auto& b : blocks) n += static_cast<int>(b.stages.size());
  return n;
}

namespace {

std::string op_name(const ir::Graph& g, ir::NodeId id) { return "op '" + g.node(id).name + "'"; }

Status validate_block(const ir::Graph& g, size_t b, const BlockSchedule& bs) {
  const ir::Block& blk = g.blocks[b];
  const std::string where = "block " + std::to_string(b);
  auto fail = [&](const std::string& msg) { return error(ErrorCode::kInvalidSchedule, where + ": " + msg); };
  std::set<ir::NodeId> members;
  for (ir::NodeId m : blk.members()) members.insert(m);

  // position[op] = (stage, group, index in group)
  std::map<ir::NodeId, std::tuple<size_t, size_t, size_t>> position;
  for (size_t si = 0; si < bs.stages.size(); ++si) {
    const Stage& st = bs.stages[si];
    if (st.groups.empty()) return fail("stage " + std::to_string(si) + " is empty");
    if (st.groups.size() > size_t(limits::kMaxStageGroups))
      return fail("stage " + std::to_string(si) + " has " + std::to_string(st.groups.size()) +
                  " groups, more than the limit of " + std::to_string(limits::kMaxStageGroups));
    if (st.kind == StageKind::kMerge && st.groups.size() != 1)
      return fail("merge stage " + std::to_string(si) + " must have exactly one group");
    for (size_t gi = 0; gi < st.groups.size(); ++gi) {
      if (st.groups[gi].empty()) return fail("stage " + std::to_string(si) + " has an empty group");
      for (size_t k = 0; k < st.groups[gi].size(); ++k) {
        const ir::NodeId id = st.groups[gi][k];
        if (id < 0 || id >= static_cast<ir::NodeId>(g.nodes.size()) || !members.count(id))
          return fail("stage " + std::to_string(si) + " lists " +
                      (id >= 0 && id < static_cast<ir::NodeId>(g.nodes.size()) ? op_name(g, id) : "an unknown op") +
                      ", which is not an op of this block");
        if (!position.emplace(id, std::make_tuple(si, gi, k)).second)
          return fail(op_name(g, id) + " is scheduled more than once");
      }
    }
  }
  for (ir::NodeId m : blk.members())
    if (!position.count(m)) return fail(op_name(g, m) + " is never scheduled");

  for (const auto& [id, pos] : position) {
    const auto [si, gi, k] = pos;
    for (ir::NodeId p : g.producers(id)) {
      auto it = position.find(p);
      if (it == position.end()) continue;  // produced by an earlier block (or the input)
      const auto [psi, pgi, pk] = it->second;
      const bool earlier_stage = psi < si;
      const bool earlier_in_group = psi == si && pgi == gi && pk < k && bs.stages[si].kind == StageKind::kConcurrent;
      if (!earlier_stage && !earlier_in_group) {
        if (psi == si && pgi != gi)
          return fail("stage " + std::to_string(si) + ": groups are not independent: " + op_name(g, id) + " reads " +
                      op_name(g, p) + " from another group of the same stage");
        return fail(op_name(g, id) + " runs before its producer " + op_name(g, p));
      }
    }
  }
  for (size_t si = 0; si < bs.stages.size(); ++si) {
    const Stage& st = bs.stages[si];
    if (st.kind != StageKind::kMerge) continue;
    if (std::string why = merge_violation(g, st.groups[0]); !why.empty())
      return fail("merge stage " + std::to_string(si) + ": " + why);
  }
  return Status::ok();
}

Status validate_streams(const ir::Graph& g, const StreamSchedule& ss) {
  auto fail = [&](const std::string& msg) { return error(ErrorCode::kInvalidSchedule, "stream schedule: " + msg); };
  if (ss.stream_of.size() != g.nodes.size()) return fail("'stream_of' must have one entry per node");
  for (size_t id = 0; id < ss.stream_of.size(); ++id)
    if (ss.stream_of[id] < 0 || ss.stream_of[id] >= limits::kMaxStreams)
      return fail(op_name(g, ir::NodeId(id)) + " is on stream " + std::to_string(ss.stream_of[id]) + ", outside [0, " +
                  std::to_string(limits::kMaxStreams - 1) + "]" +
                  (ss.stream_of[id] < 0 ? " (every op needs a stream)" : ""));
  std::vector<int> seen(g.nodes.size(), -1);
  for (size_t i = 0; i < ss.launch_order.size(); ++i) {
    const ir::NodeId id = ss.launch_order[i];
    if (id <= 0 || id >= static_cast<ir::NodeId>(g.nodes.size())) return fail("launch order lists an unknown op");
    if (seen[size_t(id)] != -1) return fail(op_name(g, id) + " is launched twice");
    for (ir::NodeId p : g.producers(id))
      if (p != 0 && seen[size_t(p)] == -1)
        return fail(op_name(g, id) + " is launched before its producer " + op_name(g, p));
    seen[size_t(id)] = static_cast<int>(i);
  }
  for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id)
    if (seen[size_t(id)] == -1) return fail(op_name(g, id) + " is never launched");
  return Status::ok();
}

}  // namespace

Status validate(const ir::Graph& g, const Schedule& s) {
  if (s.is_stream_level()) {
    if (!s.blocks.empty() || !s.dataflow_barriers.empty())
      return error(ErrorCode::kInvalidSchedule,
                   "a schedule is either staged or stream-level, not both (stream-level schedules have no "
                   "stages, blocks or dataflow barriers)");
    return validate_streams(g, *s.streams);
  }
  if (s.blocks.size() != g.blocks.size())
    return error(ErrorCode::kInvalidSchedule, "schedule has " + std::to_string(s.blocks.size()) +
                                                  " blocks, graph has " + std::to_string(g.blocks.size()));
  for (size_t b = 0; b < s.blocks.size(); ++b) RETURN_IF_ERROR(validate_block(g, b, s.blocks[b]));
  for (size_t i = 0; i < s.dataflow_barriers.size(); ++i) {
    const int k = s.dataflow_barriers[i];
    RETURN_ERROR_IF(
        k < 1 || k >= s.stage_count() || (i > 0 && k <= s.dataflow_barriers[i - 1]), ErrorCode::kInvalidSchedule,
        "dataflow barrier before stage " + std::to_string(k) + ": barriers must be increasing stage indices in [1, " +
            std::to_string(s.stage_count() - 1) + "]");
  }
  return Status::ok();
}

json schedule_to_json(const ir::Graph& g, const Schedule& s) {
  json j = ir::graph_to_json(g);
  for (size_t b = 0; b < s.blocks.size() && b < j["blocks"].size(); ++b) {
    json stages = json::array(), kinds = json::array();
    for (const Stage& st : s.blocks[b].stages) {
      json groups = json::array();
      for (const auto& grp : st.groups) {
        json names = json::array();
        for (ir::NodeId id : grp) names.push_back(g.node(id).name);
        groups.push_back(std::move(names));
      }
      stages.push_back(std::move(groups));
      kinds.push_back(st.kind == StageKind::kMerge ? "merge" : "parallel");
    }
    j["blocks"][b]["stages"] = std::move(stages);
    j["blocks"][b]["stage_kinds"] = std::move(kinds);
  }
  const ScheduleMeta& m = s.meta;
  json meta = {{"version", 1},
               {"policy", m.policy},
               {"r", m.r},
               {"s", m.s},
               {"max_part_size", m.max_part_size},
               {"batch", m.batch},
               {"precision", m.precision},
               {"layout", m.layout},
               {"cost_model", m.cost_model},
               {"device", m.device},
               {"library_versions", m.library_versions},
               {"latency_ms", m.latency_ms},
               {"dataflow_latency_ms", m.dataflow_latency_ms},
               {"search_seconds", m.search_seconds},
               {"notes", m.notes}};
  if (s.streams) {
    json order = json::array(), streams = json::object();
    for (ir::NodeId id : s.streams->launch_order) order.push_back(g.node(id).name);
    for (size_t id = 0; id < s.streams->stream_of.size(); ++id) streams[g.nodes[id].name] = s.streams->stream_of[id];
    meta["launch_order"] = std::move(order);
    meta["stream_of"] = std::move(streams);
  }
  if (!s.dataflow_barriers.empty()) meta["dataflow_barriers"] = s.dataflow_barriers;
  j["schedule"] = std::move(meta);
  return j;
}

namespace {

constexpr ErrorCode kCode = ErrorCode::kInvalidSchedule;

std::string meta_field(const std::string& key) { return "schedule field '" + key + "'"; }

Status read_string_field(const json& v, const std::string& key, std::string& out) {
  ASSIGN_OR_RETURN(out, json_string(v, meta_field(key), kCode));
  return Status::ok();
}

Status check_one_of(const std::string& key, const std::string& value, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return Status::ok();
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  return error(kCode, meta_field(key) + " must be one of " + list + ", got '" + value + "'");
}

// The "schedule" object: every field type- and range-checked, unknown fields named.
Status read_meta(const json& m, ScheduleMeta& meta) {
  for (const auto& [key, v] : m.items()) {
    // Read with the stream schedule, or with the stages.
    if (key == "launch_order" || key == "stream_of" || key == "dataflow_barriers") continue;
    if (key == "version") {
      RETURN_IF_ERROR(json_integer(v, meta_field(key), 1, 1, kCode).status());
    } else if (key == "policy") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.policy));
      if (!meta.policy.empty())  // empty: a schedule written by hand or by a tool that does not say
        RETURN_IF_ERROR(parse_policy(meta.policy).status().with_context(meta_field(key)));
    } else if (key == "r" || key == "s" || key == "max_part_size") {
      const int64_t hi = key == "r"   ? limits::kMaxGroupOps
                         : key == "s" ? limits::kMaxStageGroups
                                      : limits::kMaxPartSize;
      ASSIGN_OR_RETURN(int64_t x, json_integer(v, meta_field(key), 0, hi, kCode));
      (key == "r" ? meta.r : key == "s" ? meta.s : meta.max_part_size) = static_cast<int>(x);
    } else if (key == "batch") {
      ASSIGN_OR_RETURN(int64_t x, json_integer(v, meta_field(key), 1, limits::kMaxBatch, kCode));
      meta.batch = static_cast<int>(x);
    } else if (key == "precision") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.precision));
      RETURN_IF_ERROR(check_one_of(key, meta.precision, {"fp32", "tf32", "fp16", "bf16"}));
    } else if (key == "layout") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.layout));
      RETURN_IF_ERROR(check_one_of(key, meta.layout, {"nchw", "nhwc"}));
    } else if (key == "cost_model") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.cost_model));
    } else if (key == "device") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.device));
    } else if (key == "library_versions") {
      RETURN_IF_ERROR(read_string_field(v, key, meta.library_versions));
    } else if (key == "latency_ms" || key == "dataflow_latency_ms") {
      ASSIGN_OR_RETURN((key == "latency_ms" ? meta.latency_ms : meta.dataflow_latency_ms),
                       json_number(v, meta_field(key), 0, limits::kMaxLatencyMs, kCode));
    } else if (key == "search_seconds") {
      ASSIGN_OR_RETURN(meta.search_seconds, json_number(v, meta_field(key), 0, 1e9, kCode));
    } else if (key == "notes") {
      RETURN_ERROR_IF(!v.is_array(), kCode, meta_field(key) + " must be an array of strings");
      meta.notes.clear();
      for (const json& note : v) {
        ASSIGN_OR_RETURN(std::string text, json_string(note, meta_field(key) + " entry", kCode));
        meta.notes.push_back(std::move(text));
      }
    } else {
      return error(kCode, "schedule has unknown field '" + key + "'");
    }
  }
  return Status::ok();
}

Expected<ir::NodeId> lookup(const ir::Graph& g, const std::map<std::string, ir::NodeId>& ids, const json& name,
                            const std::string& where) {
  RETURN_ERROR_IF(!name.is_string(), ErrorCode::kInvalidSchedule, where + ": op names must be strings");
  auto it = ids.find(name.get<std::string>());
  RETURN_ERROR_IF(it == ids.end(), ErrorCode::kInvalidSchedule,
                  where + ": unknown op '" + name.get<std::string>() + "'");
  return it->second;
}

Expected<StreamSchedule> read_streams(const ir::Graph& g, const std::map<std::string, ir::NodeId>& ids, const json& m) {
  RETURN_ERROR_IF(!m.contains("launch_order") || !m["launch_order"].is_array() || !m.contains("stream_of") ||
                      !m["stream_of"].is_object(),
                  kCode, "stream schedule needs 'launch_order' (array) and 'stream_of' (object)");
  StreamSchedule ss;
  for (const json& name : m["launch_order"]) {
    ASSIGN_OR_RETURN(ir::NodeId id, lookup(g, ids, name, "launch_order"));
    ss.launch_order.push_back(id);
  }
  ss.stream_of.assign(g.nodes.size(), -1);
  ss.stream_of[0] = 0;  // the input's stream is the main stream: 0 unless the file says otherwise
  for (const auto& [name, stream] : m["stream_of"].items()) {
    ASSIGN_OR_RETURN(ir::NodeId id, lookup(g, ids, json(name), "stream_of"));
    ASSIGN_OR_RETURN(int64_t x,
                     json_integer(stream, "stream_of: stream of '" + name + "'", 0, limits::kMaxStreams - 1, kCode));
    ss.stream_of[size_t(id)] = static_cast<int>(x);
  }
  return ss;
}

// A stream-level schedule replaces the blocks' stages; stages given beside it would be ignored.
Status check_no_block_stages(const json& j) {
  if (!j.contains("blocks") || !j["blocks"].is_array()) return Status::ok();
  for (size_t b = 0; b < j["blocks"].size(); ++b) {
    const json& jb = j["blocks"][b];
    RETURN_ERROR_IF(jb.is_object() && jb.contains("stages") && !jb["stages"].is_null(), kCode,
                    "block " + std::to_string(b) + ": a stream-level schedule must not also give 'stages'");
  }
  return Status::ok();
}

Expected<Schedule> read_schedule(const ir::Graph& g, const json& j) {
  std::map<std::string, ir::NodeId> ids;
  for (size_t i = 0; i < g.nodes.size(); ++i) ids[g.nodes[i].name] = static_cast<ir::NodeId>(i);
  Schedule s;
  if (j.contains("schedule")) {
    const json& m = j["schedule"];
    RETURN_ERROR_IF(!m.is_object(), kCode, "field 'schedule' must be an object");
    RETURN_IF_ERROR(read_meta(m, s.meta));
    if (m.contains("launch_order") || m.contains("stream_of")) {
      RETURN_ERROR_IF(m.contains("dataflow_barriers"), kCode,
                      "a stream-level schedule has no stages, so no " + meta_field("dataflow_barriers"));
      ASSIGN_OR_RETURN(StreamSchedule ss, read_streams(g, ids, m));
      s.streams = std::move(ss);
      RETURN_IF_ERROR(check_no_block_stages(j));
      RETURN_IF_ERROR(validate(g, s));
      return s;
    }
  }
  RETURN_ERROR_IF(!j.contains("blocks") || !j["blocks"].is_array(), ErrorCode::kInvalidSchedule,
                  "schedule file has no 'blocks' array");
  for (size_t b = 0; b < j["blocks"].size(); ++b) {
    const json& jb = j["blocks"][b];
    const std::string where = "block " + std::to_string(b);
    RETURN_ERROR_IF(!jb.contains("stages") || !jb["stages"].is_array(), ErrorCode::kInvalidSchedule,
                    where + ": field 'stages' must be an array of stages");
    BlockSchedule bs;
    for (size_t si = 0; si < jb["stages"].size(); ++si) {
      const json& js = jb["stages"][si];
      const std::string swhere = where + " stage " + std::to_string(si);
      RETURN_ERROR_IF(!js.is_array(), ErrorCode::kInvalidSchedule, swhere + ": a stage is an array of groups");
      Stage st;
      if (jb.contains("stage_kinds")) {
        const json& kinds = jb["stage_kinds"];
        RETURN_ERROR_IF(!kinds.is_array() || kinds.size() != jb["stages"].size(), kCode,
                        where + ": field 'stage_kinds' must be an array with one entry per stage");
        const json& k = kinds[si];
        RETURN_ERROR_IF(!k.is_string() || (k != "merge" && k != "parallel"), ErrorCode::kInvalidSchedule,
                        swhere + ": stage kind must be 'merge' or 'parallel'");
        st.kind = k == "merge" ? StageKind::kMerge : StageKind::kConcurrent;
      }
      for (const json& grp : js) {
        RETURN_ERROR_IF(!grp.is_array(), ErrorCode::kInvalidSchedule, swhere + ": a group is an array of op names");
        std::vector<ir::NodeId> ops;
        for (const json& name : grp) {
          ASSIGN_OR_RETURN(ir::NodeId id, lookup(g, ids, name, swhere));
          ops.push_back(id);
        }
        st.groups.push_back(std::move(ops));
      }
      bs.stages.push_back(std::move(st));
    }
    s.blocks.push_back(std::move(bs));
  }
  if (j.contains("schedule") && j["schedule"].contains("dataflow_barriers")) {
    const json& barriers = j["schedule"]["dataflow_barriers"];
    RETURN_ERROR_IF(!barriers.is_array(), kCode,
                    meta_field("dataflow_barriers") + " must be an array of stage indices");
    for (const json& k : barriers) {
      ASSIGN_OR_RETURN(int64_t index,
                       json_integer(k, meta_field("dataflow_barriers") + " entry", 1, limits::kMaxNodes, kCode));
      s.dataflow_barriers.push_back(static_cast<int>(index));
    }
  }
  RETURN_IF_ERROR(validate(g, s));
  return s;
}

}  // namespace

Expected<Schedule> schedule_from_json(const ir::Graph& g, const json& j) {
  Expected<Schedule> s = read_schedule(g, j);
  // A file written for another network fails on its first unknown op; say which network it was for.
  if (!s && j.is_object() && j.contains("name") && j["name"].is_string() && j["name"] != g.name)
    return s.status().with_context("the schedule was written for graph '" + j["name"].get<std::string>() + "', not '" +
                                   g.name + "'");
  return s;
}

Status save_schedule(const ir::Graph& g, const Schedule& s, const std::string& path) {
  return write_text_file(path, schedule_to_json(g, s).dump(1) + "\n");
}

Expected<LoadedSchedule> load_schedule(const std::string& path) {
  ASSIGN_OR_RETURN(json j, read_json_file(path));
  Expected<ir::Graph> g = ir::graph_from_json(j);
  if (!g) return g.status().with_context(path);
  Expected<Schedule> s = schedule_from_json(*g, j);
  if (!s) return s.status().with_context(path);
  return LoadedSchedule{std::move(*g), std::move(*s)};
}

Expected<Schedule> load_schedule_for(const ir::Graph& g, const std::string& path) {
  ASSIGN_OR_RETURN(json j, read_json_file(path));
  Expected<Schedule> s = schedule_from_json(g, j);
  if (!s) return s.status().with_context(path);
  return s;
}

namespace {

std::string op_label(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  return n.name + ":" + ir::op_kind_name(n.kind());
}

}  // namespace

std::string describe_schedule(const ir::Graph& g, const Schedule& s) {
  std::ostringstream os;
  os << "schedule for '" << g.name << "': " << (s.meta.policy.empty() ? "unnamed policy" : s.meta.policy) << ", "
     << (s.is_stream_level() ? "stream-level" : std::to_string(s.stage_count()) + " stages") << ", predicted latency "
     << s.meta.latency_ms << " ms";
  if (!s.meta.precision.empty()) os << " (" << s.meta.precision << ")";
  if (s.meta.dataflow_latency_ms > 0)
    os << "; dataflow " << s.meta.dataflow_latency_ms << " ms with the " << s.dataflow_barriers.size()
       << " barriers marked |";
  os << "\n";
  if (s.is_stream_level()) {
    std::map<int, std::vector<ir::NodeId>> by_stream;
    for (ir::NodeId id : s.streams->launch_order) by_stream[s.streams->stream_of[size_t(id)]].push_back(id);
    for (const auto& [stream, ops] : by_stream) {
      os << "stream " << stream << ":";
      for (ir::NodeId id : ops) os << " " << op_label(g, id);
      os << "\n";
    }
    return os.str();
  }
  int index = 0;
  for (size_t b = 0; b < s.blocks.size(); ++b)
    for (const Stage& st : s.blocks[b].stages) {
      // Dataflow execution keeps only the marked barriers (staged execution has one before every stage).
      const bool barrier = std::binary_search(s.dataflow_barriers.begin(), s.dataflow_barriers.end(), index);
      os << (barrier ? "| " : "  ") << "block " << b << " stage " << index++
         << (st.kind == StageKind::kMerge ? " merge   " : " parallel");
      for (const auto& group : st.groups) {
        os << " [";
        // A merge's convolutions run as one; a parallel group's ops run in order.
        const char* separator = st.kind == StageKind::kMerge ? " + " : " -> ";
        for (size_t i = 0; i < group.size(); ++i) os << (i ? separator : "") << op_label(g, group[i]);
        os << "]";
      }
      os << "\n";
    }
  return os.str();
}

}  // namespace ios::sched
