// Issuing the plan: each launch's kernels on its stream, the event records and waits between streams.
#include "runtime/executor_impl.h"

namespace ios::rt {

Status Executor::Impl::gather_terms(const ir::Inputs& terms, const View& dst, const ir::Shape& shape, cudaStream_t s,
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

Status Executor::Impl::run_linear(const StepPlan& st, const ir::LinearAttrs& l, int stream_index) {
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

Status Executor::Impl::run_step(const StepPlan& st, const Lane& lane) {
  const int stream_index = lane.stream;
  cudaStream_t s = stream(stream_index);
  if (st.conv) {
    const ConvBuffers b{data(st.src), st.weight, st.bias, data(st.dst), st.residual ? data(*st.residual) : nullptr};
    return st.conv->run(ctx->cudnn(stream_index), b, lane.workspace);
  }
  const Status launched = std::visit(
      Overloaded{[&](const ir::PoolAttrs& a) -> Status {
                   const bool is_max = a.kind == ir::PoolKind::kMax || a.kind == ir::PoolKind::kGlobalMax;
                   if (a.is_global()) {
                     launch_global_pool(cfg.dtype, dev(st.src), dev(st.dst), extent(st.in.c, st.in), is_max,
                                        lane.workspace, s);
                     return Status::ok();
                   }
                   const PoolParams pp{a.kh, a.kw, a.sh, a.sw, a.ph, a.pw, a.dh, a.dw, is_max, a.count_include_pad};
                   launch_pool(cfg.dtype, dev(st.src), dev(st.dst), extent(st.in.c, st.out),
                               PoolShape{st.in.h, st.in.w, st.out.h, st.out.w}, pp, s);
                   return Status::ok();
                 },
                 [&](const ir::ActivationAttrs& a) -> Status {
                   if (data(st.dst) != data(st.src)) {
                     const DevTensor src = dev(st.src);
                     launch_gather(cfg.dtype, &src, 1, dev(st.dst), extent(st.in.c, st.in), false, s);
                   }
                   launch_bias_act(cfg.dtype, dev(st.dst), nullptr, extent(st.out.c, st.out), act_code(a.activation),
                                   s);
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
                   launch_channel_shuffle(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), a.groups, s);
                   return Status::ok();
                 },
                 [&](const ir::SpaceDepthAttrs& a) -> Status {
                   const int shallow_c = a.to_depth ? st.in.c : st.out.c;
                   launch_space_depth(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), a, shallow_c,
                                      st.out.w, st.in.w, s);
                   return Status::ok();
                 },
                 [&](const ir::ChannelNormAttrs& a) -> Status {
                   if (nhwc()) {
                     launch_channel_norm_rows(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight,
                                              st.bias, a.eps, s);
                   } else {
                     launch_channel_norm(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight,
                                         st.bias, a.eps, s);
                   }
                   return Status::ok();
                 },
                 [&](const ir::PadAttrs& a) -> Status {
                   const PadArgs pa{a.mode, a.top, a.left, st.in.h, st.in.w, st.out.w, a.value};
                   launch_pad(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), pa, s);
                   return Status::ok();
                 },
                 [&](const ir::ChannelConvAttrs& a) -> Status {
                   launch_channel_conv(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight,
                                       a.kernel, a.pad, st.bias, s);
                   return Status::ok();
                 },
                 [&](const ir::ChannelSoftmaxAttrs& a) -> Status {
                   launch_channel_softmax(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), a.groups, s);
                   return Status::ok();
                 },
                 [&](const ir::ResponseNormAttrs& a) -> Status {
                   launch_response_norm(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight,
                                        st.bias, a.eps, lane.workspace, s);
                   return Status::ok();
                 },
                 [&](const ir::PReluAttrs&) -> Status {
                   launch_prelu(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), st.weight, s);
                   return Status::ok();
                 },
                 [&](const ir::GroupNormAttrs& a) -> Status {
                   launch_group_norm(cfg.dtype, dev(st.src), dev(st.dst), extent(st.out.c, st.out), a.groups, a.center,
                                     st.weight, st.bias, a.eps, s);
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

Status Executor::Impl::run_element(const Unit& u, const ir::Node& n, const ir::ElementAttrs& e, cudaStream_t s) const {
  const View& out = views[size_t(u.ops[0])];
  if (e.op == ir::ElementOp::kAdd || n.inputs.size() == 1) {
    for (size_t t = 0; t < n.inputs.size(); ++t)
      RETURN_IF_ERROR(gather_terms({n.inputs[t]}, out, n.output_shape, s, t > 0));
    return Status::ok();
  }
  // A product reads a term of one value where its producer wrote it; a sum of values is gathered first, the
  // first term into the output, a later one into the unit's scratch. A C x 1 x 1 factor (ir::broadcasts) is
  // read with a zero pixel stride.
  DevTensor first{};
  for (size_t t = 0; t < n.inputs.size(); ++t) {
    const ir::Term& term = n.inputs[t];
    const ir::Shape shape = g->node(term[0].node).output_shape;
    const bool broadcast = ir::broadcasts(ir::Shape{n.output_shape.c, shape.h, shape.w}, n.output_shape);
    DevTensor src{};
    if (term.size() == 1) {
      src = dev(views[size_t(term[0].node)].at_channel(term[0].begin));
    } else {
      const View& to = t == 0 ? out : u.scratch;
      RETURN_IF_ERROR(
          gather_terms({term}, to, broadcast ? ir::Shape{n.output_shape.c, 1, 1} : n.output_shape, s, false));
      src = dev(to);
    }
    if (broadcast) src.p_stride = 0;
    if (t == 0) {
      first = src;
      continue;
    }
    launch_multiply(cfg.dtype, dev(out), t == 1 ? first : dev(out), src, extent(n.output_shape.c, n.output_shape), s);
  }
  CHECK_CUDA(cudaGetLastError());
  return Status::ok();
}

Status Executor::Impl::run_unit(const Unit& u, const Lane& lane) {
  if (u.elided) return Status::ok();
  cudaStream_t s = stream(lane.stream);
  const ir::Node& n = g->node(u.ops[0]);
  if (n.is<ir::IdentityAttrs>()) return gather_terms(n.inputs, views[size_t(u.ops[0])], n.output_shape, s, false);
  if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) return run_element(u, n, *e, s);
  if (u.scratch.base) RETURN_IF_ERROR(gather_terms(n.inputs, u.scratch, n.input_shape, s, false));
  for (const StepPlan& st : u.steps) RETURN_IF_ERROR(run_step(st, lane));
  return Status::ok();
}

Status Executor::Impl::note_weights(size_t step, const Unit& u, cudaStream_t s) {
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

Status Executor::Impl::run_launch(size_t step, const Lane& lane) {
  RETURN_IF_ERROR(note_weights(step, units[size_t(unit_of_step[step])], stream(lane.stream)));
  if (opt.observer) opt.observer->begin_step(int(step));
  const Status ran = run_unit(units[size_t(unit_of_step[step])], lane);
  if (opt.observer) opt.observer->end_step();
  return ran;
}

Status Executor::Impl::issue_plan() {
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

Status Executor::Impl::run_once() {
  if (graph_exec.get()) {
    CHECK_CUDA(cudaGraphLaunch(graph_exec, stream(0)));
  } else {
    RETURN_IF_ERROR(issue_plan());
  }
  return Status::ok();
}

}  // namespace ios::rt
