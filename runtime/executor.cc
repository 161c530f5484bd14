#include "runtime/executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/device.h"
#include "runtime/kernels.h"
#include "scheduler/merge.h"

namespace ios::rt {

Expected<Precision> parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "tf32") return Precision::kTf32;
  return error(ErrorCode::kInvalidArgument, "--precision must be fp32 or tf32, got '" + s + "'");
}
const char* precision_name(Precision p) { return p == Precision::kFp32 ? "fp32" : "tf32"; }

namespace {

int act_code(ir::Act a) {
  switch (a) {
    case ir::Act::kNone: return 0;
    case ir::Act::kRelu: return 1;
    case ir::Act::kSigmoid: return 2;
    case ir::Act::kTanh: return 3;
  }
  return 0;
}

// Where an op's output lives: a channel range of a buffer (merged convolutions share one).
struct View {
  float* base = nullptr;
  int channels = 0;  // channels of the buffer
  int begin = 0;
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
  float* dst = nullptr;       // step output
  const float* src = nullptr;
};

struct Unit {
  std::vector<ir::NodeId> ops;  // several when merged
  bool gather_needed = false;
  DeviceMemory gathered;        // input buffer when the input is not a plain view
  std::vector<StepPlan> steps;  // conv/pool/act/linear steps (identity and element have none)
  std::vector<DeviceMemory> temps;
};

std::string conv_key(const ConvPlan& c, int batch, Precision p) {
  std::ostringstream os;
  const auto& a = c.attrs;
  os << batch << "|" << c.in.to_string() << "|" << a.out_channels << "|" << a.kh << "x" << a.kw << "|s" << a.sh << "x"
     << a.sw << "|p" << a.ph << "x" << a.pw << "|d" << a.dh << "x" << a.dw << "|g" << a.groups << "|" << int(p);
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
  std::vector<Stream> streams;
  std::vector<CudnnHandle> cudnn;
  std::vector<CublasHandle> cublas;
  std::vector<DeviceMemory> workspaces, cublas_workspaces;
  size_t workspace_size = 0;
  std::vector<Event> events;
  std::vector<DeviceMemory> buffers;  // activations owned here
  std::vector<size_t> buffer_bytes;
  size_t activation_total = 0, weight_total = 0;
  std::vector<View> views;            // per node
  std::vector<Unit> units;            // per launch step, in plan order
  std::vector<int> unit_of_step;
  CudaGraph graph;
  CudaGraphExec graph_exec;

  Expected<float*> alloc(size_t floats, bool is_weight = false) {
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(floats * sizeof(float)));
    (is_weight ? weight_total : activation_total) += floats * sizeof(float);
    auto* p = static_cast<float*>(m.get());
    if (!is_weight) CHECK_CUDA(cudaMemset(p, 0, floats * sizeof(float)));
    buffers.push_back(std::move(m));
    buffer_bytes.push_back(floats * sizeof(float));
    return p;
  }

