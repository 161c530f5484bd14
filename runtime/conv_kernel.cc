#include "runtime/conv_kernel.h"

#include <cudnn_frontend.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/tensor_pack.h"
#include "common/wall_clock.h"
#include "reference/reference_executor.h"
#include "runtime/kernels.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt {

namespace fe = cudnn_frontend;

namespace {

// uids of the graph's user tensors
constexpr int64_t kX = 1, kW = 2, kB = 3, kY = 4, kZ = 5;
constexpr int kMaxCandidates = 16;  // timed per convolution, in heuristics order (TuningBudget)
constexpr int kMaxLosingInARow = 6;
constexpr int kTimedBatches = 5;
constexpr double kBatchMs = 0.1;              // GPU time of one timed batch of runs
constexpr double kFirstSpinMs = 0.2;          // ahead of a batch; grows to twice the host's queueing time
constexpr double kHostCostDecay = 0.9;        // per batch, of the host's queueing time per run remembered
constexpr double kMaxHiddenQueueingMs = 2.0;  // longer queueing is not retried behind a longer spin
constexpr int kMaxRequeues = 3;
constexpr double kCutWarmupRatio = 3.0;  // a candidate's warm-up this far above the best so far is cut short

#define CHECK_FE(expr)                                                                                            \
  do {                                                                                                            \
    fe::error_t fe_status_ = (expr);                                                                              \
    if (fe_status_.is_bad())                                                                                      \
      return ::ios::Status(::ios::ErrorCode::kRuntimeError, std::string(#expr) + " failed at " + __FILE__ + ":" + \
                                                                std::to_string(__LINE__) + ": " +                 \
                                                                fe_status_.get_message());                        \
  } while (0)

fe::DataType_t fe_type(DataType t) {
  switch (t) {
    case DataType::kF32:
      return fe::DataType_t::FLOAT;
    case DataType::kF16:
      return fe::DataType_t::HALF;
    case DataType::kBF16:
      return fe::DataType_t::BFLOAT16;
  }
  return fe::DataType_t::FLOAT;
}

cudnnDataType_t cudnn_type(DataType t) {
  switch (t) {
    case DataType::kF32:
      return CUDNN_DATA_FLOAT;
    case DataType::kF16:
      return CUDNN_DATA_HALF;
    case DataType::kBF16:
      return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}

std::vector<int64_t> dims(int n, const ir::Shape& s) { return {n, s.c, s.h, s.w}; }
std::vector<int64_t> strides(const SliceLayout& l) { return {l.n, l.c, l.h, l.w}; }

// Filter strides of a packed KCRS (NCHW) or KRSC (NHWC) tensor.
std::vector<int64_t> filter_strides(Layout layout, int c, int r, int s) {
  const SliceLayout l = slice_layout(layout, c, 0, r, s);
  return strides(l);
}

bool needs_epilogue(const ConvSpec& spec) {
  return spec.attrs.has_bias || spec.attrs.activation != ir::Act::kNone || spec.z.has_value();
}

// Bias, activation and residual as our own kernels, for engines that only run the convolution.
void run_epilogue(const ConvSpec& spec, const ConvBuffers& b, cudaStream_t stream) {
  const DevTensor y{b.y, spec.y.n, spec.y.c, spec.y.w};
  const Extent e{spec.config.batch, spec.out.c, spec.out.h * spec.out.w, spec.config.layout == Layout::kNHWC};
  if (spec.attrs.has_bias || spec.attrs.activation != ir::Act::kNone)
    launch_bias_act(spec.config.dtype, y, spec.attrs.has_bias ? b.b : nullptr, e, act_code(spec.attrs.activation),
                    stream);
  if (spec.z) {
    const DevTensor z{const_cast<void*>(b.z), spec.z->n, spec.z->c, spec.z->w};
    launch_gather(spec.config.dtype, &z, 1, y, e, /*accumulate=*/true, stream);
  }
}

// The tensors a graph reads and writes, by uid.
std::unordered_map<int64_t, void*> variant_pack(const ConvSpec& spec, const ConvBuffers& b, bool fused) {
  std::unordered_map<int64_t, void*> pack = {{kX, const_cast<void*>(b.x)}, {kW, const_cast<void*>(b.w)}, {kY, b.y}};
  if (fused && spec.attrs.has_bias) pack[kB] = const_cast<void*>(b.b);
  if (fused && spec.z) pack[kZ] = const_cast<void*>(b.z);
  return pack;
}

cudaStream_t stream_of(cudnnHandle_t h) {
  cudaStream_t s = nullptr;
  cudnnGetStream(h, &s);
  return s;
}

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

// ---------------------------------------------------------------------------------------------
// Graph backend

bool compiled_at_run_time(const fe::graph::Graph& g, int64_t index);

// One plan of a cudnn-frontend graph, or (index kLoaded) the one plan a graph was loaded with.
class GraphConvKernel : public ConvKernel {
 public:
  static constexpr int64_t kLoaded = -1;
  // `loaded_plan`: with index kLoaded, the bytes the graph was loaded from (compiled_plan gives them back).
  GraphConvKernel(ConvSpec spec, std::shared_ptr<fe::graph::Graph> graph, int64_t index, KernelChoice choice,
                  std::vector<uint8_t> loaded_plan = {})
      : spec_(std::move(spec)),
        graph_(std::move(graph)),
        index_(index),
        choice_(std::move(choice)),
        loaded_plan_(std::move(loaded_plan)) {}

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const override {
    std::unordered_map<int64_t, void*> pack = variant_pack(spec_, b, choice_.fused);
    if (index_ == kLoaded) {
      CHECK_FE(graph_->execute(handle, pack, workspace));
    } else {
      CHECK_FE(graph_->execute_plan_at_index(handle, pack, workspace, index_));
    }
    if (!choice_.fused && needs_epilogue(spec_)) run_epilogue(spec_, b, stream_of(handle));
    return Status::ok();
  }
  size_t workspace_bytes() const override { return size_t(choice_.workspace); }
  const KernelChoice& choice() const override { return choice_; }
  bool compiled_plan_loaded() const override { return index_ == kLoaded; }
  // The frontend serializes its graph's current plan: made ours again first (it is built already, so
  // nothing is compiled).
  Expected<std::vector<uint8_t>> compiled_plan() const override {
    if (index_ == kLoaded) return loaded_plan_;
    std::vector<uint8_t> bytes;
    if (!compiled_at_run_time(*graph_, index_)) return bytes;
    CHECK_FE(graph_->build_plan_at_index(index_));
    CHECK_FE(graph_->serialize(bytes, false));
    return bytes;
  }

 private:
  ConvSpec spec_;
  std::shared_ptr<fe::graph::Graph> graph_;
  int64_t index_;
  KernelChoice choice_;
  std::vector<uint8_t> loaded_plan_;
};

// The spec with its output packed on its own: what an output-copied kernel's engine writes.
ConvSpec with_packed_output(ConvSpec spec) {
  spec.y = slice_layout(spec.config.layout, spec.out.c, 0, spec.out.h, spec.out.w);
  spec.y_align = 16;
  return spec;
}

// A convolution whose engine writes a packed tensor at the end of the workspace, which our copy kernel
// then writes into the output's strides (a concatenation's channel slice in NHWC). cuDNN's precompiled
// tensor-core engines wrap a strided output in two nhwcSliceCKernel copies, the slice copied in before the
// GEMM and out after it (tf32 Inception V3 on the H100: 52 copies, ~2.3 us each); this does with one.
// Kept where tuning times it faster than every engine writing the strides (tune_graph).
class OutputCopyKernel : public ConvKernel {
 public:
  OutputCopyKernel(ConvSpec spec, std::shared_ptr<ConvKernel> inner, double ms, int candidates)
      : spec_(std::move(spec)), packed_(with_packed_output(spec_)), inner_(std::move(inner)) {
    choice_ = inner_->choice();
    choice_.output_copied = true;
    choice_.ms = ms;
    choice_.candidates = candidates;
  }

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const override {
    ConvBuffers packed = b;
    packed.y = static_cast<char*>(workspace) + packed_offset();
    RETURN_IF_ERROR(inner_->run(handle, packed, workspace));
    const DevTensor from{packed.y, packed_.y.n, packed_.y.c, packed_.y.w};
    const DevTensor to{b.y, spec_.y.n, spec_.y.c, spec_.y.w};
    const Extent e{spec_.config.batch, spec_.out.c, spec_.out.h * spec_.out.w, spec_.config.layout == Layout::kNHWC};
    launch_gather(spec_.config.dtype, &from, 1, to, e, /*accumulate=*/false, stream_of(handle));
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }
  size_t workspace_bytes() const override {
    return packed_offset() + size_t(spec_.config.batch) * spec_.out.numel() * spec_.config.element_bytes();
  }
  const KernelChoice& choice() const override { return choice_; }

 private:
  size_t packed_offset() const { return (inner_->workspace_bytes() + 255) / 256 * 256; }
  ConvSpec spec_, packed_;
  std::shared_ptr<ConvKernel> inner_;
  KernelChoice choice_;
};

// The cuDNN pointwise mode that applies the activation in a fused graph, where cuDNN has one; the others
// run in our epilogue kernel after the convolution alone (tune_graph's unfused graph).
std::optional<fe::PointwiseMode_t> act_mode(ir::Act a) {
  switch (a) {
    case ir::Act::kRelu:
    case ir::Act::kRelu6:  // with its upper clip set at 6 (make_graph)
      return fe::PointwiseMode_t::RELU_FWD;
    case ir::Act::kSigmoid:
      return fe::PointwiseMode_t::SIGMOID_FWD;
    case ir::Act::kTanh:
      return fe::PointwiseMode_t::TANH_FWD;
    case ir::Act::kSilu:
      return fe::PointwiseMode_t::SWISH_FWD;
    case ir::Act::kGelu:
      return fe::PointwiseMode_t::GELU_FWD;
    case ir::Act::kGeluTanh:
      return fe::PointwiseMode_t::GELU_APPROX_TANH_FWD;
    case ir::Act::kElu:
      return fe::PointwiseMode_t::ELU_FWD;
    case ir::Act::kSoftplus:
      return fe::PointwiseMode_t::SOFTPLUS_FWD;
    case ir::Act::kNone:
    case ir::Act::kHardSigmoid:
    case ir::Act::kHardSwish:
    case ir::Act::kMish:
    case ir::Act::kSoftsign:
    case ir::Act::kLeakyRelu:
      break;
  }
  return std::nullopt;
}

// conv -> (+ bias) -> (activation) when `fused`, else the convolution alone.
Expected<std::shared_ptr<fe::graph::Graph>> make_graph(cudnnHandle_t handle, const ConvSpec& spec, bool fused) {
  const auto& a = spec.attrs;
  const int n = spec.config.batch;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe_type(spec.config.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto x = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("x")
                         .set_uid(kX)
                         .set_dim(dims(n, spec.in))
                         .set_stride(strides(spec.x))
                         .set_alignment(spec.x_align));
  const int cpg = spec.in.c / a.groups;
  auto w = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("w")
                         .set_uid(kW)
                         .set_dim({a.out_channels, cpg, a.kh, a.kw})
                         .set_stride(filter_strides(spec.config.layout, cpg, a.kh, a.kw)));
  auto y = g->conv_fprop(x, w,
                         fe::graph::Conv_fprop_attributes()
                             .set_name("conv")
                             .set_padding({a.ph, a.pw})
                             .set_stride({a.sh, a.sw})
                             .set_dilation({a.dh, a.dw}));
  if (fused && a.has_bias) {
    auto bias = g->tensor(fe::graph::Tensor_attributes()
                              .set_name("bias")
                              .set_uid(kB)
                              .set_dim({1, a.out_channels, 1, 1})
                              .set_stride({a.out_channels, 1, a.out_channels, a.out_channels}));
    y = g->pointwise(y, bias, fe::graph::Pointwise_attributes().set_name("bias").set_mode(fe::PointwiseMode_t::ADD));
  }
  if (fused && a.activation != ir::Act::kNone) {
    const std::optional<fe::PointwiseMode_t> mode = act_mode(a.activation);
    RETURN_ERROR_IF(!mode, ErrorCode::kUnavailable,
                    std::string("cuDNN has no pointwise mode for ") + ir::act_name(a.activation));
    auto act = fe::graph::Pointwise_attributes().set_name("act").set_mode(*mode);
    if (a.activation == ir::Act::kRelu6) act.set_relu_upper_clip(6.f);
    if (a.activation == ir::Act::kSilu) act.set_swish_beta(1.f);
    if (a.activation == ir::Act::kElu) act.set_elu_alpha(1.f);
    if (a.activation == ir::Act::kSoftplus) act.set_softplus_beta(1.f);
    y = g->pointwise(y, act);
  }
  if (fused && spec.z) {
    auto z = g->tensor(fe::graph::Tensor_attributes()
                           .set_name("z")
                           .set_uid(kZ)
                           .set_dim(dims(n, spec.out))
                           .set_stride(strides(*spec.z))
                           .set_alignment(spec.z_align));
    y = g->pointwise(y, z, fe::graph::Pointwise_attributes().set_name("residual").set_mode(fe::PointwiseMode_t::ADD));
  }
  y->set_output(true)
      .set_uid(kY)
      .set_data_type(fe_type(spec.config.dtype))
      .set_dim(dims(n, spec.out))
      .set_stride(strides(spec.y))
      .set_alignment(spec.y_align);
  CHECK_FE(g->validate());
  CHECK_FE(g->build_operation_graph(handle));
  return g;
}

// Numerical notes the precision forbids: strict fp32 runs no tensor cores and never converts down;
// tf32 may use tensor cores but not convert to 16 bits.
void deselect_for_precision(fe::graph::Graph& g, const ExecConfig& c, size_t workspace_limit) {
  if (c.dtype == DataType::kF32) {
    std::vector<fe::NumericalNote_t> notes = {fe::NumericalNote_t::DOWN_CONVERT_INPUTS,
                                              fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION};
    if (c.math == MathMode::kStrict) notes.push_back(fe::NumericalNote_t::TENSOR_CORE);
    g.deselect_numeric_notes(notes);
  }
  g.deselect_workspace_greater_than(int64_t(workspace_limit));
}

KernelChoice describe(const fe::graph::Graph& g, int64_t index, bool fused) {
  KernelChoice c;
  c.backend = kGraphBackend;
  c.fused = fused;
  std::unordered_map<fe::KnobType_t, int64_t> knobs;
  if (g.get_engine_and_knobs_at_index(index, c.engine, knobs).is_good())
    for (const auto& [type, value] : knobs) c.knobs.emplace_back(int64_t(type), value);
  std::sort(c.knobs.begin(), c.knobs.end());
  if (g.get_plan_name_at_index(index, c.name).is_bad()) c.name = "engine" + std::to_string(c.engine);
  int64_t ws = 0;
  if (g.get_workspace_size_plan_at_index(index, ws).is_good()) c.workspace = ws;
  return c;
}

// An engine configuration made by hand rather than offered by the heuristics: the engine with these
// knobs set (the backend's defaults for the rest).
struct ExploredConfig {
  int64_t engine = 0;
  std::unordered_map<fe::KnobType_t, int64_t> knobs;
};

// Every engine of the operation graph with its default knobs, and split-K variants of each engine
// that has the knob: the heuristics leave engines out and offer one knob setting per engine, and at
// small outputs with long reductions (DenseNet's 7x7 layers: 49 pixels, a 1152-long reduction) the
// offered tiles leave most SMs idle (no fp32 engine on the H100 has the split-K knob for them).
std::vector<ExploredConfig> explored_configs(fe::graph::Graph& g) {
  std::vector<ExploredConfig> out;
  int64_t count = 0;
  if (g.get_engine_count(count).is_bad()) return out;
  for (int64_t e = 0; e < count; ++e) {
    std::vector<fe::Knob> knobs;
    if (g.get_knobs_for_engine(e, knobs).is_bad()) continue;  // the engine does not take this graph
    out.push_back({e, {}});
    for (const fe::Knob& k : knobs) {
      if (k.type != fe::KnobType_t::SPLIT_K_SLC) continue;
      for (int64_t v : {2, 4, 8, 16, 32})
        if (v >= k.minValue && v <= k.maxValue && (k.stride <= 1 || (v - k.minValue) % k.stride == 0))
          out.push_back({e, {{k.type, v}}});
    }
  }
  return out;
}

// Adds hand-made configurations to the graph's plan list; `origin` records how each was made.
void add_configs(fe::graph::Graph& g, std::vector<ExploredConfig> configs,
                 std::vector<std::optional<ExploredConfig>>& origin) {
  for (ExploredConfig& c : configs) {
    const bool made = g.create_execution_plan(c.engine, c.knobs).is_good();
    origin.resize(size_t(g.get_execution_plan_count()));  // a failed query may still have added a plan
    if (made) origin.back() = std::move(c);
  }
}

bool compiled_at_run_time(const fe::graph::Graph& g, int64_t index) {
  std::vector<fe::BehaviorNote_t> notes;
  return g.get_behavior_notes_for_plan_at_index(index, notes).is_good() &&
         std::find(notes.begin(), notes.end(), fe::BehaviorNote_t::RUNTIME_COMPILATION) != notes.end();
}

// Plan indexes in the order they are timed. graph-exhaustive: the heuristics' plans, then every engine
// and split-K variant. graph-rtc: the heuristics' plans, led on strided slices by the engines cuDNN
// compiles at run time (default knobs): their kernels read and write the slice through its strides, where
// the precompiled tensor-core kernels the heuristics offer first wrap the GEMM in two nhwcSliceCKernel
// copies (tf32 GoogLeNet on the H100, cuDNN 9.19: 27 of 32 strided convolutions faster, 62 of 72 copies
// gone); the heuristics list them late or not at all, past where the tuning budget stops. With them a
// SqueezeNet tf32 graph read a concatenation before it was written, through a programmatic (PDL) edge:
// safe only because every captured graph's programmatic edges are made full ones (make_edges_full).
std::vector<int64_t> timing_order(fe::graph::Graph& g, const ConvSpec& spec, ConvEngine engine,
                                  std::vector<std::optional<ExploredConfig>>& origin) {
  const int64_t offered = g.get_execution_plan_count();
  std::vector<int64_t> order;
  if (engine == ConvEngine::kGraphExhaustive) {
    add_configs(g, explored_configs(g), origin);
  } else if (engine == ConvEngine::kGraphRuntimeCompiled && touches_strided_slice(spec)) {
    std::vector<ExploredConfig> defaults;
    for (ExploredConfig& c : explored_configs(g))
      if (c.knobs.empty()) defaults.push_back(std::move(c));
    add_configs(g, std::move(defaults), origin);
    for (int64_t i = offered; i < g.get_execution_plan_count(); ++i)
      if (origin[size_t(i)] && compiled_at_run_time(g, i)) order.push_back(i);
  }
  for (int64_t i = 0; i < offered; ++i) order.push_back(i);
  if (engine == ConvEngine::kGraphExhaustive)
    for (int64_t i = offered; i < g.get_execution_plan_count(); ++i) order.push_back(i);
  return order;
}

// Candidate engine configurations for a graph, in heuristics order, filtered for the precision.
Status query_candidates(fe::graph::Graph& g, const ExecConfig& config, size_t workspace_limit) {
  if (g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::B, fe::HeurMode_t::FALLBACK}).is_bad())
    CHECK_FE(g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
  deselect_for_precision(g, config, workspace_limit);
  return Status::ok();
}

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

// A plan as cuDNN serialized it, made a graph again (nothing compiled), with the workspace it asks for.
struct LoadedPlan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};
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

