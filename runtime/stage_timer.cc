#include "runtime/stage_timer.h"

namespace ios::rt {

StageTimer::StageTimer(const sched::StageTimingRule& rule, std::shared_ptr<Context> context)
    : rule_(rule), context_(std::move(context)), stream_(context_->stream(0)) {}

StageTimer::~StageTimer() { cudaStreamSynchronize(stream_); }

Expected<cudaEvent_t> StageTimer::record() {
  ASSIGN_OR_RETURN(Event e, make_event(true));
  CHECK_CUDA(cudaEventRecord(e, stream_));
  events_.push_back(std::move(e));
  return events_.back().get();
}

Status StageTimer::queue(Timed& t, int rounds) {
  for (int i = 0; i < rule_.warmup; ++i) RETURN_IF_ERROR(t.exec->enqueue());
  cudaEvent_t mark = nullptr;  // warm rounds share their boundary marks
  if (!rule_.cold_l2) {
    ASSIGN_OR_RETURN(mark, record());
  }
  for (int r = 0; r < rounds; ++r) {
    std::vector<Span> spans;
    if (rule_.cold_l2) {
      for (int i = 0; i < rule_.number; ++i) {
        RETURN_IF_ERROR(context_->flush_l2(stream_));
        ASSIGN_OR_RETURN(cudaEvent_t begin, record());
        RETURN_IF_ERROR(t.exec->enqueue());
        ASSIGN_OR_RETURN(cudaEvent_t end, record());
        spans.push_back({begin, end});
      }
    } else {
      for (int i = 0; i < rule_.number; ++i) RETURN_IF_ERROR(t.exec->enqueue());
      ASSIGN_OR_RETURN(cudaEvent_t end, record());
      spans.push_back({mark, end});
      mark = end;
    }
    t.rounds.push_back(std::move(spans));
  }
  return Status::ok();
}

Expected<std::vector<double>> StageTimer::read(const Timed& t) const {
  std::vector<double> rounds;
  for (const std::vector<Span>& spans : t.rounds) {
    double total = 0;
    for (const Span& s : spans) {
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, s.begin, s.end));
      total += double(ms);
    }
    rounds.push_back(total / rule_.number);
  }
  return rounds;
}

Status StageTimer::check(Timed& t) {
  ASSIGN_OR_RETURN(std::vector<double> first, read(t));
  t.checked = true;
  if (sched::timing_settled(first, rule_)) return Status::ok();
  return queue(t, rule_.max_rounds - static_cast<int>(first.size()));
}

Status StageTimer::add(std::unique_ptr<Executor> exec) {
  RETURN_ERROR_IF(exec->main_stream() != stream_, ErrorCode::kInvalidArgument,
                  "a stage executor replays on another stream than its timer's");
  timed_.push_back(Timed{std::move(exec), {}, false});
  RETURN_IF_ERROR(queue(timed_.back(), rule_.min_rounds));
  // Stages finish in the order they were queued: check the earlier ones until one is still running.
  while (unchecked_ + 1 < timed_.size()) {
    const cudaError_t done = cudaEventQuery(timed_[unchecked_].rounds.back().back().end);
    if (done == cudaErrorNotReady) break;
    CHECK_CUDA(done);
    RETURN_IF_ERROR(check(timed_[unchecked_++]));
  }
  return Status::ok();
}

Expected<std::vector<std::vector<double>>> StageTimer::finish() {
  for (; unchecked_ < timed_.size(); ++unchecked_) {
    CHECK_CUDA(cudaEventSynchronize(timed_[unchecked_].rounds.back().back().end));
    RETURN_IF_ERROR(check(timed_[unchecked_]));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  std::vector<std::vector<double>> out;
  for (const Timed& t : timed_) {
    ASSIGN_OR_RETURN(std::vector<double> rounds, read(t));
    out.push_back(std::move(rounds));
  }
  timed_.clear();
  events_.clear();
  unchecked_ = 0;
  return out;
}

}  // namespace ios::rt
