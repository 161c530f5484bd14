#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/json_fields.h"
#include "common/limits.h"
#include "ir/json_io.h"
#include "scheduler/memory_plan.h"
#include "scheduler/merge.h"

namespace ios::sched {

namespace {

// One group's ops: attributes, inputs and output shapes. An input produced inside the group is named
// by its position there ("L1"); any other by first appearance in the group ("X0"), whose node is
// recorded in `outside`, so the caller can say which outside tensors groups share.
std::string describe_group(const OpKeys& keys, const ir::Graph& g, const std::vector<ir::NodeId>& group,
                           std::vector<ir::NodeId>& outside) {
  std::string out = "[";
  for (ir::NodeId id : group) {
    out += keys.attrs[size_t(id)];
    out += '<';
    for (const ir::Term& term : g.node(id).inputs) {
      out += '(';
      for (const ir::Value& v : term) {
        if (auto it = std::find(group.begin(), group.end(), v.node); it != group.end()) {
          out += 'L';
          out += std::to_string(it - group.begin());
        } else {
          auto o = std::find(outside.begin(), outside.end(), v.node);
          if (o == outside.end()) o = outside.insert(outside.end(), v.node);
          out += 'X';
          out += std::to_string(o - outside.begin());
        }
        out += ':';
        out += std::to_string(v.begin);
        out += '-';
        out += std::to_string(v.end);
        out += '/';
        out += keys.shapes[size_t(v.node)];
        out += ',';
      }
      out += ')';
    }
    out += '>';
    out += keys.shapes[size_t(id)];
    out += keys.writes[size_t(id)];
    out += ';';
  }
  out += ']';
  return out;
}

uint64_t mix64(uint64_t h) {  // MurmurHash3's finaliser
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

}  // namespace

std::string signature_hash(const std::string& signature) {
  // Two independent streams over 8-byte words (multiply, rotate), each finalised: 128 bits. A word at a
  // time because a re-search from a cache file hashes ~1.6 kB for each of ~200k stages.
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  const size_t n = signature.size();
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, signature.data() + i, std::min<size_t>(8, n - i));
    a = rotl((a ^ word) * 0x9e3779b97f4a7c15ull, 31);
    b = rotl((b ^ word) * 0xc2b2ae3d27d4eb4full, 29);
  }
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(mix64(a ^ n)),
                static_cast<unsigned long long>(mix64(b + 0x165667b19e3779f9ull * n)));
  return text;
}

OpKeys op_keys(const ir::Graph& g) {
  OpKeys keys;
  keys.attrs.reserve(g.nodes.size());
  keys.shapes.reserve(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    keys.attrs.push_back(ir::attrs_key(n.op));
    keys.shapes.push_back(n.output_shape.to_string());
  }
  // A stage timed alone writes such outputs as the network does (plan_memory), so two stages alike
  // but for the concatenations their outputs go into are timed apart. Of a slice's first channel only
  // the remainder by 8 is named: it decides the alignment (16 bytes of 2- or 4-byte elements), and the
  // concatenation's channels the strides; where else the slice lies changes no timing.
  keys.writes.reserve(g.nodes.size());
  const std::vector<std::vector<ir::NodeId>> consumers = g.consumers();
  keys.term.resize(g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    std::string writes;
    const std::vector<ConcatLevel> chain = concat_chain(g, ir::NodeId(id), consumers);
    for (const ConcatLevel& level : chain)
      writes += "@" + std::to_string(g.node(level.concat).output_shape.c) + "+" + std::to_string(level.begin % 8);
    keys.writes.push_back(std::move(writes));
    if (chain.empty()) continue;
    const std::vector<ir::Term>& terms = g.node(chain[0].concat).inputs;
    for (size_t k = 0; k < terms.size(); ++k)
      if (terms[k][0].node == ir::NodeId(id)) keys.term[id] = OpKeys::Term{chain[0].concat, int(k)};
  }
  keys.readers.resize(g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    std::vector<std::string> readers;
    for (ir::NodeId c : consumers[id])
      if (reads_merged_slice(g.node(c)))
        readers.push_back(keys.attrs[size_t(c)] + ">" + keys.shapes[size_t(c)] + keys.writes[size_t(c)]);
    std::sort(readers.begin(), readers.end());
    for (const std::string& r : readers) keys.readers[id] += "{" + r + "}";
  }
  return keys;
}

