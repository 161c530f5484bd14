#include "runtime/trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace ios::rt {

namespace {

Utilization one_inference(std::vector<const KernelRecord*> ks) {
  Utilization u;
  if (ks.empty()) return u;
  std::vector<std::pair<uint64_t, int>> edges;  // +1 at start, -1 at end
  uint64_t first = ks[0]->start_ns, last = ks[0]->end_ns;
  for (const KernelRecord* k : ks) {
    edges.emplace_back(k->start_ns, +1);
    edges.emplace_back(k->end_ns, -1);
    first = std::min(first, k->start_ns);
    last = std::max(last, k->end_ns);
    u.kernel_us += double(k->end_ns - k->start_ns) / 1e3;
  }
  std::sort(edges.begin(), edges.end());  // ends (-1) sort before starts at the same instant
  int running = 0;
  uint64_t prev = first;
  for (const auto& [t, delta] : edges) {
    if (running > 0) {
      if (u.time_at_concurrency_us.size() <= size_t(running)) u.time_at_concurrency_us.resize(size_t(running) + 1, 0);
      u.time_at_concurrency_us[size_t(running)] += double(t - prev) / 1e3;
      u.busy_us += double(t - prev) / 1e3;
    }
    running += delta;
    u.max_concurrency = std::max(u.max_concurrency, running);
    prev = t;
  }
  u.span_us = double(last - first) / 1e3;
  u.kernels = int(ks.size());
  return u;
}

std::string step_label(const ir::Graph& g, const sched::PlanStep& st) {
  std::string label;
  for (ir::NodeId id : st.ops) {
    if (!label.empty()) label += '+';
    label += g.node(id).name;
  }
  return label;
}

}  // namespace

Utilization summarize_utilization(const std::vector<KernelRecord>& records) {
  std::map<int, std::vector<const KernelRecord*>> by_replay;
  for (const KernelRecord& k : records) by_replay[k.replay].push_back(&k);
  Utilization avg;
  if (by_replay.empty()) return avg;
  const double n = double(by_replay.size());
  for (const auto& [replay, ks] : by_replay) {
    const Utilization u = one_inference(ks);
    avg.span_us += u.span_us / n;
    avg.busy_us += u.busy_us / n;
    avg.kernel_us += u.kernel_us / n;
    avg.max_concurrency = std::max(avg.max_concurrency, u.max_concurrency);
    avg.kernels = u.kernels;
    if (avg.time_at_concurrency_us.size() < u.time_at_concurrency_us.size())
      avg.time_at_concurrency_us.resize(u.time_at_concurrency_us.size(), 0);
    for (size_t k = 0; k < u.time_at_concurrency_us.size(); ++k)
      avg.time_at_concurrency_us[k] += u.time_at_concurrency_us[k] / n;
  }
  avg.busy_fraction = avg.span_us > 0 ? avg.busy_us / avg.span_us : 0;
  avg.mean_concurrency = avg.busy_us > 0 ? avg.kernel_us / avg.busy_us : 0;
  return avg;
}

std::string chrome_trace_json(const ir::Graph& g, const sched::ExecutionPlan& plan,
                              const std::vector<KernelRecord>& records) {
  nlohmann::json events = nlohmann::json::array();
  uint64_t origin = UINT64_MAX;
  for (const KernelRecord& k : records) origin = std::min(origin, k.start_ns);
  const int unattributed_row = plan.streams;
  for (int s = 0; s <= plan.streams; ++s)
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", s},
                      {"args", {{"name", s < plan.streams ? "stream " + std::to_string(s) : "unattributed"}}}});
  for (const KernelRecord& k : records) {
    const bool known = k.plan_step >= 0 && size_t(k.plan_step) < plan.steps.size();
    const sched::PlanStep* st = known ? &plan.steps[size_t(k.plan_step)] : nullptr;
    nlohmann::json args = {{"kernel", k.name},
                           {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                           {"block", {k.block[0], k.block[1], k.block[2]}},
                           {"registers", k.registers},
                           {"shared_memory", k.static_shared + k.dynamic_shared},
                           {"inference", k.replay},
                           {"cuda_stream", k.device_stream}};
    if (st && st->stage >= 0) args["stage"] = st->stage;
    events.push_back({{"ph", "X"},
                      {"name", st ? step_label(g, *st) : k.name},
                      {"cat", "kernel"},
                      {"pid", 0},
                      {"tid", st ? st->stream : unattributed_row},
                      {"ts", double(k.start_ns - origin) / 1e3},
                      {"dur", double(k.end_ns - k.start_ns) / 1e3},
                      {"args", args}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

sched::ResourceProfile resource_profile_from(const ir::Graph& g, const sched::ExecutionPlan& plan,
                                             const std::vector<KernelRecord>& records) {
  sched::ResourceProfile profile;
  profile.source = "cupti";
  std::map<int, const KernelRecord*> first;  // per plan step, its earliest kernel
  for (const KernelRecord& k : records) {
    if (k.plan_step < 0) continue;
    auto [it, inserted] = first.emplace(k.plan_step, &k);
    if (!inserted && k.start_ns < it->second->start_ns) it->second = &k;
  }
  for (const auto& [step, k] : first)
    for (ir::NodeId id : plan.steps[size_t(step)].ops)
      profile.shared_memory_bytes[id] = double(k->static_shared + k->dynamic_shared);
  for (size_t id = 1; id < g.nodes.size(); ++id)  // ops that launch nothing (elided concats) need none
    profile.shared_memory_bytes.emplace(ir::NodeId(id), 0.0);
  return profile;
}

}  // namespace ios::rt
