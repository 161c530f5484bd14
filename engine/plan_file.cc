#include "engine/plan_file.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/json_fields.h"
#include "common/limits.h"
#include "ir/json_io.h"
#include "runtime/kernel_choice_json.h"

namespace ios::engine {

namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'I', 'O', 'S', 'P', 'L', 'A', 'N', '1'};
// Version 2: a plan whose weights are the first plan's says so in its header and holds none. Version 1 files
// (every plan with its own copy) still read.
constexpr char kBucketsMagic[8] = {'I', 'O', 'S', 'B', 'K', 'T', 'S', '2'};
constexpr char kBucketsMagicV1[8] = {'I', 'O', 'S', 'B', 'K', 'T', 'S', '1'};
constexpr const char* kSharedWeights = "the first plan's";
constexpr const char* kFormat = "ios-engine-plan";
constexpr int kVersion = 1;
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;

json header_json(const EnginePlan& p) {
  json kernels = json::object();
  for (const auto& [key, choice] : p.kernels) kernels[key] = rt::kernel_choice_to_json(choice);
  const Execution& e = p.execution;
  const BuildInfo& i = p.info;
  return {{"format", kFormat},
          {"version", kVersion},
          {"built_for",
           {{"environment", i.environment},
            {"device", i.device},
            {"libraries", i.libraries},
            {"conv_engine", i.conv_engine},
            {"own_kernels", i.own_kernels},
            {"schedule_label", i.schedule_label},
            {"ios_version", i.ios_version}}},
          {"config",
           {{"precision", p.config.precision()},
            {"layout", layout_name(p.config.layout)},
            {"batch", p.config.batch},
            {"concat_writes", concat_writes_name(p.config.concat_writes)}}},
          {"execution",
           {{"mode", sched::exec_mode_name(e.mode)},
            {"prefetch_ahead", e.prefetch_ahead},
            {"cuda_graph", e.cuda_graph},
            {"fused_sums", e.fused_sums},
            {"shared_concats", e.shared_concats}}},
          {"schedule", sched::schedule_to_json(p.graph, p.schedule)},
          {"kernels", kernels}};
}

// The member `name` of the object `j`, or an error naming `where`.
Expected<const json*> member(const json& j, const char* name, const std::string& where) {
  RETURN_ERROR_IF(!j.is_object(), ErrorCode::kInvalidArgument, where + " must be an object");
  auto it = j.find(name);
  RETURN_ERROR_IF(it == j.end(), ErrorCode::kInvalidArgument, where + " has no field '" + name + "'");
  return &*it;
}

Expected<std::string> string_field(const json& j, const char* name, const std::string& where) {
  ASSIGN_OR_RETURN(const json* v, member(j, name, where));
  return json_string(*v, where + " field '" + name + "'");
}

Expected<bool> bool_field(const json& j, const char* name, const std::string& where) {
  ASSIGN_OR_RETURN(const json* v, member(j, name, where));
  return json_bool(*v, where + " field '" + name + "'");
}

Expected<BuildInfo> read_info(const json& header) {
  ASSIGN_OR_RETURN(const json* b, member(header, "built_for", "the header"));
  BuildInfo i;
  ASSIGN_OR_RETURN(i.environment, string_field(*b, "environment", "'built_for'"));
  ASSIGN_OR_RETURN(i.device, string_field(*b, "device", "'built_for'"));
  ASSIGN_OR_RETURN(i.libraries, string_field(*b, "libraries", "'built_for'"));
  ASSIGN_OR_RETURN(i.conv_engine, string_field(*b, "conv_engine", "'built_for'"));
  if (b->contains("own_kernels")) {
    ASSIGN_OR_RETURN(i.own_kernels, bool_field(*b, "own_kernels", "'built_for'"));
  }
  ASSIGN_OR_RETURN(i.schedule_label, string_field(*b, "schedule_label", "'built_for'"));
  ASSIGN_OR_RETURN(i.ios_version, string_field(*b, "ios_version", "'built_for'"));
  return i;
}