// A recorded engine built again, with the workspace its plan asks for: the record's may be another spec's
// (an output-copied engine is tuned on the strided output and rebuilt on a packed one).
Expected<std::shared_ptr<ConvKernel>> rebuilt(const ConvSpec& spec, std::shared_ptr<fe::graph::Graph> g, int64_t index,
                                              KernelChoice c) {
  CHECK_FE(g->get_workspace_size_plan_at_index(index, c.workspace));
  return std::shared_ptr<ConvKernel>(new GraphConvKernel(spec, std::move(g), index, std::move(c)));
}

// Rebuilds a hand-made configuration (graph-exhaustive tuning) from its engine and the knobs it set.
Expected<std::shared_ptr<ConvKernel>> rebuild_explored(cudnnHandle_t handle, const ConvSpec& spec,
                                                       const KernelChoice& c, size_t workspace_limit) {
  ASSIGN_OR_RETURN(auto g, make_graph(handle, spec, c.fused));
  std::unordered_map<fe::KnobType_t, int64_t> knobs;
  for (const auto& [type, value] : c.knobs) knobs[fe::KnobType_t(type)] = value;
  CHECK_FE(g->create_execution_plan(c.engine, knobs));
  deselect_for_precision(*g, spec.config, workspace_limit);
  CHECK_FE(g->build_plan_at_index(handle, 0));
  std::string name;
  RETURN_ERROR_IF(g->get_plan_name_at_index(0, name).is_bad() || name != c.name, ErrorCode::kNotFound,
                  "engine " + std::to_string(c.engine) + " with the recorded knobs is now " + name + ", not " + c.name);
  return rebuilt(spec, std::move(g), 0, c);
}

