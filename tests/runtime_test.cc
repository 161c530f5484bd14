// GPU runtime against the CPU reference: every network x every policy, batch 1 and 4, fp32 and
// tf32, activations poisoned before each run. Skips itself where there is no GPU.
#include <gtest/gtest.h>

#include <map>

#include "models/models.h"
#include "reference/reference_executor.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::rt {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

struct Reference {
  ir::Graph graph;
  ir::Weights weights;
  std::map<int, std::vector<float>> input, output;  // by batch
};

Reference& reference_for(const std::string& model) {
  static std::map<std::string, Reference> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  Reference r;
  r.graph = *models::build_model(model);
  r.weights = ir::make_weights(r.graph);
  for (int batch : {1, 4}) {
    r.input[batch] = ir::make_input(r.graph.input_shape(), batch, 7);
    reference::Tensor in(batch, r.graph.input_shape());
    in.data = r.input[batch];
    r.output[batch] = reference::run(r.graph, r.weights, in)->data;
  }
  return cache.emplace(model, std::move(r)).first->second;
}

struct Case {
  std::string model;
  sched::Policy policy;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.model << "/" << sched::policy_flag_name(c.policy); }
};

class GpuMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMatchesReference, Fp32AndTf32AtBatchOneAndFour) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  Reference& ref = reference_for(c.model);
  sched::AnalyticCostModel model;
  sched::OptimizeOptions options;
  options.policy = c.policy;
  options.max_part_size = 50;
  auto r = sched::optimize(ref.graph, options, model);
  ASSERT_TRUE(r) << r.status().to_string();
  auto plan = sched::compile_plan(ref.graph, r->schedule);
  ASSERT_TRUE(plan);
  for (Precision precision : {Precision::kFp32, Precision::kTf32})
    for (int batch : {1, 4}) {
      ExecutorOptions eo;
      eo.batch = batch;
      eo.precision = precision;
      auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
      ASSERT_TRUE(exec) << exec.status().to_string();
      ASSERT_TRUE((*exec)->poison_activations().is_ok());
      ASSERT_TRUE((*exec)->set_input(ref.input[batch]).is_ok());
      Status ran = (*exec)->run();
      ASSERT_TRUE(ran.is_ok()) << ran.to_string();
      auto out = (*exec)->output();
      ASSERT_TRUE(out);
      const double err = reference::relative_l2_error(*out, ref.output[batch]);
      const double tol = precision == Precision::kFp32 ? 1e-4 : 5e-3;
      Status again = (*exec)->run();  // a second replay reuses the same memory: same answer
      ASSERT_TRUE(again.is_ok()) << again.to_string();
      EXPECT_EQ(*(*exec)->output(), *out) << "second run differs";
      EXPECT_LT(err, tol) << c.model << " " << sched::policy_flag_name(c.policy) << " batch " << batch << " "
                          << precision_name(precision);
      std::printf("[check] %-12s %-18s batch %d %s rel-L2 %.3e\n", c.model.c_str(),
                  sched::policy_flag_name(c.policy).c_str(), batch, precision_name(precision), err);
    }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* m : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet"})
    for (sched::Policy p : {sched::Policy::kSequential, sched::Policy::kGreedy, sched::Policy::kDpMerge,
                            sched::Policy::kDpParallel, sched::Policy::kDpBoth, sched::Policy::kOpara})
      cases.push_back({m, p});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllNetworksAllPolicies, GpuMatchesReference, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.model + "_" + sched::policy_flag_name(info.param.policy); });

