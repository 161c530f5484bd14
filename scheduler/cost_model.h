// Stage latency models behind one interface. The DP, the baselines and the experiments only see
// CostModel; the GPU runtime adds a measured implementation.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "scheduler/schedule.h"

namespace ios::sched {

// What a search needs to know of a model that measures, beyond the figures themselves: where its timings run
// and what it corrects them by. Pricing (CostModel) asks nothing of it; the search's workers, the idle-worker
// pool and the stage cache file do.
class Measurement {
 public:
  virtual ~Measurement() = default;
  // What its measurements occupy: models of one device (one GPU) time one after another, models of
  // different devices may time side by side. Empty: none.
  virtual std::string timing_device() const = 0;
  // Search workers waiting to time a share of its requests beside it (IdleWorkers): a DP then asks for more
  // stages at once.
  virtual size_t spare_workers() const { return 0; }
  // Values measured once and applied to all its figures (a measuring model's corrections), by name. A stage
  // cache file keeps them beside the figures and gives them back when loaded, so that the file's figures
  // and new ones are corrected alike.
  virtual std::map<std::string, double> calibration() const { return {}; }
  virtual Status adopt_calibration(const std::map<std::string, double>& values) {
    (void)values;
    return Status::ok();
  }
};

class CostModel;
// A model's Measurement's, or what a model that does not measure answers: no device, no spare workers.
std::string timing_device(CostModel& m);
size_t spare_workers(CostModel& m);

// A stage's latency as the runtime will run it, priced by one of the models below or measured
// (rt::MeasuredCostModel, which is also a Measurement).
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Latency in milliseconds of one stage at a batch size, as the runtime will run it.
  virtual Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) = 0;
  // The same for several stages, in order. A model that measures overlaps their setup with their timing;
  // this default asks one at a time.
  virtual Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           int batch);
  // The same, told for each stage the figure past which the asker cannot use it (`limits`, one per
  // stage; infinity: none): there a figure need only show that it is past. A measuring model stops timing
  // such a stage sooner (sched::timing_settled); this default ignores the limits.
  virtual Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                                   const std::vector<double>& limits, int batch) {
    (void)limits;
    return stage_latencies_ms(g, stages, batch);
  }
  // An error unless there is one limit per stage.
  static Status check_limits(const std::vector<Stage>& stages, const std::vector<double>& limits);
  // Cheaper, rougher figures for the same latencies (a measuring model times one round): enough to rule a
  // stage out, not to choose it; the DP settles every stage it may still choose (DpOptions::screen_margin).
  // A model whose figures cost next to nothing answers with its settled ones and says it does not screen.
  virtual bool screens() const { return false; }
  virtual Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                            int batch) {
    return stage_latencies_ms(g, stages, batch);
  }
  // Latency of each segment (consecutive stages of a schedule) run as one dataflow graph: a launch waits
  // only for what it reads, not for the stages before it; a barrier before and after the segment. This
  // default sees no overlap between stages: the sum of their latencies (place_barriers then keeps every
  // barrier).
  virtual Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                             const std::vector<std::vector<Stage>>& segments,
                                                             int batch);
  // End-to-end latency of the whole staged schedule `s` run as one dataflow graph with each of these
  // barrier sets (Schedule::dataflow_barriers), compared with one another: a measuring model times them
  // in interleaved rounds, so that their ratios hold even where the GPU drifts. This default prices a set
  // by the segments between its barriers (segment_latencies_ms), the segment DP's own view.
  virtual Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                             const std::vector<std::vector<int>>& barrier_sets,
                                                             int batch);
  // How its figures are measured; null (the default): they cost no device time and need no calibration.
  virtual Measurement* measurement() { return nullptr; }
};

// A model in front of another: every query goes to `inner()` unless a subclass overrides it (the stage
// cache, a worker's view of it, a worker lending its requests out). A query added to CostModel is forwarded
// here once, not in every wrapper, where a forgotten override would silently answer with the default.
class ForwardingCostModel : public CostModel {
 public:
  std::string name() const override { return inner().name(); }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) override {
    return inner().stage_latency_ms(g, stage, batch);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                   int batch) override {
    return inner().stage_latencies_ms(g, stages, batch);
  }
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           const std::vector<double>& limits, int batch) override {
    return inner().limited_stage_latencies_ms(g, stages, limits, batch);
  }
  bool screens() const override { return inner().screens(); }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                    int batch) override {
    return inner().screen_latencies_ms(g, stages, batch);
  }
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<Stage>>& segments,
                                                     int batch) override {
    return inner().segment_latencies_ms(g, segments, batch);
  }
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override {
    return inner().network_latencies_ms(g, s, barrier_sets, batch);
  }
  Measurement* measurement() override { return inner().measurement(); }

 protected:
  virtual CostModel& inner() const = 0;
};

