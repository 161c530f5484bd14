// Loads an IOS graph file (`ios export --model squeezenet --out g.json` writes one), schedules it with
// IOS-Both and, where the package has the GPU runtime and a GPU is present, runs it and checks the output
// against the CPU reference; otherwise reports the analytic schedule.
#include <cstdio>

#include "ir/json_io.h"
#include "ir/weights.h"
#include "reference/reference_executor.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/device.h"
#include "runtime/executor.h"
#endif

int fail(const ios::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s GRAPH.json\n", argv[0]);
    return 2;
  }
  ios::Expected<ios::ir::Graph> g = ios::ir::load_graph(argv[1]);
  if (!g) return fail(g.status());
  ios::sched::AnalyticCostModel model;
  auto r = ios::sched::optimize(*g, ios::sched::OptimizeOptions{}, model);
  if (!r) return fail(r.status());
  std::printf("%s: %d ops, %d stages, IOS-Both %.3f ms (analytic)\n", g->name.c_str(), g->op_count(),
              r->schedule.stage_count(), r->schedule.meta.latency_ms);
#ifdef IOS_WITH_RUNTIME
  if (!ios::rt::gpu_available()) return 0;
  auto plan = ios::sched::compile_plan(*g, r->schedule);
  if (!plan) return fail(plan.status());
  const ios::ir::Weights weights = ios::ir::make_weights(*g);
  auto exec = ios::rt::Executor::create(*g, weights, *plan, ios::rt::ExecutorOptions{});
  if (!exec) return fail(exec.status());
  const std::vector<float> input = ios::ir::make_input(g->input_shape(), 1, 1);
  if (auto s = (*exec)->set_input(input); !s) return fail(s);
  if (auto s = (*exec)->run(); !s) return fail(s);
  auto out = (*exec)->output();
  if (!out) return fail(out.status());
  ios::reference::Tensor in(1, g->input_shape());
  in.data = input;
  auto ref = ios::reference::run(*g, weights, in);
  if (!ref) return fail(ref.status());
  std::printf("GPU output vs CPU reference: relative L2 %.3e\n", ios::reference::relative_l2_error(*out, ref->data));
#endif
  return 0;
}
