#include "runtime/losing_engines.h"

#include <algorithm>

namespace ios::rt {

void LosingEngines::record(const std::string& group, const std::vector<std::pair<std::string, double>>& timed) {
  for (const auto& [loser, loser_ms] : timed)
    for (const auto& [winner, winner_ms] : timed) {
      if (loser == winner) continue;
      Record& r = pairs_[{group, loser, winner}];
      if (loser_ms >= kMargin * winner_ms) {
        ++r.lost;
      } else {
        r.contested = true;
      }
    }
}

std::vector<std::string> LosingEngines::beaten_by(const std::string& group, const std::string& engine) const {
  std::vector<std::string> winners;
  for (auto it = pairs_.lower_bound({group, engine, ""}); it != pairs_.end(); ++it) {
    const auto& [g, loser, winner] = it->first;
    if (g != group || loser != engine) break;
    if (!it->second.contested && it->second.lost >= kTrials) winners.push_back(winner);
  }
  return winners;
}

std::vector<size_t> LosingEngines::timing_order(const std::string& group, const std::vector<std::string>& names,
                                                const std::vector<bool>& compiled) const {
  std::vector<size_t> order;
  std::vector<std::pair<std::string, size_t>> deferred;  // (the engine it waits for, position)
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<std::string> winners =
        i < compiled.size() && compiled[i] ? beaten_by(group, names[i]) : std::vector<std::string>();
    // The first of its winners among the candidates.
    auto winner = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
      return std::find(winners.begin(), winners.end(), n) != winners.end();
    });
    if (winner != names.end()) {
      deferred.emplace_back(*winner, i);
    } else {
      order.push_back(i);
    }
  }
  // Placed after their winners in turn; a chain (a loses to b, b to c) settles as deferred ones land.
  while (!deferred.empty()) {
    const size_t before = deferred.size();
    for (auto it = deferred.begin(); it != deferred.end();) {
      auto at = std::find_if(order.begin(), order.end(), [&](size_t k) { return names[k] == it->first; });
      if (at == order.end()) {
        ++it;
        continue;
      }
      order.insert(at + 1, it->second);
      it = deferred.erase(it);
    }
    if (deferred.size() == before) {  // a cycle cannot form (each loses by kMargin), but never loop on one
      for (const auto& d : deferred) order.push_back(d.second);
      break;
    }
  }
  return order;
}

}  // namespace ios::rt