// Loads a recorded runtime-compiled engine from its serialized plan: no compilation.
Expected<std::shared_ptr<ConvKernel>> load_compiled(cudnnHandle_t handle, const ConvSpec& spec, const KernelChoice& c,
                                                    const std::vector<uint8_t>& plan) {
  ASSIGN_OR_RETURN(LoadedPlan p, deserialize_plan(handle, plan));
  RETURN_ERROR_IF(p.workspace > c.workspace, ErrorCode::kInvalidArgument,
                  "the loaded plan asks for " + std::to_string(p.workspace) + " bytes of workspace, the record " +
                      std::to_string(c.workspace));
  return std::shared_ptr<ConvKernel>(new GraphConvKernel(spec, std::move(p.graph), GraphConvKernel::kLoaded, c, plan));
}

// Rebuilds a recorded engine without tuning. First from its engine id and knobs alone, as a hand-made
// configuration: skipping the heuristics query built NasNet fp32's network kernels in 0.48-0.54 s
// instead of 0.82-0.83 s (H100). Where that is not the recorded
// configuration by name (the frontend's knob enum has no word for some of the backend's knobs, whose
// defaults then differ) or does not build, the heuristics list is queried again and the configuration
// with the recorded name is the only one built.
Expected<std::shared_ptr<ConvKernel>> rebuild_graph(cudnnHandle_t handle, const ConvSpec& spec, const KernelChoice& c,
                                                    size_t workspace_limit) {
  if (c.engine >= 0)
    if (auto direct = rebuild_explored(handle, spec, c, workspace_limit)) return direct;
  ASSIGN_OR_RETURN(auto g, make_graph(handle, spec, c.fused));
  RETURN_IF_ERROR(query_candidates(*g, spec.config, workspace_limit));
  for (int64_t i = 0; i < g->get_execution_plan_count(); ++i) {
    std::string name;
    if (g->get_plan_name_at_index(i, name).is_bad() || name != c.name) continue;
    CHECK_FE(g->build_plan_at_index(handle, i));
    return rebuilt(spec, std::move(g), i, c);
  }
  return error(ErrorCode::kNotFound, "the heuristics no longer list engine " + c.name);
}

