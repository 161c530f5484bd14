#include "runtime/executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/device.h"
#include "runtime/kernels.h"
#include "scheduler/merge.h"

namespace ios::rt {

namespace {

int act_code(ir::Act a) {
  switch (a) {
    case ir::Act::kNone:
      return 0;
    case ir::Act::kRelu:
      return 1;
    case ir::Act::kSigmoid:
      return 2;
    case ir::Act::kTanh:
      return 3;
  }
  return 0;
}

// A channel slice of an NCHW buffer: samples `channels * hw` floats apart.
struct View {
  float* base = nullptr;
  int channels = 0;  // channels of the buffer
  int begin = 0;
  int hw = 0;
  float* data() const { return base + size_t(begin) * size_t(hw); }
  int batch_stride() const { return channels * hw; }
};

struct ConvPlan {
  ir::ConvAttrs attrs;
  ir::Shape in, out;
  TensorDesc x_desc, y_desc, bias_desc;
  FilterDesc w_desc;
  ConvDesc conv_desc;
  ActDesc act_desc;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
  DeviceMemory weight, bias;
};

struct StepPlan {
  std::optional<ConvPlan> conv;
  ir::SubOp op;
  ir::Shape in, out;
  DeviceMemory weight, bias;  // linear
  View src, dst;
};

struct Unit {
  std::vector<ir::NodeId> ops;  // several when merged
  bool elided = false;          // a concat its producers already wrote
  View scratch;                 // gathered input, or a product's second operand
  std::vector<StepPlan> steps;  // conv/pool/act/linear steps (identity and element have none)
};

std::string conv_key(const ConvPlan& c, int x_batch_stride, int y_batch_stride, int batch, Precision p) {
  std::ostringstream os;
  const auto& a = c.attrs;
  os << "n" << x_batch_stride << "/" << y_batch_stride << "|" << batch << "|" << c.in.to_string() << "|"
     << a.out_channels << "|" << a.kh << "x" << a.kw << "|s" << a.sh << "x" << a.sw << "|p" << a.ph << "x" << a.pw
     << "|d" << a.dh << "x" << a.dw << "|g" << a.groups << "|" << int(p);
  return os.str();
}

struct AlgoChoice {
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
  cudnnMathType_t math;
};
std::mutex algo_mutex;
std::map<std::string, AlgoChoice>& algo_cache() {
  static std::map<std::string, AlgoChoice> cache;
  return cache;
}

}  // namespace

struct Executor::Impl {
  const ir::Graph* g = nullptr;
  ExecutorOptions opt;
  sched::ExecutionPlan plan;
  sched::MemoryPlan memory;
  std::shared_ptr<Context> ctx;
  std::vector<size_t> stream_workspace;  // per stream: the largest algorithm workspace it runs
  std::vector<void*> workspaces;
  std::vector<Event> events;
  DeviceMemory arena;
  size_t weight_total = 0;
  std::vector<View> views;  // per node
  std::vector<Unit> units;  // per launch step, in plan order
  std::vector<int> unit_of_step;
  CudaGraph graph;
  CudaGraphExec graph_exec;

  cudaStream_t stream(int i) const { return ctx->stream(i); }

  View buffer_view(int buffer, int channels, int begin, int hw) const {
    auto* base = reinterpret_cast<float*>(static_cast<char*>(arena.get()) + memory.buffer_offset[size_t(buffer)]);
    return View{base, channels, begin, hw};
  }