namespace {

// Which of a merged group's outputs the network writes into their concatenation in place: where the
// group's outputs are consecutive terms of one, in order. Per op: its term, "=" when it follows the
// previous op's term in the same concatenation, "-" when no concatenation takes it whole; then its
// readers (OpKeys::readers).
std::string merged_outputs_key(const OpKeys& keys, const std::vector<ir::NodeId>& group) {
  std::string out = "|";
  for (size_t k = 0; k < group.size(); ++k) {
    const OpKeys::Term& t = keys.term[size_t(group[k])];
    if (t.concat == ir::kNoNode) {
      out += "-,";
      continue;
    }
    const bool follows = k > 0 && keys.term[size_t(group[k - 1])].concat == t.concat &&
                         keys.term[size_t(group[k - 1])].index + 1 == t.index;
    out += (follows ? "=" : "#") + std::to_string(t.index) + ",";
  }
  for (ir::NodeId id : group) out += "|" + keys.readers[size_t(id)];
  return out;
}

}  // namespace

std::string stage_signature(const ir::Graph& g, const Stage& stage) { return stage_signature(g, op_keys(g), stage); }

namespace {

// Each group is described on its own; concurrent groups run the same in any order, so they are listed
// sorted, and a permuted stage is measured once. With `links`, which outside tensors several groups
// read, and which group's output another group reads, follow as a list of (group, input) pairs.
std::string groups_signature(const ir::Graph& g, const OpKeys& keys, const Stage& stage, bool links) {
  const size_t n = stage.groups.size();
  std::vector<std::string> text(n);
  std::vector<std::vector<ir::NodeId>> outside(n);
  for (size_t gi = 0; gi < n; ++gi) {
    text[gi] = describe_group(keys, g, stage.groups[gi], outside[gi]);
    if (stage.kind == StageKind::kMerge) text[gi] += merged_outputs_key(keys, stage.groups[gi]);
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (stage.kind == StageKind::kConcurrent)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return text[a] < text[b]; });
  std::string out = stage.kind == StageKind::kMerge ? "M" : "P";
  for (size_t gi : order) out += text[gi];
  if (!links) return out;
  std::map<ir::NodeId, std::vector<std::pair<size_t, size_t>>> readers;  // tensor -> (group position, X index)
  for (size_t pos = 0; pos < n; ++pos)
    for (size_t x = 0; x < outside[order[pos]].size(); ++x) readers[outside[order[pos]][x]].emplace_back(pos, x);
  std::map<ir::NodeId, std::pair<size_t, size_t>> produced;  // op of this stage -> (group position, index)
  for (size_t pos = 0; pos < n; ++pos)
    for (size_t k = 0; k < stage.groups[order[pos]].size(); ++k) produced[stage.groups[order[pos]][k]] = {pos, k};
  std::vector<std::string> listed;
  for (const auto& [tensor, rs] : readers) {
    auto p = produced.find(tensor);
    if (rs.size() < 2 && p == produced.end()) continue;
    std::string link;
    if (p != produced.end())
      link += "g" + std::to_string(p->second.first) + "." + std::to_string(p->second.second) + "->";
    for (const auto& [pos, x] : rs) link += std::to_string(pos) + ":" + std::to_string(x) + ",";
    listed.push_back(std::move(link));
  }
  std::sort(listed.begin(), listed.end());
  for (const std::string& l : listed) out += "{" + l + "}";
  return out;
}

}  // namespace

// A stage's groups are independent, so no group reads another's output. Which of them share an outside
// input is left out: the stage timing reads the activations into the L2 before a replay, so a shared
// input costs what two inputs cost. On the H100 the measured searches then timed 44k stages instead of
// 77k (RandWire) and 20k instead of 33k (NasNet), their predictions as close to the end-to-end runs.
std::string stage_signature(const ir::Graph& g, const OpKeys& keys, const Stage& stage) {
  return groups_signature(g, keys, stage, false);
}

