// A search's workers that have run out of parts, lent to those still searching. The parts go to one worker
// per cost model, largest first; the last ones then run alone while the other workers idle (NasNet fp32 on
// 4 x H200: eight workers busy 2.8-4.0 s of a 4.0 s span, the largest part alone on its worker
// from start to end). IdleWorkers wraps each worker's measuring model (the one behind its stage cache
// view): a request of several stages that reaches it (the cache's misses) is shared out in contiguous
// pieces that the asker and the waiting workers take in turn, each timing its pieces with its own model.
// Pieces shrink as fewer stages are left (guided self-scheduling: what is left over twice the takers, at
// least kMinPiece), so that a slow taker (a GPU shared with other requests) holds the asker up by one small
// piece at most, and a fast one takes more. Against one piece per taker cut at the start, RandWire fp32's
// search on 4 x H200 took 9.7-10.0 s instead of 11.6-12.0 s, with 2.6 times the passes.
//
// Workers of a device (Measurement::timing_device: a GPU) whose workers are all out of parts help any worker of another
// device. A worker out of parts also helps its own GPU's sibling, but only with requests of kSiblingMinStages
// or more: it builds its share of the stage executors on its own thread, and both take turns timing them.
// With requests of two stages this made RandWire fp32 on one H200 3 % slower; since the DP
// asks for a size of states at once, requests hold hundreds of stages, and sibling help made
// RandWire fp32 0-5 % faster on one H200 and on four. The wrapped model also tells the DP how
// many workers of other GPUs wait (Measurement::spare_workers), so that it asks for more stages at once while
// they do. Figures come from the same models either way: the schedule does not depend on who timed a stage
// beyond measurement noise.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/timing_devices.h"

namespace ios::sched {

class IdleWorkers {
 public:
  IdleWorkers();
  ~IdleWorkers();
  IdleWorkers(const IdleWorkers&) = delete;
  IdleWorkers& operator=(const IdleWorkers&) = delete;

  // Worker i's measuring model, i counting the calls: the model its stage cache view should measure with.
  CostModel& add(CostModel& model);
  size_t size() const { return models_.size(); }
  // A search starts: waiting workers may be lent until close().
  void open();
  // Worker i has no part left: times pieces of other workers' requests with its model until close().
  void serve(size_t i);
  // The parts are done: serve() returns once no piece it may take is left, and askers time all their
  // stages themselves.
  void close();

  size_t waiting() const;  // workers in serve() without a piece

  // A request at least this large may also be shared with workers out of parts on the asker's own GPU.
  static constexpr size_t kSiblingMinStages = 32;
  // The fewest stages a piece holds (but the last): each piece is a pass of its own over the GPU.
  static constexpr size_t kMinPiece = 8;

  struct Stats {
    int64_t chunks_lent = 0;  // pieces a waiting worker timed for another
    int64_t stages_lent = 0;  // the stages in them
  };
  Stats stats() const;

 private:
  class Asker;
  struct Shared;
  using Answer = Expected<std::vector<double>>;
  // job(model, first, end) answers entries [first, end) of a request of n with `model`.
  using Job = std::function<Answer(CostModel&, size_t, size_t)>;
  Answer spread(size_t asker, size_t n, const Job& job);
  // The next piece of `r` for whoever takes it; a request with nothing left leaves the queue.
  Chunk take_locked(Shared& r);
  void retire_locked(Shared& r);  // no piece of `r` is left to take
  // Times piece `c` of `r` with worker w's model and files the answer (an error stops the request).
  void time_piece(Shared& r, Chunk c, size_t w, std::unique_lock<std::mutex>& lock);
  // Whether worker `helper` may time pieces of worker `asker`'s requests: another device, every worker of which is out
  // of parts (a model without a device is a device of its own); or, for a request of at least
  // kSiblingMinStages, a worker out of parts on the asker's own device, which then builds its share of the
  // stages on its own thread while both take turns timing them.
  bool may_help(size_t helper, size_t asker, bool large) const;
  // Waiting workers that may help it with a request of that size.
  size_t spare_locked(size_t asker, bool large) const;
  size_t spare(size_t asker) const;

  std::vector<CostModel*> models_;
  std::vector<std::string> devices_;  // models_[i]->timing_device()
  std::vector<std::unique_ptr<Asker>> askers_;
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable queued_, answered_;
  std::deque<std::shared_ptr<Shared>> queue_;  // requests with pieces left, oldest first
  std::vector<bool> waiting_;                  // by worker: in serve() without a piece
  std::vector<bool> out_of_parts_;             // by worker: in serve(), waiting or timing a piece
  bool closed_ = true;                         // until open()
  Stats stats_;
};

}  // namespace ios::sched
