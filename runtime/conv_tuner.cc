// The tuner: a convolution's candidate engines built and timed on its real buffers, the fastest kept (checked
// against the unfused convolution); engines that keep losing deferred; plans compile-ahead processes built
// loaded instead of compiled.
#include <cudnn_frontend.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/tensor_pack.h"
#include "common/wall_clock.h"
#include "reference/reference_executor.h"
#include "runtime/conv_cudnn.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

namespace conv_detail {

constexpr int kMaxCandidates = 16;  // timed per convolution, in heuristics order (TuningBudget)
constexpr int kMaxLosingInARow = 6;
constexpr int kTimedBatches = 5;
constexpr double kBatchMs = 0.1;              // GPU time of one timed batch of runs
constexpr double kFirstSpinMs = 0.2;          // ahead of a batch; grows to twice the host's queueing time
constexpr double kHostCostDecay = 0.9;        // per batch, of the host's queueing time per run remembered
constexpr double kMaxHiddenQueueingMs = 2.0;  // longer queueing is not retried behind a longer spin
constexpr int kMaxRequeues = 3;
constexpr double kCutWarmupRatio = 3.0;  // a candidate's warm-up this far above the best so far is cut short

// Times one convolution's engine candidates on the GPU alone: a candidate's figure is the median over
// kTimedBatches of the mean GPU time of its runs in a batch sized to last about 0.1 ms. Each batch is
// queued behind a spin kernel that outlasts the host's queueing, so its events bracket GPU work only: a
// run costs the host more (cudnn-frontend's execute: ~30 us) than most batch-1 convolutions take on the
// GPU, and batches timed as they were issued measured the host and ranked engines by its noise
// (DenseNet-121 fp32, H100: four processes' picks ran the network in 2.84-3.58 ms). Timing captured CUDA
// graphs instead cost NasNet's tuning over ten times as long. A batch whose start event the GPU reached
// before the host had queued all of it is timed again behind a spin twice the host's queueing time, while
// that queueing took at most kMaxHiddenQueueingMs. An engine that waits for the GPU inside its run (one
// of NasNet's depthwise convolutions has one, by its stall) outlasts any spin: its figure keeps the
// wait, and such engines are slow anyway.
class CandidateTimer {
 public:
  static Expected<CandidateTimer> create(cudaStream_t stream) {
    ASSIGN_OR_RETURN(Event start, make_event(true));
    ASSIGN_OR_RETURN(Event stop, make_event(true));
    return CandidateTimer(stream, std::move(start), std::move(stop));
  }

  // The candidate's figure, or nullopt once it cannot beat `best_ms` (the fastest candidate so far; a
  // candidate wins only below it): more than half of its timed batches at or above it put the median
  // there too, and a warm-up run timed on the GPU alone at over kCutWarmupRatio times it is not noise.
  // `run` must have run once before.
  template <typename Run>
  Expected<std::optional<double>> time(Run&& run, double best_ms, TuningStats& stats) {
    const auto begin = WallClock::now();
    Expected<std::optional<double>> figure = median_or_cut(run, best_ms);
    stats.timing_seconds += seconds_since(begin);
    if (figure) ++stats.candidates, stats.cut_short += !figure->has_value();
    return figure;
  }
  // What the last candidate cut short takes at least: its warm-up run where that cut it, else the best time
  // it could not beat.
  double cut_floor_ms() const { return cut_floor_ms_; }

 private:
  struct Batch {
    double ms;      // mean per run
    bool gpu_only;  // the GPU reached the batch only after it was all queued
  };
  CandidateTimer(cudaStream_t stream, Event start, Event stop)
      : stream_(stream), start_(std::move(start)), stop_(std::move(stop)) {}

