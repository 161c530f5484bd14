#include "scheduler/dp.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>

#include "scheduler/merge.h"

namespace ios::sched {

namespace {

using Mask = unsigned __int128;
constexpr int kMaxPart = 128;

Mask bit(int i) { return Mask{1} << i; }
int popcount(Mask m) { return std::popcount(static_cast<uint64_t>(m)) + std::popcount(static_cast<uint64_t>(m >> 64)); }
// Every bit of the mask reaches the low bits that MaskMap's slots are taken from (splitmix64's finalizer).
struct MaskHash {
  size_t operator()(Mask m) const {
    uint64_t x = static_cast<uint64_t>(m) ^ (static_cast<uint64_t>(m >> 64) * 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
};

// A map from non-empty masks (states and endings; 0 marks a free slot) to V, open addressing with linear
// probing at most half full. The DP looks masks up several times a transition; with node-based maps its
// NasNet and RandWire searches took 1.3x the CPU time (bench_scheduler). Inserting may move
// every value.
template <class V>
class MaskMap {
 public:
  V* find(Mask key) {
    if (keys_.empty()) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == 0) return nullptr;
      if (keys_[i] == key) return &values_[i];
    }
  }
  const V* find(Mask key) const { return const_cast<MaskMap*>(this)->find(key); }
  const V& at(Mask key) const {
    const V* v = find(key);
    assert(v && "MaskMap::at: no such key");
    return *v;
  }
  // The value of `key`, inserted as `value` if absent; whether it was inserted.
  std::pair<V*, bool> emplace(Mask key, V value) {
    if (V* v = find(key)) return {v, false};
    if (2 * (size_ + 1) > keys_.size()) grow();
    return {place(key, std::move(value)), true};
  }
  V& operator[](Mask key) { return *emplace(key, V{}).first; }
  size_t size() const { return size_; }

 private:
  size_t slot(Mask key) const { return MaskHash()(key) & (keys_.size() - 1); }
  // `key` (absent) into the first free slot from its own; the caller keeps the map at most half full.
  V* place(Mask key, V value) {
    size_t i = slot(key);
    while (keys_[i] != 0) i = (i + 1) & (keys_.size() - 1);
    keys_[i] = key;
    values_[i] = std::move(value);
    ++size_;
    return &values_[i];
  }
  void grow() {
    std::vector<Mask> keys = std::move(keys_);
    std::vector<V> values = std::move(values_);
    keys_.assign(std::max<size_t>(64, 2 * keys.size()), 0);
    values_.assign(keys_.size(), V{});
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != 0) place(keys[i], std::move(values[i]));
  }
  std::vector<Mask> keys_;
  std::vector<V> values_;
  size_t size_ = 0;
};

// One part, with its ops renumbered 0..n-1 in creation (topological) order.
class PartDp {
 public:
  PartDp(const ir::Graph& g, const std::vector<ir::NodeId>& part, const DpOptions& options, CostModel* model,
         DpStats* stats, const LiveMemoryModel* memory = nullptr)
      : g_(g), ops_(part), options_(options), model_(model), stats_(stats) {
    std::sort(ops_.begin(), ops_.end());
    n_ = static_cast<int>(ops_.size());
    std::map<ir::NodeId, int> local;
    for (int i = 0; i < n_; ++i) local[ops_[size_t(i)]] = i;
    succ_.assign(size_t(n_), 0);
    pred_.assign(size_t(n_), 0);
    for (int i = 0; i < n_; ++i)
      for (ir::NodeId p : g.producers(ops_[size_t(i)])) {
        auto it = local.find(p);
        if (it == local.end()) continue;  // edges from other parts are already satisfied
        succ_[size_t(it->second)] |= bit(i);
        pred_[size_t(i)] |= bit(it->second);
      }
    desc_.assign(size_t(n_), 0);
    for (int i = n_ - 1; i >= 0; --i) {
      desc_[size_t(i)] = bit(i);
      for (int j = i + 1; j < n_; ++j)
        if (succ_[size_t(i)] & bit(j)) desc_[size_t(i)] |= desc_[size_t(j)];
    }
    build_chains();
    if (memory && options.memory_budget > 0 && n_ > 0) build_memory(*memory, local);
  }