AnalyticCostModel::OpEstimate AnalyticCostModel::from_cost(double flops, double bytes, int kernels,
                                                           double out_elements) const {
  OpEstimate e;
  e.kernels = kernels;
  e.occupancy =
      std::clamp(std::ceil(out_elements / params_.work_per_cta) / params_.sm_count, 1.0 / params_.sm_count, 1.0);
  // An op that fills only part of the GPU runs at that part of the peak rates.
  const double compute_s = flops / (params_.peak_flops * e.occupancy);
  const double memory_s = bytes / (params_.bandwidth * std::max(e.occupancy, 0.25));
  e.alone_us = std::max(compute_s, memory_s) * 1e6 + kernels * params_.launch_us;
  return e;
}

AnalyticCostModel::OpEstimate AnalyticCostModel::estimate(const ir::Graph& g, ir::NodeId id, int batch) const {
  const ir::NodeCost c = g.cost(id);
  return from_cost(c.flops * batch, c.bytes * batch, c.kernels,
                   static_cast<double>(g.node(id).output_shape.numel()) * batch);
}

AnalyticCostModel::OpEstimate AnalyticCostModel::estimate_merged(const ir::Graph& g, const std::vector<ir::NodeId>& ops,
                                                                 int batch) const {
  const ir::ConvAttrs m = merged_conv(g, ops);
  const ir::Node& first = g.node(ops[0]);
  ir::Shape out = first.output_shape;
  out.c = m.out_channels;
  const ir::NodeCost c = ir::step_cost(m, first.input_shape, out);
  return from_cost(c.flops * batch, c.bytes * batch, 1, static_cast<double>(out.numel()) * batch);
}

Expected<double> AnalyticCostModel::stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) {
  if (stage.kind == StageKind::kMerge) return estimate_merged(g, stage.groups[0], batch).alone_us * 1e-3;
  // Groups overlap: the stage takes the longest group, or, when they contend for SMs, the sum of
  // occupancy-weighted work.
  double longest = 0, contended = 0;
  for (const auto& group : stage.groups) {
    double t = 0;
    for (ir::NodeId id : group) {
      const OpEstimate e = estimate(g, id, batch);
      t += e.alone_us;
      contended += (e.alone_us - e.kernels * params_.launch_us) * e.occupancy + e.kernels * params_.launch_us / 4;
    }
    longest = std::max(longest, t);
  }
  const double sync = params_.stage_sync_us * static_cast<double>(stage.groups.size() - 1);
  return (std::max(longest, contended) + sync) * 1e-3;
}

Expected<std::vector<double>> CostModel::stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                            int batch) {
  std::vector<double> out;
  out.reserve(stages.size());
  for (const Stage& stage : stages) {
    ASSIGN_OR_RETURN(double ms, stage_latency_ms(g, stage, batch));
    out.push_back(ms);
  }
  return out;
}

Expected<std::vector<double>> CostModel::segment_latencies_ms(const ir::Graph& g,
                                                              const std::vector<std::vector<Stage>>& segments,
                                                              int batch) {
  std::vector<double> out;
  for (const std::vector<Stage>& segment : segments) {
    ASSIGN_OR_RETURN(std::vector<double> ms, stage_latencies_ms(g, segment, batch));
    double sum = 0;
    for (double x : ms) sum += x;
    out.push_back(sum);
  }
  return out;
}

std::string timing_device(CostModel& m) {
  const Measurement* measurement = m.measurement();
  return measurement ? measurement->timing_device() : "";
}

size_t spare_workers(CostModel& m) {
  const Measurement* measurement = m.measurement();
  return measurement ? measurement->spare_workers() : 0;
}

std::vector<Stage> all_stages(const Schedule& s) {
  std::vector<Stage> stages;
  for (const BlockSchedule& b : s.blocks) stages.insert(stages.end(), b.stages.begin(), b.stages.end());
  return stages;
}

std::vector<std::vector<Stage>> segments_between(const std::vector<Stage>& stages, const std::vector<int>& barriers) {
  std::vector<std::vector<Stage>> out;
  size_t first = 0;
  auto cut_at = [&](size_t end) {
    if (end > first) out.emplace_back(stages.begin() + std::ptrdiff_t(first), stages.begin() + std::ptrdiff_t(end));
    first = end;
  };
  for (int b : barriers) cut_at(size_t(b));
  cut_at(stages.size());
  return out;
}