  template <typename Run>
  Expected<std::optional<double>> median_or_cut(Run& run, double best_ms) {
    // One run, which also sizes the batches: the owner ran the candidate once before (to see that it
    // runs), so this is not its first. Most candidates end here, and slow ones cost milliseconds a run.
    ASSIGN_OR_RETURN(Batch warmup, batch(run, 1));
    if (warmup.gpu_only && warmup.ms > kCutWarmupRatio * best_ms) {
      cut_floor_ms_ = warmup.ms;
      return std::optional<double>();
    }
    const int count = std::clamp(int(kBatchMs / std::max(warmup.ms, 1e-4)), 1, 32);
    std::vector<double> means;
    int losing = 0;
    for (int i = 0; i < kTimedBatches; ++i) {
      ASSIGN_OR_RETURN(Batch b, batch(run, count));
      means.push_back(b.ms);
      if (b.ms >= best_ms && ++losing > kTimedBatches / 2) {
        cut_floor_ms_ = best_ms;
        return std::optional<double>();
      }
    }
    return std::optional<double>(sched::median_of(std::move(means)));
  }

  // The spin ahead of `count` runs: twice the host's recent queueing time per run, times count (queueing
  // past kMaxHiddenQueueingMs is not hidden anyway).
  double spin_ms(int count) const {
    return std::clamp(2 * host_ms_per_run_ * count, kFirstSpinMs, 2 * kMaxHiddenQueueingMs);
  }

  template <typename Run>
  Expected<Batch> batch(Run& run, int count) {
    double spin = spin_ms(count);
    for (int attempt = 0;; ++attempt) {
      launch_spin(spin, stream_);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaEventRecord(start_, stream_));
      const auto queueing = WallClock::now();
      for (int i = 0; i < count; ++i) RETURN_IF_ERROR(run());
      CHECK_CUDA(cudaEventRecord(stop_, stream_));
      const double host_ms = 1e3 * seconds_since(queueing);
      const cudaError_t reached = cudaEventQuery(start_);
      if (reached != cudaErrorNotReady) CHECK_CUDA(reached);
      CHECK_CUDA(cudaEventSynchronize(stop_));
      const bool gpu_only = reached == cudaErrorNotReady;
      host_ms_per_run_ = std::max(host_ms / count, kHostCostDecay * host_ms_per_run_);  // outliers fade
      if (gpu_only || attempt == kMaxRequeues || host_ms > kMaxHiddenQueueingMs) {
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        return Batch{double(ms) / count, gpu_only};
      }
      spin = std::max(spin, spin_ms(count));
    }
  }

  cudaStream_t stream_;
  Event start_, stop_;
  // Kept across candidates, whose host cost per run is alike: a spin sized for the 32 runs of a timed
  // batch would hold each 1-run warm-up behind it too (most candidates are cut after their warm-up).
  double host_ms_per_run_ = 0;
  double cut_floor_ms_ = 0;
};

// The bytes from y's first element to its last (other channels of a wider buffer included).
size_t y_span_bytes(const ConvSpec& spec) {
  const SliceLayout& l = spec.y;
  const int64_t last = int64_t(spec.config.batch - 1) * l.n + int64_t(spec.out.c - 1) * l.c +
                       int64_t(spec.out.h - 1) * l.h + int64_t(spec.out.w - 1) * l.w;
  return size_t(last + 1) * spec.config.element_bytes();
}

Expected<std::vector<float>> read_y(const ConvSpec& spec, const ConvBuffers& b, cudaStream_t stream) {
  std::vector<uint8_t> bytes(y_span_bytes(spec));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(bytes.data(), b.y, bytes.size(), cudaMemcpyDeviceToHost));
  const size_t eb = spec.config.element_bytes();
  std::vector<float> v(bytes.size() / eb);
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_element(bytes.data() + i * eb, spec.config.dtype);
  return v;
}

// Whether two outputs agree to well within the precision's rounding (relative L2 over y's span).
bool outputs_agree(const std::vector<float>& a, const std::vector<float>& ref, const ExecConfig& config) {
  return reference::relative_l2_error(a, ref) <= 0.25 * config.tolerance();  // NaN compares false
}

// The output of the convolution alone (first engine that runs) followed by our epilogue kernels:
// what a fused-residual candidate must reproduce.
Expected<std::vector<float>> unfused_output(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                            void* workspace, const ConvBuildOptions& o) {
  ASSIGN_OR_RETURN(auto g, make_graph(handle, spec, false));
  RETURN_IF_ERROR(query_candidates(*g, spec.config, o.workspace_limit));
  CHECK_FE(g->check_support(handle));
  CHECK_FE(g->build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE));
  std::unordered_map<int64_t, void*> pack = variant_pack(spec, b, false);
  CHECK_FE(g->execute(handle, pack, workspace));
  run_epilogue(spec, b, stream_of(handle));
  return read_y(spec, b, stream_of(handle));
}