Expected<std::shared_ptr<ConvKernel>> rebuild_recorded(cudnnHandle_t handle, const ConvSpec& spec,
                                                       const KernelChoice& c, size_t workspace_limit) {
  if (c.output_copied) {
    KernelChoice inner = c;
    inner.output_copied = false;
    ASSIGN_OR_RETURN(std::shared_ptr<ConvKernel> k,
                     rebuild_recorded(handle, with_packed_output(spec), inner, workspace_limit));
    return std::shared_ptr<ConvKernel>(new OutputCopyKernel(spec, std::move(k), c.ms, c.candidates));
  }
  return c.backend == kGraphBackend ? rebuild_graph(handle, spec, c, workspace_limit)
                                    : rebuild_explored(handle, spec, c, workspace_limit);
}

// ---------------------------------------------------------------------------------------------
// Legacy backend

class LegacyConvKernel : public ConvKernel {
 public:
  static Expected<std::shared_ptr<LegacyConvKernel>> create(const ConvSpec& spec) {
    auto k = std::shared_ptr<LegacyConvKernel>(new LegacyConvKernel(spec));
    RETURN_IF_ERROR(k->make_descriptors());
    return k;
  }

  // Fused through cudnnConvolutionBiasActivationForward only where it is defined for us: fp32, ReLU.
  bool fusable() const {
    return spec_.config.dtype == DataType::kF32 && spec_.attrs.has_bias && spec_.attrs.activation == ir::Act::kRelu &&
           !spec_.z;  // its z is added before the activation, ours after
  }

