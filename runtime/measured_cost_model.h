// The DP's stage latency measured on the GPU the way the stage will run: the stage alone, captured
// in a CUDA graph (groups on their own streams, joined by events), replayed in rounds until the
// timing rule is satisfied (sched::StageTimingRule); the latency is the median round. Every stage
// executor is built on one DeviceStore, so weights are uploaded once per network and configuration
// and no stage allocates or frees device memory. Stages asked together are timed in one pass
// (StageTimer): the GPU replays one while the host builds the next. Models on sibling contexts (one per
// search worker on a GPU) share its TimingStream: their stages are timed one after another while their
// threads build stages side by side.
#pragma once

#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "common/wall_clock.h"
#include "ir/weights.h"
#include "runtime/device_store.h"
#include "runtime/executor.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

class MeasuredCostModel : public sched::CostModel, public sched::Measurement {
 public:
  struct Params {
    sched::StageTimingRule rule;
    ExecConfig config;  // its batch is replaced by each query's
  };
  // `context` (shared with the executors that will run the schedule) must match config's dtype/math;
  // its device is the one measured on. The rule's sched::L2Timing::kByFootprint is resolved here, by the
  // weights at config's precision against the device's L2.
  MeasuredCostModel(const ir::Graph& g, Params params, std::shared_ptr<Context> context);
  // Another worker of `first`'s search (on any GPU): its weights and its calibration, so that every
  // worker's figures are corrected alike.
  MeasuredCostModel(const MeasuredCostModel& first, Params params, std::shared_ptr<Context> context);
  ~MeasuredCostModel() override;
  MeasuredCostModel(const MeasuredCostModel&) = delete;
  MeasuredCostModel& operator=(const MeasuredCostModel&) = delete;
  std::string name() const override { return "measured"; }
  sched::Measurement* measurement() override { return this; }
  std::string timing_device() const override;  // its GPU's: workers on one GPU share its TimingStream
  // What a stage cache file's key says of these figures (files of earlier figures are then not reused).
  static constexpr const char* kFigureFormat =
      "figures behind a lead kernel less its graph alone, cold share calibrated";
  Expected<double> stage_latency_ms(const ir::Graph& g, const sched::Stage& stage, int batch) override;
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                   int batch) override;
  // A stage is first timed one round; one far past its limit stops there, one whose rounds are all past
  // it stops at the rule's min_rounds (sched::timing_settled).
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                           const std::vector<double>& limits, int batch) override;
  // One round after the warm-up (the rule's first round, no stop rule). The latest screened stages keep
  // their executors: settling one of them later reuses it, its screening round counted as the first.
  bool screens() const override { return true; }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<sched::Stage>& stages,
                                                    int batch) override;
  // Each segment's stages as one dataflow graph (no barriers between them), timed like a stage.
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<sched::Stage>>& segments,
                                                     int batch) override;
  // Each barrier set's whole-network dataflow graph, built on this model's store and timed like a stage
  // (StageTimer: rounds behind the device's head start, less the boundary) but warm, as `ios run` replays
  // it: a first pass of one replay each, then kNetworkRounds passes over all sets in turn, a round each of
  // enough back-to-back replays (at least 2) for kNetworkRoundMs; a set's latency is its median round.
  // The host's launches are not in the figures: timed an inference at a time, launch included, the
  // gains of barrier sets shrank where several GPUs timed at once.
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const sched::Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override;
  size_t measurements() const { return size_t(stats_.stages); }
  const sched::StageTimingStats& stats() const { return stats_; }
  const Context& context() const { return *context_; }
  const sched::StageTimingRule& rule() const { return params_.rule; }             // resolved (for_footprint)
  const std::shared_ptr<const ir::Weights>& weights() const { return weights_; }  // seeded, timing only
  // Every figure is corrected twice, by values measured once per search (shared by its workers and kept
  // in a stage cache file with the figures, see calibration()):
  // - less the stage boundary (TimingStream::stage_boundary): a stage is replayed as a graph of its own
  //   behind a lead kernel (ExecutorOptions::lead_kernel); each span of replays loses that many graphs of
  //   the lead alone and the event that ends it, which leaves the stage and its dependency on the kernel
  //   before it, as inside the network. Without the lead, a stage of w branches paid its w first launches
  //   one after another, which inside the network the GPU takes in while the stage before runs:
  //   GoogLeNet's four-branch stages at tf32 were timed 5-7 us over their windows in the network; and
  //   every stage kept half an event, a stage that launches nothing 0.3-0.9 us (H100).
  // - under sched::L2Timing::kColdShare, a round's cold replay weighs the cold share: the share that
  //   makes the network's ops, each timed alone warm and cold, add up to the network run end to end
  //   (the sequential schedule as one graph, replayed back to back). Where the L2 keeps the weights
  //   between inferences it is 0 (stages are then timed warm); where the network's traffic evicts
  //   them, up to 1. A rule of bytes (weights against the L2's size) missed by 13 % on DenseNet-121,
  //   whose weights fit, and over-predicted GoogLeNet, whose weights fit too.
  struct ShareCalibration {
    double share = 0;
    double ops_warm_ms = 0, ops_cold_ms = 0;  // the sequential schedule's stages, summed
    int ops = 0;                              // how many were timed
    double network_ms = 0;                    // that schedule end to end, per inference, less the boundary
    // Where the rule's prefetch_ahead is set: that schedule with weights prefetched (network_ms is then
    // the faster of the two); else 0.
    double prefetched_network_ms = 0;
  };
  // Ops' cold replays this close to their warm ones (a fraction of the warm sum) leave the share to
  // timing noise: the share is then 0.
  static constexpr double kMinColdGap = 0.02;
  // Known once a stage of that batch was timed (or adopted from a stage cache file).
  std::optional<ShareCalibration> cold_share(int batch) const;
  std::optional<TimingStream::Boundary> stage_boundary() const;
  // By name: "stage_boundary_ms" and "stage_event_ms" (the boundary), and per batch B "bB|share", "bB|ops_warm_ms",
  // "bB|ops_cold_ms", "bB|network_ms", "bB|prefetched_network_ms". Adopting checks ranges and replaces what this search
  // measured.
  std::map<std::string, double> calibration() const override;
  // This search's calibration time (its slots: CalibrationJob, the one with the network first).
  sched::CalibrationTime calibration_time() const;
  Status adopt_calibration(const std::map<std::string, double>& values) override;

 private:
  MeasuredCostModel(std::shared_ptr<const ir::Weights> weights, Params params, std::shared_ptr<Context> context);
  static constexpr double kMaxStageBoundaryMs = 0.05;  // a file claiming more is not ours
  // One batch's share calibration while it runs: the sequential schedule's ops dealt out in turn over
  // slots, slot 0 also timing the network end to end in the same pass (its rounds among the ops', as with
  // one worker: timed in a pass of its own, a 134 MB linear layer's network came out 2 % off its op and the
  // share 1 instead of 0, H200). A worker that asks for the share meanwhile takes the next slot
  // left and times it on its own thread and context, so that the search's GPUs share the work (the first to
  // ask takes slot 0, the longest) and a worker that never asks holds nothing up. An op's warm and cold
  // figures come from one GPU; the GPUs are of one model (select_devices). A worker that finds no slot
  // left times once more a slot that a worker of another GPU still times: a GPU's first slot also builds
  // its first kernels and re-tunes one (Context::build_kernel), and ended the calibration 0.2-0.3 s after
  // the others (NasNet fp32 on 4 x H200). A slot's figures are the first to finish it.
  struct CalibrationJob {
    std::vector<std::vector<sched::Stage>> ops;     // by slot
    std::vector<std::vector<std::string>> devices;  // by slot: the devices of the workers that took it
    std::vector<bool> done;                         // by slot: its figures are in
    ShareCalibration sums;                          // of the slots done
    size_t finished = 0;                            // slots done
    size_t running = 0;  // workers timing a slot: the job outlives the calibration until none is
    Status failure = Status::ok();
    WallClock::time_point start = WallClock::now();
    std::vector<double> slot_seconds;  // by slot: from the job's start to the slot's end
    sched::NetworkBuild network_build;
    // The next slot nobody took; else the first slot not done that one worker of another device takes alone.
    std::optional<size_t> pick(const std::string& device) const;
  };
  // Slots per worker when a search has several: small enough that the workers finish together.
  static constexpr size_t kCalibrationChunksPerWorker = 4;
  struct Calibration {  // shared by a search's workers; the first to need a value measures it
    mutable std::mutex mutex;
    std::condition_variable changed;                 // a calibration ended
    std::optional<TimingStream::Boundary> boundary;  // not measured yet
    std::map<int, ShareCalibration> shares;
    std::map<int, CalibrationJob> jobs;  // by batch, while calibrating
    std::map<int, Status> failed;        // by batch: a calibration's error, given to every worker that asks
    double seconds = 0;                  // wall time measuring them (the other workers wait)
    std::vector<double> slot_seconds;    // the last share calibration's (CalibrationJob::slot_seconds)
    sched::NetworkBuild network_build;   // and its CalibrationJob::network_build
    // The search's workers (on any GPU) alive, counted by their constructors and destructors: a calibration
    // is dealt into kCalibrationChunksPerWorker slots per worker.
    size_t workers = 0;
  };
  std::shared_ptr<const ir::Weights> weights_;
  Params params_;
  std::shared_ptr<Context> context_;  // one set of streams, handles and kernels for every stage timed
  std::shared_ptr<DeviceStore> store_;
  std::shared_ptr<Calibration> calibration_ = std::make_shared<Calibration>();
  Expected<TimingStream::Boundary> measured_boundary();  // the device's, once per search
  Expected<double> cold_share_for(const ir::Graph& g, int batch, TimingStream::Boundary boundary);
  // Under calibration_->mutex: the job for a calibration this model is the first to ask for.
  CalibrationJob deal_calibration(const ir::Graph& g) const;
  // Under calibration_->mutex: a slot's figures added to its job unless the slot is done already; the last
  // slot sets the share (or the failure); the job is erased once no worker times a slot of it.
  void finish_slot(int batch, CalibrationJob& job, size_t slot, const Expected<ShareCalibration>& figures);
  // The sequential schedule's `ops` (single-op stages) timed warm and cold on this model's GPU, summed;
  // with `networks`, the whole schedule too (ShareCalibration::network_ms and prefetched_network_ms).
  // `network_build`: what building the whole schedule's executors took.
  Expected<ShareCalibration> time_ops(const ir::Graph& g, const std::vector<sched::Stage>& ops, int batch,
                                      TimingStream::Boundary boundary, bool networks,
                                      sched::NetworkBuild& network_build);
  // Executors on this model's context and store, built for timing only (their arena is not zeroed).
  ExecutorOptions executor_options(int batch) const;
  struct Pending {  // what to time: a plan to build, or an executor kept from screening and its rounds
    sched::ExecutionPlan plan;
    std::unique_ptr<Executor> kept;
    std::vector<double> prior;
    double limit = std::numeric_limits<double>::infinity();  // StageTimer::add
  };
  struct Timed {
    std::vector<std::vector<double>> rounds;
    std::vector<double> medians;
    std::vector<std::unique_ptr<Executor>> executors;
    int64_t replays = 0;  // warm-ups and rounds queued (StageTimer::replays)
  };
  // One pass of the StageTimer over `pending`, in order, counted in stats().
  Expected<Timed> time_executors(const ir::Graph& g, std::vector<Pending> pending, int batch,
                                 const sched::StageTimingRule& rule);
  // The same pass with the corrections given, its stages not counted (its host time is).
  Expected<Timed> run_timer(const ir::Graph& g, std::vector<Pending> pending, int batch,
                            const sched::StageTimingRule& rule, double share, TimingStream::Boundary boundary);
  // `limits`: one per stage, or empty (none).
  Expected<std::vector<double>> time_stages(const ir::Graph& g, const std::vector<sched::Stage>& stages, int batch,
                                            const sched::StageTimingRule& rule, bool screening,
                                            const std::vector<double>& limits = {});
  struct Screened {  // a screened stage's executor and round
    std::unique_ptr<Executor> exec;
    double round_ms = 0;
  };
  static constexpr int kNetworkRounds = 3;
  static constexpr double kNetworkRoundMs = 10;
  static constexpr size_t kScreenedKept = 512;  // settled right after screening: the DP settles per state
  std::map<std::string, Screened> screened_;    // by stage_key
  // What a merge stage costs the ops that read its outputs (sched::merged_output_readers): the merge
  // timed with its readers after it, less the merge and each reader timed alone. In Inception V3 at tf32
  // each reader of a merged 1x1 convolution's slice ran cuDNN's slice copy first and the four stages after
  // such merges ran 8-10 us over their figures (H100).
  struct ReaderCharge {
    size_t stage;         // index of the merge stage among those asked (and in pending)
    size_t with_readers;  // index in pending of the merge followed by its readers
    std::vector<ir::NodeId> readers;
    std::vector<std::pair<ir::NodeId, size_t>> alone;  // readers not timed alone before: index in pending
  };
  // Appends to `pending` what the merge stages among `stages` need timed for their charges.
  std::vector<ReaderCharge> queue_reader_charges(const ir::Graph& g, const std::vector<sched::Stage>& stages, int batch,
                                                 std::vector<Pending>& pending);
  // Keeps the figures of the readers timed alone (`medians`: per pending), then gives the merge's charge.
  double reader_charge_ms(const ReaderCharge& c, int batch, const ir::Graph& g, const std::vector<double>& medians);
  std::map<std::string, double> reader_alone_ms_;  // by stage_key of the reader alone
  std::deque<std::string> screened_order_;         // oldest first
  sched::StageTimingStats stats_;
};

}  // namespace ios::rt
