// The stage endings of a DP state: parallel stages of up to s groups of up to r ops (chains and their
// independent components), merge stages of convolutions reading one input, within the memory budget.
#include "scheduler/part_dp.h"

namespace ios::sched::dp_detail {

auto PartDp::endings(Mask s) const -> std::vector<std::pair<Mask, bool>> {
  std::vector<std::pair<Mask, bool>> out;
  if (options_.mode != DpMode::kParallel) merge_endings(s, out);
  if (options_.mode == DpMode::kMerge) {
    for (int i = 0; i < n_; ++i)
      if ((s & bit(i)) && !(succ_[size_t(i)] & s)) out.emplace_back(bit(i), false);
  } else {
    parallel_endings(s, out);
  }
  return out;
}

auto PartDp::mask_of(const std::vector<ir::NodeId>& ids) const -> Mask {
  Mask m = 0;
  for (ir::NodeId id : ids)
    for (int i = 0; i < n_; ++i)
      if (ops_[size_t(i)] == id) m |= bit(i);
  return m;
}

auto PartDp::to_stage(Mask t, bool merge) const -> Stage {
  Stage st;
  st.kind = merge ? StageKind::kMerge : StageKind::kConcurrent;
  if (merge) {
    st.groups.emplace_back();
    for (int i = 0; i < n_; ++i)
      if (t & bit(i)) st.groups[0].push_back(ops_[size_t(i)]);
    return st;
  }
  for (Mask comp : components(t)) {
    std::vector<ir::NodeId> group;
    for (int i = 0; i < n_; ++i)
      if (comp & bit(i)) group.push_back(ops_[size_t(i)]);
    st.groups.push_back(std::move(group));
  }
  return st;
}

auto PartDp::components(Mask t) const -> std::vector<Mask> {
  std::vector<Mask> out;
  Mask left = t;
  while (left) {
    int first = 0;
    while (!(left & bit(first))) ++first;
    Mask comp = bit(first), frontier = comp;
    while (frontier) {
      Mask next = 0;
      for (int i = 0; i < n_; ++i)
        if (frontier & bit(i)) next |= (succ_[size_t(i)] | pred_[size_t(i)]) & t;
      frontier = next & ~comp;
      comp |= next;
    }
    out.push_back(comp);
    left &= ~comp;
  }
  return out;
}

auto PartDp::build_memory(const LiveMemoryModel& m, const std::map<ir::NodeId, int>& local) -> void {
  PartMemory& pm = memory_;
  // A budget past what int64 holds is no limit at all (the cast of such a double is undefined).
  const double budget = std::ceil(options_.memory_budget * double(m.sequential_peak()));
  pm.budget = budget < 0x1p62 ? static_cast<int64_t>(budget) : 0;
  pm.own.assign(size_t(n_), 0);
  pm.scratch.assign(size_t(n_), 0);
  pm.readers.assign(size_t(n_), 0);
  pm.escapes.assign(size_t(n_), false);
  const ir::NodeId first = ops_[0];
  for (size_t v = 0; v < m.nodes(); ++v) {
    const auto id = static_cast<ir::NodeId>(v);
    const auto self = local.find(id);
    if (self == local.end() && !m.runs_before(id, first)) continue;  // a later part's value
    Mask readers = 0;
    bool later = m.is_output(id);
    for (ir::NodeId c : m.consumers(id)) {
      const auto it = local.find(c);
      if (it != local.end()) {
        readers |= bit(it->second);
      } else if (!m.runs_before(c, first)) {
        later = true;
      }
    }
    if (self != local.end()) {
      pm.own[size_t(self->second)] = m.elements(id);
      pm.scratch[size_t(self->second)] = m.scratch(id);
      pm.readers[size_t(self->second)] = readers;
      pm.escapes[size_t(self->second)] = later;
    } else if (later) {
      pm.through += m.elements(id);
    } else if (readers) {
      pm.incoming.emplace_back(m.elements(id), readers);
    }
  }
}

auto PartDp::over_memory_budget(Mask s, Mask t) const -> bool {
  const PartMemory& pm = memory_;
  if (pm.budget == 0) return false;
  const Mask pending = ~(s & ~t);
  int64_t live = pm.through;
  for (int i = 0; i < n_; ++i) {
    if (!(s & bit(i))) continue;
    const bool running = t & bit(i);
    if (running || pm.escapes[size_t(i)] || (pm.readers[size_t(i)] & pending)) live += pm.own[size_t(i)];
    if (running) live += pm.scratch[size_t(i)];
  }
  for (const auto& [elements, readers] : pm.incoming)
    if (readers & pending) live += elements;
  return live > pm.budget;
}

auto PartDp::build_chains() -> void {
  Mask left = n_ == kMaxPart ? ~Mask{0} : (bit(n_) - 1);
  while (left) {
    // Longest path in the transitive closure among the ops left; ties go to the lowest index.
    std::vector<int> len(size_t(n_), 0);
    for (int i = n_ - 1; i >= 0; --i) {
      if (!(left & bit(i))) continue;
      len[size_t(i)] = 1;
      for (int j = i + 1; j < n_; ++j)
        if ((left & bit(j)) && (desc_[size_t(i)] & bit(j)))
          len[size_t(i)] = std::max(len[size_t(i)], len[size_t(j)] + 1);
    }
    int cur = -1;
    for (int i = 0; i < n_; ++i)
      if ((left & bit(i)) && (cur < 0 || len[size_t(i)] > len[size_t(cur)])) cur = i;
    std::vector<int> chain;
    while (cur >= 0) {
      chain.push_back(cur);
      left &= ~bit(cur);
      int next = -1;
      for (int j = cur + 1; j < n_; ++j)
        if ((left & bit(j)) && (desc_[size_t(cur)] & bit(j)) && len[size_t(j)] == len[size_t(cur)] - 1) {
          next = j;
          break;
        }
      cur = next;
    }
    chains_.push_back(std::move(chain));
  }
}

auto PartDp::parallel_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const -> void {
  // Per chain, the ops still in s form a prefix; a root is one of its last r ops, or none.
  std::vector<std::vector<Mask>> options;
  for (const auto& chain : chains_) {
    std::vector<int> prefix;
    for (int op : chain)
      if (s & bit(op)) prefix.push_back(op);
    if (prefix.empty()) continue;
    std::vector<Mask> closures;
    for (int k = static_cast<int>(prefix.size()) - 1; k >= 0 && static_cast<int>(prefix.size()) - k <= options_.r;
         --k) {
      const Mask c = desc_[size_t(prefix[size_t(k)])] & s;
      if (popcount(c) <= options_.r) closures.push_back(c);
    }
    if (!closures.empty()) options.push_back(std::move(closures));
  }
  Enumeration e{options, std::vector<std::vector<Mask>>(options.size()), {}, out};
  enumerate(e, 0, {});
}

auto PartDp::enumerate(Enumeration& e, size_t chain, const std::vector<Mask>& groups) const -> void {
  // One state's endings alone can pass the budget on a wide part; discover() then reports it.
  if (e.out.size() > static_cast<size_t>(options_.max_transitions)) return;
  if (chain == e.options.size()) {
    if (groups.empty() || static_cast<int>(groups.size()) > options_.s) return;
    Mask t = 0;
    for (Mask gm : groups) t |= gm;
    if (e.seen.emplace(t, 1).second) e.out.emplace_back(t, false);
    return;
  }
  enumerate(e, chain + 1, groups);
  for (Mask closure : e.options[chain]) {
    // Deeper levels only touch their own groups_at entries, so this one survives the recursion.
    std::vector<Mask>& next = e.groups_at[chain];
    next.clear();
    Mask merged = closure;
    for (Mask gm : groups) {
      if (gm & merged)
        merged |= gm;
      else
        next.push_back(gm);
    }
    if (popcount(merged) > options_.r) continue;
    next.push_back(merged);
    enumerate(e, chain + 1, next);
  }
}

auto PartDp::merge_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const -> void {
  // Candidate sinks grouped by the value they read; subsets of each class of size >= 2.
  std::map<std::vector<ir::Term>, std::vector<int>> classes;
  for (int i = 0; i < n_; ++i) {
    if (!(s & bit(i)) || (succ_[size_t(i)] & s)) continue;
    const ir::Node& node = g_.node(ops_[size_t(i)]);
    if (node.is<ir::ConvAttrs>() && node.inputs.size() == 1 && node.inputs[0].size() == 1)
      classes[node.inputs].push_back(i);
  }
  for (const auto& [key, members] : classes) {
    const int m = std::min<int>(static_cast<int>(members.size()), 12);
    for (uint32_t sub = 1; sub < (1u << m); ++sub) {
      if (std::popcount(sub) < 2) continue;
      std::vector<ir::NodeId> ids;
      Mask t = 0;
      for (int k = 0; k < m; ++k)
        if (sub & (1u << k)) {
          ids.push_back(ops_[size_t(members[size_t(k)])]);
          t |= bit(members[size_t(k)]);
        }
      if (can_merge(g_, ids)) out.emplace_back(t, true);
    }
  }
}

}  // namespace ios::sched::dp_detail