Expected<std::vector<double>> CostModel::network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                              const std::vector<std::vector<int>>& barrier_sets,
                                                              int batch) {
  const std::vector<Stage> stages = all_stages(s);
  std::vector<std::vector<Stage>> segments;
  std::vector<size_t> owner;  // which set each segment belongs to
  for (size_t i = 0; i < barrier_sets.size(); ++i)
    for (std::vector<Stage>& segment : segments_between(stages, barrier_sets[i])) {
      segments.push_back(std::move(segment));
      owner.push_back(i);
    }
  ASSIGN_OR_RETURN(std::vector<double> ms, segment_latencies_ms(g, segments, batch));
  std::vector<double> out(barrier_sets.size(), 0.0);
  for (size_t i = 0; i < ms.size(); ++i) out[owner[i]] += ms[i];
  return out;
}

Expected<std::vector<double>> TableCostModel::network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                                   const std::vector<std::vector<int>>& barrier_sets,
                                                                   int batch) {
  ++network_requests_;
  if (!network_) return CostModel::network_latencies_ms(g, s, barrier_sets, batch);
  std::vector<double> out;
  for (const std::vector<int>& barriers : barrier_sets) out.push_back(network_(barriers));
  return out;
}

Expected<std::vector<double>> TableCostModel::segment_latencies_ms(const ir::Graph& g,
                                                                   const std::vector<std::vector<Stage>>& segments,
                                                                   int batch) {
  if (!segment_) return CostModel::segment_latencies_ms(g, segments, batch);
  std::vector<double> out;
  for (const std::vector<Stage>& segment : segments) out.push_back(segment_(g, segment));
  return out;
}

std::string segment_signature(const ir::Graph& g, const OpKeys& keys, const std::vector<Stage>& segment) {
  std::string out = "S";
  Stage all;
  for (const Stage& stage : segment) {
    out += stage_signature(g, keys, stage) + "|";
    all.groups.insert(all.groups.end(), stage.groups.begin(), stage.groups.end());
  }
  return out + "#" + groups_signature(g, keys, all, true);  // across stages, which reads which matters
}

void StageCache::View::refresh_keys(const ir::Graph& g) {
  // A search asks about one graph many times: its ops' keys are serialized once.
  if (keys_of_ != &g || keys_of_name_ != g.name || op_keys_.attrs.size() != g.nodes.size()) {
    op_keys_ = op_keys(g);
    keys_of_ = &g;
    keys_of_name_ = g.name;
  }
}

std::string StageCache::View::key_of(const ir::Graph& g, const Stage& stage, int batch) {
  refresh_keys(g);
  return std::to_string(batch) + "|" + signature_hash(stage_signature(g, op_keys_, stage));
}

std::vector<std::string> StageCache::View::keys_of(const ir::Graph& g, const std::vector<Stage>& stages, int batch) {
  std::vector<std::string> keys;
  keys.reserve(stages.size());
  for (const Stage& stage : stages) keys.push_back(key_of(g, stage, batch));
  return keys;
}

namespace {

// Measures the stages at the given indices with `inner`: screening figures, or settled ones (against
// `limits` when given).
StageCache::Measure measure_stages(CostModel& inner, const ir::Graph& g, const std::vector<Stage>& stages, int batch,
                                   bool screening, const std::vector<double>* limits = nullptr) {
  return [&inner, &g, &stages, batch, screening, limits](const std::vector<size_t>& indices) {
    std::vector<Stage> some;
    std::vector<double> some_limits;
    for (size_t i : indices) {
      some.push_back(stages[i]);
      if (limits) some_limits.push_back((*limits)[i]);
    }
    if (screening) return inner.screen_latencies_ms(g, some, batch);
    return limits ? inner.limited_stage_latencies_ms(g, some, some_limits, batch)
                  : inner.stage_latencies_ms(g, some, batch);
  };
}

}  // namespace

Expected<double> StageCache::View::stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) {
  ASSIGN_OR_RETURN(std::vector<double> ms, stage_latencies_ms(g, {stage}, batch));
  return ms[0];
}

Expected<std::vector<double>> StageCache::View::stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                                   int batch) {
  return cache_.lookup_or_measure(keys_of(g, stages, batch), measure_stages(inner_, g, stages, batch, false),
                                  inner_.name(), false);
}

