// Kernel-record analysis (no GPU needed): utilization arithmetic, the Chrome trace, Opara's profile.
#include "runtime/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::rt {
namespace {

KernelRecord kernel(uint64_t start_us, uint64_t end_us, int step, int replay = 0, int smem = 0) {
  KernelRecord k;
  k.name = "k";
  k.start_ns = start_us * 1000;
  k.end_ns = end_us * 1000;
  k.plan_step = step;
  k.replay = replay;
  k.static_shared = smem;
  return k;
}

TEST(Utilization, CountsBusyTimeOnceAndConcurrencyWhileBusy) {
  // [0,10) and [5,15) overlap for 5 us; idle [15,20); [20,30) alone. Span 30, busy 25, kernel 30.
  const Utilization u = summarize_utilization({kernel(0, 10, 0), kernel(5, 15, 1), kernel(20, 30, 2)});
  EXPECT_DOUBLE_EQ(u.span_us, 30);
  EXPECT_DOUBLE_EQ(u.busy_us, 25);
  EXPECT_DOUBLE_EQ(u.kernel_us, 30);
  EXPECT_DOUBLE_EQ(u.busy_fraction, 25.0 / 30.0);
  EXPECT_DOUBLE_EQ(u.mean_concurrency, 30.0 / 25.0);
  EXPECT_EQ(u.max_concurrency, 2);
  ASSERT_EQ(u.time_at_concurrency_us.size(), 3u);
  EXPECT_DOUBLE_EQ(u.time_at_concurrency_us[1], 20);
  EXPECT_DOUBLE_EQ(u.time_at_concurrency_us[2], 5);
}

TEST(Utilization, AveragesInferencesSeparately) {
  // Two inferences far apart: the gap between them is not idle time of either.
  const Utilization u = summarize_utilization({kernel(0, 10, 0, 0), kernel(1000, 1010, 0, 1)});
  EXPECT_DOUBLE_EQ(u.span_us, 10);
  EXPECT_DOUBLE_EQ(u.busy_fraction, 1.0);
}

TEST(ChromeTrace, OneRowPerStreamAndKernelsNamedAfterTheirOps) {
  const ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10));
  ASSERT_TRUE(plan);
  std::vector<KernelRecord> ks;
  for (size_t i = 0; i < plan->steps.size(); ++i)
    if (plan->steps[i].kind == sched::PlanStep::Kind::kLaunch) ks.push_back(kernel(i, i + 3, int(i)));
  ks.push_back(kernel(50, 51, -1));
  const auto j = nlohmann::json::parse(chrome_trace_json(g, *plan, ks));
  int rows = 0, spans = 0, unattributed = 0;
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") ++rows;
    if (e["ph"] == "X") {
      ++spans;
      names.insert(e["name"].get<std::string>());
      unattributed += e["tid"] == plan->streams;
    }
  }
  EXPECT_EQ(rows, plan->streams + 1);
  EXPECT_EQ(spans, int(ks.size()));
  EXPECT_EQ(unattributed, 1);
  for (size_t id = 1; id < g.nodes.size(); ++id) EXPECT_TRUE(names.count(g.nodes[id].name)) << g.nodes[id].name;
}

TEST(ResourceProfile, TakesEachOpsFirstKernel) {
  const ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  ASSERT_TRUE(plan);
  int first_launch = -1;
  for (size_t i = 0; i < plan->steps.size() && first_launch < 0; ++i)
    if (plan->steps[i].kind == sched::PlanStep::Kind::kLaunch) first_launch = int(i);
  const auto profile =
      resource_profile_from(g, *plan, {kernel(5, 6, first_launch, 0, 999), kernel(1, 2, first_launch, 0, 4096)});
  EXPECT_EQ(profile.source, "cupti");
  EXPECT_DOUBLE_EQ(profile.shared_memory_bytes.at(plan->steps[size_t(first_launch)].ops[0]), 4096);
  EXPECT_EQ(profile.shared_memory_bytes.size(), g.nodes.size() - 1);
}

}  // namespace
}  // namespace ios::rt