  Status solve(std::vector<Stage>& out) {
    const Mask all = n_ == kMaxPart ? ~Mask{0} : (bit(n_) - 1);
    ASSIGN_OR_RETURN(double best, resolve_all(all));
    // Unreachable with a budget of at least 1x: running the ops one by one in id order stays within it.
    RETURN_ERROR_IF(std::isinf(best), ErrorCode::kInvalidArgument,
                    "no schedule of a part of " + std::to_string(n_) + " ops fits the memory budget (raise it)");
    stats_->latency_ms += best;
    std::vector<Stage> reversed;
    for (Mask s = all; s != 0;) {
      const Entry& e = memo_.at(s);
      reversed.push_back(to_stage(e.ending, e.merge));
      s &= ~e.ending;
    }
    out.insert(out.end(), reversed.rbegin(), reversed.rend());
    return Status::ok();
  }

  // Endings of s as (mask, is_merge), deduplicated, merges first.
  std::vector<std::pair<Mask, bool>> endings(Mask s) const {
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

  Mask mask_of(const std::vector<ir::NodeId>& ids) const {
    Mask m = 0;
    for (ir::NodeId id : ids)
      for (int i = 0; i < n_; ++i)
        if (ops_[size_t(i)] == id) m |= bit(i);
    return m;
  }

  Stage to_stage(Mask t, bool merge) const {
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

  // The weakly connected components of t (a concurrent stage's groups), ordered by their first op.
  std::vector<Mask> components(Mask t) const {
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

 private:
  struct Entry {
    double cost;
    Mask ending;
    bool merge;
  };

  // The part's view of LiveMemoryModel: what each local op writes and who reads it, plus the values of
  // earlier parts that are still live.
  struct PartMemory {
    int64_t budget = 0;                              // elements; 0: no limit
    int64_t through = 0;                             // earlier values read after the part: live throughout
    std::vector<int64_t> own;                        // per local op: its output's elements
    std::vector<int64_t> scratch;                    // per local op: its scratch while it runs
    std::vector<Mask> readers;                       // per local op: its readers in the part
    std::vector<bool> escapes;                       // read after the part, or the network's output
    std::vector<std::pair<int64_t, Mask>> incoming;  // earlier values only this part still reads: readers
  };

  void build_memory(const LiveMemoryModel& m, const std::map<ir::NodeId, int>& local) {
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

  // Live elements while ending t of s runs: ops of s - t are done, t's are writing.
  bool over_memory_budget(Mask s, Mask t) const {
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

  void build_chains() {
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

  void parallel_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const {
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

  struct Enumeration {
    const std::vector<std::vector<Mask>>& options;  // per chain, its closures
    std::vector<std::vector<Mask>> groups_at;       // per chain, the groups after choosing there (reused)
    MaskMap<uint8_t> seen;                          // the endings already out (the value is unused)
    std::vector<std::pair<Mask, bool>>& out;
  };

  // Chooses a closure (or none) per chain; overlapping closures merge into one group (union-find on
  // masks), and the size bound r is rechecked after every merge, the group bound s at the end.
  void enumerate(Enumeration& e, size_t chain, const std::vector<Mask>& groups) const {
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

  void merge_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const {
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

  struct Candidate {
    double lower, rest;  // lower: rest plus the stage's floor when the candidate was made
    Mask ending;
    bool merge;
  };
  struct Cost {
    double ms;
    bool settled;  // false: a screening figure (DpOptions::screen_margin)
  };

  MaskMap<Cost>& costs(bool merge) { return merge ? merge_cost_ : parallel_cost_; }
  const Cost* cost_of(Mask t, bool merge) { return costs(merge).find(t); }
  bool costed(Mask t, bool merge) { return cost_of(t, merge) != nullptr; }
  bool screening() const { return options_.screen_margin > 0 && model_->screens(); }

  // The most and the least a candidate's total can be given its stage's cost `k`: the figure, or a
  // screening figure widened by the margin.
  double high(const Candidate& c, const Cost& k) const {
    return c.rest + (k.settled ? k.ms : k.ms * (1 + options_.screen_margin) + options_.screen_margin_ms);
  }
  double low(const Candidate& c, const Cost& k) const {
    return c.rest + (k.settled ? k.ms : k.ms * (1 - options_.screen_margin) - options_.screen_margin_ms);
  }

  // Asks the model for the stages `todo` (distinct) in one request: settled figures, or screening ones
  // when the DP screens and `settle` is false. `limits` (settled figures only): per stage, the figure past
  // which it cannot win.
  Status cost_stages(const std::vector<std::pair<Mask, bool>>& todo, bool settle,
                     const std::vector<double>* limits = nullptr) {
    if (todo.empty()) return Status::ok();
    const bool screen = !settle && screening();
    std::vector<Stage> stages;
    for (const auto& [t, merge] : todo) stages.push_back(to_stage(t, merge));
    auto ask = [&]() -> Expected<std::vector<double>> {
      if (screen) return model_->screen_latencies_ms(g_, stages, options_.batch);
      if (limits) return model_->limited_stage_latencies_ms(g_, stages, *limits, options_.batch);
      return model_->stage_latencies_ms(g_, stages, options_.batch);
    };
    ASSIGN_OR_RETURN(std::vector<double> ms, ask());
    for (size_t i = 0; i < todo.size(); ++i) {
      const bool again = costed(todo[i].first, todo[i].second);
      costs(todo[i].second)[todo[i].first] = Cost{ms[i], !screen};
      ++(again ? stats_->stages_settled : stats_->stages_costed);
    }
    ++figures_version_;
    ++stats_->cost_requests;
    return Status::ok();
  }

  // Stages asked of the model in one request, from one state or several; a stage asked twice keeps the
  // larger limit (the figure is then good for both).
  struct Request {
    std::vector<std::pair<Mask, bool>> todo;
    std::vector<double> limits;
    std::map<std::pair<Mask, bool>, size_t> index;
    void ask(std::pair<Mask, bool> key, double limit) {
      const auto [it, fresh] = index.emplace(key, todo.size());
      if (!fresh) {
        limits[it->second] = std::max(limits[it->second], limit);
        return;
      }
      todo.push_back(key);
      limits.push_back(limit);
    }
  };

  Status send(const Request& request) {
    const bool limited = options_.bound_pruning && options_.limited_timing && !screening();
    return cost_stages(request.todo, false, limited ? &request.limits : nullptr);
  }

  // Asks for candidates[from] (not costed yet) with the next uncosted candidates the DP may reach (floors
  // under `bound`) up to the stage batch. Before the state has any bound, the first candidate goes alone:
  // its cost is the bound that prunes most of the rest. Workers waiting beside the model
  // (CostModel::spare_workers) time a share of each request side by side, so while they wait the batch
  // grows by theirs: stages a better one among them then prunes were timed on otherwise idle GPUs.
  Status ask_ahead(const std::vector<Candidate>& candidates, size_t from, double bound, Request& request) {
    const size_t spare = model_->spare_workers();
    const size_t batch =
        (std::isinf(bound) && options_.bound_pruning ? 1 : size_t(std::max(options_.stage_batch, 1))) * (1 + spare);
    size_t asked = 0;
    for (size_t j = from; j < candidates.size() && asked < batch; ++j) {
      const Candidate& c = candidates[j];
      if (options_.bound_pruning && c.lower >= bound) break;
      if (costed(c.ending, c.merge)) continue;
      if (j > from) {  // the caller checked candidates[from]'s floor just now
        ASSIGN_OR_RETURN(double lower, lower_now(c));
        if (lower >= bound) continue;
      }
      request.ask({c.ending, c.merge}, bound - c.rest);  // past it, the stage loses to the best ending so far
      ++asked;
    }
    return Status::ok();
  }

  // Screening: settles every candidate whose screening figure could still beat `bound` (the least `high`),
  // and screens those never costed whose floors now come under it (settled figures move the bound), until
  // no screened figure could win.
  Status settle_contenders(const std::vector<Candidate>& candidates, double& bound) {
    for (;;) {
      std::vector<std::pair<Mask, bool>> settle, screen;
      for (const Candidate& c : candidates) {
        const Cost* k = cost_of(c.ending, c.merge);
        const std::pair<Mask, bool> key{c.ending, c.merge};
        std::vector<std::pair<Mask, bool>>& todo = k ? settle : screen;
        const bool open = k ? !k->settled && low(c, *k) < bound : c.lower < bound;
        if (open && std::find(todo.begin(), todo.end(), key) == todo.end()) todo.push_back(key);
      }
      if (settle.empty() && screen.empty()) return Status::ok();
      RETURN_IF_ERROR(cost_stages(settle, true));
      RETURN_IF_ERROR(cost_stages(screen, false));
      bound = std::numeric_limits<double>::infinity();
      for (const Candidate& c : candidates)
        if (const Cost* k = cost_of(c.ending, c.merge)) bound = std::min(bound, high(c, *k));
    }
  }

  // A floor under a concurrent stage's latency from its ops timed alone: a group runs its ops one
  // after another, and every alone figure carries the stage's fixed overhead, at most the cheapest
  // op's figure, which the group pays once.
  Expected<double> stage_floor(Mask t) {
    if (alone_.empty()) {
      std::vector<std::pair<Mask, bool>> todo;  // floors need settled figures
      for (int i = 0; i < n_; ++i)
        if (const Cost* k = cost_of(bit(i), false); !k || !k->settled) todo.emplace_back(bit(i), false);
      RETURN_IF_ERROR(cost_stages(todo, true));
      cheapest_alone_ = std::numeric_limits<double>::infinity();
      for (int i = 0; i < n_; ++i) {
        alone_.push_back(parallel_cost_.at(bit(i)).ms);
        cheapest_alone_ = std::min(cheapest_alone_, alone_.back());
      }
    }
    Floor* f = floor_.find(t);
    if (!f) {
      Floor made{0, components(t), 0, -1};
      for (Mask comp : made.components) {
        double sum = 0;
        for (int i = 0; i < n_; ++i)
          if (comp & bit(i)) sum += alone_[size_t(i)];
        made.alone = std::max(made.alone, sum - double(popcount(comp) - 1) * cheapest_alone_);
      }
      f = floor_.emplace(t, std::move(made)).first;
    }
    // A measured floor changes only with the figures: every transition asks for its stage's floor, and
    // working it out each time (two figure lookups a group) made stage_floor a fifth of the DP's CPU time on
    // NasNet (perf).
    if (f->measured_at != figures_version_)
      f->measured = measured_floor(t, f->components), f->measured_at = figures_version_;
    return std::max(f->alone, f->measured);
  }

  // A concurrent stage runs no faster than the same stage without some of its groups: the largest
  // settled figure among t's groups alone and t without one group. These sharpen the alone-op floor
  // once neighbouring endings have been costed (DpOptions::measured_floors).
  double measured_floor(Mask t, const std::vector<Mask>& groups) {
    if (!options_.measured_floors || groups.size() < 2) return 0;
    double floor = 0;
    auto raise = [&](Mask sub) {
      if (const Cost* k = cost_of(sub, false); k && k->settled) floor = std::max(floor, with_slack(k->ms));
    };
    for (Mask group : groups) {
      raise(group);
      if (groups.size() > 2) raise(t & ~group);
    }
    return floor;
  }

  // A merged convolution computes every output of each convolution it merges: no faster than the
  // slowest of them alone.
  double merge_floor(Mask t) const {
    if (!options_.measured_floors || alone_.empty()) return 0;
    double slowest = 0;
    for (int i = 0; i < n_; ++i)
      if (t & bit(i)) slowest = std::max(slowest, alone_[size_t(i)]);
    return with_slack(slowest);
  }

  // Measured figures jitter (a stage of tens of microseconds by several percent, in the stage timing's
  // default tolerance): a figure floors a larger stage only after this much is taken off it.
  static constexpr double kFloorSlack = 0.05, kFloorSlackMs = 0.002;
  static double with_slack(double ms) { return ms * (1 - kFloorSlack) - kFloorSlackMs; }

  // The candidate's lower bound now: floors rise as more stages are costed.
  Expected<double> lower_now(const Candidate& c) {
    if (!options_.bound_pruning || !options_.measured_floors) return c.lower;
    if (c.merge) return c.rest + merge_floor(c.ending);
    ASSIGN_OR_RETURN(double floor, stage_floor(c.ending));
    return c.rest + floor;
  }

  // A state and its endings within the memory budget.
  struct State {
    Mask s;
    std::vector<std::pair<Mask, bool>> endings;
  };

  // Every state reachable from `all` through endings within the memory budget. The transition budget is
  // checked here, before anything is costed.
  Expected<std::vector<State>> discover(Mask all) {
    std::vector<State> states;
    MaskMap<uint8_t> seen;
    std::vector<Mask> stack{all};
    seen.emplace(all, 1);
    while (!stack.empty()) {
      State state{stack.back(), {}};
      stack.pop_back();
      const auto all_endings = endings(state.s);
      RETURN_ERROR_IF(all_endings.empty(), ErrorCode::kInvalidArgument,
                      "DP found no ending (r and s must be at least 1)");
      for (const auto& [t, merge] : all_endings) {
        ++stats_->transitions;
        RETURN_ERROR_IF(++transitions_ > options_.max_transitions, ErrorCode::kBudgetExceeded,
                        "a part of " + std::to_string(n_) + " ops went past " +
                            std::to_string(options_.max_transitions) + " DP transitions");
        if (over_memory_budget(state.s, t)) {
          ++stats_->memory_skipped;
          continue;
        }
        state.endings.emplace_back(t, merge);
        const Mask rest = state.s & ~t;
        if (rest != 0 && seen.emplace(rest, 1).second) stack.push_back(rest);
      }
      states.push_back(std::move(state));
    }
    return states;
  }

  // One state being solved: its candidates in the order the DP costs them, how far it got, the least any
  // costed candidate can cost (`bound`) and the best settled one.
  struct Resolver {
    Mask s = 0;
    std::vector<Candidate> candidates;
    size_t next = 0;
    double bound = std::numeric_limits<double>::infinity();
    Entry best{std::numeric_limits<double>::infinity(), 0, false};
    bool done = false;
  };

  // The state's candidates; every smaller state is solved.
  Expected<Resolver> resolver_of(const State& state) {
    Resolver r;
    r.s = state.s;
    for (const auto& [t, merge] : state.endings) {
      const Mask rest_mask = state.s & ~t;
      const double rest = rest_mask == 0 ? 0.0 : memo_.at(rest_mask).cost;
      if (std::isinf(rest)) continue;  // no prefix before this ending fits the memory budget
      double floor = 0;
      if (options_.bound_pruning && !merge) {
        ASSIGN_OR_RETURN(floor, stage_floor(t));
      } else if (options_.bound_pruning) {
        floor = merge_floor(t);
      }
      r.candidates.push_back({rest + floor, rest, t, merge});
    }
    // Most promising first; once a floor reaches the least any costed candidate can cost, no later stage
    // needs costing (without screening that is the best so far).
    if (options_.bound_pruning)
      std::stable_sort(r.candidates.begin(), r.candidates.end(),
                       [](const Candidate& a, const Candidate& b) { return a.lower < b.lower; });
    return r;
  }

  static void consider(Resolver& r, const Candidate& c, const Cost& k) {
    if (k.settled && c.rest + k.ms < r.best.cost) r.best = Entry{c.rest + k.ms, c.ending, c.merge};
  }

  // Takes the costed candidates in order until one needs costing (asked in `request`) or none is left
  // that could win (done).
  Status advance(Resolver& r, Request& request) {
    for (; r.next < r.candidates.size(); ++r.next) {
      const Candidate& c = r.candidates[r.next];
      if (options_.bound_pruning && c.lower >= r.bound) break;
      if (!costed(c.ending, c.merge)) {
        ASSIGN_OR_RETURN(double lower, lower_now(c));
        if (lower >= r.bound) continue;  // its floor rose past the bound since the candidates were sorted
        return ask_ahead(r.candidates, r.next, r.bound, request);
      }
      const Cost& k = *cost_of(c.ending, c.merge);
      r.bound = std::min(r.bound, high(c, k));
      consider(r, c, k);
    }
    r.done = true;
    return Status::ok();
  }

  // Solves states of one size side by side: each round, every state not done asks for its next stages,
  // and all of them go to the model in one request. Each state prunes with its own bound, as alone; the
  // request is larger, so a measuring model's pass and the workers lent to it have more to time at once.
  Status resolve_together(const std::vector<State>& states, size_t begin, size_t end) {
    std::vector<Resolver> resolvers;
    for (size_t i = begin; i < end; ++i) {
      ASSIGN_OR_RETURN(Resolver r, resolver_of(states[i]));
      resolvers.push_back(std::move(r));
    }
    for (;;) {
      Request request;
      for (Resolver& r : resolvers)
        if (!r.done) RETURN_IF_ERROR(advance(r, request));
      if (request.todo.empty()) break;
      RETURN_IF_ERROR(send(request));
    }
    for (Resolver& r : resolvers) {
      if (screening()) {
        RETURN_IF_ERROR(settle_contenders(r.candidates, r.bound));
        // Every screened figure left is above the best settled total; ties go to the earliest, as without.
        r.best = Entry{std::numeric_limits<double>::infinity(), 0, false};
        for (const Candidate& c : r.candidates)
          if (const Cost* k = cost_of(c.ending, c.merge)) consider(r, c, *k);
      }
      ++stats_->states;
      memo_.emplace(r.s, r.best);
    }
    return Status::ok();
  }

  // The optimum of `all`: states from the smallest up, those of one size in groups of
  // DpOptions::states_together (with screening, one at a time: each settles its contenders alone).
  Expected<double> resolve_all(Mask all) {
    if (all == 0) return 0.0;
    ASSIGN_OR_RETURN(std::vector<State> states, discover(all));
    std::stable_sort(states.begin(), states.end(),
                     [](const State& a, const State& b) { return popcount(a.s) < popcount(b.s); });
    const size_t together = screening() ? 1 : size_t(std::max(options_.states_together, 0));
    for (size_t begin = 0; begin < states.size();) {
      size_t end = begin + 1;
      while (end < states.size() && popcount(states[end].s) == popcount(states[begin].s) &&
             (together == 0 || end - begin < together))
        ++end;
      RETURN_IF_ERROR(resolve_together(states, begin, end));
      begin = end;
      if (options_.on_progress) options_.on_progress(double(begin) / double(states.size()));
    }
    return memo_.at(all).cost;
  }

  const ir::Graph& g_;
  std::vector<ir::NodeId> ops_;
  DpOptions options_;
  CostModel* model_;
  DpStats* stats_;
  int n_ = 0;
  std::vector<Mask> succ_, pred_, desc_;
  std::vector<std::vector<int>> chains_;
  MaskMap<Entry> memo_;
  MaskMap<Cost> parallel_cost_, merge_cost_;
  std::vector<double> alone_;  // each op timed alone, for floors
  double cheapest_alone_ = 0;
  struct Floor {
    double alone;                  // from the ops timed alone
    std::vector<Mask> components;  // the stage's groups
    double measured = 0;           // measured_floor, as of figures_version_ == measured_at
    int64_t measured_at = -1;
  };
  MaskMap<Floor> floor_;
  int64_t figures_version_ = 0;  // bumped whenever figures are added or settled (Floor::measured_at)
  PartMemory memory_;
  int64_t transitions_ = 0;  // of this part, against options_.max_transitions
};

}  // namespace

std::vector<std::vector<ir::NodeId>> block_parts(const ir::Graph& g, size_t block, int max_part_size) {
  const ir::Block& blk = g.blocks[block];
  if (!blk.parts.empty()) return blk.parts;
  std::vector<std::vector<ir::NodeId>> parts;
  const auto members = blk.members();
  const size_t size = static_cast<size_t>(std::clamp(max_part_size, 1, kMaxPart));
  for (size_t i = 0; i < members.size(); i += size)
    parts.emplace_back(members.begin() + static_cast<std::ptrdiff_t>(i),
                       members.begin() + static_cast<std::ptrdiff_t>(std::min(members.size(), i + size)));
  return parts;
}

std::vector<std::vector<ir::NodeId>> all_parts(const ir::Graph& g, int max_part_size) {
  std::vector<std::vector<ir::NodeId>> parts;
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (auto& part : block_parts(g, b, max_part_size)) parts.push_back(std::move(part));
  return parts;
}

Status optimize_part(const ir::Graph& g, const std::vector<ir::NodeId>& part, const DpOptions& options,
                     CostModel& model, std::vector<Stage>& out, DpStats& stats, const LiveMemoryModel* memory) {
  RETURN_ERROR_IF(options.r < 1 || options.s < 1, ErrorCode::kInvalidArgument, "--r and --s must be at least 1");
  RETURN_ERROR_IF(
      part.size() > static_cast<size_t>(kMaxPart), ErrorCode::kInvalidArgument,
      "a part has " + std::to_string(part.size()) + " ops; the DP handles at most 128 (lower --max-part-size)");
  std::vector<Stage> stages;
  Status solved = PartDp(g, part, options, &model, &stats, memory).solve(stages);
  if (solved.code() == ErrorCode::kBudgetExceeded && part.size() > 1) {
    // Halves of a topological order: the first is closed under predecessors, so each can be solved alone.
    std::vector<ir::NodeId> sorted = part;
    std::sort(sorted.begin(), sorted.end());
    const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    ++stats.budget_splits;
    DpOptions first = options, second = options;  // each half reports half of the part's progress
    if (options.on_progress) {
      first.on_progress = [&options](double share) { options.on_progress(share / 2); };
      second.on_progress = [&options](double share) { options.on_progress(0.5 + share / 2); };
    }
    RETURN_IF_ERROR(optimize_part(g, {sorted.begin(), middle}, first, model, out, stats, memory));
    return optimize_part(g, {middle, sorted.end()}, second, model, out, stats, memory);
  }
  RETURN_IF_ERROR(solved);
  out.insert(out.end(), stages.begin(), stages.end());
  return Status::ok();
}

Expected<BlockSchedule> optimize_block(const ir::Graph& g, size_t block, const DpOptions& options, CostModel& model,
                                       DpStats& stats) {
  BlockSchedule bs;
  const LiveMemoryModel memory(g, all_parts(g, options.max_part_size));
  for (const auto& part : block_parts(g, block, options.max_part_size))
    RETURN_IF_ERROR(optimize_part(g, part, options, model, bs.stages, stats, &memory));
  return bs;
}

std::vector<Stage> enumerate_endings(const ir::Graph& g, const std::vector<ir::NodeId>& part,
                                     const std::vector<ir::NodeId>& remaining, const DpOptions& options) {
  DpStats stats;
  PartDp dp(g, part, options, nullptr, &stats);
  std::vector<Stage> out;
  for (const auto& [t, merge] : dp.endings(dp.mask_of(remaining))) out.push_back(dp.to_stage(t, merge));
  return out;
}

}  // namespace ios::sched
