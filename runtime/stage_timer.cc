#include "runtime/stage_timer.h"

#include <algorithm>

#include "runtime/kernels.h"

namespace ios::rt {

StageTimer::StageTimer(const sched::StageTimingRule& rule, std::shared_ptr<Context> context, double cold_share,
                       TimingStream::Boundary boundary)
    : rule_(rule),
      cold_share_(cold_share),
      boundary_(boundary),
      context_(std::move(context)),
      timing_stream_(context_->timing_stream()),
      stream_(timing_stream_->stream()) {}

StageTimer::~StageTimer() { (void)wait_for_queued(); }

Status StageTimer::wait_for_queued() const {
  if (!events_.empty()) CHECK_CUDA(cudaEventSynchronize(events_.back()));
  return Status::ok();
}

Expected<cudaEvent_t> StageTimer::record() {
  ASSIGN_OR_RETURN(Event e, make_event(true));
  CHECK_CUDA(cudaEventRecord(e, stream_));
  events_.push_back(std::move(e));
  return events_.back().get();
}

// A round whose first event the GPU reaches before the host has queued all of it may contain an idle gap
// (the host is slow to queue, or held up inside the driver by another worker's graph instantiation). So
// once a round is queued its first event is asked: not yet reached proves the round has no gap; reached,
// the round is dropped and queued again behind a spin twice as long (sched::HeadStart), which gives the
// host a head start. A gap between rounds is harmless. (A host function holding the timing stream until all was
// queued hung a two-worker search, probably on lazy kernel loading, which waits for the whole device.)
Status StageTimer::queue(Timed& t, int rounds, int warmup) {
  std::lock_guard<std::mutex> lock(timing_stream_->queue_mutex());
  if (!pass_begin_) {
    ASSIGN_OR_RETURN(pass_begin_, record());
  }
  // Under the mutex: a wait queued outside it could land inside another worker's round. A stage's
  // first round also starts with its graph uploaded: without a warm-up replay its first replay would
  // otherwise upload it.
  if (t.rounds.empty()) {
    CHECK_CUDA(cudaStreamWaitEvent(stream_, t.built));
    RETURN_IF_ERROR(t.exec->upload_on(stream_));
  }
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(t.exec->replay_on(stream_));
  replays_ += warmup;
  sched::HeadStart& head = timing_stream_->head_start();
  cudaEvent_t mark = nullptr;  // warm rounds share their boundary marks
  for (int r = 0; r < rounds; ++r)
    for (int attempt = 0;; ++attempt) {
      if (r == 0 || attempt > 0) RETURN_IF_ERROR(lead_in(mark));
      ASSIGN_OR_RETURN(std::vector<Span> spans, queue_round(t, mark));
      replays_ += rule_.number;
      const cudaError_t reached = cudaEventQuery(spans.front().begin);
      const bool ahead = reached == cudaErrorNotReady;
      if (!ahead) CHECK_CUDA(reached);
      if (ahead) head.kept_ahead();
      if (ahead || attempt == kMaxRequeues) {
        unproven_ += !ahead;
        t.rounds.push_back(std::move(spans));
        break;
      }
      head.caught_up();
      max_head_start_ms_ = std::max(max_head_start_ms_, head.ms());
      ++requeued_;
    }
  return Status::ok();
}

Status StageTimer::lead_in(cudaEvent_t& mark) {
  launch_spin(timing_stream_->head_start().ms(), stream_);
  CHECK_CUDA(cudaGetLastError());
  if (!rule_.flushes()) {
    ASSIGN_OR_RETURN(mark, record());
  }
  return Status::ok();
}

Status StageTimer::flush_l2(Timed& t) {
  RETURN_IF_ERROR(context_->flush_l2(stream_));
  if (rule_.l2 == sched::L2Timing::kFlushed) return Status::ok();
  return t.exec->warm_activations_on(stream_);
}

Expected<std::vector<StageTimer::Span>> StageTimer::queue_round(Timed& t, cudaEvent_t& mark) {
  const int n = rule_.number;
  std::vector<Span> spans;
  switch (rule_.l2) {
    case sched::L2Timing::kWarm: {
      for (int i = 0; i < n; ++i) RETURN_IF_ERROR(t.exec->replay_on(stream_));
      ASSIGN_OR_RETURN(cudaEvent_t end, record());
      spans.push_back({mark, end, n, 1.0 / n});
      mark = end;
      break;
    }
    case sched::L2Timing::kFlushed:
    case sched::L2Timing::kColdWeights:
      for (int i = 0; i < n; ++i) {
        RETURN_IF_ERROR(flush_l2(t));
        ASSIGN_OR_RETURN(cudaEvent_t begin, record());
        RETURN_IF_ERROR(t.exec->replay_on(stream_));
        ASSIGN_OR_RETURN(cudaEvent_t end, record());
        spans.push_back({begin, end, 1, 1.0 / n});
      }
      break;
    case sched::L2Timing::kByFootprint:  // MeasuredCostModel resolves it (StageTimingRule::for_footprint)
      return error(ErrorCode::kInvalidArgument, "stage timing: the rule's L2 mode by footprint was not resolved");
    case sched::L2Timing::kColdShare: {
      RETURN_ERROR_IF(n < 2, ErrorCode::kInvalidArgument, "l2-share stage timing needs 2 replays per round");
      RETURN_IF_ERROR(flush_l2(t));
      ASSIGN_OR_RETURN(cudaEvent_t begin, record());
      RETURN_IF_ERROR(t.exec->replay_on(stream_));
      ASSIGN_OR_RETURN(cudaEvent_t cold_end, record());
      for (int i = 1; i < n; ++i) RETURN_IF_ERROR(t.exec->replay_on(stream_));
      ASSIGN_OR_RETURN(cudaEvent_t end, record());
      spans.push_back({begin, cold_end, 1, cold_share_});
      spans.push_back({cold_end, end, n - 1, (1.0 - cold_share_) / (n - 1)});
      break;
    }
  }
  return spans;
}

Expected<std::vector<double>> StageTimer::read(const Timed& t) const {
  std::vector<double> rounds = t.prior;
  for (const std::vector<Span>& spans : t.rounds) {
    double figure = 0;
    for (const Span& s : spans) {
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, s.begin, s.end));
      figure += s.weight * (double(ms) - boundary_.span_ms(s.replays));
    }
    rounds.push_back(std::max(figure, 0.0));  // a stage that launches nothing costs nothing
  }
  return rounds;
}

