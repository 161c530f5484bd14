#include "scheduler/idle_workers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "scheduler/timing_devices.h"

namespace ios::sched {

// One asker's request while it is shared out: the stages not yet taken start at `next`.
struct IdleWorkers::Shared {
  size_t asker = 0;
  bool large = false;  // of at least kSiblingMinStages stages: the asker's own device may help
  const Job* job = nullptr;
  size_t n = 0, next = 0;
  size_t takers = 1;                              // the asker and the workers that could help when it was shared
  size_t running = 0;                             // pieces taken and not answered yet
  std::map<size_t, std::vector<double>> answers;  // by a piece's first stage
  std::optional<Status> failed;                   // the first error a piece met
};

// Worker i's model as its stage cache view sees it: requests of several stages are spread, everything
// else goes to the model unchanged.
// A worker's model as its DP sees it: requests shared out, and a Measurement that adds the waiting workers to
// the worker model's own.
class IdleWorkers::Asker : public ForwardingCostModel, private Measurement {
 public:
  Asker(IdleWorkers& pool, size_t index) : pool_(pool), index_(index) {}
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                   int batch) override {
    return pool_.spread(index_, stages.size(), [&](CostModel& m, size_t first, size_t end) {
      return m.stage_latencies_ms(g, slice(stages, first, end), batch);
    });
  }
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           const std::vector<double>& limits, int batch) override {
    RETURN_IF_ERROR(check_limits(stages, limits));
    return pool_.spread(index_, stages.size(), [&](CostModel& m, size_t first, size_t end) {
      return m.limited_stage_latencies_ms(g, slice(stages, first, end), slice(limits, first, end), batch);
    });
  }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                    int batch) override {
    return pool_.spread(index_, stages.size(), [&](CostModel& m, size_t first, size_t end) {
      return m.screen_latencies_ms(g, slice(stages, first, end), batch);
    });
  }
  Measurement* measurement() override { return this; }

 private:
  std::string timing_device() const override { return pool_.devices_[index_]; }
  size_t spare_workers() const override { return pool_.spare(index_); }
  std::map<std::string, double> calibration() const override {
    const Measurement* own = inner().measurement();
    return own ? own->calibration() : std::map<std::string, double>{};
  }
  Status adopt_calibration(const std::map<std::string, double>& values) override {
    Measurement* own = inner().measurement();
    return own ? own->adopt_calibration(values) : Status::ok();
  }

 protected:
  CostModel& inner() const override { return *pool_.models_[index_]; }

 private:
  template <typename T>
  static std::vector<T> slice(const std::vector<T>& v, size_t first, size_t end) {
    return std::vector<T>(v.begin() + std::ptrdiff_t(first), v.begin() + std::ptrdiff_t(end));
  }
  IdleWorkers& pool_;
  size_t index_;
};

IdleWorkers::IdleWorkers() = default;
IdleWorkers::~IdleWorkers() = default;

CostModel& IdleWorkers::add(CostModel& model) {
  models_.push_back(&model);
  devices_.push_back(timing_device(model));
  waiting_.push_back(false);
  out_of_parts_.push_back(false);
  askers_.push_back(std::make_unique<Asker>(*this, models_.size() - 1));
  return *askers_.back();
}

bool IdleWorkers::may_help(size_t helper, size_t asker, bool large) const {
  if (helper == asker) return false;
  if (devices_[helper].empty()) return true;
  if (devices_[helper] == devices_[asker]) return large && out_of_parts_[helper];
  for (size_t w = 0; w < devices_.size(); ++w)
    if (devices_[w] == devices_[helper] && !out_of_parts_[w]) return false;
  return true;
}

size_t IdleWorkers::spare_locked(size_t asker, bool large) const {
  if (closed_) return 0;
  size_t helpers = 0;
  for (size_t w = 0; w < waiting_.size(); ++w) helpers += waiting_[w] && may_help(w, asker, large);
  return helpers;
}

size_t IdleWorkers::spare(size_t asker) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spare_locked(asker, false);  // the DP's batch grows for other GPUs' workers only
}

size_t IdleWorkers::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_t(std::count(waiting_.begin(), waiting_.end(), true));
}

IdleWorkers::Stats IdleWorkers::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Chunk IdleWorkers::take_locked(Shared& r) {
  const size_t left = r.n - r.next;
  const size_t size = std::min(left, std::max(kMinPiece, (left + 2 * r.takers - 1) / (2 * r.takers)));
  const Chunk c{r.next, r.next + size};
  r.next = c.end;
  ++r.running;
  if (r.next == r.n) retire_locked(r);
  return c;
}

void IdleWorkers::retire_locked(Shared& r) {
  r.next = r.n;
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& q) { return q.get() == &r; });
  if (it != queue_.end()) queue_.erase(it);
}

void IdleWorkers::time_piece(Shared& r, Chunk c, size_t w, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  Answer answer = (*r.job)(*models_[w], c.begin, c.end);
  lock.lock();
  --r.running;
  if (answer && answer->size() != c.size())
    answer = error(ErrorCode::kRuntimeError, "a cost model answered " + std::to_string(answer->size()) +
                                                 " figures for " + std::to_string(c.size()) + " stages");
  if (!answer) {
    if (!r.failed) r.failed = answer.status();
    retire_locked(r);  // nothing more of it is timed
  } else {
    if (w != r.asker) ++stats_.chunks_lent, stats_.stages_lent += int64_t(c.size());
    r.answers.emplace(c.begin, std::move(*answer));
  }
  answered_.notify_all();
}

void IdleWorkers::serve(size_t i) {
  std::unique_lock<std::mutex> lock(mutex_);
  out_of_parts_[i] = true;
  queued_.notify_all();  // its device may have become free: waiting siblings may now take pieces
  for (;;) {
    auto mine = queue_.end();  // the oldest request with a piece this worker may time
    waiting_[i] = true;
    queued_.wait(lock, [&] {
      mine = std::find_if(queue_.begin(), queue_.end(), [&](const auto& r) { return may_help(i, r->asker, r->large); });
      return mine != queue_.end() || closed_;  // closed: what it may not time, its askers take
    });
    waiting_[i] = false;
    if (mine == queue_.end()) return;  // closed
    const std::shared_ptr<Shared> r = *mine;
    const Chunk c = take_locked(*r);
    time_piece(*r, c, i, lock);
  }
}

void IdleWorkers::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = false;
  std::fill(out_of_parts_.begin(), out_of_parts_.end(), false);
}

void IdleWorkers::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  queued_.notify_all();
}

IdleWorkers::Answer IdleWorkers::spread(size_t asker, size_t n, const Job& job) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool large = n >= kSiblingMinStages;
  const size_t spare = spare_locked(asker, large);
  if (n <= kMinPiece || spare == 0) {  // one piece at most: nothing to share
    lock.unlock();
    return job(*models_[asker], 0, n);
  }
  const auto r = std::make_shared<Shared>();
  r->asker = asker, r->large = large, r->job = &job, r->n = n, r->takers = spare + 1;
  Chunk c = take_locked(*r);  // the asker's first piece, before any helper sees the request
  if (r->next < n) {
    queue_.push_back(r);
    queued_.notify_all();
  }
  for (;;) {
    time_piece(*r, c, asker, lock);
    if (r->next == n) break;
    c = take_locked(*r);
  }
  answered_.wait(lock, [&] { return r->running == 0; });
  if (r->failed) return *r->failed;
  std::vector<double> out;
  for (auto& [first, figures] : r->answers) out.insert(out.end(), figures.begin(), figures.end());
  return out;
}

}  // namespace ios::sched
