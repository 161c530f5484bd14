// Building an executor: the context and streams, the memory plan's arena and views, each launch's
// weights uploaded and convolution kernels asked for, workspaces.
#include "runtime/executor_impl.h"

namespace ios::rt {

Expected<const void*> Executor::Impl::upload(const std::string& key,
                                             const std::function<const std::vector<float>&()>& host, int n, int c,
                                             int h, int w) {
  weight_total += tensor_bytes(n, c, h, w);
  auto pack = [&]() -> Expected<std::vector<uint8_t>> {
    const std::vector<float>& values = host();
    RETURN_ERROR_IF(values.size() != size_t(n) * c * h * w, ErrorCode::kInvalidArgument, "weight of the wrong size");
    return pack_tensor(values.data(), n, c, h, w, cfg.dtype, cfg.layout);
  };
  const auto start = std::chrono::steady_clock::now();
  auto tensor = weight_store->tensor(cfg.precision() + "/" + layout_name(cfg.layout) + "/" + key, pack);
  build_times.weights += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return tensor;
}

Status Executor::Impl::make_arena() {
  const size_t bytes = std::max<size_t>(memory.arena_bytes, 256);
  ASSIGN_OR_RETURN(arena, store->arena(bytes));
  if (opt.zero_arena) CHECK_CUDA(cudaMemsetAsync(arena, 0, bytes, stream(0)));
  return Status::ok();
}

Status Executor::Impl::make_context() {
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

Status Executor::Impl::make_streams_and_events() {
  RETURN_IF_ERROR(make_context());
  RETURN_IF_ERROR(ctx->ensure_streams(plan.streams));
  stream_workspace.assign(size_t(plan.streams), 0);
  for (int i = 0; i < plan.events; ++i) {
    ASSIGN_OR_RETURN(Event e, make_event());
    events.push_back(std::move(e));
  }
  return Status::ok();
}

Status Executor::Impl::place_activations() {
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

Status Executor::Impl::build_units(const ir::Weights& w) {
  unit_of_step.assign(plan.steps.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto& st = plan.steps[i];
    if (st.kind != sched::PlanStep::Kind::kLaunch) continue;
    unit_of_step[i] = static_cast<int>(units.size());
    Unit u;
    u.ops = st.ops;
    RETURN_IF_ERROR(build_unit(u, memory.launch[i], st.stream, w));
    stream_workspace[size_t(st.stream)] = std::max(stream_workspace[size_t(st.stream)], u.workspace_bytes());
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

Status Executor::Impl::resolve_convs() {
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

Status Executor::Impl::make_workspaces() {
  if (dataflow_graph_mode()) return plan_dataflow();
  for (int i = 0; i < plan.streams; ++i) {
    ASSIGN_OR_RETURN(void* ws, ctx->workspace(i, std::max<size_t>(stream_workspace[size_t(i)], 256)));
    workspaces.push_back(ws);
  }
  return Status::ok();
}

Status Executor::Impl::build(const ir::Weights& w) {
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

void Executor::Impl::unit_steps(const Unit& u, const View& out, std::vector<ir::SubOp>& ops,
                                std::vector<ir::Shape>& shapes) const {
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

Status Executor::Impl::build_linear(StepPlan& st, const ir::LinearAttrs& l, const Unit& u, int step,
                                    const ir::Weights& w) {
  const ir::ParamTensor& p = w.at(u.ops[0], step);
  const std::string key = weight_key(u, step);
  ASSIGN_OR_RETURN(
      st.weight, upload(
                     key + ".w", [&]() -> const auto& { return p.weight; }, l.out_features, st.in.c, st.in.h, st.in.w));
  st.weight_bytes = tensor_bytes(l.out_features, st.in.c, st.in.h, st.in.w);
  if (l.has_bias) {
    ASSIGN_OR_RETURN(st.bias, upload(
                                  key + ".b", [&]() -> const auto& { return p.bias; }, 1, l.out_features, 1, 1));
  }
  return Status::ok();
}

Status Executor::Impl::build_vector_params(StepPlan& st, const Unit& u, int step, const ir::Weights& w, int weights,
                                           int biases) {
  const ir::ParamTensor& p = w.at(u.ops[0], step);
  const std::string key = weight_key(u, step);
  ASSIGN_OR_RETURN(st.weight, upload(
                                  key + ".w", [&]() -> const auto& { return p.weight; }, 1, weights, 1, 1));
  st.weight_bytes = tensor_bytes(1, weights, 1, 1);
  if (biases == 0) return Status::ok();
  ASSIGN_OR_RETURN(st.bias, upload(
                                key + ".b", [&]() -> const auto& { return p.bias; }, 1, biases, 1, 1));
  st.weight_bytes += tensor_bytes(1, biases, 1, 1);
  return Status::ok();
}

Status Executor::Impl::build_conv(StepPlan& st, const ir::ConvAttrs& attrs, const Unit& u, int step, int stream_index,
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

Status Executor::Impl::build_unit(Unit& u, const sched::LaunchMemory& lm, int stream_index, const ir::Weights& w) {
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
    RETURN_IF_ERROR(std::visit(
        Overloaded{[&](const ir::ConvAttrs& c) { return build_conv(st, c, u, int(i), stream_index, w); },
                   [&](const ir::LinearAttrs& l) { return build_linear(st, l, u, int(i), w); },
                   [&](const ir::PoolAttrs& a) {
                     if (a.is_global()) st.scratch_bytes = global_pool_scratch_bytes(extent(st.in.c, st.in));
                     return Status::ok();
                   },
                   [](const ir::ActivationAttrs&) { return Status::ok(); },
                   [](const ir::ResizeAttrs&) { return Status::ok(); },
                   [](const ir::ChannelShuffleAttrs&) { return Status::ok(); },
                   [](const ir::SpaceDepthAttrs&) { return Status::ok(); },
                   [&](const ir::ChannelNormAttrs&) { return build_vector_params(st, u, int(i), w, st.in.c, st.in.c); },
                   [](const ir::PadAttrs&) { return Status::ok(); },
                   [&](const ir::GroupNormAttrs&) { return build_vector_params(st, u, int(i), w, st.in.c, st.in.c); },
                   [&](const ir::PReluAttrs&) { return build_vector_params(st, u, int(i), w, st.in.c, 0); },
                   [&](const ir::ChannelConvAttrs& a) {
                     return build_vector_params(st, u, int(i), w, a.kernel, a.bias ? 1 : 0);
                   },
                   [](const ir::ChannelSoftmaxAttrs&) { return Status::ok(); },
                   [&](const ir::ResponseNormAttrs&) {
                     st.scratch_bytes = response_norm_scratch_bytes(extent(st.in.c, st.in));
                     return build_vector_params(st, u, int(i), w, st.in.c, st.in.c);
                   }},
        ops[i]));
    src = st.dst;
    in = st.out;
    u.steps.push_back(std::move(st));
  }
  return Status::ok();
}

void Executor::Impl::pack_merged(const std::vector<ir::NodeId>& ops, const ir::Weights& w, const ir::ConvAttrs& m,
                                 int cin, std::vector<float>& weight, std::vector<float>& bias) const {
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

}  // namespace ios::rt
