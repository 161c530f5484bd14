#include "scheduler/idle_workers.h"

#include <algorithm>
#include <optional>
#include <string>

#include "scheduler/lanes.h"

namespace ios::sched {

// A chunk of one asker's request: timed by a waiting worker, or taken back by the asker.
struct IdleWorkers::Task {
  size_t asker = 0;
  bool large = false;  // of a request of at least kSiblingMinStages: the asker's lane may help
  std::function<Answer(CostModel&)> run;
  bool taken = false;
  std::optional<Answer> answer;
};

// Worker i's model as its stage cache view sees it: requests of several stages are spread, everything
// else goes to the model unchanged.
class IdleWorkers::Asker : public ForwardingCostModel {
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
  size_t spare_workers() const override { return pool_.spare(index_); }

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
  lanes_.push_back(model.lane());
  waiting_.push_back(false);
  out_of_parts_.push_back(false);
  askers_.push_back(std::make_unique<Asker>(*this, models_.size() - 1));
  return *askers_.back();
}

bool IdleWorkers::may_help(size_t helper, size_t asker, bool large) const {
  if (helper == asker) return false;
  if (lanes_[helper].empty()) return true;
  if (lanes_[helper] == lanes_[asker]) return large && out_of_parts_[helper];
  for (size_t w = 0; w < lanes_.size(); ++w)
    if (lanes_[w] == lanes_[helper] && !out_of_parts_[w]) return false;
  return true;
}

size_t IdleWorkers::spare_locked(size_t asker, bool large) const {
  if (closed_) return 0;
  size_t helpers = 0;
  for (size_t w = 0; w < waiting_.size(); ++w) helpers += waiting_[w] && may_help(w, asker, large);
  return helpers > queue_.size() ? helpers - queue_.size() : 0;
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

void IdleWorkers::serve(size_t i) {
  std::unique_lock<std::mutex> lock(mutex_);
  out_of_parts_[i] = true;
  queued_.notify_all();  // its lane may have become free: waiting siblings may now take chunks
  for (;;) {
    auto mine = queue_.end();  // the first queued chunk this worker may time
    waiting_[i] = true;
    queued_.wait(lock, [&] {
      mine = std::find_if(queue_.begin(), queue_.end(), [&](const auto& t) { return may_help(i, t->asker, t->large); });
      return mine != queue_.end() || closed_;  // closed: what it may not time, its askers take back
    });
    waiting_[i] = false;
    if (mine == queue_.end()) return;  // closed
    std::shared_ptr<Task> task = *mine;
    queue_.erase(mine);
    task->taken = true;
    lock.unlock();
    Answer answer = task->run(*models_[i]);
    lock.lock();
    if (answer) ++stats_.chunks_lent, stats_.stages_lent += int64_t(answer->size());
    task->answer = std::move(answer);
    answered_.notify_all();
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
  std::vector<Chunk> chunks;
  std::vector<std::shared_ptr<Task>> lent;  // chunks[1...]
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool large = n >= kSiblingMinStages;
    if (const size_t spare = spare_locked(asker, large); n > 1 && spare > 0)
      chunks = chunks_of(n, std::min(n, spare + 1));
    for (size_t k = 1; k < chunks.size(); ++k) {
      auto task = std::make_shared<Task>();
      task->asker = asker;
      task->large = large;
      task->run = [&job, c = chunks[k]](CostModel& m) { return job(m, c.begin, c.end); };
      queue_.push_back(task);
      lent.push_back(task);
    }
  }
  if (lent.empty()) return job(*models_[asker], 0, n);
  queued_.notify_all();
  Answer first = job(*models_[asker], chunks[0].begin, chunks[0].end);
  for (const std::shared_ptr<Task>& task : lent) {  // what no worker has started, the asker times
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (task->taken) continue;
      task->taken = true;
      queue_.erase(std::find(queue_.begin(), queue_.end(), task));
    }
    task->answer = task->run(*models_[asker]);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  answered_.wait(
      lock, [&] { return std::all_of(lent.begin(), lent.end(), [](const auto& t) { return t->answer.has_value(); }); });
  if (!first) return first.status();
  std::vector<double> out = std::move(*first);
  for (const std::shared_ptr<Task>& task : lent) {
    if (!*task->answer) return task->answer->status();
    out.insert(out.end(), (*task->answer)->begin(), (*task->answer)->end());
  }
  RETURN_ERROR_IF(
      out.size() != n, ErrorCode::kRuntimeError,
      "a cost model answered " + std::to_string(out.size()) + " figures for " + std::to_string(n) + " stages");
  return out;
}

}  // namespace ios::sched