// A staged schedule's stages, all blocks in order: what barrier indices count.
std::vector<Stage> all_stages(const Schedule& s);
// The segments between a set of barriers (sorted stage indices in (0, stages)), in order.
std::vector<std::vector<Stage>> segments_between(const std::vector<Stage>& stages, const std::vector<int>& barriers);

// A canonical description of a stage that does not mention op names: op kinds, attributes, input
// and output shapes, term structure, and which ops of a group read which. Identical cells of a network
// give identical signatures, so their stages are costed once; so do stages that differ only in which of
// their groups read the same outside tensor.
std::string stage_signature(const ir::Graph& g, const Stage& stage);
// Every node's share of a signature, serialized once per graph: a search asks for hundreds of
// thousands of signatures of one graph (a re-search from a stage cache file is little else).
struct OpKeys {
  std::vector<std::string> attrs;   // ir::attrs_key of each node
  std::vector<std::string> shapes;  // its output shape
  std::vector<std::string> writes;  // the concatenations that take its output in place (concat_chain)
  // Its term in the innermost of those: a merge of consecutive terms, in order, writes them in place,
  // any other merge's outputs are copied (compile_timed_stages times the copy with the merge).
  struct Term {
    ir::NodeId concat = ir::kNoNode;
    int index = -1;
  };
  std::vector<Term> term;
  // Its readers that would read it as a merged launch's slice (reads_merged_slice), by attributes, shape
  // and writes, sorted: a merge's figure includes what reading its slices costs them.
  std::vector<std::string> readers;
};
OpKeys op_keys(const ir::Graph& g);
std::string stage_signature(const ir::Graph& g, const OpKeys& keys, const Stage& stage);
// A segment's: its stages' signatures in order, then all their groups described as one stage with
// which group reads which (across the segment's stages) and which groups share an outside input.
std::string segment_signature(const ir::Graph& g, const OpKeys& keys, const std::vector<Stage>& segment);
// 32 hex digits standing for a signature in the stage cache: RandWire's 166k measured stages have
// signatures of ~1.6 kB each, too large to keep and persist verbatim.
std::string signature_hash(const std::string& signature);

// Deterministic roofline model with a launch floor and SM occupancy (see README, "Analytic cost
// model"). The default where there is no GPU.
class AnalyticCostModel : public CostModel {
 public:
  struct Params {
    double peak_flops = 30e12;   // sustained fp32 FMA rate of large convolutions on an H100
    double bandwidth = 2.5e12;   // sustained HBM bytes/s
    double launch_us = 2.0;      // per kernel, inside a CUDA graph, on the critical path
    double stage_sync_us = 1.5;  // per extra stream joined at a stage boundary
    int sm_count = 132;
    double work_per_cta = 64.0 * 64.0;  // output elements one CTA covers (occupancy estimate)
  };
  AnalyticCostModel() = default;
  explicit AnalyticCostModel(Params p) : params_(p) {}
  std::string name() const override { return "analytic"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) override;

  struct OpEstimate {
    double alone_us = 0;   // latency when the op has the GPU to itself
    double occupancy = 0;  // fraction of the SMs it can fill, (0, 1]
    int kernels = 0;
  };
  OpEstimate estimate(const ir::Graph& g, ir::NodeId id, int batch) const;
  OpEstimate estimate_merged(const ir::Graph& g, const std::vector<ir::NodeId>& ops, int batch) const;

 private:
  OpEstimate from_cost(double flops, double bytes, int kernels, double out_elements) const;
  Params params_;
};

// Test double: the latency of a stage (and, when given, of a dataflow segment and of a whole schedule
// under a barrier set) is a caller-given function.
class TableCostModel : public CostModel {
 public:
  using Fn = std::function<double(const ir::Graph&, const Stage&)>;
  using SegmentFn = std::function<double(const ir::Graph&, const std::vector<Stage>&)>;
  using NetworkFn = std::function<double(const std::vector<int>& barriers)>;
  explicit TableCostModel(Fn fn, SegmentFn segment = nullptr, NetworkFn network = nullptr)
      : fn_(std::move(fn)), segment_(std::move(segment)), network_(std::move(network)) {}
  std::string name() const override { return "table"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) override {
    return fn_(g, stage);
  }
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<Stage>>& segments,
                                                     int batch) override;
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override;
  int64_t network_requests() const { return network_requests_; }

 private:
  Fn fn_;
  SegmentFn segment_;
  NetworkFn network_;
  int64_t network_requests_ = 0;
};