  Expected<DeviceMemory> upload(const std::vector<float>& host) {
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(host.size() * sizeof(float)));
    if (!host.empty())
      CHECK_CUDA(cudaMemcpy(m.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    weight_total += host.size() * sizeof(float);
    return m;
  }

  Status prepare_conv(ConvPlan& c, const View& x, const View& y, int stream_index) {
    const int n = opt.batch;
    const auto& a = c.attrs;
    ASSIGN_OR_RETURN(c.x_desc, make_strided_tensor_desc(n, c.in.c, c.in.h, c.in.w, x.batch_stride()));
    ASSIGN_OR_RETURN(c.y_desc, make_strided_tensor_desc(n, c.out.c, c.out.h, c.out.w, y.batch_stride()));
    ASSIGN_OR_RETURN(c.bias_desc, make_tensor_desc(1, c.out.c, 1, 1));
    ASSIGN_OR_RETURN(c.w_desc, make_filter_desc(a.out_channels, c.in.c / a.groups, a.kh, a.kw));
    ASSIGN_OR_RETURN(c.act_desc, make_act_desc(CUDNN_ACTIVATION_RELU));
    cudnnConvolutionDescriptor_t cd = nullptr;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    c.conv_desc = ConvDesc(cd);
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(cd, a.ph, a.pw, a.sh, a.sw, a.dh, a.dw, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionGroupCount(cd, a.groups));
    const cudnnMathType_t math =
        opt.precision == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    CHECK_CUDNN(cudnnSetConvolutionMathType(cd, math));
    const std::string key = conv_key(c, x.batch_stride(), y.batch_stride(), opt.batch, opt.precision);
    std::lock_guard<std::mutex> lock(algo_mutex);
    auto it = algo_cache().find(key);
    if (it == algo_cache().end()) {
      RETURN_IF_ERROR(warm_up_once());
      ASSIGN_OR_RETURN(void* ws_probe, ctx->workspace(0, opt.workspace_limit));
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(ctx->cudnn(0), c.x_desc, x.data(), c.w_desc, c.weight.get(),
                                                         cd, c.y_desc, y.data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                         &found, perf, ws_probe, opt.workspace_limit));
      int pick = -1;
      for (int i = 0; i < found; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > opt.workspace_limit) continue;
        if (opt.precision == Precision::kFp32 && perf[i].mathType != CUDNN_FMA_MATH &&
            perf[i].mathType != CUDNN_DEFAULT_MATH)
          continue;
        pick = i;
        break;
      }
      RETURN_ERROR_IF(pick < 0, ErrorCode::kRuntimeError, "cuDNN found no convolution algorithm for " + key);
      it = algo_cache().emplace(key, AlgoChoice{perf[pick].algo, perf[pick].memory, perf[pick].mathType}).first;
    }
    c.algo = it->second.algo;
    c.workspace = it->second.workspace;
    if (opt.precision == Precision::kTf32) CHECK_CUDNN(cudnnSetConvolutionMathType(cd, it->second.math));
    stream_workspace[size_t(stream_index)] = std::max(stream_workspace[size_t(stream_index)], c.workspace);
    return Status::ok();
  }

