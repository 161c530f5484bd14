#include "runtime/executor.h"

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
#include "runtime/kernels.h"
#include "scheduler/dataflow.h"
#include "scheduler/merge.h"

namespace ios::rt {

namespace {

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
};

struct Unit {
  std::vector<ir::NodeId> ops;  // several when merged
  bool elided = false;          // a concat its producers already wrote
  View scratch;                 // gathered input, or a product's second operand
  std::vector<StepPlan> steps;  // conv/pool/act/linear steps (identity and element have none)

  size_t workspace_bytes() const {
    size_t bytes = 0;
    for (const StepPlan& st : steps)
      if (st.conv) bytes = std::max(bytes, st.conv->workspace_bytes());
    return bytes;
  }
};

// Where a unit's work is issued: the stream whose handles it uses, and the convolution workspace.
struct Lane {
  int stream = 0;
  void* workspace = nullptr;
};

cudaDataType_t cuda_type(DataType t) {
  switch (t) {
    case DataType::kF32:
      return CUDA_R_32F;
    case DataType::kF16:
      return CUDA_R_16F;
    case DataType::kBF16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

cublasComputeType_t cublas_compute(const ExecConfig& c) {
  if (c.dtype != DataType::kF32) return CUBLAS_COMPUTE_32F;
  return c.math == MathMode::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC;
}

}  // namespace

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
  std::shared_ptr<DeviceStore> store;  // the options' store, else one of this executor's own
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
                               int c, int h, int w) {
    weight_total += tensor_bytes(n, c, h, w);
    auto pack = [&]() -> Expected<std::vector<uint8_t>> {
      const std::vector<float>& values = host();
      RETURN_ERROR_IF(values.size() != size_t(n) * c * h * w, ErrorCode::kInvalidArgument, "weight of the wrong size");
      return pack_tensor(values.data(), n, c, h, w, cfg.dtype, cfg.layout);
    };
    const auto start = std::chrono::steady_clock::now();
    auto tensor = store->tensor(cfg.precision() + "/" + layout_name(cfg.layout) + "/" + key, pack);
    build_times.weights += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return tensor;
  }

  // The arena of the memory plan, zeroed.
  Status make_arena() {
    const size_t bytes = std::max<size_t>(memory.arena_bytes, 256);
    ASSIGN_OR_RETURN(arena, store->arena(bytes));
    if (opt.zero_arena) CHECK_CUDA(cudaMemsetAsync(arena, 0, bytes, stream(0)));
    return Status::ok();
  }