// A convolution graph and its candidate plans in the order they are timed (timing_order); per plan index,
// how a hand-made configuration was made (the heuristics' plans have none).
struct Candidates {
  std::shared_ptr<fe::graph::Graph> graph;
  std::vector<std::optional<ExploredConfig>> origin;
  std::vector<int64_t> order;
};

Expected<Candidates> list_candidates(cudnnHandle_t handle, const ConvSpec& spec, bool fused,
                                     const ConvBuildOptions& o) {
  Candidates c;
  ASSIGN_OR_RETURN(c.graph, make_graph(handle, spec, fused));
  RETURN_IF_ERROR(query_candidates(*c.graph, spec.config, o.workspace_limit));
  CHECK_FE(c.graph->check_support(handle));
  c.origin.resize(size_t(c.graph->get_execution_plan_count()));
  const size_t offered = c.origin.size();  // the heuristics' plans
  c.order = timing_order(*c.graph, spec, o.engine, c.origin);
  if (c.origin.size() > offered) deselect_for_precision(*c.graph, spec.config, o.workspace_limit);  // hand-made
  return c;
}

// What tuning records for a plan of the graph: a hand-made configuration as the knobs it set.
KernelChoice choice_at(const fe::graph::Graph& g, const std::vector<std::optional<ExploredConfig>>& origin,
                       int64_t index, bool fused) {
  KernelChoice choice = describe(g, index, fused);
  if (const std::optional<ExploredConfig>& made = origin[size_t(index)]) {  // replayed from what was set
    choice.backend = kExploredBackend;
    choice.engine = made->engine;
    choice.knobs.clear();
    for (const auto& [type, value] : made->knobs) choice.knobs.emplace_back(int64_t(type), value);
  }
  return choice;
}

Expected<std::shared_ptr<ConvKernel>> rebuild_recorded(cudnnHandle_t handle, const ConvSpec& spec,
                                                       const KernelChoice& c, size_t workspace_limit);

// The engine `inner` writing a packed tensor that our kernel copies into the output's strides
// (OutputCopyKernel), timed against tuning's winner: returned where faster. An engine that does not build
// on the packed tensor, or whose output disagrees with `reference` (when given), is no candidate.
Expected<std::optional<std::shared_ptr<ConvKernel>>> time_output_copied(
    cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b, void* workspace, const KernelChoice& inner,
    const KernelChoice& winner, const std::vector<float>& reference, CandidateTimer& timer, TuningStats& stats,
    const ConvBuildOptions& o) {
  using Result = std::optional<std::shared_ptr<ConvKernel>>;
  auto built = rebuild_recorded(handle, with_packed_output(spec), inner, o.workspace_limit);
  if (!built) return Result();
  OutputCopyKernel copied(spec, *built, 0, 0);
  if (copied.workspace_bytes() > o.workspace_limit) return Result();
  const cudaStream_t stream = stream_of(handle);
  RETURN_IF_ERROR(copied.run(handle, b, workspace));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!reference.empty()) {
    ASSIGN_OR_RETURN(std::vector<float> y, read_y(spec, b, stream));
    if (!outputs_agree(y, reference, spec.config)) return Result();
  }
  ASSIGN_OR_RETURN(std::optional<double> ms,
                   timer.time([&]() { return copied.run(handle, b, workspace); }, winner.ms, stats));
  if (o.verbose)
    std::fprintf(stderr, "[conv] %s: candidate %s, output copied %s\n", spec.key().c_str(), inner.name.c_str(),
                 ms ? (std::to_string(*ms) + " ms").c_str() : "cut short");
  if (!ms || *ms >= winner.ms) return Result();
  return Result(std::make_shared<OutputCopyKernel>(spec, *built, *ms, winner.candidates + 1));
}

