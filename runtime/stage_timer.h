// Times the measured cost model's stage executors, many per pass over the GPU. Each stage's graph upload,
// warm-up (the rule's; none by default) and first rounds (sched::first_rounds: min_rounds, or one for a stage with a
// limit) are queued behind the previous stage's without waiting, so the GPU replays one stage while the host builds the
// next. A stage whose first rounds are done is checked (sched::timing_settled): one stopped short of min_rounds resumes
// up to it (warmed up again only if the timing stream had gone idle: the warm-up is the host's head start) and is
// checked again; one at min_rounds or past it gets all its remaining rounds at once, after another warm-up.
// The host waits once per pass, not once per round. A round the GPU may have started before it was all
// queued is queued again (see queue()).
#pragma once

#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/context.h"
#include "runtime/executor.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

class StageTimer {
 public:
  // Replays go to `context`'s timing stream (shared with its siblings); `context` is the executors'.
  // `cold_share`: the weight of a round's cold replay under sched::L2Timing::kColdShare. `boundary`: taken
  // off every span of replays (TimingStream::stage_boundary), a round's figure down to 0 at most.
  StageTimer(const sched::StageTimingRule& rule, std::shared_ptr<Context> context, double cold_share = 0,
             TimingStream::Boundary boundary = {});
  ~StageTimer();  // waits for what it queued: the executors it holds are then destroyed idle
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  // Queues `exec`'s warm-up and first rounds, then the remaining rounds of every earlier stage whose
  // first rounds are done and have not settled (sched::timing_settled against `limit`). `prior`: rounds
  // this executor was timed for earlier (a screening round), counted as its first. Holds `exec` until
  // finish().
  Status add(std::unique_ptr<Executor> exec, std::vector<double> prior = {},
             double limit = std::numeric_limits<double>::infinity());
  // Waits for every stage added since the last finish(); per stage, in the order added, its rounds
  // (per-replay means in milliseconds, `prior` first).
  Expected<std::vector<std::vector<double>>> finish();
  // The executors of the stages finished so far, in the order added (idle; the timer no longer holds them).
  std::vector<std::unique_ptr<Executor>> take_finished();
  int64_t requeued() const { return requeued_; }                   // rounds queued again (see queue())
  int64_t unproven() const { return unproven_; }                   // rounds kept after the last retry, reached early
  double max_head_start_ms() const { return max_head_start_ms_; }  // the longest spin rounds were queued behind
  int64_t replays() const { return replays_; }  // queued so far: warm-ups, rounds, rounds queued again
  // GPU time from each pass's first queued work to its last event, summed over the finished passes: the
  // time the timing stream was busy with this timer's stages, gaps inside a pass included.
  double pass_span_ms() const { return pass_span_ms_; }

 private:
  struct Span {  // replays between two events; a round's figure is the weighted sum of its spans
    cudaEvent_t begin, end;
    int replays;
    double weight;
  };
  struct Timed {
    std::unique_ptr<Executor> exec;
    cudaEvent_t built;  // on the executor's stream after its setup
    std::vector<double> prior;
    double limit;  // past it, the stage's figure need not be precise
    std::vector<std::vector<Span>> rounds;
  };

  static constexpr int kMaxRequeues = 3;
  Status queue(Timed& t, int rounds, int warmup);  // warm-up and rounds, under the timing stream's queue mutex, checked
  // The timing stream's head start spun ahead of a round; under a warm rule, a new mark for the round to start at.
  Status lead_in(cudaEvent_t& mark);
  Expected<std::vector<Span>> queue_round(Timed& t, cudaEvent_t& mark);  // one round's replays and events
  Status flush_l2(Timed& t);                                             // before a cold replay, as the rule says
  Expected<std::vector<double>> read(const Timed& t) const;
  // Reads timed_[i]'s rounds (done) and queues more if they have not settled; a stage resumed to
  // min_rounds goes back on unchecked_.
  Status check(size_t i);
  Expected<cudaEvent_t> record();  // a new timing event, recorded on the timing stream
  Status wait_for_queued() const;  // until this timer's last event (other workers' replays may follow)

  sched::StageTimingRule rule_;
  double cold_share_;
  TimingStream::Boundary boundary_;
  std::shared_ptr<Context> context_;
  std::shared_ptr<TimingStream> timing_stream_;
  cudaStream_t stream_;
  std::vector<Event> events_;
  std::vector<Timed> timed_;
  std::vector<std::unique_ptr<Executor>> finished_;
  int64_t requeued_ = 0;
  int64_t unproven_ = 0;
  double max_head_start_ms_ = 0;
  int64_t replays_ = 0;
  cudaEvent_t pass_begin_ = nullptr;  // recorded before the pass's first queued work
  double pass_span_ms_ = 0;
  // Indices into timed_ of stages whose last queued round is not checked yet, in the order those rounds
  // end on the timing stream (the order they were queued).
  std::deque<size_t> unchecked_;
};

}  // namespace ios::rt