  // Sums each term's values and writes the terms side by side into `dst`; with `accumulate` the
  // result is added to what dst holds.
  Status gather_terms(const ir::Inputs& terms, const View& dst, const ir::Shape& shape, cudaStream_t s,
                      bool accumulate) const {
    int offset = 0;
    for (const ir::Term& term : terms) {
      const int count = term[0].channels();
      // A value placed at the term's destination was written there by its producer (memory plan),
      // the whole term: alone, or with the term's other value added (a fused sum).
      const bool written = std::any_of(term.begin(), term.end(), [&](const ir::Value& v) {
        const View& at = views[size_t(v.node)];
        return at.base == dst.base && at.begin + v.begin == dst.begin + offset;
      });
      if (written && !accumulate) {
        offset += count;
        continue;
      }
      for (size_t first = 0; first < term.size(); first += kMaxGatherSources) {
        DevTensor sources[kMaxGatherSources];
        const int k = static_cast<int>(std::min(term.size() - first, size_t(kMaxGatherSources)));
        for (int i = 0; i < k; ++i) {
          const ir::Value& v = term[first + size_t(i)];
          sources[i] = dev(views[size_t(v.node)].at_channel(v.begin));
        }
        launch_gather(cfg.dtype, sources, k, dev(dst.at_channel(offset)), extent(count, shape), accumulate || first > 0,
                      s);
      }
      offset += count;
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  // The single value an op reads in place, as a view of its producer's buffer.
  View input_view(const ir::Node& n) const {
    const ir::Value& v = n.inputs[0][0];
    return views[size_t(v.node)].at_channel(v.begin);
  }

  Status run_linear(const StepPlan& st, const ir::LinearAttrs& l, int stream_index) {
    // One cuBLAS handle per stream (its workspace is the handle's): dataflow launches that may overlap run
    // on different lanes.
    const float one = 1.f, zero = 0.f;
    const int in = static_cast<int>(st.in.numel());
    const cudaDataType_t t = cuda_type(cfg.dtype);
    CHECK_CUBLAS(cublasGemmEx(ctx->cublas(stream_index), CUBLAS_OP_T, CUBLAS_OP_N, l.out_features, cfg.batch, in, &one,
                              st.weight, t, in, data(st.src), t, in, &zero, data(st.dst), t, l.out_features,
                              cublas_compute(cfg), CUBLAS_GEMM_DEFAULT));
    const DevTensor y{data(st.dst), l.out_features, 1, 1};
    launch_bias_act(cfg.dtype, y, l.has_bias ? st.bias : nullptr, Extent{cfg.batch, l.out_features, 1, false},
                    act_code(l.activation), stream(stream_index));
    return Status::ok();
  }

  Status run_step(const StepPlan& st, const Lane& lane) {
    const int stream_index = lane.stream;
    cudaStream_t s = stream(stream_index);
    if (st.conv) {
      const ConvBuffers b{data(st.src), st.weight, st.bias, data(st.dst), st.residual ? data(*st.residual) : nullptr};
      return st.conv->run(ctx->cudnn(stream_index), b, lane.workspace);
    }
    const Status launched =
        std::visit(Overloaded{[&](const ir::PoolAttrs& a) -> Status {
                                const bool is_max = a.kind == ir::PoolKind::kMax || a.kind == ir::PoolKind::kGlobalMax;
                                PoolParams pp{a.kh, a.kw, a.sh, a.sw, a.ph, a.pw, is_max, a.count_include_pad};
                                if (a.is_global()) pp = PoolParams{st.in.h, st.in.w, 1, 1, 0, 0, is_max, true};
                                launch_pool(cfg.dtype, dev(st.src), dev(st.dst), extent(st.in.c, st.out),
                                            PoolShape{st.in.h, st.in.w, st.out.h, st.out.w}, pp, s);
                                return Status::ok();
                              },
                              [&](const ir::ActivationAttrs& a) -> Status {
                                if (data(st.dst) != data(st.src)) {
                                  const DevTensor src = dev(st.src);
                                  launch_gather(cfg.dtype, &src, 1, dev(st.dst), extent(st.in.c, st.in), false, s);
                                }
                                launch_bias_act(cfg.dtype, dev(st.dst), nullptr, extent(st.out.c, st.out),
                                                act_code(a.activation), s);
                                return Status::ok();
                              },
                              [&](const ir::LinearAttrs& a) { return run_linear(st, a, stream_index); },
                              [&](const ir::ResizeAttrs& a) -> Status {
                                const ResizeArgs r{a.mode,
                                                   a.coord,
                                                   a.round,
                                                   st.in.h,
                                                   st.in.w,
                                                   st.out.h,
                                                   st.out.w,
                                                   ir::resize_inv_scale(a.scale_h, st.in.h, st.out.h),
                                                   ir::resize_inv_scale(a.scale_w, st.in.w, st.out.w)};
                                launch_resize(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), r, s);
                                return Status::ok();
                              },
                              [&](const ir::ChannelShuffleAttrs& a) -> Status {
                                launch_channel_shuffle(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out),
                                                       a.groups, s);
                                return Status::ok();
                              },
                              [&](const ir::ChannelNormAttrs& a) -> Status {
                                launch_channel_norm(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out),
                                                    st.weight, st.bias, a.eps, s);
                                return Status::ok();
                              },
                              [&](const ir::PadAttrs& a) -> Status {
                                const PadArgs pa{a.mode, a.top, a.left, st.in.h, st.in.w, st.out.w, a.value};
                                launch_pad(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), pa, s);
                                return Status::ok();
                              },
                              [&](const ir::PReluAttrs&) -> Status {
                                launch_prelu(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight,
                                             s);
                                return Status::ok();
                              },
                              [&](const ir::GroupNormAttrs& a) -> Status {
                                launch_group_norm(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out),
                                                  a.groups, st.weight, st.bias, a.eps, s);
                                return Status::ok();
                              },
                              [&](const ir::ConvAttrs&) -> Status {
                                return error(ErrorCode::kRuntimeError, "convolution step without a built kernel");
                              }},
                   st.op);
    RETURN_IF_ERROR(launched);
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  Status run_element(const Unit& u, const ir::Node& n, const ir::ElementAttrs& e, cudaStream_t s) const {
    const View& out = views[size_t(u.ops[0])];
    for (size_t t = 0; t < n.inputs.size(); ++t) {
      const ir::Inputs term = {n.inputs[t]};
      if (t == 0 || e.op == ir::ElementOp::kAdd) {
        RETURN_IF_ERROR(gather_terms(term, out, n.output_shape, s, t > 0));
      } else {
        // A C x 1 x 1 factor (ir::broadcasts) is gathered as such and read with a zero pixel stride.
        const ir::Shape factor = g->node(n.inputs[t][0].node).output_shape;
        const bool broadcast = ir::broadcasts(ir::Shape{n.output_shape.c, factor.h, factor.w}, n.output_shape);
        const ir::Shape gathered = broadcast ? ir::Shape{n.output_shape.c, 1, 1} : n.output_shape;
        RETURN_IF_ERROR(gather_terms(term, u.scratch, gathered, s, false));
        DevTensor src = dev(u.scratch);
        if (broadcast) src.p_stride = 0;
        launch_multiply(cfg.dtype, dev(out), src, extent(n.output_shape.c, n.output_shape), s);
      }
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  Status run_unit(const Unit& u, const Lane& lane) {
    if (u.elided) return Status::ok();
    cudaStream_t s = stream(lane.stream);
    const ir::Node& n = g->node(u.ops[0]);
    if (n.is<ir::IdentityAttrs>()) return gather_terms(n.inputs, views[size_t(u.ops[0])], n.output_shape, s, false);
    if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) return run_element(u, n, *e, s);
    if (u.scratch.base) RETURN_IF_ERROR(gather_terms(n.inputs, u.scratch, n.input_shape, s, false));
    for (const StepPlan& st : u.steps) RETURN_IF_ERROR(run_step(st, lane));
    return Status::ok();
  }

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

  Status note_weights(size_t step, const Unit& u, cudaStream_t s) {
    const int stage = plan.steps[step].stage;
    if (!capturing || opt.prefetch_ahead <= 0 || stage < 0) return Status::ok();
    auto [it, first] = stage_weights.try_emplace(stage);
    if (first) {
      ASSIGN_OR_RETURN(it->second.start, capture_tail(s));
    }
    for (const StepPlan& st : u.steps)
      if (st.weight_bytes) it->second.weights.emplace_back(st.weight, st.weight_bytes);
    return Status::ok();
  }

  // A node per stage with weights, after the start of the stage prefetch_ahead before it (or the last
  // one before that which launches anything; the graph's start for the first stages): it runs beside it.
  Status add_prefetch_nodes(cudaGraph_t cg) {
    const std::vector<cudaGraphNode_t> none;
    for (const auto& [stage, sw] : stage_weights) {
      auto after = stage_weights.upper_bound(stage - opt.prefetch_ahead);
      const std::vector<cudaGraphNode_t>& deps = after == stage_weights.begin() ? none : std::prev(after)->second.start;
      for (size_t i = 0; i < sw.weights.size(); i += kMaxPrefetchRanges) {
        PrefetchRanges r{};
        for (size_t j = i; j < sw.weights.size() && r.count < kMaxPrefetchRanges; ++j, ++r.count) {
          r.data[r.count] = static_cast<const char*>(sw.weights[j].first);
          r.bytes[r.count] = sw.weights[j].second;
        }
        CHECK_CUDA(add_l2_prefetch_node(cg, deps.data(), deps.size(), r));
        ++prefetch_nodes;
      }
    }
    return Status::ok();
  }

  Status run_launch(size_t step, const Lane& lane) {
    RETURN_IF_ERROR(note_weights(step, units[size_t(unit_of_step[step])], stream(lane.stream)));
    if (opt.observer) opt.observer->begin_step(int(step));
    const Status ran = run_unit(units[size_t(unit_of_step[step])], lane);
    if (opt.observer) opt.observer->end_step();
    return ran;
  }

  Status issue_plan() {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const sched::PlanStep& st = plan.steps[i];
      cudaStream_t s = stream(st.stream);
      if (opt.chaos) launch_delay(static_cast<const long long*>(chaos_cycles.get()) + i, s);
      switch (st.kind) {
        case sched::PlanStep::Kind::kRecord:
          CHECK_CUDA(cudaEventRecord(events[size_t(st.event)], s));
          break;
        case sched::PlanStep::Kind::kWait:
          CHECK_CUDA(cudaStreamWaitEvent(s, events[size_t(st.event)], 0));
          break;
        case sched::PlanStep::Kind::kLaunch:
          RETURN_IF_ERROR(run_launch(i, Lane{st.stream, workspaces[size_t(st.stream)]}));
          break;
      }
    }
    return Status::ok();
  }

  Status make_context() {
    if (opt.context) {
      RETURN_ERROR_IF(!opt.context->matches(cfg), ErrorCode::kInvalidArgument,
                      "the shared context was made for another data type or math mode than " + cfg.precision());
      ctx = opt.context;
      return Status::ok();
    }
    ContextOptions co = opt.context_options;
    co.dtype = cfg.dtype;
    co.math = cfg.math;
    ASSIGN_OR_RETURN(ctx, Context::create(co));
    return Status::ok();
  }

  Status make_streams_and_events() {
    RETURN_IF_ERROR(make_context());
    RETURN_IF_ERROR(ctx->ensure_streams(plan.streams));
    stream_workspace.assign(size_t(plan.streams), 0);
    for (int i = 0; i < plan.events; ++i) {
      ASSIGN_OR_RETURN(Event e, make_event());
      events.push_back(std::move(e));
    }
    return Status::ok();
  }

  Status place_activations() {
    sched::MemoryOptions mo;
    mo.config = cfg;
    mo.reuse = opt.reuse_memory;
    mo.keep_all = opt.keep_all;
    mo.fuse_sums = opt.fuse_sums;
    mo.share_concats = opt.share_concats;
    ASSIGN_OR_RETURN(memory, sched::plan_memory(*g, plan, mo));
    RETURN_IF_ERROR(make_arena());
    views.assign(g->nodes.size(), View{});
    for (size_t id = 0; id < g->nodes.size(); ++id) {
      const sched::Placement& p = memory.placement[id];
      if (p.placed()) views[id] = buffer_view(p.buffer, p.channels, p.begin, g->nodes[id].output_shape);
    }
    return Status::ok();
  }

  Status build_units(const ir::Weights& w) {
    unit_of_step.assign(plan.steps.size(), -1);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const auto& st = plan.steps[i];
      if (st.kind != sched::PlanStep::Kind::kLaunch) continue;
      unit_of_step[i] = static_cast<int>(units.size());
      Unit u;
      u.ops = st.ops;
      RETURN_IF_ERROR(build_unit(u, memory.launch[i], st.stream, w));
      units.push_back(std::move(u));
    }
    if (specs_only) return Status::ok();
    RETURN_IF_ERROR(resolve_convs());
    if (opt.chaos) {
      const size_t bytes = std::max<size_t>(plan.steps.size(), 1) * sizeof(long long);
      ASSIGN_OR_RETURN(chaos_cycles, device_alloc(bytes));
      CHECK_CUDA(cudaMemsetAsync(chaos_cycles.get(), 0, bytes, stream(0)));
    }
    return Status::ok();
  }

  // A convolution build_conv placed: its kernel is asked for once every unit is built, all at once
  // (Context::conv_kernels builds the missing ones under one hold of the timing lane).
  struct ConvStep {
    size_t unit = 0, step = 0;
    int stream_index = 0;
  };
  std::vector<ConvStep> conv_steps;
  std::vector<Context::ConvRequest> conv_requests;
  bool specs_only = false;  // Executor::conv_specs: stop once every convolution is placed

  Status resolve_convs() {
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<ConvKernel>> kernels, ctx->conv_kernels(conv_requests));
    for (size_t i = 0; i < conv_steps.size(); ++i) {
      const ConvStep& c = conv_steps[i];
      StepPlan& st = units[c.unit].steps[c.step];
      st.conv = std::move(kernels[i]);
      stream_workspace[size_t(c.stream_index)] =
          std::max(stream_workspace[size_t(c.stream_index)], st.conv->workspace_bytes());
    }
    return Status::ok();
  }

  Status make_workspaces() {
    if (dataflow_graph_mode()) return plan_dataflow();
    for (int i = 0; i < plan.streams; ++i) {
      ASSIGN_OR_RETURN(void* ws, ctx->workspace(i, std::max<size_t>(stream_workspace[size_t(i)], 256)));
      workspaces.push_back(ws);
    }
    return Status::ok();
  }

  Status build(const ir::Weights& w) {
    Lap lap;
    RETURN_IF_ERROR(make_streams_and_events());
    build_times.setup = lap.next();
    RETURN_IF_ERROR(place_activations());
    build_times.memory = lap.next();
    RETURN_IF_ERROR(build_units(w));
    if (specs_only) return Status::ok();
    build_times.kernels = lap.next() - build_times.weights;
    RETURN_IF_ERROR(make_workspaces());
    if (opt.use_graph) return capture(lap);
    build_times.capture = lap.next();  // workspaces only: the plan is issued at each run
    return Status::ok();
  }

  // Dataflow plans replayed as CUDA graphs keep only the dependency edges (without a graph, the plan's
  // streams and events run it eagerly).
  bool dataflow_graph_mode() const { return plan.mode == sched::ExecMode::kDataflow && opt.use_graph; }

  // The exact edges, and a lane per launch (a stream with handles and a workspace of its own, shared with
  // the executors of the same context): launches that may overlap never share one.
  Status plan_dataflow() {
    std::vector<sched::LaunchResources> resources(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (unit_of_step[i] >= 0) {
        const Unit& u = units[size_t(unit_of_step[i])];
        resources[i] = sched::LaunchResources{u.elided ? 0 : u.workspace_bytes(), u.elided};
      }
    ASSIGN_OR_RETURN(dataflow, sched::dataflow_graph(*g, plan, memory, resources));
    RETURN_IF_ERROR(ctx->ensure_streams(int(dataflow.lane_bytes.size())));
    for (size_t lane = 0; lane < dataflow.lane_bytes.size(); ++lane) {
      ASSIGN_OR_RETURN(void* ws, ctx->workspace(int(lane), std::max<size_t>(dataflow.lane_bytes[lane], 256)));
      workspaces.push_back(ws);
    }
    ASSIGN_OR_RETURN(lane_join, make_event());
    return Status::ok();
  }

  static Status set_capture_dependencies(cudaStream_t s, std::vector<cudaGraphNode_t> nodes) {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    CHECK_CUDA(
        cudaStreamUpdateCaptureDependencies(s, nodes.data(), nullptr, nodes.size(), cudaStreamSetCaptureDependencies));
    return Status::ok();
  }

  static Expected<std::vector<cudaGraphNode_t>> capture_tail(cudaStream_t s) {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* last = nullptr;
    size_t count = 0;
    CHECK_CUDA(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &last, nullptr, &count));
    return std::vector<cudaGraphNode_t>(last, last + count);
  }

  // Each launch is captured on its lane's stream, whose dependency set first becomes the last nodes of
  // the launches it depends on: the graph has exactly the dataflow edges whatever the streams.
  Status issue_dataflow() {
    cudaStream_t origin = stream(0);
    const int lanes = int(dataflow.lane_bytes.size());
    CHECK_CUDA(cudaEventRecord(lane_join.get(), origin));  // the lanes' streams join the capture
    for (int lane = 1; lane < lanes; ++lane) CHECK_CUDA(cudaStreamWaitEvent(stream(lane), lane_join.get()));
    std::vector<std::vector<cudaGraphNode_t>> tail(plan.steps.size());
    std::vector<bool> awaited(plan.steps.size(), false);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (plan.steps[i].kind != sched::PlanStep::Kind::kLaunch) continue;
      std::vector<cudaGraphNode_t> deps;
      for (int d : dataflow.deps[i]) {
        deps.insert(deps.end(), tail[size_t(d)].begin(), tail[size_t(d)].end());
        awaited[size_t(d)] = true;
      }
      const int lane = std::max(dataflow.lane[i], 0);  // a launch without work adds no node
      cudaStream_t s = stream(lane);
      if (deps.empty()) deps = lead;  // a root of the plan follows the lead kernel, if any
      RETURN_IF_ERROR(set_capture_dependencies(s, std::move(deps)));
      if (opt.chaos) launch_delay(static_cast<const long long*>(chaos_cycles.get()) + i, s);
      RETURN_IF_ERROR(run_launch(i, Lane{lane, dataflow.lane[i] >= 0 ? workspaces[size_t(lane)] : nullptr}));
      ASSIGN_OR_RETURN(tail[i], capture_tail(s));
    }
    for (int lane = 1; lane < lanes; ++lane) {  // every lane rejoins the origin, as the capture requires
      CHECK_CUDA(cudaEventRecord(lane_join.get(), stream(lane)));
      CHECK_CUDA(cudaStreamWaitEvent(origin, lane_join.get()));
    }
    // The capture ends on every launch nothing else waits for.
    std::vector<cudaGraphNode_t> ends;
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (!awaited[i]) ends.insert(ends.end(), tail[i].begin(), tail[i].end());
    return set_capture_dependencies(origin, std::move(ends));
  }

  // ExecutorOptions::lead_kernel: the graph's first node. Staged plans follow it on stream 0, from which
  // every other stream forks; a dataflow graph's roots are made its successors (issue_dataflow).
  Status issue_lead() {
    lead.clear();
    if (!opt.lead_kernel) return Status::ok();
    launch_empty(stream(0));
    CHECK_CUDA(cudaGetLastError());
    ASSIGN_OR_RETURN(lead, capture_tail(stream(0)));
    return Status::ok();
  }

  // Issues the plan into a CUDA graph and instantiates it; `lap` splits the two in build_times.
  Status capture(Lap& lap) {
    cudaGraph_t cg = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream(0), cudaStreamCaptureModeThreadLocal));
    capturing = true;
    Status issued = issue_lead();
    if (issued.is_ok()) issued = dataflow_graph_mode() ? issue_dataflow() : issue_plan();
    capturing = false;
    const cudaError_t end = cudaStreamEndCapture(stream(0), &cg);
    graph = CudaGraph(cg);  // owned before any early return
    RETURN_IF_ERROR(issued);
    CHECK_CUDA(end);
    ASSIGN_OR_RETURN(programmatic_edges, make_edges_full(cg));
    RETURN_IF_ERROR(add_prefetch_nodes(cg));
    build_times.capture = lap.next();
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&exec, cg, 0));
    graph_exec = CudaGraphExec(exec);
    build_times.instantiate = lap.next();
    return Status::ok();
  }

  // The sub-operators a launch runs, with their output shapes.
  void unit_steps(const Unit& u, const View& out, std::vector<ir::SubOp>& ops, std::vector<ir::Shape>& shapes) const {
    const ir::Node& n = g->node(u.ops[0]);
    if (u.ops.size() > 1) {
      ops = {sched::merged_conv(*g, u.ops)};
      ir::Shape s = n.output_shape;
      s.c = std::get<ir::ConvAttrs>(ops[0]).out_channels;  // its slice of `out` (a concatenation's, or its own)
      shapes = {s};
    } else if (const std::optional<ir::SubOp> step = ir::as_step(n.op)) {
      ops = {*step};
      shapes = {n.output_shape};
    } else {
      ops = n.attrs<ir::SequentialAttrs>().steps;
      shapes = n.step_shapes;
    }
  }

  // Names a launch's parameters in a store: its ops and the step.
  static std::string weight_key(const Unit& u, int step) {
    std::string key = "op";
    for (ir::NodeId id : u.ops) key += std::to_string(id) + "+";
    return key + "s" + std::to_string(step);
  }

  // The input is flattened in storage order (CHW, or HWC for NHWC): the weight follows it.
  Status build_linear(StepPlan& st, const ir::LinearAttrs& l, const Unit& u, int step, const ir::Weights& w) {
    const ir::ParamTensor& p = w.at(u.ops[0], step);
    const std::string key = weight_key(u, step);
    ASSIGN_OR_RETURN(st.weight, upload(
                                    key + ".w", [&]() -> const auto& { return p.weight; }, l.out_features, st.in.c,
                                    st.in.h, st.in.w));
    st.weight_bytes = tensor_bytes(l.out_features, st.in.c, st.in.h, st.in.w);
    if (l.has_bias) {
      ASSIGN_OR_RETURN(st.bias, upload(
                                    key + ".b", [&]() -> const auto& { return p.bias; }, 1, l.out_features, 1, 1));
    }
    return Status::ok();
  }

  // A per-channel scale and shift (channel norm): the step's weight and bias, C values each.
  // A step's per-channel weight and, where it has one, bias (C values each).
  Status build_channel_params(StepPlan& st, const Unit& u, int step, const ir::Weights& w, bool with_bias = true) {
    const ir::ParamTensor& p = w.at(u.ops[0], step);
    const std::string key = weight_key(u, step);
    ASSIGN_OR_RETURN(st.weight, upload(
                                    key + ".w", [&]() -> const auto& { return p.weight; }, 1, st.in.c, 1, 1));
    st.weight_bytes = tensor_bytes(1, st.in.c, 1, 1);
    if (!with_bias) return Status::ok();
    ASSIGN_OR_RETURN(st.bias, upload(
                                  key + ".b", [&]() -> const auto& { return p.bias; }, 1, st.in.c, 1, 1));
    st.weight_bytes *= 2;
    return Status::ok();
  }

  Status build_conv(StepPlan& st, const ir::ConvAttrs& attrs, const Unit& u, int step, int stream_index,
                    const ir::Weights& w) {
    // A merged convolution's weights are packed only when the store does not hold them yet.
    const bool merged = u.ops.size() > 1;
    std::vector<float> merged_weight, merged_bias;
    auto pack_if_merged = [&] {
      if (merged && merged_weight.empty()) pack_merged(u.ops, w, attrs, st.in.c, merged_weight, merged_bias);
    };
    auto weight = [&]() -> const std::vector<float>& {
      pack_if_merged();
      return merged ? merged_weight : w.at(u.ops[0], step).weight;
    };
    auto bias = [&]() -> const std::vector<float>& {
      pack_if_merged();
      return merged ? merged_bias : w.at(u.ops[0], step).bias;
    };
    const int cpg = st.in.c / attrs.groups;
    const std::string key = weight_key(u, step);
    ASSIGN_OR_RETURN(st.weight, upload(key + ".w", weight, attrs.out_channels, cpg, attrs.kh, attrs.kw));
    st.weight_bytes = tensor_bytes(attrs.out_channels, cpg, attrs.kh, attrs.kw);
    if (attrs.has_bias) {
      ASSIGN_OR_RETURN(st.bias, upload(key + ".b", bias, 1, attrs.out_channels, 1, 1));
    }
    ConvSpec spec;
    spec.config = cfg;
    spec.attrs = attrs;
    spec.in = st.in;
    spec.out = st.out;
    spec.x = layout_of(st.src);
    spec.y = layout_of(st.dst);
    spec.x_align = pointer_alignment(data(st.src));
    spec.y_align = pointer_alignment(data(st.dst));
    if (st.residual) {
      spec.z = layout_of(*st.residual);
      spec.z_align = pointer_alignment(data(*st.residual));
    }
    const ConvBuffers b{data(st.src), st.weight, st.bias, data(st.dst), st.residual ? data(*st.residual) : nullptr};
    conv_steps.push_back(ConvStep{units.size(), size_t(step), stream_index});
    conv_requests.push_back(Context::ConvRequest{spec, b});
    return Status::ok();
  }

  Status build_unit(Unit& u, const sched::LaunchMemory& lm, int stream_index, const ir::Weights& w) {
    const ir::Node& n = g->node(u.ops[0]);
    const View out = views[size_t(u.ops[0])];
    u.elided = lm.elided;
    if (lm.input_scratch >= 0) {
      const ir::Shape& s = n.is<ir::ElementAttrs>() ? n.output_shape : n.input_shape;
      u.scratch = buffer_view(lm.input_scratch, s.c, 0, s);
    }
    if (n.is<ir::IdentityAttrs>() || n.is<ir::ElementAttrs>()) return Status::ok();
    View src = u.scratch.base ? u.scratch : input_view(n);
    std::vector<ir::SubOp> ops;
    std::vector<ir::Shape> shapes;
    unit_steps(u, out, ops, shapes);
    ir::Shape in = n.input_shape;
    for (size_t i = 0; i < ops.size(); ++i) {
      StepPlan st;
      st.op = ops[i];
      st.in = in;
      st.out = shapes[i];
      st.src = src;
      st.dst = i + 1 == ops.size() ? out : buffer_view(lm.step_buffers[i], st.out.c, 0, st.out);
      if (i + 1 == ops.size() && lm.residual.node != ir::kNoNode)
        st.residual = views[size_t(lm.residual.node)].at_channel(lm.residual.begin);
      RETURN_IF_ERROR(
          std::visit(Overloaded{[&](const ir::ConvAttrs& c) { return build_conv(st, c, u, int(i), stream_index, w); },
                                [&](const ir::LinearAttrs& l) { return build_linear(st, l, u, int(i), w); },
                                [](const ir::PoolAttrs&) { return Status::ok(); },
                                [](const ir::ActivationAttrs&) { return Status::ok(); },
                                [](const ir::ResizeAttrs&) { return Status::ok(); },
                                [](const ir::ChannelShuffleAttrs&) { return Status::ok(); },
                                [&](const ir::ChannelNormAttrs&) { return build_channel_params(st, u, int(i), w); },
                                [](const ir::PadAttrs&) { return Status::ok(); },
                                [&](const ir::GroupNormAttrs&) { return build_channel_params(st, u, int(i), w); },
                                [&](const ir::PReluAttrs&) { return build_channel_params(st, u, int(i), w, false); }},
                     ops[i]));
      src = st.dst;
      in = st.out;
      u.steps.push_back(std::move(st));
    }
    return Status::ok();
  }

  // IOS's packing: each kernel centred in the merged kernel, output-channel blocks in op order.
  void pack_merged(const std::vector<ir::NodeId>& ops, const ir::Weights& w, const ir::ConvAttrs& m, int cin,
                   std::vector<float>& weight, std::vector<float>& bias) const {
    weight.assign(size_t(m.out_channels) * cin * m.kh * m.kw, 0.f);
    bias.clear();
    int co_base = 0;
    for (ir::NodeId id : ops) {
      const auto& c = g->node(id).attrs<ir::ConvAttrs>();
      const auto& p = w.at(id);
      const int dy = (m.kh - c.kh) / 2, dx = (m.kw - c.kw) / 2;
      for (int co = 0; co < c.out_channels; ++co)
        for (int ci = 0; ci < cin; ++ci)
          for (int y = 0; y < c.kh; ++y)
            for (int x = 0; x < c.kw; ++x)
              weight[((size_t(co_base + co) * cin + ci) * m.kh + y + dy) * m.kw + x + dx] =
                  p.weight[((size_t(co) * cin + ci) * c.kh + y) * c.kw + x];
      bias.insert(bias.end(), p.bias.begin(), p.bias.end());
      co_base += c.out_channels;
    }
  }

  Status run_once() {
    if (graph_exec.get()) {
      CHECK_CUDA(cudaGraphLaunch(graph_exec, stream(0)));
    } else {
      RETURN_IF_ERROR(issue_plan());
    }
    return Status::ok();
  }
};

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

