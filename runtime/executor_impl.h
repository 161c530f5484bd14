// The executor's state and the parts that build it (executor_build.cc), issue its launches
// (executor_dispatch.cc) and capture them into a CUDA graph (executor_capture.cc); executor.cc is the public
// API. Internal to runtime/: other code includes executor.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "common/overloaded.h"
#include "common/tensor_pack.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/kernels.h"
#include "runtime/reductions.h"
#include "scheduler/dataflow.h"
#include "scheduler/merge.h"

namespace ios::rt {

namespace executor_detail {

// Seconds between successive calls.
class Lap {
 public:
  double next() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// A channel slice [begin, begin + c) of an activation buffer with `channels` channels of h x w.
struct View {
  char* base = nullptr;
  int channels = 0;
  int begin = 0;
  int h = 0, w = 0;
  View at_channel(int offset) const { return View{base, channels, begin + offset, h, w}; }
};

struct StepPlan {
  std::shared_ptr<ConvKernel> conv;
  ir::SubOp op;
  ir::Shape in, out;
  const void* weight = nullptr;  // conv and linear, in the run's dtype and layout
  size_t weight_bytes = 0;       // read by every launch of the step (ExecutorOptions::prefetch_ahead)
  const void* bias = nullptr;
  View src, dst;
  std::optional<View> residual;  // conv: a value added to the output (memory plan's fused sum)
  size_t scratch_bytes = 0;      // of the lane's workspace, for a step other than a convolution
};

struct Unit {
  std::vector<ir::NodeId> ops;  // several when merged
  bool elided = false;          // a concat its producers already wrote
  View scratch;                 // gathered input, or a product's second operand
  std::vector<StepPlan> steps;  // conv/pool/act/linear steps (identity and element have none)

  size_t workspace_bytes() const {
    size_t bytes = 0;
    for (const StepPlan& st : steps) bytes = std::max(bytes, st.conv ? st.conv->workspace_bytes() : st.scratch_bytes);
    return bytes;
  }
};

// Where a unit's work is issued: the stream whose handles it uses, and the convolution workspace.
struct Lane {
  int stream = 0;
  void* workspace = nullptr;
};

inline cublasComputeType_t cublas_compute(const ExecConfig& c) {
  if (c.dtype != DataType::kF32) return CUBLAS_COMPUTE_32F;
  return c.math == MathMode::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC;
}

}  // namespace executor_detail

using namespace executor_detail;

struct Executor::Impl {
  const ir::Graph* g = nullptr;
  ExecutorOptions opt;
  ExecConfig cfg;
  sched::ExecutionPlan plan;
  sched::MemoryPlan memory;
  std::shared_ptr<Context> ctx;
  std::vector<size_t> stream_workspace;  // per stream: the largest convolution workspace it runs
  std::vector<void*> workspaces;         // per stream, or in dataflow graphs per lane
  sched::DataflowGraph dataflow;         // dataflow CUDA graphs: exact edges and lanes
  Event lane_join;                       // dataflow capture: the lanes' streams fork from and join the origin
  Event io_fork, io_join;                // enqueue without a CUDA graph: the caller's stream and stream 0
  std::vector<Event> events;
  std::shared_ptr<DeviceStore> store;         // the options' store, else one of this executor's own
  std::shared_ptr<DeviceStore> weight_store;  // the options' weight store, else `store`
  void* arena = nullptr;
  DeviceMemory chaos_cycles;  // chaos mode: one delay (clock cycles) per plan step
  size_t weight_total = 0;
  std::vector<View> views;  // per node
  std::vector<Unit> units;  // per launch step, in plan order
  std::vector<int> unit_of_step;
  CudaGraph graph;
  CudaGraphExec graph_exec;
  sched::BuildTimes build_times;

  cudaStream_t stream(int i) const { return ctx->stream(i); }
  size_t eb() const { return cfg.element_bytes(); }
  bool nhwc() const { return cfg.layout == Layout::kNHWC; }

  SliceLayout layout_of(const View& v) const { return slice_layout(cfg.layout, v.channels, v.begin, v.h, v.w); }
  void* data(const View& v) const { return v.base + layout_of(v).offset * int64_t(eb()); }
  DevTensor dev(const View& v) const {
    const SliceLayout l = layout_of(v);
    return DevTensor{data(v), l.n, l.c, l.w};
  }
  Extent extent(int channels, const ir::Shape& s) const { return Extent{cfg.batch, channels, s.h * s.w, nhwc()}; }

  View buffer_view(int buffer, int channels, int begin, const ir::Shape& s) const {
    char* base = static_cast<char*>(arena) + memory.buffer_offset[size_t(buffer)];
    return View{base, channels, begin, s.h, s.w};
  }

  size_t tensor_bytes(int n, int c, int h, int w) const { return size_t(n) * c * h * w * eb(); }

  // Converts a float NCHW tensor (n x c x h x w), made by `host`, to the run's storage and uploads it;
  // with a store, once per `key` (the op and step it belongs to): `host` is not called on a hit.
  Expected<const void*> upload(const std::string& key, const std::function<const std::vector<float>&()>& host, int n,
                               int c, int h, int w);

  // The arena of the memory plan, zeroed.
  Status make_arena();