// Caches another model's stage latencies by (signature hash, batch); optionally persisted to a JSON file
// whose key (device, library versions, precision, model) must match for entries to be reused.
// Thread-safe: worker(m) gives a further thread its own view that measures misses with m; a stage
// another thread is measuring is waited for, never measured twice.
class StageCache : public ForwardingCostModel {
 public:
  // `key` names what the latencies were measured under (callers include kKeyFormat, so files whose
  // entries were keyed another way, verbatim signatures or the byte-wise hash before v2, are ignored).
  // v3: stages without shared-input links; v4: outputs name the concatenations that take them in place;
  // v5: merge stages name their outputs' terms, and are timed with the copies the network makes of them;
  // v6: and name their outputs' readers, whose slice reads they are charged; v7: convolutions writing a strided
  // slice may write it through our copy (rt::OutputCopyKernel), so figures timed before are not reused
  static constexpr const char* kKeyFormat = "hashed signatures v7";
  // Times the entries at the given indices of what was asked, in that order.
  using Measure = std::function<Expected<std::vector<double>>(const std::vector<size_t>&)>;
  StageCache(CostModel& inner, std::string key) : key_(std::move(key)), own_(*this, inner) {}
  std::unique_ptr<CostModel> worker(CostModel& inner) { return std::make_unique<View>(*this, inner); }

  Status load(const std::string& path);  // a missing file is not an error; a different key is ignored
  Status load_json(const nlohmann::json& j, const std::string& source_name);
  Status save(const std::string& path) const;
  size_t hits() const;
  size_t misses() const;
  size_t size() const;

 private:
  class View : public ForwardingCostModel {
   public:
    View(StageCache& cache, CostModel& inner) : cache_(cache), inner_(inner) {}
    Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& stage, int batch) override;
    Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                     int batch) override;
    // A figure timed against a limit is kept like any other: a measurement that stopped early (at the
    // rule's min_rounds, or after one round far past its limit).
    Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                             const std::vector<double>& limits, int batch) override;
    Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                      int batch) override;
    Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                       const std::vector<std::vector<Stage>>& segments,
                                                       int batch) override;
    // Keyed by the schedule, the whole request and the set: figures compared with one another are
    // reused only together, as they were timed.
    Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                       const std::vector<std::vector<int>>& barrier_sets,
                                                       int batch) override;

   protected:
    CostModel& inner() const override { return inner_; }

   private:
    void refresh_keys(const ir::Graph& g);
    std::vector<std::string> keys_of(const ir::Graph& g, const std::vector<Stage>& stages, int batch);
    std::string key_of(const ir::Graph& g, const Stage& stage, int batch);
    StageCache& cache_;
    CostModel& inner_;
    const ir::Graph* keys_of_ = nullptr;  // the graph op_keys_ belong to
    std::string keys_of_name_;
    OpKeys op_keys_;
  };
  // The stages' latencies by their keys: those in the table, then those no other worker is measuring
  // (measured by `inner` in one batch), then those another worker was measuring (waited for). With
  // `screening`, a settled figure answers too and new figures are screened ones, kept under
  // kScreenedPrefix + key (a settled request never takes them).
  Expected<std::vector<double>> lookup_or_measure(const std::vector<std::string>& keys, const Measure& measure,
                                                  const std::string& model_name, bool screening);
  static constexpr const char* kScreenedPrefix = "screened|";
  // The table entry answering `key` (null: none), under the mutex.
  const double* find_locked(const std::string& key, bool screening) const;

  std::string key_;
  mutable std::mutex mutex_;  // guards the table, the stages being measured and the counters
  std::condition_variable measured_;
  std::unordered_map<std::string, double> table_;
  std::unordered_set<std::string> measuring_;
  size_t hits_ = 0, misses_ = 0;
  mutable View own_;  // the first worker's view: every query to the cache itself goes through it

 protected:
  CostModel& inner() const override { return own_; }
};

}  // namespace ios::sched