// Convolutions whose engines' wins and losses teach each other (LosingEngines): one precision and layout,
// with or without the fused epilogue and residual, grouped (depthwise) or not. NasNet's depthwise
// convolutions' generic engine beats a runtime-compiled one that wins on dense convolutions.
std::string losing_group(const ConvSpec& spec, bool fused) {
  return spec.config.key() + (fused ? "|fused" : "") + (spec.z ? "|residual" : "") +
         (spec.attrs.groups > 1 ? "|grouped" : "");
}

// `order` with each runtime-compiled engine that keeps losing moved behind the engine it loses to.
std::vector<int64_t> defer_losing(const fe::graph::Graph& g, const std::vector<int64_t>& order,
                                  const LosingEngines& losing, const std::string& group) {
  std::vector<std::string> names;
  std::vector<bool> compiled;
  for (int64_t i : order) {
    std::string name;
    names.push_back(g.get_plan_name_at_index(i, name).is_good() ? name : "");
    compiled.push_back(compiled_at_run_time(g, i));
  }
  std::vector<int64_t> out;
  for (size_t k : losing.timing_order(group, names, compiled)) out.push_back(order[k]);
  return out;
}

Expected<LoadedPlan> deserialize_plan(cudnnHandle_t handle, const std::vector<uint8_t>& bytes) {
  LoadedPlan p{std::make_shared<fe::graph::Graph>(), 0};
  try {  // the frontend parses the bytes with nlohmann::json, which throws on damaged ones
    CHECK_FE(p.graph->deserialize(handle, bytes));
  } catch (const std::exception& e) {
    return error(ErrorCode::kInvalidArgument, std::string("the plan does not parse: ") + e.what());
  }
  CHECK_FE(p.graph->get_workspace_size(p.workspace));
  return p;
}

// What a compile-ahead process's plan file says first (checked when read), and its name: a hash of that.
std::string ahead_plan_identity(const ConvSpec& spec, bool fused, const std::string& plan_name) {
  return spec.key() + (fused ? "|fused|" : "|alone|") + plan_name + "\n";
}
std::string ahead_plan_path(const std::string& dir, const ConvSpec& spec, bool fused, const std::string& plan_name) {
  return dir + "/" + sched::signature_hash(ahead_plan_identity(spec, fused, plan_name)) + ".plan";
}

// A runtime-compiled candidate as a compile-ahead process built it (ConvBuildOptions::ahead_plans_dir), loaded:
// nothing compiled. None where that process has not written it (yet), or it does not load.
struct AheadPlan {
  LoadedPlan loaded;
  std::vector<uint8_t> bytes;
};
std::optional<AheadPlan> load_ahead_plan(cudnnHandle_t handle, const ConvSpec& spec, bool fused,
                                         const std::string& name, const ConvBuildOptions& o) {
  if (o.ahead_plans_dir.empty()) return std::nullopt;
  std::vector<uint8_t> bytes =
      read_plan_file(ahead_plan_path(o.ahead_plans_dir, spec, fused, name), ahead_plan_identity(spec, fused, name));
  if (bytes.empty()) return std::nullopt;
  Expected<LoadedPlan> loaded = deserialize_plan(handle, bytes);
  if (!loaded || loaded->workspace > int64_t(o.workspace_limit)) return std::nullopt;
  return AheadPlan{std::move(*loaded), std::move(bytes)};
}

