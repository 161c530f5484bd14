// What a process learns while it tunes about the convolution engines cuDNN compiles at run time: which
// keep losing to another engine. Compiling one costs 30 ms to 1.2 s (NVRTC, then the driver's JIT), and a
// machine's first tf32 search of Inception V3 spent 8.7 of its 13.5 s compiling (H100, cuDNN 9.19). There,
// of the two engines it compiles for a strided output, one was timed beside the other on 59 convolutions and
// lost on all 59, by 2.1x at least; on NasNet's depthwise convolutions a runtime-compiled engine was compiled
// 25 times only to be cut short behind a precompiled one. So once a
// runtime-compiled engine has lost to the same other engine (compiled or not) by kMargin on kTrials
// convolutions of a group, and never came closer, tuning takes it after that engine and builds it only where
// that engine ran. Learned per process, never from a file: a new cuDNN or GPU starts over. Plain C++ (no
// CUDA): tested on the CPU.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ios::rt {

class LosingEngines {
 public:
  static constexpr int kTrials = 3;
  static constexpr double kMargin = 1.5;

  // One convolution's timed engines, (name, ms); for one whose timing stopped because it could no longer win,
  // what it takes at least. `group`: convolutions alike enough to share the lesson (precision, fused
  // epilogue, ...).
  void record(const std::string& group, const std::vector<std::pair<std::string, double>>& timed);
  // The engines `engine` keeps losing to in `group` (tuning asks only for runtime-compiled ones).
  std::vector<std::string> beaten_by(const std::string& group, const std::string& engine) const;
  // `names` (one convolution's candidates in timing order) reordered as positions into it: each one
  // `compiled` (at run time) that keeps losing moved to just after the first engine it loses to, where that engine
  // is a candidate too. The others keep their order.
  std::vector<size_t> timing_order(const std::string& group, const std::vector<std::string>& names,
                                   const std::vector<bool>& compiled) const;

 private:
  struct Record {
    int lost = 0;            // convolutions on which the loser lost by kMargin
    bool contested = false;  // once it came within kMargin (or won), it is never skipped
  };
  std::map<std::tuple<std::string, std::string, std::string>, Record> pairs_;  // (group, loser, winner)
};

}  // namespace ios::rt