Status StageTimer::check(size_t i) {
  Timed& t = timed_[i];
  ASSIGN_OR_RETURN(std::vector<double> rounds, read(t));
  if (sched::timing_settled(rounds, rule_, t.limit)) return Status::ok();
  const int n = static_cast<int>(rounds.size());
  if (n >= rule_.min_rounds) return queue(t, rule_.max_rounds - n, rule_.warmup);
  const cudaError_t idle = cudaEventQuery(events_.back().get());
  if (idle != cudaErrorNotReady) CHECK_CUDA(idle);
  RETURN_IF_ERROR(queue(t, rule_.min_rounds - n, idle == cudaSuccess ? rule_.warmup : 0));
  unchecked_.push_back(i);
  return Status::ok();
}

Status StageTimer::add(std::unique_ptr<Executor> exec, std::vector<double> prior, double limit) {
  ASSIGN_OR_RETURN(Event built, make_event());
  CHECK_CUDA(cudaEventRecord(built, exec->main_stream()));
  const int first = sched::first_rounds(rule_, static_cast<int>(prior.size()), limit);
  timed_.push_back(Timed{std::move(exec), built.get(), std::move(prior), limit, {}});
  events_.push_back(std::move(built));
  RETURN_IF_ERROR(queue(timed_.back(), first, rule_.warmup));
  unchecked_.push_back(timed_.size() - 1);
  // Check the earlier stages until one is still running (the one just added is).
  while (unchecked_.size() > 1) {
    const cudaError_t done = cudaEventQuery(timed_[unchecked_.front()].rounds.back().back().end);
    if (done == cudaErrorNotReady) break;
    CHECK_CUDA(done);
    const size_t i = unchecked_.front();
    unchecked_.pop_front();
    RETURN_IF_ERROR(check(i));
  }
  return Status::ok();
}

Expected<std::vector<std::vector<double>>> StageTimer::finish() {
  while (!unchecked_.empty()) {
    const size_t i = unchecked_.front();
    unchecked_.pop_front();
    CHECK_CUDA(cudaEventSynchronize(timed_[i].rounds.back().back().end));
    RETURN_IF_ERROR(check(i));
  }
  RETURN_IF_ERROR(wait_for_queued());
  if (pass_begin_) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, pass_begin_, events_.back()));
    pass_span_ms_ += double(ms);
    pass_begin_ = nullptr;
  }
  std::vector<std::vector<double>> out;
  for (const Timed& t : timed_) {
    ASSIGN_OR_RETURN(std::vector<double> rounds, read(t));
    out.push_back(std::move(rounds));
  }
  for (Timed& t : timed_) finished_.push_back(std::move(t.exec));
  timed_.clear();
  events_.clear();
  return out;
}

std::vector<std::unique_ptr<Executor>> StageTimer::take_finished() { return std::move(finished_); }

}  // namespace ios::rt
