#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/json_io.h"
#include "scheduler/merge.h"

namespace ios::sched {

namespace {

void describe_op(std::ostringstream& os, const ir::Node& n) {
  os << ir::op_kind_name(n.kind()) << "(";
  auto conv = [&](const ir::ConvAttrs& c) {
    os << "c" << c.out_channels << "k" << c.kh << "x" << c.kw << "s" << c.sh << "x" << c.sw << "p" << c.ph << "x"
       << c.pw << "d" << c.dh << "x" << c.dw << "g" << c.groups << "b" << c.has_bias << "a" << int(c.activation);
  };
  auto pool = [&](const ir::PoolAttrs& p) {
    os << "t" << int(p.kind) << "k" << p.kh << "x" << p.kw << "s" << p.sh << "x" << p.sw << "p" << p.ph << "x" << p.pw
       << "c" << p.ceil_mode;
  };
  auto step = [&](const ir::SubOp& s) {
    if (const auto* c = std::get_if<ir::ConvAttrs>(&s)) conv(*c);
    else if (const auto* p = std::get_if<ir::PoolAttrs>(&s)) pool(*p);
    else if (const auto* a = std::get_if<ir::ActivationAttrs>(&s)) os << "act" << int(a->activation);
    else {
      const auto& l = std::get<ir::LinearAttrs>(s);
      os << "fc" << l.out_features << "b" << l.has_bias << "a" << int(l.activation);
    }
    os << ";";
  };
  if (const auto* c = std::get_if<ir::ConvAttrs>(&n.op)) conv(*c);
  else if (const auto* p = std::get_if<ir::PoolAttrs>(&n.op)) pool(*p);
  else if (const auto* a = std::get_if<ir::ActivationAttrs>(&n.op)) os << int(a->activation);
  else if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) os << int(e->op);
  else if (const auto* l = std::get_if<ir::LinearAttrs>(&n.op)) step(*l);
  else if (const auto* s = std::get_if<ir::SequentialAttrs>(&n.op))
    for (const auto& st : s->steps) step(st);
  os << ")";
}

}  // namespace

namespace {

// One group's ops: attributes, inputs (ops of this stage by their `local` name, others numbered by
// first appearance through `outside`, so "two ops read the same tensor" is kept but the tensor's
// identity is not) and output shapes.
std::string describe_group(const ir::Graph& g, const std::vector<ir::NodeId>& group,
                           const std::map<ir::NodeId, std::string>& local, std::map<ir::NodeId, int>& outside) {
  std::ostringstream os;
  os << "[";
  for (ir::NodeId id : group) {
    const ir::Node& n = g.node(id);
    describe_op(os, n);
    os << "<";
    for (const ir::Term& term : n.inputs) {
      os << "(";
      for (const ir::Value& v : term) {
        if (auto it = local.find(v.node); it != local.end()) {
          os << "L" << it->second;
        } else {
          auto [o, inserted] = outside.emplace(v.node, static_cast<int>(outside.size()));
          os << "X" << o->second;
        }
        os << ":" << v.begin << "-" << v.end << "/" << g.node(v.node).output_shape.to_string() << ",";
      }
      os << ")";
    }
    os << ">" << n.output_shape.to_string() << ";";
  }
  os << "]";
  return os.str();
}

std::map<ir::NodeId, std::string> local_names(const std::vector<ir::NodeId>& group, const std::string& prefix) {
  std::map<ir::NodeId, std::string> names;
  for (size_t k = 0; k < group.size(); ++k) names[group[k]] = prefix + std::to_string(k);
  return names;
}

}  // namespace

std::string stage_signature(const ir::Graph& g, const Stage& stage) {
  // Concurrent groups that do not read one another run the same in any order: list them in a
  // canonical order, so a permuted stage is measured once.
  std::vector<size_t> order(stage.groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (stage.kind == StageKind::kConcurrent && stage.groups.size() > 1) {
    std::vector<std::string> alone(stage.groups.size());
    bool independent = true;
    std::map<ir::NodeId, size_t> group_of;
    for (size_t gi = 0; gi < stage.groups.size(); ++gi)
      for (ir::NodeId id : stage.groups[gi]) group_of[id] = gi;
    for (size_t gi = 0; gi < stage.groups.size(); ++gi) {
      for (ir::NodeId id : stage.groups[gi])
        for (ir::NodeId p : g.producers(id))
          if (auto it = group_of.find(p); it != group_of.end() && it->second != gi) independent = false;
      std::map<ir::NodeId, int> own;
      alone[gi] = describe_group(g, stage.groups[gi], local_names(stage.groups[gi], ""), own);
    }
    if (independent) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return alone[a] < alone[b]; });
  }
  std::map<ir::NodeId, std::string> local;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto names = local_names(stage.groups[order[pos]], std::to_string(pos) + ".");
    local.insert(names.begin(), names.end());
  }
  std::ostringstream os;
  os << (stage.kind == StageKind::kMerge ? "M" : "P");
  std::map<ir::NodeId, int> outside;
  for (size_t gi : order) os << describe_group(g, stage.groups[gi], local, outside);
  return os.str();
}

AnalyticCostModel::OpEstimate AnalyticCostModel::from_cost(double flops, double bytes, int kernels,
                                                           double out_elements) const {
  OpEstimate e;
  e.kernels = kernels;
  e.occupancy = std::clamp(std::ceil(out_elements / params_.work_per_cta) / params_.sm_count, 1.0 / params_.sm_count, 1.0);
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

Expected<double> StageCache::stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) {
  std::string key = std::to_string(batch) + "|" + stage_signature(g, stage);
  auto it = table_.find(key);
  if (it != table_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  ASSIGN_OR_RETURN(double ms, inner_.stage_latency_ms(g, stage, batch));
  table_.emplace(std::move(key), ms);
  return ms;
}

Status StageCache::load(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) return Status::ok();
  ASSIGN_OR_RETURN(nlohmann::json j, ir::read_json_file(path));
  if (!j.is_object() || j.value("key", "") != key_ || !j.contains("stages") || !j["stages"].is_object())
    return Status::ok();
  for (auto it = j["stages"].begin(); it != j["stages"].end(); ++it)
    if (it.value().is_number()) table_[it.key()] = it.value().get<double>();
  return Status::ok();
}

Status StageCache::save(const std::string& path) const {
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [k, v] : table_) stages[k] = v;
  return ir::write_text_file(path, nlohmann::json{{"key", key_}, {"stages", stages}}.dump() + "\n");
}

}  // namespace ios::sched
