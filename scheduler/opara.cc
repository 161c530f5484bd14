#include "scheduler/opara.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace ios::sched {

bool is_memory_intensive(const ir::Node& n) {
  if (const std::optional<ir::OpTraits> traits = ir::op_traits(n.op)) return traits->memory_bound;
  return n.is<ir::IdentityAttrs>() || n.is<ir::ElementAttrs>();  // a sequential op holds convolutions
}

ResourceProfile estimate_resource_profile(const ir::Graph& g) {
  ResourceProfile p;
  p.source = "estimate";
  for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id) {
    const ir::Node& n = g.node(id);
    if (is_memory_intensive(n)) {
      p.shared_memory_bytes[id] = 0;
      continue;
    }
    const int channels = n.output_shape.c;
    p.shared_memory_bytes[id] = std::clamp(4096.0 * std::ceil(channels / 16.0), 8192.0, 49152.0);
  }
  return p;
}

std::vector<ir::NodeId> opara_launch_order(const ir::Graph& g, const ResourceProfile& profile) {
  const auto consumers = g.consumers();
  std::vector<int> indegree(g.nodes.size(), 0);
  for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id)
    indegree[size_t(id)] = static_cast<int>(g.producers(id).size());
  std::deque<ir::NodeId> mem, comp;
  auto push = [&](ir::NodeId id) { (is_memory_intensive(g.node(id)) ? mem : comp).push_back(id); };
  auto demand = [&](ir::NodeId id) {
    auto it = profile.shared_memory_bytes.find(id);
    return it == profile.shared_memory_bytes.end() ? std::numeric_limits<double>::infinity() : it->second;
  };
  push(0);  // the input placeholder is the only op ready at first (compute list, as in Opara's table)
  std::vector<ir::NodeId> order;
  bool flag = true;
  while (!mem.empty() || !comp.empty()) {
    flag = !flag;  // parity flips every iteration, whichever list is used
    std::deque<ir::NodeId>& list = (!mem.empty() && !comp.empty()) ? (flag ? mem : comp) : (mem.empty() ? comp : mem);
    auto best = list.begin();
    for (auto it = list.begin(); it != list.end(); ++it)
      if (demand(*it) < demand(*best)) best = it;  // strict: the earliest inserted wins ties
    const ir::NodeId v = *best;
    list.erase(best);
    if (v != 0) order.push_back(v);
    for (ir::NodeId s : consumers[size_t(v)])
      if (--indegree[size_t(s)] == 0) push(s);
  }
  return order;
}

std::vector<int> opara_streams(const ir::Graph& g, const std::vector<ir::NodeId>& launch_order) {
  std::vector<int> stream(g.nodes.size(), -1);
  std::vector<bool> handed_on(g.nodes.size(), false);
  int streams = 0;
  stream[0] = streams++;
  for (ir::NodeId v : launch_order) {
    // Predecessors in input-argument order.
    std::vector<ir::NodeId> preds;
    for (const ir::Term& term : g.node(v).inputs)
      for (const ir::Value& val : term)
        if (std::find(preds.begin(), preds.end(), val.node) == preds.end()) preds.push_back(val.node);
    for (ir::NodeId p : preds)
      if (!handed_on[size_t(p)]) {
        stream[size_t(v)] = stream[size_t(p)];
        handed_on[size_t(p)] = true;
        break;
      }
    if (stream[size_t(v)] < 0) stream[size_t(v)] = streams++;
  }
  return stream;
}

StreamSchedule opara_schedule(const ir::Graph& g, const ResourceProfile& profile) {
  StreamSchedule s;
  s.launch_order = opara_launch_order(g, profile);
  s.stream_of = opara_streams(g, s.launch_order);
  return s;
}

}  // namespace ios::sched
