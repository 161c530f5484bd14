// Capturing the plan into a CUDA graph: staged as issued, or dataflow with exactly the data and memory-reuse
// edges; weight prefetch nodes; the lead kernel a timed stage starts with.
#include "runtime/executor_impl.h"

namespace ios::rt {

Status Executor::Impl::add_prefetch_nodes(cudaGraph_t cg) {
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

Status Executor::Impl::plan_dataflow() {
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

Status Executor::Impl::set_capture_dependencies(cudaStream_t s, std::vector<cudaGraphNode_t> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  CHECK_CUDA(
      cudaStreamUpdateCaptureDependencies(s, nodes.data(), nullptr, nodes.size(), cudaStreamSetCaptureDependencies));
  return Status::ok();
}

Expected<std::vector<cudaGraphNode_t>> Executor::Impl::capture_tail(cudaStream_t s) {
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* last = nullptr;
  size_t count = 0;
  CHECK_CUDA(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &last, nullptr, &count));
  return std::vector<cudaGraphNode_t>(last, last + count);
}

Status Executor::Impl::issue_dataflow() {
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

Status Executor::Impl::issue_lead() {
  lead.clear();
  if (!opt.lead_kernel) return Status::ok();
  launch_empty(stream(0));
  CHECK_CUDA(cudaGetLastError());
  ASSIGN_OR_RETURN(lead, capture_tail(stream(0)));
  return Status::ok();
}

Status Executor::Impl::capture(Lap& lap) {
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

}  // namespace ios::rt