  Status use(const KernelChoice& c) {
    choice_ = c;
    CHECK_CUDNN(cudnnSetConvolutionMathType(conv_, cudnnMathType_t(c.knobs.empty() ? 0 : c.knobs[0].second)));
    return Status::ok();
  }

  Status tune(cudnnHandle_t handle, const ConvBuffers& b, void* workspace, size_t limit) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
        handle, x_, b.x, w_, b.w, conv_, y_, b.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, workspace, limit));
    for (int i = 0; i < found; ++i) {
      const auto& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
      if (spec_.config.dtype == DataType::kF32 && spec_.config.math == MathMode::kStrict &&
          p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH)
        continue;
      KernelChoice c;
      c.backend = kLegacyBackend;
      c.engine = p.algo;
      c.knobs = {{0, int64_t(p.mathType)}};
      c.name = "legacy_algo" + std::to_string(int(p.algo));
      c.fused = fusable();
      c.ms = p.time;
      c.workspace = int64_t(p.memory);
      c.candidates = found;
      return use(c);
    }
    return error(ErrorCode::kRuntimeError, "cuDNN found no legacy convolution algorithm for " + spec_.key());
  }

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const override {
    const float one = 1.f, zero = 0.f;
    const auto algo = cudnnConvolutionFwdAlgo_t(choice_.engine);
    if (choice_.fused) {
      CHECK_CUDNN(cudnnConvolutionBiasActivationForward(handle, &one, x_, b.x, w_, b.w, conv_, algo, workspace,
                                                        workspace_bytes(), &zero, y_, b.y, bias_, b.b, act_, y_, b.y));
      return Status::ok();
    }
    CHECK_CUDNN(cudnnConvolutionForward(handle, &one, x_, b.x, w_, b.w, conv_, algo, workspace, workspace_bytes(),
                                        &zero, y_, b.y));
    if (needs_epilogue(spec_)) run_epilogue(spec_, b, stream_of(handle));
    return Status::ok();
  }
  size_t workspace_bytes() const override { return size_t(choice_.workspace); }
  const KernelChoice& choice() const override { return choice_; }

 private:
  explicit LegacyConvKernel(ConvSpec spec) : spec_(std::move(spec)) {}

  Status make_descriptors() {
    const auto& a = spec_.attrs;
    const cudnnDataType_t t = cudnn_type(spec_.config.dtype);
    ASSIGN_OR_RETURN(x_, make_nd_tensor_desc(t, dims(spec_.config.batch, spec_.in), strides(spec_.x)));
    ASSIGN_OR_RETURN(y_, make_nd_tensor_desc(t, dims(spec_.config.batch, spec_.out), strides(spec_.y)));
    ASSIGN_OR_RETURN(bias_, make_nd_tensor_desc(t, {1, spec_.out.c, 1, 1}, {spec_.out.c, 1, 1, 1}));
    ASSIGN_OR_RETURN(w_, make_filter_desc(t, spec_.config.layout == Layout::kNHWC, a.out_channels,
                                          spec_.in.c / a.groups, a.kh, a.kw));
    ASSIGN_OR_RETURN(act_, make_act_desc(CUDNN_ACTIVATION_RELU));
    cudnnConvolutionDescriptor_t cd = nullptr;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    conv_ = ConvDesc(cd);
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(cd, a.ph, a.pw, a.sh, a.sw, a.dh, a.dw, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionGroupCount(cd, a.groups));
    const cudnnMathType_t math = !spec_.config.tensor_cores()           ? CUDNN_FMA_MATH
                                 : spec_.config.dtype == DataType::kF32 ? CUDNN_DEFAULT_MATH
                                                                        : CUDNN_TENSOR_OP_MATH;
    CHECK_CUDNN(cudnnSetConvolutionMathType(cd, math));
    return Status::ok();
  }

  ConvSpec spec_;
  TensorDesc x_, y_, bias_;
  FilterDesc w_;
  ConvDesc conv_;
  ActDesc act_;
  KernelChoice choice_;
};