// Builds every candidate engine of one graph and keeps the fastest on the real buffers.
Expected<std::shared_ptr<ConvKernel>> tune_graph(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                 void* workspace, bool fused, const ConvBuildOptions& o) {
  TuningStats unused;
  TuningStats& stats = o.stats ? *o.stats : unused;
  const auto listing = WallClock::now();
  ASSIGN_OR_RETURN(Candidates listed, list_candidates(handle, spec, fused, o));
  stats.list_seconds += seconds_since(listing);
  auto& [g, origin, order] = listed;
  std::unordered_map<int64_t, void*> pack = variant_pack(spec, b, fused);
  const cudaStream_t stream = stream_of(handle);
  // A residual read through strides is checked: an engine that accepted one gave wrong results (tf32,
  // NHWC, batch 1, H100, cuDNN 9.19), so candidates that disagree with the unfused computation are dropped.
  std::vector<float> reference;
  if (fused && spec.z) {
    ASSIGN_OR_RETURN(reference, unfused_output(handle, spec, b, workspace, o));
  }
  ASSIGN_OR_RETURN(CandidateTimer timer, CandidateTimer::create(stream));
  int64_t best = -1;
  double best_ms = std::numeric_limits<double>::infinity();
  std::optional<AheadPlan> best_ahead;  // the best, where it was loaded as a compile-ahead process built it
  // A strided output: the precompiled engine tried again writing a packed tensor (time_output_copied), the
  // fastest timed, else the first that ran.
  const bool may_copy_output = writes_strided_slice(spec);
  std::optional<int64_t> precompiled;
  double precompiled_ms = std::numeric_limits<double>::infinity();
  TuningBudget budget = TuningBudget::for_engine(o.engine, int(order.size()));
  const std::string group = losing_group(spec, fused);
  if (o.losing) order = defer_losing(*g, order, *o.losing, group);
  std::vector<std::string> seen;
  std::vector<std::string> settled;  // engines that ran, and those skipped because an engine that ran beats them
  std::vector<std::pair<std::string, double>> timed;  // every candidate timed (cut short: a floor), for o.losing
  for (auto it = order.begin(); it != order.end() && budget.wants_more(); ++it) {
    const int64_t i = *it;
    std::string name;
    if (g->get_plan_name_at_index(i, name).is_bad()) continue;
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;  // A, B and fallback overlap
    seen.push_back(name);
    const bool compiled = compiled_at_run_time(*g, i);
    if (o.losing && compiled) {
      const std::vector<std::string> winners = o.losing->beaten_by(group, name);
      auto winner = std::find_first_of(settled.begin(), settled.end(), winners.begin(), winners.end());
      if (winner != settled.end()) {
        if (o.verbose)
          std::fprintf(stderr, "[conv] %s: candidate %s not compiled (keeps losing to %s)\n", spec.key().c_str(),
                       name.c_str(), winner->c_str());
        settled.push_back(name);
        ++stats.skipped_losing;
        continue;
      }
    }
    // Built only when its turn comes: the lists hold ~64 plans per convolution at tf32, cuDNN compiles
    // some when they are built, and at most kMaxCandidates are timed (building them all took 36.7 of
    // SqueezeNet's 42.1 s of tf32 tuning on the H100).
    const auto building = WallClock::now();
    std::optional<AheadPlan> ahead = compiled ? load_ahead_plan(handle, spec, fused, name, o) : std::nullopt;
    // Else deselected, or the engine refuses it.
    const bool built = ahead || g->build_plan_at_index(handle, i).is_good();
    const double build_s = seconds_since(building);
    stats.build_seconds += build_s;
    if (compiled && !ahead) stats.compile_seconds += build_s;
    stats.taken_ahead += ahead.has_value();
    if (o.verbose && compiled)
      std::fprintf(stderr, "[conv] %s: candidate %s %s in %.1f ms%s\n", spec.key().c_str(), name.c_str(),
                   ahead ? "loaded as a compile-ahead process built it" : "compiled at run time", build_s * 1e3,
                   fused ? "" : " (unfused graph)");
    if (!built) continue;
    auto execute = [&] {
      return ahead ? ahead->loaded.graph->execute(handle, pack, workspace)
                   : g->execute_plan_at_index(handle, pack, workspace, i);
    };
    const auto first_run = WallClock::now();
    const bool ran = execute().is_good() && cudaStreamSynchronize(stream) == cudaSuccess;
    stats.first_run_seconds += seconds_since(first_run);
    if (!ran) {  // not runnable
      cudaGetLastError();
      continue;
    }
    if (!reference.empty()) {
      ASSIGN_OR_RETURN(std::vector<float> y, read_y(spec, b, stream));
      if (!outputs_agree(y, reference, spec.config)) {
        if (o.verbose)
          std::fprintf(stderr, "[conv] %s: engine %s dropped (wrong output)\n", spec.key().c_str(), name.c_str());
        continue;
      }
    }
    settled.push_back(name);
    const bool retry_packed = may_copy_output && !compiled;
    if (retry_packed && !precompiled) precompiled = i;
    auto ms = timer.time(
        [&]() -> Status {
          CHECK_FE(execute());
          if (!fused && needs_epilogue(spec)) run_epilogue(spec, b, stream);
          return Status::ok();
        },
        best_ms, stats);
    if (!ms) continue;
    const bool new_best = ms->has_value() && **ms < best_ms;
    budget.timed(new_best);
    timed.emplace_back(name, ms->value_or(timer.cut_floor_ms()));
    if (!ms->has_value()) {
      if (o.verbose) std::fprintf(stderr, "[conv] %s: candidate %s cut short\n", spec.key().c_str(), name.c_str());
      continue;
    }
    if (o.verbose) std::fprintf(stderr, "[conv] %s: candidate %s %.4f ms\n", spec.key().c_str(), name.c_str(), **ms);
    if (new_best) best = i, best_ms = **ms, best_ahead = std::move(ahead);
    if (retry_packed && **ms < precompiled_ms) precompiled = i, precompiled_ms = **ms;
  }
  RETURN_ERROR_IF(best < 0, ErrorCode::kUnavailable, "no cuDNN engine ran the convolution graph");
  if (o.losing) o.losing->record(group, timed);
  KernelChoice choice = choice_at(*g, origin, best, fused);
  choice.ms = best_ms;
  choice.candidates = budget.timed_count();
  std::optional<KernelChoice> retry;
  if (precompiled) retry = choice_at(*g, origin, *precompiled, fused);
  std::shared_ptr<ConvKernel> winner;
  if (best_ahead) {
    choice.workspace = best_ahead->loaded.workspace;
    winner.reset(new GraphConvKernel(spec, std::move(best_ahead->loaded.graph), GraphConvKernel::kLoaded,
                                     std::move(choice), std::move(best_ahead->bytes)));
  } else {
    winner.reset(new GraphConvKernel(spec, std::move(g), best, std::move(choice)));
  }
  if (!retry) return winner;
  // Every precompiled engine's time includes cuDNN's copies of the strided output: the fastest of them
  // again, writing a packed tensor that our kernel copies.
  ASSIGN_OR_RETURN(
      std::optional<std::shared_ptr<ConvKernel>> copied,
      time_output_copied(handle, spec, b, workspace, *retry, winner->choice(), reference, timer, stats, o));
  return copied ? *copied : winner;
}