// Every operator and input form on its own, GPU vs CPU (the networks never use element mul, sigmoid,
// tanh, dilation or slices at batch > 1).
TEST(GpuOps, EachOperatorMatchesTheReference) {
  using namespace ir;
  GraphBuilder b("ops", {6, 9, 9});
  b.begin_block();
  Value x = b.input();
  Value c1 = b.conv(x, Conv(8).kernel(3).pad(2).dilation(2, 2).act(Act::kSigmoid));
  Value c2 = b.conv(x.slice(1, 5), Conv(8).kernel(1, 3).pad(0, 1).act(Act::kTanh));
  Value m = b.element({c1, c2}, ElementOp::kMul);
  Value a = b.element({add({c1, c2}), m}, ElementOp::kAdd);
  Value p = b.pool(cat({a.slice(0, 4), x}), MaxPool(3).stride(2).ceil());
  Value q = b.pool(a, AvgPool(3).stride(2));
  Value r = b.activation(cat({p, q}), Act::kTanh);
  Value s = b.sep_conv(r, 12, 3, 1, 1);
  Value g = b.pool(s, GlobalMaxPool());
  b.end_block(b.linear(g, LinearAttrs{5, true, Act::kRelu}));
  auto built = b.build();
  ASSERT_TRUE(built) << built.status().to_string();
  const ir::Graph& graph = *built;
  ir::Weights w = make_weights(graph);
  for (int batch : {1, 3}) {
    reference::Tensor in(batch, graph.input_shape());
    in.data = make_input(graph.input_shape(), batch, 11);
    auto want = reference::run_all(graph, w, in, {true});
    ASSERT_TRUE(want);
    SKIP_WITHOUT_GPU();
    auto plan = sched::compile_plan(graph, sched::sequential_schedule(graph));
    ExecutorOptions eo;
    eo.batch = batch;
    eo.keep_all = true;  // every node is read back
    auto exec = Executor::create(graph, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->poison_activations().is_ok());
    ASSERT_TRUE((*exec)->set_input(in.data).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    for (NodeId id = 1; id < static_cast<NodeId>(graph.nodes.size()); ++id) {
      auto got = (*exec)->read(id);
      ASSERT_TRUE(got);
      EXPECT_LT(reference::relative_l2_error(*got, (*want)[size_t(id)].data), 1e-5)
          << "node " << graph.node(id).name << " (" << op_kind_name(graph.node(id).kind()) << ") batch " << batch;
    }
  }
}

TEST(GpuRuntime, EagerStreamsMatchGraphReplay) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10));
  ASSERT_TRUE(plan);
  std::vector<std::vector<float>> outs;
  for (bool graph : {true, false}) {
    ExecutorOptions eo;
    eo.use_graph = graph;
    auto exec = Executor::create(g, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->set_input(ir::make_input(g.input_shape(), 1, 3)).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    outs.push_back(*(*exec)->output());
  }
  EXPECT_EQ(outs[0], outs[1]);
}

TEST(GpuRuntime, MeasuredCostModelTimesAStage) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{});
  auto ms = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}, {2, 3}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_LT(*ms, 10.0);
}

TEST(GpuProfiler, AttributesGraphReplayKernelsToOpsAndMeasuresSharedMemory) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  ir::Weights w = ir::make_weights(g);
  auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10));
  ASSERT_TRUE(plan);
  for (bool graph : {true, false}) {
    auto profiler = KernelProfiler::create();
    ASSERT_TRUE(profiler) << profiler.status().to_string();
    ExecutorOptions eo;
    eo.use_graph = graph;
    eo.observer = profiler->get();
    auto exec = Executor::create(g, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    auto records = profile_runs(**exec, **profiler, 2);
    ASSERT_TRUE(records) << records.status().to_string();
    ASSERT_FALSE(records->empty());
    int attributed = 0;
    for (const KernelRecord& k : *records) attributed += k.plan_step >= 0;
    std::printf("[profile] %s: %zu kernels, %d attributed\n", graph ? "graph" : "eager", records->size(), attributed);
    EXPECT_EQ(attributed, int(records->size())) << (graph ? "graph replay" : "eager");
    const Utilization u = summarize_utilization(*records);
    EXPECT_GT(u.busy_fraction, 0.0);
    EXPECT_LE(u.busy_fraction, 1.0);
  }
  auto profile = measure_resource_profile(g, w, ExecutorOptions{});
  ASSERT_TRUE(profile) << profile.status().to_string();
  EXPECT_EQ(profile->source, "cupti");
  double conv_smem = 0;
  for (const auto& [id, bytes] : profile->shared_memory_bytes)
    if (g.node(id).is<ir::ConvAttrs>()) conv_smem += bytes;
  EXPECT_GT(conv_smem, 0.0);
}

TEST(GpuRuntime, WrongInputSizeIsAClearError) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  auto exec = Executor::create(g, ir::make_weights(g), *plan, ExecutorOptions{});
  ASSERT_TRUE(exec);
  Status s = (*exec)->set_input({1.f, 2.f});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("expected"), std::string::npos);
}

TEST(GpuRuntime, NoGpuIsReportedNotCrashed) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  auto exec = Executor::create(g, ir::make_weights(g), *plan, ExecutorOptions{});
  ASSERT_FALSE(exec);
  EXPECT_EQ(exec.status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace ios::rt
