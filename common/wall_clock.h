// Host wall time, for the seconds a search or a build reports about itself.
#pragma once

#include <chrono>

namespace ios {

using WallClock = std::chrono::steady_clock;

inline double seconds_since(WallClock::time_point start) {
  return std::chrono::duration<double>(WallClock::now() - start).count();
}

}  // namespace ios
