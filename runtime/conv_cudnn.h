// The cuDNN side of the convolution kernel layer, shared by its files: building cudnn-frontend graphs and
// rebuilding recorded engines (conv_graph.cc), tuning (conv_tuner.cc), the legacy API (conv_legacy.cc) and
// our per-channel kernel (conv_channel_affine.cc); conv_kernel.cc picks among them. Internal to runtime/:
// other code includes conv_kernel.h. A file including this one includes <cudnn_frontend.h> before any
// header that brings nlohmann/json: cudnn-frontend bundles its own copy, which must come first.
#pragma once

#include <cudnn_frontend.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/conv_kernel.h"
#include "runtime/cuda_check.h"
#include "runtime/kernels.h"

namespace ios::rt::conv_detail {

namespace fe = cudnn_frontend;

// uids of the graph's user tensors
constexpr int64_t kX = 1, kW = 2, kB = 3, kY = 4, kZ = 5;

#define CHECK_FE(expr)                                                                                            \
  do {                                                                                                            \
    fe::error_t fe_status_ = (expr);                                                                              \
    if (fe_status_.is_bad())                                                                                      \
      return ::ios::Status(::ios::ErrorCode::kRuntimeError, std::string(#expr) + " failed at " + __FILE__ + ":" + \
                                                                std::to_string(__LINE__) + ": " +                 \
                                                                fe_status_.get_message());                        \
  } while (0)

inline fe::DataType_t fe_type(DataType t) {
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

inline cudnnDataType_t cudnn_type(DataType t) {
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

inline std::vector<int64_t> dims(int n, const ir::Shape& s) { return {n, s.c, s.h, s.w}; }
inline std::vector<int64_t> strides(const SliceLayout& l) { return {l.n, l.c, l.h, l.w}; }

// Filter strides of a packed KCRS (NCHW) or KRSC (NHWC) tensor.
inline std::vector<int64_t> filter_strides(Layout layout, int c, int r, int s) {
  const SliceLayout l = slice_layout(layout, c, 0, r, s);
  return strides(l);
}

inline bool needs_epilogue(const ConvSpec& spec) {
  return spec.attrs.has_bias || spec.attrs.activation != ir::Act::kNone || spec.z.has_value();
}

// Bias, activation and residual as our own kernels, for engines that only run the convolution.
inline void run_epilogue(const ConvSpec& spec, const ConvBuffers& b, cudaStream_t stream) {
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
inline std::unordered_map<int64_t, void*> variant_pack(const ConvSpec& spec, const ConvBuffers& b, bool fused) {
  std::unordered_map<int64_t, void*> pack = {{kX, const_cast<void*>(b.x)}, {kW, const_cast<void*>(b.w)}, {kY, b.y}};
  if (fused && spec.attrs.has_bias) pack[kB] = const_cast<void*>(b.b);
  if (fused && spec.z) pack[kZ] = const_cast<void*>(b.z);
  return pack;
}

inline cudaStream_t stream_of(cudnnHandle_t h) {
  cudaStream_t s = nullptr;
  cudnnGetStream(h, &s);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Graph backend (conv_graph.cc)

// Whether the plan at `index` is one cuDNN compiles at run time (NVRTC), rather than a precompiled kernel.
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
inline ConvSpec with_packed_output(ConvSpec spec) {
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

// An engine configuration made by hand rather than offered by the heuristics: the engine with these
// knobs set (the backend's defaults for the rest).
struct ExploredConfig {
  int64_t engine = 0;
  std::unordered_map<fe::KnobType_t, int64_t> knobs;
};

// A plan as cuDNN serialized it, made a graph again (nothing compiled), with the workspace it asks for.
struct LoadedPlan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

std::optional<fe::PointwiseMode_t> act_mode(ir::Act a);
Expected<std::shared_ptr<fe::graph::Graph>> make_graph(cudnnHandle_t handle, const ConvSpec& spec, bool fused);
void deselect_for_precision(fe::graph::Graph& g, const ExecConfig& c, size_t workspace_limit);
KernelChoice describe(const fe::graph::Graph& g, int64_t index, bool fused);
std::vector<ExploredConfig> explored_configs(fe::graph::Graph& g);
void add_configs(fe::graph::Graph& g, std::vector<ExploredConfig> configs,
                 std::vector<std::optional<ExploredConfig>>& origin);
bool compiled_at_run_time(const fe::graph::Graph& g, int64_t index);
std::vector<int64_t> timing_order(fe::graph::Graph& g, const ConvSpec& spec, ConvEngine engine,
                                  std::vector<std::optional<ExploredConfig>>& origin);
Status query_candidates(fe::graph::Graph& g, const ExecConfig& config, size_t workspace_limit);
Expected<std::shared_ptr<ConvKernel>> rebuilt(const ConvSpec& spec, std::shared_ptr<fe::graph::Graph> g, int64_t index,
                                              KernelChoice c);
Expected<std::shared_ptr<ConvKernel>> rebuild_explored(cudnnHandle_t handle, const ConvSpec& spec,
                                                       const KernelChoice& c, size_t workspace_limit);
Expected<std::shared_ptr<ConvKernel>> load_compiled(cudnnHandle_t handle, const ConvSpec& spec, const KernelChoice& c,
                                                    const std::vector<uint8_t>& plan);
Expected<std::shared_ptr<ConvKernel>> rebuild_graph(cudnnHandle_t handle, const ConvSpec& spec, const KernelChoice& c,
                                                    size_t workspace_limit);
Expected<std::shared_ptr<ConvKernel>> rebuild_recorded(cudnnHandle_t handle, const ConvSpec& spec,
                                                       const KernelChoice& c, size_t workspace_limit);

// ---------------------------------------------------------------------------------------------
// The tuner (conv_tuner.cc)

Expected<LoadedPlan> deserialize_plan(cudnnHandle_t handle, const std::vector<uint8_t>& bytes);
Expected<std::shared_ptr<ConvKernel>> tune_graph(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                 void* workspace, bool fused, const ConvBuildOptions& o);
// Our kernels that run `spec` (own_conv_kernels), each checked against cuDNN's output and timed against
// `cudnn`, the engine tuning picked (or its error: then the first of ours that runs); the fastest kept.
Expected<std::shared_ptr<ConvKernel>> challenge_with_own(cudnnHandle_t handle, const ConvSpec& spec,
                                                         const ConvBuffers& b, void* workspace,
                                                         Expected<std::shared_ptr<ConvKernel>> cudnn,
                                                         const ConvBuildOptions& o);

// ---------------------------------------------------------------------------------------------
// The legacy API (conv_legacy.cc) and our per-channel kernel (conv_channel_affine.cc)

Expected<std::shared_ptr<ConvKernel>> build_legacy(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                   void* workspace, const std::optional<KernelChoice>& cached,
                                                   const ConvBuildOptions& o);
// A 1x1 depthwise convolution with one output channel per input channel: y = act(x * w[c] + b[c]).
bool is_channel_affine(const ConvSpec& spec);
std::shared_ptr<ConvKernel> channel_affine_kernel(const ConvSpec& spec);

// Our pointwise convolution as a cuBLASLt product (conv_gemm.cc): its variants' names where it runs `spec`
// (appended to `names`), and the kernel a choice names (nullopt: not one of these names).
void add_gemm_kernel_names(const ConvSpec& spec, std::vector<std::string>& names);
std::optional<Expected<std::shared_ptr<ConvKernel>>> make_gemm_kernel(const ConvSpec& spec, const KernelChoice& choice);

inline void say(const ConvBuildOptions& o, const std::string& what) {
  if (o.verbose) std::fprintf(stderr, "[conv] %s\n", what.c_str());
}

}  // namespace ios::rt::conv_detail