Status CostModel::check_limits(const std::vector<Stage>& stages, const std::vector<double>& limits) {
  RETURN_ERROR_IF(limits.size() != stages.size(), ErrorCode::kInvalidArgument,
                  std::to_string(limits.size()) + " limits for " + std::to_string(stages.size()) + " stages");
  return Status::ok();
}

Expected<std::vector<double>> StageCache::View::limited_stage_latencies_ms(const ir::Graph& g,
                                                                           const std::vector<Stage>& stages,
                                                                           const std::vector<double>& limits,
                                                                           int batch) {
  RETURN_IF_ERROR(check_limits(stages, limits));
  return cache_.lookup_or_measure(keys_of(g, stages, batch), measure_stages(inner_, g, stages, batch, false, &limits),
                                  inner_.name(), false);
}

Expected<std::vector<double>> StageCache::View::screen_latencies_ms(const ir::Graph& g,
                                                                    const std::vector<Stage>& stages, int batch) {
  return cache_.lookup_or_measure(keys_of(g, stages, batch), measure_stages(inner_, g, stages, batch, true),
                                  inner_.name(), true);
}

Expected<std::vector<double>> StageCache::View::segment_latencies_ms(const ir::Graph& g,
                                                                     const std::vector<std::vector<Stage>>& segments,
                                                                     int batch) {
  refresh_keys(g);
  std::vector<std::string> keys;
  for (const std::vector<Stage>& segment : segments)
    keys.push_back("dataflow|" + std::to_string(batch) + "|" + signature_hash(segment_signature(g, op_keys_, segment)));
  auto measure = [&](const std::vector<size_t>& indices) {
    std::vector<std::vector<Stage>> some;
    for (size_t i : indices) some.push_back(segments[i]);
    return inner_.segment_latencies_ms(g, some, batch);
  };
  return cache_.lookup_or_measure(keys, measure, inner_.name(), false);
}

Expected<std::vector<double>> StageCache::View::network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                                     int batch) {
  refresh_keys(g);
  std::string request = segment_signature(g, op_keys_, all_stages(s)) + "|sets";
  for (const std::vector<int>& barriers : barrier_sets) {
    request += ";";
    for (int b : barriers) request += std::to_string(b) + ",";
  }
  std::vector<std::string> keys;
  for (size_t i = 0; i < barrier_sets.size(); ++i)
    keys.push_back("network|" + std::to_string(batch) + "|" + signature_hash(request + "|" + std::to_string(i)));
  auto measure = [&](const std::vector<size_t>& indices) {
    std::vector<std::vector<int>> some;
    for (size_t i : indices) some.push_back(barrier_sets[i]);
    return inner_.network_latencies_ms(g, s, some, batch);
  };
  return cache_.lookup_or_measure(keys, measure, inner_.name(), false);
}

const double* StageCache::find_locked(const std::string& key, bool screening) const {
  if (auto it = table_.find(key); it != table_.end()) return &it->second;
  if (!screening) return nullptr;
  auto it = table_.find(kScreenedPrefix + key);
  return it == table_.end() ? nullptr : &it->second;
}

Expected<std::vector<double>> StageCache::lookup_or_measure(const std::vector<std::string>& keys,
                                                            const Measure& measure, const std::string& model_name,
                                                            bool screening) {
  auto stored_as = [&](const std::string& key) { return screening ? kScreenedPrefix + key : key; };
  std::vector<double> out(keys.size(), 0.0);
  std::vector<size_t> mine, waiting;  // to measure here; being measured (by another worker, or earlier in `keys`)
  std::unique_lock<std::mutex> lock(mutex_);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (const double* ms = find_locked(keys[i], screening)) {
      ++hits_;
      out[i] = *ms;
    } else if (measuring_.count(stored_as(keys[i]))) {
      waiting.push_back(i);
    } else {
      ++misses_;
      measuring_.insert(stored_as(keys[i]));
      mine.push_back(i);
    }
  }
  if (!mine.empty()) {
    lock.unlock();
    Expected<std::vector<double>> ms = measure(mine);
    if (ms && ms->size() != mine.size())
      ms = error(ErrorCode::kRuntimeError, model_name + " cost model answered " + std::to_string(ms->size()) +
                                               " latencies for " + std::to_string(mine.size()) + " stages");
    lock.lock();
    for (size_t k = 0; k < mine.size(); ++k) {
      measuring_.erase(stored_as(keys[mine[k]]));
      if (ms) table_.insert_or_assign(stored_as(keys[mine[k]]), out[mine[k]] = (*ms)[k]);
    }
    measured_.notify_all();
    if (!ms) return ms.status();
  }
  for (size_t i : waiting) {
    measured_.wait(lock, [&] { return find_locked(keys[i], screening) || !measuring_.count(stored_as(keys[i])); });
    if (const double* ms = find_locked(keys[i], screening)) {
      ++hits_;
      out[i] = *ms;
      continue;
    }
    lock.unlock();  // the worker measuring it failed: this one tries
    auto measure_one = [&measure, i](const std::vector<size_t>&) { return measure({i}); };
    ASSIGN_OR_RETURN(std::vector<double> ms, lookup_or_measure({keys[i]}, measure_one, model_name, screening));
    out[i] = ms[0];
    lock.lock();
  }
  return out;
}