Expected<std::shared_ptr<ConvKernel>> challenge_with_own(cudnnHandle_t handle, const ConvSpec& spec,
                                                         const ConvBuffers& b, void* workspace,
                                                         Expected<std::shared_ptr<ConvKernel>> cudnn,
                                                         const ConvBuildOptions& o) {
  TuningStats unused;
  TuningStats& stats = o.stats ? *o.stats : unused;
  const cudaStream_t stream = stream_of(handle);
  std::vector<float> reference;  // cuDNN's output: ours must agree with it to compete
  std::shared_ptr<ConvKernel> best;
  double best_ms = std::numeric_limits<double>::infinity();
  int candidates = 0;
  if (cudnn) {
    best = *cudnn;
    best_ms = best->choice().ms;
    candidates = best->choice().candidates;
    RETURN_IF_ERROR(best->run(handle, b, workspace));
    ASSIGN_OR_RETURN(reference, read_y(spec, b, stream));
  } else {
    say(o, spec.key() + ": no cuDNN engine (" + cudnn.status().message() + "); our kernels only");
  }
  ASSIGN_OR_RETURN(CandidateTimer timer, CandidateTimer::create(stream));
  std::shared_ptr<ConvKernel> ours_best;
  for (const std::string& name : own_conv_kernels(spec)) {
    Expected<std::shared_ptr<ConvKernel>> made = make_own_conv_kernel(spec, name);
    if (!made || (*made)->workspace_bytes() > o.workspace_limit) {  // cuBLASLt offers fewer algorithms
      say(o, spec.key() + ": our " + name + " not built (" + (made ? "workspace" : made.status().message()) + ")");
      continue;
    }
    const std::shared_ptr<ConvKernel>& k = *made;
    if (Status ran = k->run(handle, b, workspace); !ran) {  // cuDNN's engine runs it: no reason to fail the build
      cudaGetLastError();
      say(o, spec.key() + ": our " + name + " does not run (" + ran.message() + ")");
      continue;
    }
    if (!reference.empty()) {
      ASSIGN_OR_RETURN(std::vector<float> y, read_y(spec, b, stream));
      if (!outputs_agree(y, reference, spec.config)) {
        say(o, spec.key() + ": our " + name + " dropped (its output differs from cuDNN's)");
        continue;
      }
    } else {
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    ++candidates;
    ASSIGN_OR_RETURN(std::optional<double> ms,
                     timer.time([&]() { return k->run(handle, b, workspace); }, best_ms, stats));
    if (o.verbose)
      std::fprintf(stderr, "[conv] %s: our %s %s\n", spec.key().c_str(), name.c_str(),
                   ms ? (std::to_string(*ms) + " ms").c_str() : "cut short");
    if (ms && *ms < best_ms) best_ms = *ms, ours_best = k;
  }
  if (!ours_best) {
    RETURN_ERROR_IF(!best, ErrorCode::kUnavailable,
                    "neither cuDNN nor our kernels run " + spec.key() + ": " + cudnn.status().message());
    return best;
  }
  KernelChoice choice = ours_best->choice();
  choice.ms = best_ms;
  choice.candidates = candidates;
  say(o, spec.key() + " -> our " + choice.name + " (" + std::to_string(best_ms) + " ms" +
             (best ? ", cuDNN's " + best->choice().name + " " + std::to_string(best->choice().ms) + " ms)" : ")"));
  return make_own_conv_kernel(spec, choice);
}

}  // namespace conv_detail