Expected<ExecConfig> read_config(const json& header) {
  ASSIGN_OR_RETURN(const json* c, member(header, "config", "the header"));
  ASSIGN_OR_RETURN(std::string precision, string_field(*c, "precision", "'config'"));
  ASSIGN_OR_RETURN(std::string layout, string_field(*c, "layout", "'config'"));
  ASSIGN_OR_RETURN(std::string writes, string_field(*c, "concat_writes", "'config'"));
  ASSIGN_OR_RETURN(const json* batch, member(*c, "batch", "'config'"));
  ASSIGN_OR_RETURN(int b, json_int(*batch, "'config' field 'batch'", 1, int(limits::kMaxBatch)));
  RETURN_ERROR_IF(layout == "auto", ErrorCode::kInvalidArgument, "'config' field 'layout' must be nchw or nhwc");
  Expected<ExecConfig> config = make_exec_config(precision, layout, b, writes);
  if (!config) return config.status().with_context("'config'");
  return config;
}

Expected<Execution> read_execution(const json& header) {
  ASSIGN_OR_RETURN(const json* x, member(header, "execution", "the header"));
  Execution e;
  ASSIGN_OR_RETURN(std::string mode, string_field(*x, "mode", "'execution'"));
  Expected<sched::ExecMode> parsed = sched::parse_exec_mode(mode);
  if (!parsed) return parsed.status().with_context("'execution' field 'mode'");
  e.mode = *parsed;
  ASSIGN_OR_RETURN(const json* ahead, member(*x, "prefetch_ahead", "'execution'"));
  ASSIGN_OR_RETURN(e.prefetch_ahead, json_int(*ahead, "'execution' field 'prefetch_ahead'", 0, 99));
  ASSIGN_OR_RETURN(e.cuda_graph, bool_field(*x, "cuda_graph", "'execution'"));
  ASSIGN_OR_RETURN(e.fused_sums, bool_field(*x, "fused_sums", "'execution'"));
  ASSIGN_OR_RETURN(e.shared_concats, bool_field(*x, "shared_concats", "'execution'"));
  return e;
}

Expected<std::map<std::string, rt::KernelChoice>> read_kernels(const json& header) {
  ASSIGN_OR_RETURN(const json* k, member(header, "kernels", "the header"));
  RETURN_ERROR_IF(!k->is_object(), ErrorCode::kInvalidArgument, "'kernels' must be an object");
  std::map<std::string, rt::KernelChoice> out;
  for (const auto& [key, value] : k->items()) {
    Expected<rt::KernelChoice> c = rt::kernel_choice_from_json(value);
    if (!c) return c.status().with_context("'kernels' entry '" + key + "'");
    out.emplace(key, std::move(*c));
  }
  return out;
}

// The header and the graph and schedule it holds; the weights are read after it.
Status read_header(const json& header, EnginePlan& p) {
  ASSIGN_OR_RETURN(std::string format, string_field(header, "format", "the header"));
  ASSIGN_OR_RETURN(const json* version, member(header, "version", "the header"));
  RETURN_ERROR_IF(format != kFormat || !version->is_number_integer() || *version != kVersion,
                  ErrorCode::kInvalidArgument,
                  "not an engine plan of version " + std::to_string(kVersion) + " (format '" + format + "', version " +
                      version->dump() + "): rebuild it with this version's `ios build`");
  ASSIGN_OR_RETURN(p.info, read_info(header));
  ASSIGN_OR_RETURN(p.config, read_config(header));
  ASSIGN_OR_RETURN(p.execution, read_execution(header));
  ASSIGN_OR_RETURN(p.kernels, read_kernels(header));
  ASSIGN_OR_RETURN(const json* schedule, member(header, "schedule", "the header"));
  Expected<ir::Graph> g = ir::graph_from_json(*schedule);
  if (!g) return g.status().with_context("'schedule'");
  p.graph = std::move(*g);
  Expected<sched::Schedule> s = sched::schedule_from_json(p.graph, *schedule);
  if (!s) return s.status().with_context("'schedule'");
  p.schedule = std::move(*s);
  return Status::ok();
}