size_t StageCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}
size_t StageCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}
size_t StageCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_.size();
}

Status StageCache::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::ok();
  ASSIGN_OR_RETURN(nlohmann::json j, read_json_file(path));
  return load_json(j, path);
}

namespace {

// A JSON object of non-negative numbers (stage figures in ms, calibration values), by name.
Expected<std::map<std::string, double>> numbers_of(const nlohmann::json& j, const std::string& what,
                                                   const std::string& path) {
  RETURN_ERROR_IF(!j.is_object(), ErrorCode::kInvalidArgument, path + ": " + what + "s are not an object");
  std::map<std::string, double> out;
  for (const auto& [name, value] : j.items()) {
    Expected<double> number = json_number(value, what + " '" + name + "'", 0, limits::kMaxLatencyMs);
    if (!number) return number.status().with_context(path);
    out.emplace(name, *number);
  }
  return out;
}

}  // namespace

Status StageCache::load_json(const nlohmann::json& j, const std::string& path) {
  auto fail = [&](const std::string& msg) { return error(ErrorCode::kInvalidArgument, path + ": " + msg); };
  if (!j.is_object() || !j.contains("key") || !j.contains("stages") || !j["stages"].is_object())
    return fail("not a stage cache (an object with 'key' and 'stages')");
  Expected<std::string> key = json_string(j["key"], "stage cache field 'key'");
  if (!key) return key.status().with_context(path);
  for (const auto& [field, value] : j.items())
    if (field != "key" && field != "stages" && field != "calibration") return fail("unknown field '" + field + "'");
  if (*key != key_) return Status::ok();  // measured under another model or configuration: not ours to use
  using Numbers = std::map<std::string, double>;
  ASSIGN_OR_RETURN(Numbers entries, numbers_of(j["stages"], "stage cache entry", path));
  if (j.contains("calibration")) {
    ASSIGN_OR_RETURN(Numbers values, numbers_of(j["calibration"], "calibration value", path));
    // a model that does not measure has no calibration and ignores the file's (exp_replay needs none)
    if (Measurement* measurement = own_.measurement())
      RETURN_IF_ERROR(measurement->adopt_calibration(values).with_context(path));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  table_.insert(entries.begin(), entries.end());
  return Status::ok();
}

Status StageCache::save(const std::string& path) const {
  // Read-merge-write under the file's lock: entries another process saved since this one loaded are
  // kept (this one's figures win where both have one), and two writers cannot interleave.
  ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(path));
  nlohmann::json stages = nlohmann::json::object();
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    Expected<nlohmann::json> disk = read_json_file(path);
    if (disk && disk->is_object() && disk->contains("stages") && disk->value("key", nlohmann::json()) == key_)
      if (auto theirs = numbers_of((*disk)["stages"], "stage cache entry", path))
        for (const auto& [k, v] : *theirs) stages[k] = v;
    // an unreadable file, or one of another key, is replaced
  }
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (const auto& [k, v] : table_) stages[k] = v;
  }
  nlohmann::json file{{"key", key_}, {"stages", stages}};
  if (const Measurement* measurement = own_.measurement())
    if (std::map<std::string, double> values = measurement->calibration(); !values.empty())
      file["calibration"] = values;
  return write_text_file(path, file.dump() + "\n");
}

}  // namespace ios::sched