  Expected<DeviceMemory> upload(const std::vector<float>& host) {
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(host.size() * sizeof(float)));
    if (!host.empty()) CHECK_CUDA(cudaMemcpy(m.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    weight_total += host.size() * sizeof(float);
    return m;
  }

  Status prepare_conv(ConvPlan& c, const float* x, float* y) {
    const int n = opt.batch;
    const auto& a = c.attrs;
    ASSIGN_OR_RETURN(c.x_desc, make_tensor_desc(n, c.in.c, c.in.h, c.in.w));
    ASSIGN_OR_RETURN(c.y_desc, make_tensor_desc(n, c.out.c, c.out.h, c.out.w));
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
    const std::string key = conv_key(c, opt.batch, opt.precision);
    std::lock_guard<std::mutex> lock(algo_mutex);
    auto it = algo_cache().find(key);
    if (it == algo_cache().end()) {
      ASSIGN_OR_RETURN(float* ws_probe, probe_buffer());
      const size_t ws_probe_size = opt.workspace_limit;
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(cudnn[0], c.x_desc, x, c.w_desc, c.weight.get(), cd, c.y_desc,
                                                         y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, ws_probe,
                                                         ws_probe_size));
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
    workspace_size = std::max(workspace_size, c.workspace);
    return Status::ok();
  }

  // Sums each term's values and writes the terms side by side into dst (dst_channels channels);
  // with `accumulate` the result is added to what dst holds.
  Status gather_terms(const ir::Inputs& terms, int dst_channels, int hw, float* dst, cudaStream_t s,
                      bool accumulate) const {
    int offset = 0;
    for (const ir::Term& term : terms) {
      const int count = term[0].channels();
      for (size_t first = 0; first < term.size(); first += kMaxGatherSources) {
        SliceRef refs[kMaxGatherSources];
        const int k = static_cast<int>(std::min(term.size() - first, size_t(kMaxGatherSources)));
        for (int i = 0; i < k; ++i) {
          const ir::Value& v = term[first + size_t(i)];
          const View& src = views[size_t(v.node)];
          refs[i] = SliceRef{src.base, src.channels, src.begin + v.begin};
        }
        launch_gather(refs, k, dst, dst_channels, offset, count, hw, opt.batch, accumulate || first > 0, s);
      }
      offset += count;
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  Status gather(const ir::Node& n, float* dst, cudaStream_t s) const {
    return gather_terms(n.inputs, n.input_shape.c, n.input_shape.h * n.input_shape.w, dst, s, false);
  }

  // A plain read: one term, one value, contiguous per sample (whole buffer, or batch 1).
  std::optional<const float*> direct_input(const ir::Node& n) const {
    if (n.inputs.size() != 1 || n.inputs[0].size() != 1) return std::nullopt;
    const ir::Value& v = n.inputs[0][0];
    const View& src = views[size_t(v.node)];
    const ir::Shape& s = g->node(v.node).output_shape;
    const bool whole = src.begin + v.begin == 0 && v.channels() == src.channels;
    if (!whole && opt.batch != 1) return std::nullopt;
    return src.base + static_cast<size_t>(src.begin + v.begin) * s.h * s.w;
  }

  Status run_conv(const ConvPlan& c, const float* x, float* y, int stream) {
    cudnnHandle_t h = cudnn[size_t(stream)];
    void* ws = workspaces[size_t(stream)].get();
    const float one = 1.f, zero = 0.f;
    if (c.attrs.activation == ir::Act::kRelu && c.attrs.has_bias) {
      CHECK_CUDNN(cudnnConvolutionBiasActivationForward(h, &one, c.x_desc, x, c.w_desc, c.weight.get(), c.conv_desc,
                                                        c.algo, ws, c.workspace, &zero, c.y_desc, y, c.bias_desc,
                                                        c.bias.get(), c.act_desc, c.y_desc, y));
      return Status::ok();
    }
    CHECK_CUDNN(cudnnConvolutionForward(h, &one, c.x_desc, x, c.w_desc, c.weight.get(), c.conv_desc, c.algo, ws,
                                        c.workspace, &zero, c.y_desc, y));
    if (c.attrs.has_bias || c.attrs.activation != ir::Act::kNone) {
      launch_bias_act(y, static_cast<const float*>(c.bias.get()), c.out.c, c.out.h * c.out.w, opt.batch,
                      act_code(c.attrs.activation), streams[size_t(stream)]);
      CHECK_CUDA(cudaGetLastError());
    }
    return Status::ok();
  }

  Status run_step(const StepPlan& st, int stream) {
    cudaStream_t s = streams[size_t(stream)];
    if (st.conv) return run_conv(*st.conv, st.src, st.dst, stream);
    if (const auto* p = std::get_if<ir::PoolAttrs>(&st.op)) {
      PoolParams pp{p->kh, p->kw, p->sh, p->sw, p->ph, p->pw, p->kind == ir::PoolKind::kMax || p->kind == ir::PoolKind::kGlobalMax};
      if (p->is_global()) pp = PoolParams{st.in.h, st.in.w, 1, 1, 0, 0, pp.is_max};
      launch_pool(st.src, st.dst, opt.batch, st.in.c, st.in.h, st.in.w, st.out.h, st.out.w, pp, s);
    } else if (const auto* a = std::get_if<ir::ActivationAttrs>(&st.op)) {
      if (st.dst != st.src)
        CHECK_CUDA(cudaMemcpyAsync(st.dst, st.src, sizeof(float) * size_t(st.in.numel()) * size_t(opt.batch),
                                   cudaMemcpyDeviceToDevice, s));
      launch_bias_act(st.dst, nullptr, st.out.c, st.out.h * st.out.w, opt.batch, act_code(a->activation), s);
    } else if (const auto* l = std::get_if<ir::LinearAttrs>(&st.op)) {
      const float one = 1.f, zero = 0.f;
      const int in = static_cast<int>(st.in.numel());
      CHECK_CUBLAS(cublasSgemm(cublas[size_t(stream)], CUBLAS_OP_T, CUBLAS_OP_N, l->out_features, opt.batch, in, &one,
                               static_cast<const float*>(st.weight.get()), in, st.src, in, &zero, st.dst, l->out_features));
      launch_bias_act(st.dst, static_cast<const float*>(st.bias.get()), l->out_features, 1, opt.batch,
                      act_code(l->activation), s);
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }

  Status run_unit(Unit& u, int stream) {
    cudaStream_t s = streams[size_t(stream)];
    const ir::Node& n = g->node(u.ops[0]);
    const View& out = views[size_t(u.ops[0])];
    if (n.is<ir::IdentityAttrs>()) return gather(n, out.base, s);
    if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) {
      const int c = n.output_shape.c, hw = n.output_shape.h * n.output_shape.w;
      auto* scratch = static_cast<float*>(u.gathered.get());
      for (size_t t = 0; t < n.inputs.size(); ++t) {
        const ir::Inputs term = {n.inputs[t]};
        if (t == 0 || e->op == ir::ElementOp::kAdd) {
          RETURN_IF_ERROR(gather_terms(term, c, hw, out.base, s, t > 0));
        } else {
          RETURN_IF_ERROR(gather_terms(term, c, hw, scratch, s, false));
          launch_multiply(out.base, scratch, n.output_shape.numel() * opt.batch, s);
        }
      }
      CHECK_CUDA(cudaGetLastError());
      return Status::ok();
    }
    if (u.gather_needed) RETURN_IF_ERROR(gather(n, static_cast<float*>(u.gathered.get()), s));
    for (const StepPlan& st : u.steps) RETURN_IF_ERROR(run_step(st, stream));
    return Status::ok();
  }

  Status issue_plan() {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const sched::PlanStep& st = plan.steps[i];
      cudaStream_t s = streams[size_t(st.stream)];
      switch (st.kind) {
        case sched::PlanStep::Kind::kRecord: CHECK_CUDA(cudaEventRecord(events[size_t(st.event)], s)); break;
        case sched::PlanStep::Kind::kWait: CHECK_CUDA(cudaStreamWaitEvent(s, events[size_t(st.event)], 0)); break;
        case sched::PlanStep::Kind::kLaunch:
          RETURN_IF_ERROR(run_unit(units[size_t(unit_of_step[i])], st.stream));
          break;
      }
    }
    return Status::ok();
  }

  Status build(const ir::Weights& w) {
    const int nstreams = plan.streams;
    for (int i = 0; i < nstreams; ++i) {
      ASSIGN_OR_RETURN(Stream s, make_stream());
      ASSIGN_OR_RETURN(CudnnHandle h, make_cudnn());
      CHECK_CUDNN(cudnnSetStream(h, s));
      ASSIGN_OR_RETURN(CublasHandle b, make_cublas());
      CHECK_CUBLAS(cublasSetStream(b, s));
      CHECK_CUBLAS(cublasSetMathMode(b, opt.precision == Precision::kFp32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_TF32_TENSOR_OP_MATH));
      ASSIGN_OR_RETURN(DeviceMemory cw, device_alloc(size_t{4} << 20));
      CHECK_CUBLAS(cublasSetWorkspace(b, cw.get(), size_t{4} << 20));
      streams.push_back(std::move(s));
      cudnn.push_back(std::move(h));
      cublas.push_back(std::move(b));
      cublas_workspaces.push_back(std::move(cw));
    }
    for (int i = 0; i < plan.events; ++i) {
      ASSIGN_OR_RETURN(Event e, make_event());
      events.push_back(std::move(e));
    }
    // Output buffers: every launched unit owns one; values read from elsewhere get zeroed buffers.
    views.assign(g->nodes.size(), View{});
    std::vector<bool> launched(g->nodes.size(), false);
    for (const auto& st : plan.steps)
      if (st.kind == sched::PlanStep::Kind::kLaunch) {
        int channels = 0;
        for (ir::NodeId id : st.ops) channels += g->node(id).output_shape.c;
        const ir::Shape& s0 = g->node(st.ops[0]).output_shape;
        ASSIGN_OR_RETURN(float* base, alloc(size_t(channels) * s0.h * s0.w * size_t(opt.batch)));
        int begin = 0;
        for (ir::NodeId id : st.ops) {
          views[size_t(id)] = View{base, channels, begin};
          begin += g->node(id).output_shape.c;
          launched[size_t(id)] = true;
        }
      }
    for (const auto& st : plan.steps)
      if (st.kind == sched::PlanStep::Kind::kLaunch)
        for (ir::NodeId id : st.ops)
          for (ir::NodeId p : g->producers(id))
            if (!launched[size_t(p)] && !views[size_t(p)].base) {
              const ir::Shape& s = g->node(p).output_shape;
              ASSIGN_OR_RETURN(float* base, alloc(size_t(s.numel()) * size_t(opt.batch)));
              views[size_t(p)] = View{base, s.c, 0};
            }
    // The graph input always has a buffer, so set_input works for whole-graph plans.
    if (!views[0].base) {
      ASSIGN_OR_RETURN(float* base, alloc(size_t(g->input_shape().numel()) * size_t(opt.batch)));
      views[0] = View{base, g->input_shape().c, 0};
    }
    unit_of_step.assign(plan.steps.size(), -1);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const auto& st = plan.steps[i];
      if (st.kind != sched::PlanStep::Kind::kLaunch) continue;
      unit_of_step[i] = static_cast<int>(units.size());
      Unit u;
      u.ops = st.ops;
      RETURN_IF_ERROR(build_unit(u, w));
      units.push_back(std::move(u));
    }
    for (int i = 0; i < nstreams; ++i) {
      ASSIGN_OR_RETURN(DeviceMemory ws, device_alloc(std::max<size_t>(workspace_size, 256)));
      workspaces.push_back(std::move(ws));
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    if (opt.use_graph) {
      cudaGraph_t cg = nullptr;
      CHECK_CUDA(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
      Status issued = issue_plan();
      const cudaError_t end = cudaStreamEndCapture(streams[0], &cg);
      RETURN_IF_ERROR(issued);
      CHECK_CUDA(end);
      graph = CudaGraph(cg);
      cudaGraphExec_t exec = nullptr;
      CHECK_CUDA(cudaGraphInstantiate(&exec, cg, 0));
      graph_exec = CudaGraphExec(exec);
    }
    return Status::ok();
  }

  // Scratch for cudnnFind, allocated on the first convolution the algorithm cache does not know.
  DeviceMemory probe;
  Expected<float*> probe_buffer() {
    if (!probe.get()) {
      ASSIGN_OR_RETURN(probe, device_alloc(opt.workspace_limit));
    }
    return static_cast<float*>(probe.get());
  }

  Status build_unit(Unit& u, const ir::Weights& w) {
    const ir::Node& n = g->node(u.ops[0]);
    const View out = views[size_t(u.ops[0])];
    if (n.is<ir::IdentityAttrs>()) return Status::ok();
    if (n.is<ir::ElementAttrs>()) {
      ASSIGN_OR_RETURN(u.gathered, device_alloc(sizeof(float) * size_t(n.output_shape.numel()) * size_t(opt.batch)));
      activation_total += sizeof(float) * size_t(n.output_shape.numel()) * size_t(opt.batch);
      return Status::ok();
    }
    const float* src = nullptr;
    if (auto direct = direct_input(n)) {
      src = *direct;
    } else {
      u.gather_needed = true;
      ASSIGN_OR_RETURN(u.gathered, device_alloc(sizeof(float) * size_t(n.input_shape.numel()) * size_t(opt.batch)));
      activation_total += sizeof(float) * size_t(n.input_shape.numel()) * size_t(opt.batch);
      src = static_cast<const float*>(u.gathered.get());
    }
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
      std::visit([&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ir::ConvAttrs> || std::is_same_v<A, ir::PoolAttrs> ||
                      std::is_same_v<A, ir::ActivationAttrs> || std::is_same_v<A, ir::LinearAttrs>)
          ops = {a};
      }, n.op);
      shapes = {n.output_shape};
    }
    ir::Shape in = n.input_shape;
    for (size_t i = 0; i < ops.size(); ++i) {
      StepPlan st;
      st.op = ops[i];
      st.in = in;
      st.out = shapes[i];
      st.src = src;
      if (i + 1 == ops.size()) {
        st.dst = out.base;
      } else {
        ASSIGN_OR_RETURN(DeviceMemory t, device_alloc(sizeof(float) * size_t(st.out.numel()) * size_t(opt.batch)));
        activation_total += sizeof(float) * size_t(st.out.numel()) * size_t(opt.batch);
        st.dst = static_cast<float*>(t.get());
        u.temps.push_back(std::move(t));
      }
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
        RETURN_IF_ERROR(prepare_conv(cp, st.src, st.dst));
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
      CHECK_CUDA(cudaGraphLaunch(graph_exec, streams[0]));
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
  RETURN_ERROR_IF(w.per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument, "weights were made for another graph");
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
  const float* input = impl_->views[0].base;
  for (size_t i = 0; i < impl_->buffers.size(); ++i)
    if (impl_->buffers[i].get() != input) CHECK_CUDA(cudaMemset(impl_->buffers[i].get(), 0xFF, impl_->buffer_bytes[i]));
  CHECK_CUDA(cudaDeviceSynchronize());
  return Status::ok();
}

Status Executor::run() {
  RETURN_IF_ERROR(impl_->run_once());
  CHECK_CUDA(cudaStreamSynchronize(impl_->streams[0]));
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
    CHECK_CUDA(cudaEventRecord(start, impl_->streams[0]));
    RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->streams[0]));
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
    CHECK_CUDA(cudaEventRecord(start, impl_->streams[0]));
    for (int i = 0; i < number; ++i) RETURN_IF_ERROR(impl_->run_once());
    CHECK_CUDA(cudaEventRecord(stop, impl_->streams[0]));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    means.push_back(double(t) / number);
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

size_t Executor::activation_bytes() const { return impl_->activation_total; }
size_t Executor::workspace_bytes() const { return impl_->workspace_size * impl_->streams.size(); }
size_t Executor::weight_bytes() const { return impl_->weight_total; }

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
  os << prop.name << ", " << prop.multiProcessorCount << " SMs, max SM clock " << clock_khz / 1000 << " MHz, memory clock "
     << mem_khz / 1000 << " MHz";
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