  // cuDNN's find times candidates once each: with the GPU at idle clocks its choice is noise.
  Status warm_up_once() {
    static bool warmed = false;
    if (warmed) return Status::ok();
    launch_spin(300.0, stream(0));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream(0)));
    warmed = true;
    return Status::ok();
  }

  // Sums each term's values and writes the terms side by side into `dst`; with `accumulate` the
  // result is added to what dst holds.
  Status gather_terms(const ir::Inputs& terms, const View& dst, cudaStream_t s, bool accumulate) const {
    int offset = 0;
    for (const ir::Term& term : terms) {
      const int count = term[0].channels();
      const View& only = views[size_t(term[0].node)];
      if (term.size() == 1 && !accumulate && only.base == dst.base &&
          only.begin + term[0].begin == dst.begin + offset) {
        offset += count;  // its producer wrote it in place (memory plan)
        continue;
      }
      for (size_t first = 0; first < term.size(); first += kMaxGatherSources) {
        SliceRef refs[kMaxGatherSources];
        const int k = static_cast<int>(std::min(term.size() - first, size_t(kMaxGatherSources)));
        for (int i = 0; i < k; ++i) {
          const ir::Value& v = term[first + size_t(i)];
          const View& src = views[size_t(v.node)];
          refs[i] = SliceRef{src.base, src.channels, src.begin + v.begin};
        }
        launch_gather(refs, k, dst.base, dst.channels, dst.begin + offset, count, dst.hw, opt.batch,
                      accumulate || first > 0, s);
      }
      offset += count;
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  // The single value an op reads in place, as a view of its producer's buffer.
  View input_view(const ir::Node& n) const {
    const ir::Value& v = n.inputs[0][0];
    View src = views[size_t(v.node)];
    src.begin += v.begin;
    return src;
  }

  Status run_conv(const ConvPlan& c, const View& x, const View& y, int stream_index) {
    cudnnHandle_t h = ctx->cudnn(stream_index);
    void* ws = workspaces[size_t(stream_index)];
    const float one = 1.f, zero = 0.f;
    if (c.attrs.activation == ir::Act::kRelu && c.attrs.has_bias) {
      CHECK_CUDNN(cudnnConvolutionBiasActivationForward(h, &one, c.x_desc, x.data(), c.w_desc, c.weight.get(),
                                                        c.conv_desc, c.algo, ws, c.workspace, &zero, c.y_desc, y.data(),
                                                        c.bias_desc, c.bias.get(), c.act_desc, c.y_desc, y.data()));
      return Status::ok();
    }
    CHECK_CUDNN(cudnnConvolutionForward(h, &one, c.x_desc, x.data(), c.w_desc, c.weight.get(), c.conv_desc, c.algo, ws,
                                        c.workspace, &zero, c.y_desc, y.data()));
    if (c.attrs.has_bias || c.attrs.activation != ir::Act::kNone) {
      launch_bias_act(y.data(), static_cast<const float*>(c.bias.get()), c.out.c, c.out.h * c.out.w, opt.batch,
                      y.batch_stride(), act_code(c.attrs.activation), stream(stream_index));
      CHECK_CUDA(cudaGetLastError());
    }
    return Status::ok();
  }

  Status run_step(const StepPlan& st, int stream_index) {
    cudaStream_t s = stream(stream_index);
    if (st.conv) return run_conv(*st.conv, st.src, st.dst, stream_index);
    if (const auto* p = std::get_if<ir::PoolAttrs>(&st.op)) {
      const bool is_max = p->kind == ir::PoolKind::kMax || p->kind == ir::PoolKind::kGlobalMax;
      PoolParams pp{p->kh, p->kw, p->sh, p->sw, p->ph, p->pw, is_max};
      if (p->is_global()) pp = PoolParams{st.in.h, st.in.w, 1, 1, 0, 0, is_max};
      launch_pool(st.src.data(), st.src.batch_stride(), st.dst.data(), st.dst.batch_stride(), opt.batch, st.in.c,
                  st.in.h, st.in.w, st.out.h, st.out.w, pp, s);
    } else if (const auto* a = std::get_if<ir::ActivationAttrs>(&st.op)) {
      if (st.dst.data() != st.src.data()) {
        const SliceRef src{st.src.base, st.src.channels, st.src.begin};
        launch_gather(&src, 1, st.dst.base, st.dst.channels, st.dst.begin, st.in.c, st.dst.hw, opt.batch, false, s);
      }
      launch_bias_act(st.dst.data(), nullptr, st.out.c, st.out.h * st.out.w, opt.batch, st.dst.batch_stride(),
                      act_code(a->activation), s);
    } else if (const auto* l = std::get_if<ir::LinearAttrs>(&st.op)) {
      const float one = 1.f, zero = 0.f;
      const int in = static_cast<int>(st.in.numel());
      CHECK_CUBLAS(cublasSgemm(ctx->cublas(stream_index), CUBLAS_OP_T, CUBLAS_OP_N, l->out_features, opt.batch, in,
                               &one, static_cast<const float*>(st.weight.get()), in, st.src.data(), in, &zero,
                               st.dst.data(), l->out_features));
      launch_bias_act(st.dst.data(), static_cast<const float*>(st.bias.get()), l->out_features, 1, opt.batch,
                      l->out_features, act_code(l->activation), s);
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  Status run_unit(const Unit& u, int stream_index) {
    if (u.elided) return Status::ok();
    cudaStream_t s = stream(stream_index);
    const ir::Node& n = g->node(u.ops[0]);
    const View& out = views[size_t(u.ops[0])];
    if (n.is<ir::IdentityAttrs>()) return gather_terms(n.inputs, out, s, false);
    if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) {
      for (size_t t = 0; t < n.inputs.size(); ++t) {
        const ir::Inputs term = {n.inputs[t]};
        if (t == 0 || e->op == ir::ElementOp::kAdd) {
          RETURN_IF_ERROR(gather_terms(term, out, s, t > 0));
        } else {  // products are never placed in slices (memory plan), so out is contiguous
          RETURN_IF_ERROR(gather_terms(term, u.scratch, s, false));
          launch_multiply(out.data(), u.scratch.data(), n.output_shape.numel() * opt.batch, s);
        }
      }
      CHECK_CUDA(cudaGetLastError());
      return Status::ok();
    }
    if (u.scratch.base) RETURN_IF_ERROR(gather_terms(n.inputs, u.scratch, s, false));
    for (const StepPlan& st : u.steps) RETURN_IF_ERROR(run_step(st, stream_index));
    return Status::ok();
  }

  Status issue_plan() {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const sched::PlanStep& st = plan.steps[i];
      cudaStream_t s = stream(st.stream);
      switch (st.kind) {
        case sched::PlanStep::Kind::kRecord:
          CHECK_CUDA(cudaEventRecord(events[size_t(st.event)], s));
          break;
        case sched::PlanStep::Kind::kWait:
          CHECK_CUDA(cudaStreamWaitEvent(s, events[size_t(st.event)], 0));
          break;
        case sched::PlanStep::Kind::kLaunch: {
          if (opt.observer) opt.observer->begin_step(int(i));
          const Status ran = run_unit(units[size_t(unit_of_step[i])], st.stream);
          if (opt.observer) opt.observer->end_step();
          RETURN_IF_ERROR(ran);
          break;
        }
      }
    }
    return Status::ok();
  }

  Status build(const ir::Weights& w) {
    if (opt.context) {
      RETURN_ERROR_IF(opt.context->precision() != opt.precision, ErrorCode::kInvalidArgument,
                      "the shared context was made for another precision");
      ctx = opt.context;
    } else {
      ASSIGN_OR_RETURN(ctx, Context::create(opt.precision));
    }
    RETURN_IF_ERROR(ctx->ensure_streams(plan.streams));
    stream_workspace.assign(size_t(plan.streams), 0);
    for (int i = 0; i < plan.events; ++i) {
      ASSIGN_OR_RETURN(Event e, make_event());
      events.push_back(std::move(e));
    }
    sched::MemoryOptions mo;
    mo.batch = opt.batch;
    mo.reuse = opt.reuse_memory;
    mo.keep_all = opt.keep_all;
    ASSIGN_OR_RETURN(memory, sched::plan_memory(*g, plan, mo));
    ASSIGN_OR_RETURN(arena, device_alloc(std::max<size_t>(memory.arena_bytes, 256)));
    CHECK_CUDA(cudaMemset(arena.get(), 0, std::max<size_t>(memory.arena_bytes, 256)));
    views.assign(g->nodes.size(), View{});
    for (size_t id = 0; id < g->nodes.size(); ++id) {
      const sched::Placement& p = memory.placement[id];
      const ir::Shape& s = g->nodes[id].output_shape;
      if (p.placed()) views[id] = buffer_view(p.buffer, p.channels, p.begin, s.h * s.w);
    }
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
    for (int i = 0; i < plan.streams; ++i) {
      ASSIGN_OR_RETURN(void* ws, ctx->workspace(i, std::max<size_t>(stream_workspace[size_t(i)], 256)));
      workspaces.push_back(ws);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    if (opt.use_graph) {
      cudaGraph_t cg = nullptr;
      CHECK_CUDA(cudaStreamBeginCapture(stream(0), cudaStreamCaptureModeThreadLocal));
      Status issued = issue_plan();
      const cudaError_t end = cudaStreamEndCapture(stream(0), &cg);
      RETURN_IF_ERROR(issued);
      CHECK_CUDA(end);
      graph = CudaGraph(cg);
      cudaGraphExec_t exec = nullptr;
      CHECK_CUDA(cudaGraphInstantiate(&exec, cg, 0));
      graph_exec = CudaGraphExec(exec);
    }
    return Status::ok();
  }

  Status build_unit(Unit& u, const sched::LaunchMemory& lm, int stream_index, const ir::Weights& w) {
    const ir::Node& n = g->node(u.ops[0]);
    const View out = views[size_t(u.ops[0])];
    u.elided = lm.elided;
    if (lm.input_scratch >= 0) {
      const ir::Shape& s = n.is<ir::ElementAttrs>() ? n.output_shape : n.input_shape;
      u.scratch = buffer_view(lm.input_scratch, s.c, 0, s.h * s.w);
    }
    if (n.is<ir::IdentityAttrs>() || n.is<ir::ElementAttrs>()) return Status::ok();
    View src = u.scratch.base ? u.scratch : input_view(n);
    std::vector<ir::SubOp> ops;
    std::vector<ir::Shape> shapes;
    if (const auto* seq = std::get_if<ir::SequentialAttrs>(&n.op)) {
      ops = seq->steps;
      shapes = n.step_shapes;
    } else if (u.ops.size() > 1) {
      ops = {sched::merged_conv(*g, u.ops)};
      ir::Shape s = n.output_shape;
      s.c = out.channels;
      shapes = {s};
    } else {
      std::visit(
          [&](const auto& a) {
            using A = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<A, ir::ConvAttrs> || std::is_same_v<A, ir::PoolAttrs> ||
                          std::is_same_v<A, ir::ActivationAttrs> || std::is_same_v<A, ir::LinearAttrs>)
              ops = {a};
          },
          n.op);
      shapes = {n.output_shape};
    }
    ir::Shape in = n.input_shape;
    for (size_t i = 0; i < ops.size(); ++i) {
      StepPlan st;
      st.op = ops[i];
      st.in = in;
      st.out = shapes[i];
      st.src = src;
      st.dst = i + 1 == ops.size() ? out : buffer_view(lm.step_buffers[i], st.out.c, 0, st.out.h * st.out.w);
      if (u.ops.size() > 1) st.dst = View{out.base, out.channels, 0, out.hw};
      if (const auto* c = std::get_if<ir::ConvAttrs>(&st.op)) {
        ConvPlan cp;
        cp.attrs = *c;
        cp.in = st.in;
        cp.out = st.out;
        std::vector<float> weight, bias;
        if (u.ops.size() > 1) {
          pack_merged(u.ops, w, cp.attrs, in.c, weight, bias);
        } else {
          weight = w.at(u.ops[0], int(i)).weight;
          bias = w.at(u.ops[0], int(i)).bias;
        }
        ASSIGN_OR_RETURN(cp.weight, upload(weight));
        ASSIGN_OR_RETURN(cp.bias, upload(bias));
        RETURN_IF_ERROR(prepare_conv(cp, st.src, st.dst, stream_index));
        st.conv = std::move(cp);
      } else if (std::holds_alternative<ir::LinearAttrs>(st.op)) {
        ASSIGN_OR_RETURN(st.weight, upload(w.at(u.ops[0], int(i)).weight));
        ASSIGN_OR_RETURN(st.bias, upload(w.at(u.ops[0], int(i)).bias));
      }
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

Expected<std::unique_ptr<Executor>> Executor::create(const ir::Graph& g, const ir::Weights& w,
                                                     const sched::ExecutionPlan& plan, const ExecutorOptions& options) {
  RETURN_IF_ERROR(require_gpu());
  RETURN_ERROR_IF(options.batch < 1, ErrorCode::kInvalidArgument, "batch must be at least 1");
  RETURN_ERROR_IF(w.per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument,
                  "weights were made for another graph");
  auto impl = std::make_unique<Impl>();
  impl->g = &g;
  impl->opt = options;
  impl->plan = plan;
  RETURN_IF_ERROR(impl->build(w));
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Status Executor::set_input(const std::vector<float>& data) {
  const size_t n = size_t(impl_->g->input_shape().numel()) * size_t(impl_->opt.batch);
  RETURN_ERROR_IF(data.size() != n, ErrorCode::kInvalidArgument,
                  "input has " + std::to_string(data.size()) + " floats, expected " + std::to_string(n));
  CHECK_CUDA(cudaMemcpy(impl_->views[0].base, data.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return Status::ok();
}

Status Executor::poison_activations() {
  const sched::MemoryPlan& m = impl_->memory;
  const int input = m.placement[size_t(impl_->g->input())].buffer;
  for (size_t b = 0; b < m.buffer_bytes.size(); ++b)
    if (int(b) != input)
      CHECK_CUDA(cudaMemset(static_cast<char*>(impl_->arena.get()) + m.buffer_offset[b], 0xFF, m.buffer_bytes[b]));
  CHECK_CUDA(cudaDeviceSynchronize());
  return Status::ok();
}

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
  const size_t plane = size_t(s.h) * s.w;
  std::vector<float> out(size_t(s.numel()) * size_t(impl_->opt.batch));
  for (int b = 0; b < impl_->opt.batch; ++b)
    CHECK_CUDA(cudaMemcpy(out.data() + size_t(b) * s.numel(),
                          v.base + (size_t(b) * v.channels + size_t(v.begin)) * plane,
                          sizeof(float) * size_t(s.numel()), cudaMemcpyDeviceToHost));
  return out;
}

Expected<std::vector<float>> Executor::output() const { return read(impl_->g->output()); }

Expected<Timing> Executor::time(int warmup, int iterations) {
  RETURN_ERROR_IF(iterations < 1, ErrorCode::kInvalidArgument, "--iters must be at least 1");
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(run());
  ASSIGN_OR_RETURN(Event start, make_event(true));
  ASSIGN_OR_RETURN(Event stop, make_event(true));
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    CHECK_CUDA(cudaEventRecord(start, impl_->stream(0)));
    RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->stream(0)));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  Timing r;
  r.iterations = iterations;
  r.median_ms = sorted[sorted.size() / 2];
  r.min_ms = sorted.front();
  r.p90_ms = sorted[std::min(sorted.size() - 1, sorted.size() * 9 / 10)];
  for (double t : ms) r.mean_ms += t / iterations;
  return r;
}

Expected<double> Executor::time_batched(int warmup, int number, int repeat) {
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(run());
  ASSIGN_OR_RETURN(Event start, make_event(true));
  ASSIGN_OR_RETURN(Event stop, make_event(true));
  std::vector<double> means;
  for (int r = 0; r < repeat; ++r) {
    CHECK_CUDA(cudaEventRecord(start, impl_->stream(0)));
    for (int i = 0; i < number; ++i) RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->stream(0)));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    means.push_back(double(t) / number);
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

size_t Executor::activation_bytes() const { return impl_->memory.arena_bytes; }
size_t Executor::activation_bytes_no_reuse() const { return impl_->memory.no_reuse_bytes; }
size_t Executor::workspace_bytes() const {
  size_t total = 0;
  for (size_t b : impl_->stream_workspace) total += b;
  return total;
}
size_t Executor::weight_bytes() const { return impl_->weight_total; }
const sched::MemoryPlan& Executor::memory_plan() const { return impl_->memory; }

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