using namespace conv_detail;

TuningBudget TuningBudget::for_engine(ConvEngine engine, int candidates) {
  if (engine == ConvEngine::kGraphExhaustive) return TuningBudget(candidates, candidates);
  return TuningBudget(kMaxCandidates, kMaxLosingInARow);
}

Expected<int> compile_ahead(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuildOptions& o) {
  if (o.engine == ConvEngine::kLegacy || is_channel_affine(spec)) return 0;
  // The graph tuning builds first: fused, unless cuDNN has no mode for the activation.
  const bool fused = spec.attrs.activation == ir::Act::kNone || act_mode(spec.attrs.activation).has_value();
  ASSIGN_OR_RETURN(Candidates listed, list_candidates(handle, spec, fused, o));
  const auto& [g, origin, order] = listed;
  // As far down the order as tuning may time (TuningBudget), each name once, as tune_graph goes.
  std::vector<std::string> seen;
  int compiled = 0;
  for (auto it = order.begin(); it != order.end() && seen.size() < size_t(kMaxCandidates); ++it) {
    std::string name;
    if (g->get_plan_name_at_index(*it, name).is_bad()) continue;
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    if (!compiled_at_run_time(*g, *it) || g->build_plan_at_index(handle, *it).is_bad()) continue;
    ++compiled;
    if (o.ahead_plans_dir.empty()) continue;
    // Made the graph's current plan (built already: nothing compiled) and written for the tuning process; one
    // not written is compiled there, as without this process.
    std::vector<uint8_t> bytes;
    if (g->build_plan_at_index(*it).is_good() && g->serialize(bytes, false).is_good())
      (void)write_plan_file(ahead_plan_path(o.ahead_plans_dir, spec, fused, name),
                            ahead_plan_identity(spec, fused, name), bytes);
  }
  return compiled;
}

TuningStats& TuningStats::operator+=(const TuningStats& o) {
  candidates += o.candidates;
  cut_short += o.cut_short;
  seconds += o.seconds;
  timing_seconds += o.timing_seconds;
  list_seconds += o.list_seconds;
  build_seconds += o.build_seconds;
  compile_seconds += o.compile_seconds;
  first_run_seconds += o.first_run_seconds;
  skipped_losing += o.skipped_losing;
  taken_ahead += o.taken_ahead;
  return *this;
}

}  // namespace ios::rt