// `shared_weights`: the plan's weights are the first plan's of its file, which holds them.
Status write_plan(const EnginePlan& plan, AtomicFile& out, const std::string& path, bool shared_weights = false) {
  RETURN_IF_ERROR(sched::validate(plan.graph, plan.schedule).with_context("cannot write '" + path + "'"));
  json header_object = header_json(plan);
  if (shared_weights) header_object["weights"] = kSharedWeights;
  const std::string header = header_object.dump();
  out.write(kMagic, sizeof(kMagic));
  const uint64_t length = header.size();
  out.write(&length, sizeof(length));
  out.write(header.data(), header.size());
  return shared_weights ? Status::ok() : ir::write_weights(*plan.weights, out, path);
}

bool same_parameters(const EnginePlan& a, const EnginePlan& b) {
  if (ir::graph_to_json(a.graph) != ir::graph_to_json(b.graph)) return false;
  if (a.weights == b.weights) return true;
  if (a.weights->per_node.size() != b.weights->per_node.size()) return false;
  for (size_t n = 0; n < a.weights->per_node.size(); ++n) {
    const auto &x = a.weights->per_node[n], &y = b.weights->per_node[n];
    if (x.size() != y.size()) return false;
    for (size_t s = 0; s < x.size(); ++s)
      if (x[s].weight != y[s].weight || x[s].bias != y[s].bias) return false;
  }
  return true;
}

// One plan from `in`, leaving what follows it. `first`: the first plan of a file of several, whose weights a
// later plan may share (null: the plan must hold its own).
Expected<EnginePlan> read_plan_record(std::istream& in, const std::string& path, const EnginePlan* first = nullptr) {
  char magic[sizeof(kMagic)];
  const bool read = bool(in.read(magic, sizeof(magic)));
  const bool buckets = read && (std::memcmp(magic, kBucketsMagic, sizeof(kBucketsMagic)) == 0 ||
                                std::memcmp(magic, kBucketsMagicV1, sizeof(kBucketsMagicV1)) == 0);
  RETURN_ERROR_IF(buckets, ErrorCode::kInvalidArgument,
                  path +
                      ": a file of batch buckets, not one engine plan (load it with BatchBuckets::load; in "
                      "Python, ios.load)");
  RETURN_ERROR_IF(!read || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0, ErrorCode::kInvalidArgument,
                  path + ": not an engine plan (bad magic; `ios build --save` writes one)");
  uint64_t length = 0;
  RETURN_ERROR_IF(!in.read(reinterpret_cast<char*>(&length), sizeof(length)) || length > kMaxHeaderBytes,
                  ErrorCode::kInvalidArgument, path + ": truncated or oversized header");
  std::string text(length, '\0');
  RETURN_ERROR_IF(!in.read(text.data(), std::streamsize(length)), ErrorCode::kInvalidArgument,
                  path + ": truncated header");
  ASSIGN_OR_RETURN(json header, parse_json_text(text, path));
  EnginePlan p;
  RETURN_IF_ERROR(read_header(header, p).with_context(path));
  if (!header.contains("weights")) {
    ASSIGN_OR_RETURN(ir::Weights weights, ir::read_weights_record(p.graph, in, path));
    p.weights = std::make_shared<const ir::Weights>(std::move(weights));
    return p;
  }
  RETURN_ERROR_IF(header["weights"] != kSharedWeights || !first, ErrorCode::kInvalidArgument,
                  path + ": header field 'weights' must be absent, or \"" + kSharedWeights +
                      "\" in a later plan of a file of batch buckets");
  RETURN_ERROR_IF(ir::graph_to_json(p.graph) != ir::graph_to_json(first->graph), ErrorCode::kInvalidArgument,
                  path + ": a plan shares the first plan's weights but is of another graph");
  p.weights = first->weights;
  return p;
}

