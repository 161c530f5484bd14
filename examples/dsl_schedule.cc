// The README's DSL program: build a small network with the C++ builder, schedule it with IOS-Both under
// the analytic cost model, and print the stages (ops by the names given here). Built in CI in-tree and against the
// installed package.
#include <cstdio>

#include "ir/builder.h"
#include "scheduler/policies.h"

int main() {
  using namespace ios::ir;
  GraphBuilder g("tiny", {3, 32, 32});
  g.begin_block();
  Value a = g.name(g.conv(g.input(), Conv(16).kernel(3).pad(1)), "conv3x3");  // relu by default, as IOS
  Value b = g.name(g.conv(g.input(), Conv(16).kernel(1, 3).pad(0, 1)), "conv1x3");
  Value c = g.name(g.pool(g.input(), MaxPool(3).stride(1).pad(1)), "pool");
  Value sum = g.identity(add({a, b}));                 // one term: element-wise sum
  g.end_block(g.identity(cat({sum, c.slice(0, 2)})));  // terms: concatenation
  ios::Expected<Graph> graph = g.build();              // validated, shapes inferred
  if (!graph) {
    std::fprintf(stderr, "%s\n", graph.status().to_string().c_str());
    return 1;
  }

  ios::sched::AnalyticCostModel model;
  ios::Expected<ios::sched::OptimizeResult> r = ios::sched::optimize(*graph, ios::sched::OptimizeOptions{}, model);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.status().to_string().c_str());
    return 1;
  }
  std::printf("%s: %d ops, IOS-Both %.3f ms (analytic)\n", graph->name.c_str(), graph->op_count(),
              r->schedule.meta.latency_ms);
  std::printf("%s", ios::sched::describe_schedule(*graph, r->schedule).c_str());
  return 0;
}