  // Sums each term's values and writes the terms side by side into `dst`; with `accumulate` the
  // result is added to what dst holds.
  Status gather_terms(const ir::Inputs& terms, const View& dst, const ir::Shape& shape, cudaStream_t s,
                      bool accumulate) const;

  // The single value an op reads in place, as a view of its producer's buffer.
  View input_view(const ir::Node& n) const {
    const ir::Value& v = n.inputs[0][0];
    return views[size_t(v.node)].at_channel(v.begin);
  }

  Status run_linear(const StepPlan& st, const ir::LinearAttrs& l, int stream_index);

  Status run_step(const StepPlan& st, const Lane& lane);

  Status run_element(const Unit& u, const ir::Node& n, const ir::ElementAttrs& e, cudaStream_t s) const;

  Status run_unit(const Unit& u, const Lane& lane);

  // ExecutorOptions::prefetch_ahead, while capturing: per stage, the weights its launches read and the
  // capture dependencies of its first launch (the stage's start). Per stage, not per launch: a node per
  // launch made Inception V3's staged graph 18 % slower on the H100 (the extra launches held up the
  // concurrent branches), one per stage 8 % faster.
  struct StageWeights {
    std::vector<cudaGraphNode_t> start;
    std::vector<std::pair<const void*, size_t>> weights;
  };
  std::map<int, StageWeights> stage_weights;
  bool capturing = false;
  int prefetch_nodes = 0;
  std::vector<cudaGraphNode_t> lead;  // the lead kernel's node while capturing (ExecutorOptions::lead_kernel)
  int programmatic_edges = 0;         // captured as programmatic, made full dependencies

  Status note_weights(size_t step, const Unit& u, cudaStream_t s);

  // A node per stage with weights, after the start of the stage prefetch_ahead before it (or the last
  // one before that which launches anything; the graph's start for the first stages): it runs beside it.
  Status add_prefetch_nodes(cudaGraph_t cg);

  Status run_launch(size_t step, const Lane& lane);

  Status issue_plan();

  Status make_context();

  Status make_streams_and_events();

  Status place_activations();

  Status build_units(const ir::Weights& w);

  // A convolution build_conv placed: its kernel is asked for once every unit is built, all at once
  // (Context::conv_kernels builds the missing ones under one hold of the timing stream).
  struct ConvStep {
    size_t unit = 0, step = 0;
    int stream_index = 0;
  };
  std::vector<ConvStep> conv_steps;
  std::vector<Context::ConvRequest> conv_requests;
  bool specs_only = false;  // Executor::conv_specs: stop once every convolution is placed

  Status resolve_convs();

  Status make_workspaces();

  Status build(const ir::Weights& w);

  // Dataflow plans replayed as CUDA graphs keep only the dependency edges (without a graph, the plan's
  // streams and events run it eagerly).
  bool dataflow_graph_mode() const { return plan.mode == sched::ExecMode::kDataflow && opt.use_graph; }

  // The exact edges, and a lane per launch (a stream with handles and a workspace of its own, shared with
  // the executors of the same context): launches that may overlap never share one.
  Status plan_dataflow();

  static Status set_capture_dependencies(cudaStream_t s, std::vector<cudaGraphNode_t> nodes);

  static Expected<std::vector<cudaGraphNode_t>> capture_tail(cudaStream_t s);

  // Each launch is captured on its lane's stream, whose dependency set first becomes the last nodes of
  // the launches it depends on: the graph has exactly the dataflow edges whatever the streams.
  Status issue_dataflow();

  // ExecutorOptions::lead_kernel: the graph's first node. Staged plans follow it on stream 0, from which
  // every other stream forks; a dataflow graph's roots are made its successors (issue_dataflow).
  Status issue_lead();

  // Issues the plan into a CUDA graph and instantiates it; `lap` splits the two in build_times.
  Status capture(Lap& lap);

  // The sub-operators a launch runs, with their output shapes.
  void unit_steps(const Unit& u, const View& out, std::vector<ir::SubOp>& ops, std::vector<ir::Shape>& shapes) const;

  // Names a launch's parameters in a store: its ops and the step.
  static std::string weight_key(const Unit& u, int step) {
    std::string key = "op";
    for (ir::NodeId id : u.ops) key += std::to_string(id) + "+";
    return key + "s" + std::to_string(step);
  }

  // The input is flattened in storage order (CHW, or HWC for NHWC): the weight follows it.
  Status build_linear(StepPlan& st, const ir::LinearAttrs& l, const Unit& u, int step, const ir::Weights& w);

  // A step's weight and bias as vectors of `weights` and `biases` values (no bias where 0): per-channel
  // scales and shifts (norms, prelu's slopes), a channel convolution's taps and its one bias.
  Status build_vector_params(StepPlan& st, const Unit& u, int step, const ir::Weights& w, int weights, int biases);

  Status build_conv(StepPlan& st, const ir::ConvAttrs& attrs, const Unit& u, int step, int stream_index,
                    const ir::Weights& w);

  Status build_unit(Unit& u, const sched::LaunchMemory& lm, int stream_index, const ir::Weights& w);

  // IOS's packing: each kernel centred in the merged kernel, output-channel blocks in op order.
  void pack_merged(const std::vector<ir::NodeId>& ops, const ir::Weights& w, const ir::ConvAttrs& m, int cin,
                   std::vector<float>& weight, std::vector<float>& bias) const;

  Status run_once();
};

}  // namespace ios::rt