Expected<std::shared_ptr<ConvKernel>> build_legacy(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                   void* workspace, const std::optional<KernelChoice>& cached,
                                                   const ConvBuildOptions& o) {
  ASSIGN_OR_RETURN(auto k, LegacyConvKernel::create(spec));
  if (cached && cached->backend == kLegacyBackend) {
    RETURN_IF_ERROR(k->use(*cached));
  } else {
    RETURN_IF_ERROR(k->tune(handle, b, workspace, o.workspace_limit));
  }
  return std::shared_ptr<ConvKernel>(std::move(k));
}

void say(const ConvBuildOptions& o, const std::string& what) {
  if (o.verbose) std::fprintf(stderr, "[conv] %s\n", what.c_str());
}

}  // namespace

int act_code(ir::Act a) { return static_cast<int>(a); }

namespace {
bool is_strided(const ConvSpec& spec, const SliceLayout& l, const ir::Shape& s) {
  const SliceLayout packed = slice_layout(spec.config.layout, s.c, 0, s.h, s.w);
  return l.c != packed.c || l.h != packed.h || l.w != packed.w || (spec.config.batch > 1 && l.n != packed.n);
}
}  // namespace

bool touches_strided_slice(const ConvSpec& spec) {
  return is_strided(spec, spec.x, spec.in) || writes_strided_slice(spec) ||
         (spec.z && is_strided(spec, *spec.z, spec.out));
}