namespace {

Expected<std::unique_ptr<Executor::Impl>> built_impl(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options,
                                                     bool specs_only) {
  RETURN_IF_ERROR(require_gpu());
  RETURN_ERROR_IF(options.config.batch < 1, ErrorCode::kInvalidArgument, "batch must be at least 1");
  RETURN_ERROR_IF(w.per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument,
                  "weights were made for another graph");
  auto impl = std::make_unique<Executor::Impl>();
  impl->g = &g;
  impl->opt = options;
  impl->cfg = options.config;
  impl->plan = plan;
  impl->store = options.store ? options.store : std::make_shared<DeviceStore>();
  impl->specs_only = specs_only;
  RETURN_IF_ERROR(impl->build(w));
  return impl;
}

}  // namespace

Expected<std::unique_ptr<Executor>> Executor::create(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, built_impl(g, w, plan, options, false));
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Expected<std::vector<ConvSpec>> Executor::conv_specs(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, built_impl(g, w, plan, options, true));
  std::vector<ConvSpec> specs;
  for (const Context::ConvRequest& r : impl->conv_requests) specs.push_back(r.spec);
  return specs;
}

Status Executor::set_input(const std::vector<float>& data) {
  const ir::Shape s = impl_->g->input_shape();
  const size_t n = size_t(s.numel()) * size_t(impl_->cfg.batch);
  RETURN_ERROR_IF(data.size() != n, ErrorCode::kInvalidArgument,
                  "input has " + std::to_string(data.size()) + " floats, expected " + std::to_string(n));
  const std::vector<uint8_t> bytes =
      pack_tensor(data.data(), impl_->cfg.batch, s.c, s.h, s.w, impl_->cfg.dtype, impl_->cfg.layout);
  CHECK_CUDA(
      cudaMemcpyAsync(impl_->views[0].base, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::poison_activations() {
  const sched::MemoryPlan& m = impl_->memory;
  const int input = m.placement[size_t(impl_->g->input())].buffer;
  for (size_t b = 0; b < m.buffer_bytes.size(); ++b)
    if (int(b) != input)
      CHECK_CUDA(cudaMemsetAsync(static_cast<char*>(impl_->arena) + m.buffer_offset[b], 0xFF, m.buffer_bytes[b],
                                 impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::perturb(uint64_t seed, double max_us) {
  RETURN_ERROR_IF(!impl_->opt.chaos, ErrorCode::kInvalidArgument, "perturb needs an executor made with chaos on");
  std::vector<long long> cycles(impl_->plan.steps.size(), 0);
  if (seed != 0) {
    std::mt19937_64 rng(seed);
    const double max_cycles = max_us * device_cycles_per_us();
    for (long long& c : cycles)
      if (rng() & 1) c = static_cast<long long>(double(rng() >> 11) * (1.0 / 9007199254740992.0) * max_cycles);
  }
  // The previous run has finished (run() synchronises), so no delay kernel is reading the array.
  CHECK_CUDA(cudaMemcpyAsync(impl_->chaos_cycles.get(), cycles.data(), cycles.size() * sizeof(long long),
                             cudaMemcpyHostToDevice, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  return Status::ok();
}

Status Executor::replay_on(cudaStream_t stream) {
  RETURN_ERROR_IF(!impl_->graph_exec.get(), ErrorCode::kInvalidArgument,
                  "replay_on needs an executor built with a CUDA graph");
  CHECK_CUDA(cudaGraphLaunch(impl_->graph_exec, stream));
  return Status::ok();
}

Status Executor::upload_on(cudaStream_t stream) {
  RETURN_ERROR_IF(!impl_->graph_exec.get(), ErrorCode::kInvalidArgument,
                  "upload_on needs an executor built with a CUDA graph");
  CHECK_CUDA(cudaGraphUpload(impl_->graph_exec, stream));
  return Status::ok();
}

Status Executor::warm_activations_on(cudaStream_t stream) {
  launch_l2_touch(impl_->arena, impl_->memory.arena_bytes, stream);
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

cudaStream_t Executor::main_stream() const { return impl_->stream(0); }

Status Executor::run() {
  RETURN_IF_ERROR(impl_->run_once());
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

Expected<std::vector<float>> Executor::read(ir::NodeId node) const {
  const View& v = impl_->views[size_t(node)];
  RETURN_ERROR_IF(!v.base, ErrorCode::kNotFound, "node '" + impl_->g->node(node).name + "' has no buffer in this plan");
  const ir::Shape& s = impl_->g->node(node).output_shape;
  const int buffer = impl_->memory.placement[size_t(node)].buffer;
  std::vector<uint8_t> bytes(impl_->memory.buffer_bytes[size_t(buffer)]);
  CHECK_CUDA(cudaMemcpyAsync(bytes.data(), v.base, bytes.size(), cudaMemcpyDeviceToHost, impl_->stream(0)));
  CHECK_CUDA(cudaStreamSynchronize(impl_->stream(0)));
  const SliceLayout l = impl_->layout_of(v);
  const DataType t = impl_->cfg.dtype;
  const size_t eb = impl_->eb();
  std::vector<float> out(size_t(s.numel()) * size_t(impl_->cfg.batch));
  size_t i = 0;
  for (int b = 0; b < impl_->cfg.batch; ++b)
    for (int c = 0; c < s.c; ++c)
      for (int y = 0; y < s.h; ++y)
        for (int x = 0; x < s.w; ++x)
          out[i++] = load_element(bytes.data() + size_t(l.offset + b * l.n + c * l.c + y * l.h + x * l.w) * eb, t);
  return out;
}

Expected<std::vector<float>> Executor::output() const { return read(impl_->g->output()); }

// Without a CUDA graph the plan is issued on the context's streams, which fork from and join stream 0:
// events put that between the caller's stream's work before and after.
Status Executor::enqueue(const float* input, float* output, cudaStream_t stream) {
  Impl& m = *impl_;
  const View& in = m.views[size_t(m.g->input())];
  const View& out = m.views[size_t(m.g->output())];
  const ir::Shape in_shape = m.g->input_shape(), out_shape = m.g->output_shape();
  launch_from_float(m.cfg.dtype, input, m.dev(in), Extent{m.cfg.batch, in_shape.c, in_shape.h * in_shape.w, false},
                    stream);
  CHECK_CUDA(cudaGetLastError());
  if (m.graph_exec.get()) {
    CHECK_CUDA(cudaGraphLaunch(m.graph_exec, stream));
  } else {
    if (!m.io_fork.get()) {
      ASSIGN_OR_RETURN(m.io_fork, make_event(false));
      ASSIGN_OR_RETURN(m.io_join, make_event(false));
    }
    CHECK_CUDA(cudaEventRecord(m.io_fork, stream));
    CHECK_CUDA(cudaStreamWaitEvent(m.stream(0), m.io_fork, 0));
    RETURN_IF_ERROR(m.issue_plan());
    CHECK_CUDA(cudaEventRecord(m.io_join, m.stream(0)));
    CHECK_CUDA(cudaStreamWaitEvent(stream, m.io_join, 0));
  }
  launch_to_float(m.cfg.dtype, m.dev(out), output,
                  Extent{m.cfg.batch, out_shape.c, out_shape.h * out_shape.w, false}, stream);
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

Expected<Timing> Executor::time(const TimingOptions& o) {
  RETURN_ERROR_IF(o.iterations < 1, ErrorCode::kInvalidArgument, "--iters must be at least 1");
  RETURN_ERROR_IF(o.replays_per_sample < 1, ErrorCode::kInvalidArgument, "replays per sample must be at least 1");
  Timing r;
  const auto warmup_start = std::chrono::steady_clock::now();
  auto elapsed_ms = [](std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  };
  while (r.warmup_runs < o.warmup_runs || elapsed_ms(warmup_start) < o.warmup_ms) {
    RETURN_IF_ERROR(run());
    ++r.warmup_runs;
  }
  ASSIGN_OR_RETURN(Event start, make_event(true));
  ASSIGN_OR_RETURN(Event stop, make_event(true));
  const auto timed_start = std::chrono::steady_clock::now();
  while (int(r.samples_ms.size()) < o.iterations || elapsed_ms(timed_start) < 1000 * o.min_seconds) {
    CHECK_CUDA(cudaEventRecord(start, impl_->stream(0)));
    for (int i = 0; i < o.replays_per_sample; ++i) RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->stream(0)));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    r.samples_ms.push_back(t / o.replays_per_sample);
  }
  std::vector<double> sorted = r.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  r.iterations = int(sorted.size());
  r.median_ms = sorted[sorted.size() / 2];
  r.min_ms = sorted.front();
  r.p90_ms = sorted[std::min(sorted.size() - 1, sorted.size() * 9 / 10)];
  for (double t : sorted) r.mean_ms += t / double(sorted.size());
  return r;
}

const Context& Executor::context() const { return *impl_->ctx; }
size_t Executor::activation_bytes() const { return impl_->memory.arena_bytes; }
size_t Executor::activation_bytes_no_reuse() const { return impl_->memory.no_reuse_bytes; }
size_t Executor::workspace_bytes() const {
  size_t total = 0;
  for (size_t b : impl_->dataflow_graph_mode() ? impl_->dataflow.lane_bytes : impl_->stream_workspace) total += b;
  return total;
}
Status Executor::write_graph_dot(const std::string& path) const {
  RETURN_ERROR_IF(!impl_->graph.get(), ErrorCode::kInvalidArgument,
                  "--graph-dot: the executor has no CUDA graph (built with --no-graph)");
  const cudaError_t written = cudaGraphDebugDotPrint(impl_->graph.get(), path.c_str(), cudaGraphDebugDotFlagsVerbose);
  RETURN_ERROR_IF(written != cudaSuccess, ErrorCode::kIoError,
                  "--graph-dot: cannot write '" + path + "': " + cudaGetErrorString(written));
  return Status::ok();
}

int Executor::graph_edges() const { return impl_->dataflow_graph_mode() ? impl_->dataflow.edges() : -1; }

int Executor::prefetch_nodes() const { return impl_->prefetch_nodes; }

int Executor::programmatic_edges() const { return impl_->programmatic_edges; }

int Executor::graph_nodes() const {
  size_t n = 0;
  if (!impl_->graph.get() || cudaGraphGetNodes(impl_->graph.get(), nullptr, &n) != cudaSuccess) return -1;
  return int(n);
}
size_t Executor::weight_bytes() const { return impl_->weight_total; }
const sched::MemoryPlan& Executor::memory_plan() const { return impl_->memory; }
const ExecConfig& Executor::config() const { return impl_->cfg; }

const sched::BuildTimes& Executor::build_times() const { return impl_->build_times; }

std::map<std::string, KernelChoice> Executor::kernel_choices() const {
  std::map<std::string, KernelChoice> out;
  for (size_t i = 0; i < impl_->conv_steps.size(); ++i) {
    const Impl::ConvStep& c = impl_->conv_steps[i];
    const KernelChoice& k = impl_->units[c.unit].steps[c.step].conv->choice();
    if (k.backend == kElementwiseBackend) continue;  // our kernel: nothing tuned
    out[kernel_cache_key(impl_->conv_requests[i].spec, impl_->ctx->options().conv_engine)] = k;
  }
  return out;
}

KernelReport Executor::kernel_report() const {
  KernelReport r;
  for (const Unit& u : impl_->units)
    for (const StepPlan& st : u.steps) {
      if (!st.conv) continue;
      const KernelChoice& c = st.conv->choice();
      ++r.engines[c.name];
      ++r.convs;
      r.fused += c.fused;
      r.legacy += c.backend == kLegacyBackend;
      r.output_copied += c.output_copied;
      if (st.residual) ++(c.fused ? r.sums_in_conv : r.sums_in_epilogue);
    }
  r.concat_inputs_in_place = impl_->memory.terms_in_place;
  r.concat_inputs_copied = impl_->memory.concat_terms - impl_->memory.terms_in_place;
  return r;
}

std::string prefetch_suffix(int ahead) {
  if (ahead <= 0) return "";
  return ahead == 1 ? "+prefetch" : "+prefetch" + std::to_string(ahead);
}

Expected<PrefetchVariant> split_prefetch_suffix(const std::string& name) {
  const std::string suffix = "+prefetch";
  const size_t at = name.find(suffix);
  if (at == std::string::npos) return PrefetchVariant{name, 0};
  const std::string digits = name.substr(at + suffix.size());
  const bool number = !digits.empty() && digits.size() <= 2 &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  RETURN_ERROR_IF(!digits.empty() && (!number || std::stoi(digits) < 1), ErrorCode::kInvalidArgument,
                  "'" + name + "': +prefetch is followed by nothing or by how many stages ahead (1-99)");
  return PrefetchVariant{name.substr(0, at), digits.empty() ? 1 : std::stoi(digits)};
}

std::string device_description() {
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return "no GPU";
  }
  int clock_khz = 0, mem_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
  std::ostringstream os;
  os << prop.name << ", " << prop.multiProcessorCount << " SMs, max SM clock " << clock_khz / 1000
     << " MHz, memory clock " << mem_khz / 1000 << " MHz";
  return os.str();
}

std::string library_versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::ostringstream os;
  const size_t cudnn = cudnnGetVersion();
  os << "CUDA runtime " << runtime / 1000 << "." << (runtime % 1000) / 10 << ", driver API " << driver / 1000 << "."
     << (driver % 1000) / 10 << ", cuDNN " << cudnn / 10000 << "." << (cudnn % 10000) / 100 << "." << cudnn % 100;
  return os.str();
}

}  // namespace ios::rt
