// IOS's dynamic program over one part (PartDp): the stage endings a state may take (dp_endings.cc) and the
// search that costs them and keeps the best (dp_search.cc). Internal to scheduler/: other code includes dp.h.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>

#include "scheduler/dp.h"
#include "scheduler/merge.h"

namespace ios::sched::dp_detail {

using Mask = unsigned __int128;
constexpr int kMaxPart = 128;

inline Mask bit(int i) { return Mask{1} << i; }
inline int popcount(Mask m) {
  return std::popcount(static_cast<uint64_t>(m)) + std::popcount(static_cast<uint64_t>(m >> 64));
}
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

  Status solve(std::vector<Stage>& out);

  // Endings of s as (mask, is_merge), deduplicated, merges first.
  std::vector<std::pair<Mask, bool>> endings(Mask s) const;

  Mask mask_of(const std::vector<ir::NodeId>& ids) const;

  Stage to_stage(Mask t, bool merge) const;

  // The weakly connected components of t (a concurrent stage's groups), ordered by their first op.
  std::vector<Mask> components(Mask t) const;

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

  void build_memory(const LiveMemoryModel& m, const std::map<ir::NodeId, int>& local);

  // Live elements while ending t of s runs: ops of s - t are done, t's are writing.
  bool over_memory_budget(Mask s, Mask t) const;

  void build_chains();

  void parallel_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const;

  struct Enumeration {
    const std::vector<std::vector<Mask>>& options;  // per chain, its closures
    std::vector<std::vector<Mask>> groups_at;       // per chain, the groups after choosing there (reused)
    MaskMap<uint8_t> seen;                          // the endings already out (the value is unused)
    std::vector<std::pair<Mask, bool>>& out;
  };

  // Chooses a closure (or none) per chain; overlapping closures merge into one group (union-find on
  // masks), and the size bound r is rechecked after every merge, the group bound s at the end.
  void enumerate(Enumeration& e, size_t chain, const std::vector<Mask>& groups) const;

  void merge_endings(Mask s, std::vector<std::pair<Mask, bool>>& out) const;

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
                     const std::vector<double>* limits = nullptr);

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
  // (Measurement::spare_workers) time a share of each request side by side, so while they wait the batch
  // grows by theirs: stages a better one among them then prunes were timed on otherwise idle GPUs.
  Status ask_ahead(const std::vector<Candidate>& candidates, size_t from, double bound, Request& request);

  // Screening: settles every candidate whose screening figure could still beat `bound` (the least `high`),
  // and screens those never costed whose floors now come under it (settled figures move the bound), until
  // no screened figure could win.
  Status settle_contenders(const std::vector<Candidate>& candidates, double& bound);

  // A floor under a concurrent stage's latency from its ops timed alone: a group runs its ops one
  // after another, and every alone figure carries the stage's fixed overhead, at most the cheapest
  // op's figure, which the group pays once.
  Expected<double> stage_floor(Mask t);

  // A concurrent stage runs no faster than the same stage without some of its groups: the largest
  // settled figure among t's groups alone and t without one group. These sharpen the alone-op floor
  // once neighbouring endings have been costed (DpOptions::measured_floors).
  double measured_floor(Mask t, const std::vector<Mask>& groups);

  // A merged convolution computes every output of each convolution it merges: no faster than the
  // slowest of them alone.
  double merge_floor(Mask t) const;

  // Measured figures jitter (a stage of tens of microseconds by several percent, in the stage timing's
  // default tolerance): a figure floors a larger stage only after this much is taken off it.
  static constexpr double kFloorSlack = 0.05, kFloorSlackMs = 0.002;
  static double with_slack(double ms) { return ms * (1 - kFloorSlack) - kFloorSlackMs; }

  // The candidate's lower bound now: floors rise as more stages are costed.
  Expected<double> lower_now(const Candidate& c);

  // A state and its endings within the memory budget.
  struct State {
    Mask s;
    std::vector<std::pair<Mask, bool>> endings;
  };

  // Every state reachable from `all` through endings within the memory budget. The transition budget is
  // checked here, before anything is costed.
  Expected<std::vector<State>> discover(Mask all);

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
  Expected<Resolver> resolver_of(const State& state);

  static void consider(Resolver& r, const Candidate& c, const Cost& k) {
    if (k.settled && c.rest + k.ms < r.best.cost) r.best = Entry{c.rest + k.ms, c.ending, c.merge};
  }

  // Takes the costed candidates in order until one needs costing (asked in `request`) or none is left
  // that could win (done).
  Status advance(Resolver& r, Request& request);

  // Solves states of one size side by side: each round, every state not done asks for its next stages,
  // and all of them go to the model in one request. Each state prunes with its own bound, as alone; the
  // request is larger, so a measuring model's pass and the workers lent to it have more to time at once.
  Status resolve_together(const std::vector<State>& states, size_t begin, size_t end);

  // The optimum of `all`: states from the smallest up, those of one size in groups of
  // DpOptions::states_together (with screening, one at a time: each settles its contenders alone).
  Expected<double> resolve_all(Mask all);

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

}  // namespace ios::sched::dp_detail