bool writes_strided_slice(const ConvSpec& spec) { return is_strided(spec, spec.y, spec.out); }

TuningBudget TuningBudget::for_engine(ConvEngine engine, int candidates) {
  if (engine == ConvEngine::kGraphExhaustive) return TuningBudget(candidates, candidates);
  return TuningBudget(kMaxCandidates, kMaxLosingInARow);
}

Expected<ConvEngine> parse_conv_engine(const std::string& s) {
  for (ConvEngine e : {ConvEngine::kAuto, ConvEngine::kGraph, ConvEngine::kGraphExhaustive,
                       ConvEngine::kGraphRuntimeCompiled, ConvEngine::kLegacy})
    if (s == conv_engine_name(e)) return e;
  return error(ErrorCode::kInvalidArgument,
               "--conv-engine must be auto, graph, graph-exhaustive, graph-rtc or legacy, got '" + s + "'");
}

ConvEngine resolve_conv_engine(ConvEngine e, DataType dtype, MathMode math) {
  if (e != ConvEngine::kAuto) return e;
  return dtype == DataType::kF32 && math == MathMode::kStrict ? ConvEngine::kGraphExhaustive
                                                              : ConvEngine::kGraphRuntimeCompiled;
}

const char* conv_engine_name(ConvEngine e) {
  switch (e) {
    case ConvEngine::kAuto:
      return "auto";
    case ConvEngine::kGraph:
      return "graph";
    case ConvEngine::kGraphExhaustive:
      return "graph-exhaustive";
    case ConvEngine::kGraphRuntimeCompiled:
      return "graph-rtc";
    case ConvEngine::kLegacy:
      return "legacy";
  }
  return "graph";
}

int pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int align = 16;
  while (align > 1 && a % uintptr_t(align) != 0) align /= 2;
  return align;
}

std::string ConvSpec::key() const {
  std::ostringstream os;
  os << config.key() << "|in" << in.to_string() << "|out" << out.to_string() << "|" << ir::attrs_key(attrs) << "|xs"
     << x.n << "," << x.c << "," << x.h << "," << x.w << "|ys" << y.n << "," << y.c << "," << y.h << "," << y.w << "|al"
     << x_align << "," << y_align;
  if (z) os << "|z" << z->n << "," << z->c << "," << z->h << "," << z->w << "|zal" << z_align;
  return os.str();
}

