// The graph backend: cudnn-frontend graphs of a convolution (with its bias, activation and residual where
// cuDNN fuses them), the candidate engines they offer or that are made by hand, and recorded engines built
// again from the kernel cache.
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

namespace ios::rt::conv_detail {

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
    case ir::Act::kSqrt:
    case ir::Act::kReciprocal:
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

}  // namespace ios::rt::conv_detail