Status expect_end(std::istream& in, const std::string& path, const char* last) {
  RETURN_ERROR_IF(in.peek() != std::char_traits<char>::eof(), ErrorCode::kInvalidArgument,
                  path + ": unexpected bytes after the last " + last);
  return Status::ok();
}

}  // namespace

Status save_engine_plan(const EnginePlan& plan, const std::string& path) {
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::create(path));
  RETURN_IF_ERROR(write_plan(plan, out, path));
  return out.commit();
}

Expected<EnginePlan> read_engine_plan(std::istream& in, const std::string& path) {
  ASSIGN_OR_RETURN(EnginePlan p, read_plan_record(in, path));
  RETURN_IF_ERROR(expect_end(in, path, "tensor"));
  return p;
}

Status save_engine_plans(const std::vector<const EnginePlan*>& plans, const std::string& path) {
  RETURN_ERROR_IF(plans.empty() || plans.size() > size_t(kMaxPlansPerFile), ErrorCode::kInvalidArgument,
                  "cannot write '" + path + "': a file holds 1 to " + std::to_string(kMaxPlansPerFile) + " plans");
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::create(path));
  out.write(kBucketsMagic, sizeof(kBucketsMagic));
  const uint32_t count = uint32_t(plans.size());
  out.write(&count, sizeof(count));
  for (const EnginePlan* p : plans)
    RETURN_IF_ERROR(write_plan(*p, out, path, p != plans.front() && same_parameters(*p, *plans.front())));
  return out.commit();
}

Expected<std::vector<EnginePlan>> read_engine_plans(std::istream& in, const std::string& path) {
  char magic[sizeof(kBucketsMagic)];
  RETURN_ERROR_IF(!in.read(magic, sizeof(magic)) || (std::memcmp(magic, kBucketsMagic, sizeof(magic)) != 0 &&
                                                     std::memcmp(magic, kBucketsMagicV1, sizeof(magic)) != 0),
                  ErrorCode::kInvalidArgument, path + ": not a file of batch buckets (bad magic)");
  const bool may_share = std::memcmp(magic, kBucketsMagic, sizeof(magic)) == 0;
  uint32_t count = 0;
  RETURN_ERROR_IF(
      !in.read(reinterpret_cast<char*>(&count), sizeof(count)) || count == 0 || count > uint32_t(kMaxPlansPerFile),
      ErrorCode::kInvalidArgument, path + ": truncated, or a plan count outside 1-" + std::to_string(kMaxPlansPerFile));
  std::vector<EnginePlan> plans;
  for (uint32_t i = 0; i < count; ++i) {
    Expected<EnginePlan> p = read_plan_record(in, path, may_share && !plans.empty() ? &plans.front() : nullptr);
    if (!p) return p.status().with_context("plan " + std::to_string(i + 1) + " of " + std::to_string(count));
    plans.push_back(std::move(*p));
  }
  RETURN_IF_ERROR(expect_end(in, path, "plan"));
  return plans;
}

Expected<std::vector<EnginePlan>> load_engine_plans(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RETURN_ERROR_IF(!in, ErrorCode::kIoError, "cannot open '" + path + "'");
  return read_engine_plans(in, path);
}

Expected<PlanFileKind> plan_file_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RETURN_ERROR_IF(!in, ErrorCode::kIoError, "cannot open '" + path + "'");
  char magic[8] = {};
  in.read(magic, sizeof(magic));
  if (in && std::memcmp(magic, kMagic, sizeof(magic)) == 0) return PlanFileKind::kEngine;
  if (in && (std::memcmp(magic, kBucketsMagic, sizeof(magic)) == 0 ||
             std::memcmp(magic, kBucketsMagicV1, sizeof(magic)) == 0))
    return PlanFileKind::kBuckets;
  return error(ErrorCode::kInvalidArgument,
               path + ": neither an engine plan nor a file of batch buckets (`ios build --save` writes one)");
}

Expected<EnginePlan> load_engine_plan(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RETURN_ERROR_IF(!in, ErrorCode::kIoError, "cannot open engine plan '" + path + "'");
  return read_engine_plan(in, path);
}

}  // namespace ios::engine