namespace {

bool same_strides(const SliceLayout& a, const SliceLayout& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

void mix(size_t& h, int64_t v) { h = (h ^ static_cast<size_t>(v)) * 1099511628211ull; }

}  // namespace

size_t ConvSpecHash::operator()(const ConvSpec& s) const {
  size_t h = 1469598103934665603ull;
  for (int64_t v : {int64_t(s.config.dtype), int64_t(s.config.math), int64_t(s.config.layout), int64_t(s.config.batch)})
    mix(h, v);
  const ir::ConvAttrs& a = s.attrs;
  for (int v : {a.out_channels,
                a.kh,
                a.kw,
                a.sh,
                a.sw,
                a.ph,
                a.pw,
                a.dh,
                a.dw,
                a.groups,
                int(a.has_bias),
                int(a.activation),
                s.in.c,
                s.in.h,
                s.in.w,
                s.out.c,
                s.out.h,
                s.out.w,
                s.x_align,
                s.y_align})
    mix(h, v);
  for (int64_t v : {s.x.n, s.x.c, s.x.h, s.x.w, s.y.n, s.y.c, s.y.h, s.y.w}) mix(h, v);
  if (s.z)
    for (int64_t v : {s.z->n, s.z->c, s.z->h, s.z->w, int64_t(s.z_align)}) mix(h, v);
  return h;
}

bool SameConvKey::operator()(const ConvSpec& a, const ConvSpec& b) const {
  return a.config == b.config && a.attrs == b.attrs && a.in == b.in && a.out == b.out && same_strides(a.x, b.x) &&
         same_strides(a.y, b.y) && a.x_align == b.x_align && a.y_align == b.y_align &&
         a.z.has_value() == b.z.has_value() && (!a.z || (same_strides(*a.z, *b.z) && a.z_align == b.z_align));
}

// ---------------------------------------------------------------------------------------------
// Per-channel affine: a 1x1 depthwise convolution is y = act(x * w[c] + b[c]), memory-bound. cuDNN runs
// it as a grouped convolution with one group per channel, several times slower than one elementwise
// pass (imported BatchNorms without a convolution before them: DenseNet's pre-activations).
namespace {

bool is_channel_affine(const ConvSpec& spec) {
  const ir::ConvAttrs& a = spec.attrs;
  return a.kh == 1 && a.kw == 1 && a.sh == 1 && a.sw == 1 && a.ph == 0 && a.pw == 0 && a.groups == spec.in.c &&
         a.out_channels == spec.in.c && spec.out.c == spec.in.c;
}

class ChannelAffineKernel : public ConvKernel {
 public:
  explicit ChannelAffineKernel(ConvSpec spec) : spec_(std::move(spec)) {
    choice_.backend = kElementwiseBackend;
    choice_.name = "ios_channel_affine";
    choice_.fused = true;
  }
  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* /*workspace*/) const override {
    const cudaStream_t stream = stream_of(handle);
    const DevTensor x{const_cast<void*>(b.x), spec_.x.n, spec_.x.c, spec_.x.w};
    const DevTensor y{b.y, spec_.y.n, spec_.y.c, spec_.y.w};
    const Extent e{spec_.config.batch, spec_.out.c, spec_.out.h * spec_.out.w, spec_.config.layout == Layout::kNHWC};
    launch_scale_bias_act(spec_.config.dtype, x, y, b.w, spec_.attrs.has_bias ? b.b : nullptr, e,
                          act_code(spec_.attrs.activation), stream);
    if (spec_.z) {
      const DevTensor z{const_cast<void*>(b.z), spec_.z->n, spec_.z->c, spec_.z->w};
      launch_gather(spec_.config.dtype, &z, 1, y, e, /*accumulate=*/true, stream);
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }
  size_t workspace_bytes() const override { return 0; }
  const KernelChoice& choice() const override { return choice_; }

 private:
  ConvSpec spec_;
  KernelChoice choice_;
};

}  // namespace

Expected<std::shared_ptr<ConvKernel>> build_conv_kernel(cudnnHandle_t handle, const ConvSpec& spec,
                                                        const ConvBuffers& b, void* workspace,
                                                        const std::optional<KernelChoice>& cached,
                                                        const std::vector<uint8_t>& cached_plan,
                                                        const ConvBuildOptions& o) {
  if (is_channel_affine(spec)) return std::shared_ptr<ConvKernel>(new ChannelAffineKernel(spec));
  if (o.engine == ConvEngine::kLegacy) return build_legacy(handle, spec, b, workspace, cached, o);
  if (cached && !cached->output_copied && !cached_plan.empty()) {  // an output-copied engine is precompiled
    auto k = load_compiled(handle, spec, *cached, cached_plan);
    if (k) {
      say(o, spec.key() + " <- " + cached->name + " (compiled plan from the kernel cache)");
      return k;
    }
    say(o, "compiled plan of " + cached->name + " does not load (" + k.status().message() + "); building it");
  }
  if (cached && (cached->backend == kGraphBackend || cached->backend == kExploredBackend)) {
    auto k = rebuild_recorded(handle, spec, *cached, o.workspace_limit);
    if (k) {
      say(o, spec.key() + " <- " + cached->name + " (kernel cache, " + std::to_string(cached->ms) + " ms when tuned)");
      return k;
    }
    say(o, "recorded engine " + cached->name + " no longer builds (" + k.status().message() + "); tuning again");
  } else if (cached && cached->backend == kLegacyBackend) {
    return build_legacy(handle, spec, b, workspace, cached, o);
  }
  auto fused = tune_graph(handle, spec, b, workspace, true, o);
  if (fused) {
    say(o,
        spec.key() + " -> " + (*fused)->choice().name + " (fused, " + std::to_string((*fused)->choice().ms) + " ms)");
    return fused;
  }
  if (needs_epilogue(spec)) {
    say(o, spec.key() + ": no engine runs conv+bias+activation (" + fused.status().message() +
               "); tuning the convolution alone");
    auto alone = tune_graph(handle, spec, b, workspace, false, o);
    if (alone) return alone;
    say(o, spec.key() + ": no graph engine at all (" + alone.status().message() + "); legacy API");
  }
  return build_legacy(handle, spec, b, workspace, std::nullopt, o);
}

std::string kernel_cache_key(const ConvSpec& spec, ConvEngine engine) {
  return spec.key() + "|" + conv_engine_name(engine);
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
