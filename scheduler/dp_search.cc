// The DP's search: states discovered, their endings costed by the model in batched requests (screened,
// limited, bounded by floors), resolved smallest first, and the best schedule read back.
#include "scheduler/part_dp.h"

namespace ios::sched::dp_detail {

auto PartDp::solve(std::vector<Stage>& out) -> Status {
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

auto PartDp::cost_stages(const std::vector<std::pair<Mask, bool>>& todo, bool settle, const std::vector<double>* limits)
    -> Status {
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

auto PartDp::ask_ahead(const std::vector<Candidate>& candidates, size_t from, double bound, Request& request)
    -> Status {
  const size_t spare = spare_workers(*model_);
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

auto PartDp::settle_contenders(const std::vector<Candidate>& candidates, double& bound) -> Status {
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

auto PartDp::stage_floor(Mask t) -> Expected<double> {
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

auto PartDp::measured_floor(Mask t, const std::vector<Mask>& groups) -> double {
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

auto PartDp::merge_floor(Mask t) const -> double {
  if (!options_.measured_floors || alone_.empty()) return 0;
  double slowest = 0;
  for (int i = 0; i < n_; ++i)
    if (t & bit(i)) slowest = std::max(slowest, alone_[size_t(i)]);
  return with_slack(slowest);
}

auto PartDp::lower_now(const Candidate& c) -> Expected<double> {
  if (!options_.bound_pruning || !options_.measured_floors) return c.lower;
  if (c.merge) return c.rest + merge_floor(c.ending);
  ASSIGN_OR_RETURN(double floor, stage_floor(c.ending));
  return c.rest + floor;
}

auto PartDp::discover(Mask all) -> Expected<std::vector<State>> {
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
                      "a part of " + std::to_string(n_) + " ops went past " + std::to_string(options_.max_transitions) +
                          " DP transitions");
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

auto PartDp::resolver_of(const State& state) -> Expected<Resolver> {
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

auto PartDp::advance(Resolver& r, Request& request) -> Status {
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

auto PartDp::resolve_together(const std::vector<State>& states, size_t begin, size_t end) -> Status {
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

auto PartDp::resolve_all(Mask all) -> Expected<double> {
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

}  // namespace ios::sched::dp_detail
