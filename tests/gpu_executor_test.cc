// The executor: eager streams against graph replay, weight prefetching, the lead kernel, shared concatenation
// buffers, chaos replays, device stores, the CUPTI profiler, and its errors.
#include "gpu_test_support.h"

namespace ios::rt {
namespace {

struct RunResult {
  std::vector<float> output;
  int graph_nodes = -1, prefetch_nodes = 0;
};
Expected<RunResult> build_and_run(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                                  const ExecutorOptions& eo) {
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::create(g, w, plan, eo));
  RETURN_IF_ERROR(exec->set_input(ir::make_input(g.input_shape(), 1, 3)));
  RETURN_IF_ERROR(exec->run());
  ASSIGN_OR_RETURN(std::vector<float> out, exec->output());
  return RunResult{std::move(out), exec->graph_nodes(), exec->prefetch_nodes()};
}

TEST(GpuRuntime, EagerStreamsMatchGraphReplayInEveryMode) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  std::vector<std::vector<float>> outs;
  for (sched::ExecMode mode :
       {sched::ExecMode::kStaged, sched::ExecMode::kDataflow, sched::ExecMode::kDataflowOrdered}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    for (bool graph : {true, false}) {
      ExecutorOptions eo;
      eo.use_graph = graph;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
    }
  }
  for (const auto& out : outs) EXPECT_EQ(out, outs[0]);
}

// Prefetching weights, one or three stages ahead, adds one kernel node per stage that runs a convolution
// (the block has fewer than kMaxPrefetchRanges per stage) and changes no output bit, staged or dataflow.
TEST(GpuRuntime, PrefetchingWeightsAddsANodePerStageWithWeightsAndChangesNoOutput) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    std::set<int> stages_with_weights;
    for (const sched::PlanStep& st : plan->steps)
      for (ir::NodeId op : st.ops)
        if (st.kind == sched::PlanStep::Kind::kLaunch && g.node(op).is<ir::ConvAttrs>())
          stages_with_weights.insert(st.stage);
    std::vector<std::vector<float>> outs;
    std::vector<int> nodes, prefetch_nodes;
    for (int ahead : {0, 1, 3}) {
      ExecutorOptions eo;
      eo.prefetch_ahead = ahead;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
      nodes.push_back(run->graph_nodes);
      prefetch_nodes.push_back(run->prefetch_nodes);
    }
    ASSERT_GT(nodes[0], 0);
    EXPECT_EQ(prefetch_nodes[0], 0);
    for (size_t i = 1; i < outs.size(); ++i) {
      EXPECT_EQ(outs[i], outs[0]) << sched::exec_mode_name(mode) << " variant " << i;
      EXPECT_EQ(nodes[i] - nodes[0], int(stages_with_weights.size())) << sched::exec_mode_name(mode);
      EXPECT_EQ(prefetch_nodes[i], int(stages_with_weights.size())) << sched::exec_mode_name(mode);
    }
  }
}

// The measured cost model's stages replay behind a lead kernel: one node more, the same output.
TEST(GpuRuntime, ALeadKernelAddsOneNodeAndChangesNoOutput) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    std::vector<std::vector<float>> outs;
    std::vector<int> nodes;
    for (bool lead : {false, true}) {
      ExecutorOptions eo;
      eo.lead_kernel = lead;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
      nodes.push_back(run->graph_nodes);
    }
    EXPECT_EQ(outs[1], outs[0]) << sched::exec_mode_name(mode);
    EXPECT_EQ(nodes[1], nodes[0] + 1) << sched::exec_mode_name(mode);
  }
}

// After a second of idling the clocks are brought up again: a 2 ms spin (cycles at the top clock) then runs
// in 2 ms, unless the GPU never got there and the bring-up gave up at 300 ms.
TEST(GpuRuntime, BringingUpTheClocksLeavesASpinRunningAtTheTopClock) {
  SKIP_WITHOUT_GPU();
  auto s = make_stream();
  ASSERT_TRUE(s);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const Expected<double> seconds = bring_up_clocks(*s);
  ASSERT_TRUE(seconds) << seconds.status().to_string();
  EXPECT_LE(*seconds, 0.35);
  auto begin = make_event(true), end = make_event(true);
  ASSERT_TRUE(begin && end);
  ASSERT_EQ(cudaEventRecord(*begin, *s), cudaSuccess);
  launch_spin(2.0, *s);
  ASSERT_EQ(cudaEventRecord(*end, *s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(*end), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, *begin, *end), cudaSuccess);
  std::printf("[clocks] brought up in %.1f ms; a 2 ms spin then ran %.3f ms\n", *seconds * 1e3, ms);
  if (*seconds < 0.3) {
    EXPECT_LE(ms, 2.1);
  }
}

// Two kernel nodes joined by a programmatic (PDL) edge, as stream capture makes of cuDNN's launches:
// the edge becomes one full dependency, the graph still runs, and a second pass finds nothing to change.
TEST(GpuRuntime, ProgrammaticEdgesOfAGraphBecomeFullDependencies) {
  SKIP_WITHOUT_GPU();
  cudaGraph_t raw = nullptr;
  ASSERT_EQ(cudaGraphCreate(&raw, 0), cudaSuccess);
  CudaGraph graph(raw);
  const PrefetchRanges nothing{};
  ASSERT_EQ(add_l2_prefetch_node(graph.get(), nullptr, 0, nothing), cudaSuccess);
  ASSERT_EQ(add_l2_prefetch_node(graph.get(), nullptr, 0, nothing), cudaSuccess);
  size_t count = 2;
  cudaGraphNode_t nodes[2];
  ASSERT_EQ(cudaGraphGetNodes(graph.get(), nodes, &count), cudaSuccess);
  cudaGraphEdgeData programmatic{};
  programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  ASSERT_EQ(cudaGraphAddDependencies(graph.get(), &nodes[0], &nodes[1], &programmatic, 1), cudaSuccess);

  Expected<int> changed = make_edges_full(graph.get());
  ASSERT_TRUE(changed) << changed.status().to_string();
  EXPECT_EQ(*changed, 1);
  size_t edges = 1;
  cudaGraphNode_t from = nullptr, to = nullptr;
  cudaGraphEdgeData data{};
  data.type = cudaGraphDependencyTypeProgrammatic;
  ASSERT_EQ(cudaGraphGetEdges(graph.get(), &from, &to, &data, &edges), cudaSuccess);
  ASSERT_EQ(edges, 1u);
  EXPECT_EQ(from, nodes[0]);
  EXPECT_EQ(to, nodes[1]);
  EXPECT_EQ(data.type, cudaGraphDependencyTypeDefault);
  EXPECT_EQ(data.from_port, 0);
  EXPECT_EQ(*make_edges_full(graph.get()), 0);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph.get(), 0), cudaSuccess);
  CudaGraphExec owned(exec);
  ASSERT_EQ(cudaGraphLaunch(owned.get(), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

struct CheckedRun {
  double error = 1;
  KernelReport kernels;
};
CheckedRun run_checked(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                       const ExecutorOptions& eo, const std::vector<float>& input, const std::vector<float>& want) {
  auto exec = Executor::create(g, w, plan, eo);
  EXPECT_TRUE(exec) << exec.status().to_string();
  if (!exec) return {};
  const bool ran = (*exec)->poison_activations().is_ok() && (*exec)->set_input(input).is_ok() && (*exec)->run().is_ok();
  EXPECT_TRUE(ran) << eo.config.plan_key();
  if (!ran) return {};
  return {reference::relative_l2_error(*(*exec)->output(), want), (*exec)->kernel_report()};
}

TEST(GpuRuntime, DenseLayersReadingPrefixesOfOneSharedBufferMatchTheReference) {
  const ir::Graph g = testing::dense_block(4, /*growth=*/8, /*channels=*/8, /*size=*/6);
  const ir::Weights w = ir::make_weights(g);
  for (int batch : {1, 3}) {
    reference::Tensor in(batch, g.input_shape());
    in.data = ir::make_input(g.input_shape(), batch, 5);
    auto want = reference::run_all(g, w, in, {true});
    ASSERT_TRUE(want);
    SKIP_WITHOUT_GPU();
    for (sched::Policy policy : {sched::Policy::kSequential, sched::Policy::kDpBoth}) {
      auto plan = analytic_plan(g, policy, sched::ExecMode::kStaged);
      ASSERT_TRUE(plan);
      for (const std::string& precision : kPrecisions)
        for (const char* layout : {"nchw", "nhwc"}) {
          ExecutorOptions eo;
          eo.config = config_of(precision, layout, batch);
          eo.context = context_for(eo.config);
          const CheckedRun r = run_checked(g, w, *plan, eo, in.data, want->at(size_t(g.output())).data);
          const double err = r.error;
          EXPECT_LT(err, eo.config.tolerance()) << eo.config.key();
          const KernelReport& k = r.kernels;
          EXPECT_EQ(k.concat_inputs_copied, 0) << eo.config.key();  // 8-channel slices are aligned in every config
          std::printf("[dense] %-10s %-14s rel-L2 %.3e | concat inputs in place %d copied %d\n",
                      sched::policy_flag_name(policy).c_str(), eo.config.key().c_str(), err, k.concat_inputs_in_place,
                      k.concat_inputs_copied);
        }
    }
  }
}

// conv-copy: Inception V3's convolutions write tensors of their own and its concatenations copy them (NHWC);
// the output still matches the reference at every precision, staged and dataflow, and in NHWC fewer
// concatenation inputs are written in place than with in-place writes.
TEST(GpuRuntime, ConvolutionsLeftToTheirConcatenationsMatchTheReference) {
  const ir::Graph g = *models::build_model("inception_v3");
  const ir::Weights w = ir::make_weights(g);
  reference::Tensor in(1, g.input_shape());
  in.data = ir::make_input(g.input_shape(), 1, 5);
  auto want = reference::run(g, w, in);
  ASSERT_TRUE(want);
  SKIP_WITHOUT_GPU();
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = analytic_plan(g, sched::Policy::kDpBoth, mode);
    ASSERT_TRUE(plan);
    for (const std::string& precision : kPrecisions) {
      std::map<std::string, KernelReport> reports;
      for (const char* writes : {"in-place", "conv-copy"}) {
        ExecutorOptions eo;
        eo.config = *make_exec_config(precision, "auto", 1, writes);
        eo.context = context_for(eo.config);
        const CheckedRun r = run_checked(g, w, *plan, eo, in.data, want->data);
        const double err = r.error;
        EXPECT_LT(err, eo.config.tolerance()) << eo.config.plan_key();
        reports[writes] = r.kernels;
        std::printf("[conv-copy] %-9s %-24s rel-L2 %.3e | concat inputs in place %d copied %d\n",
                    sched::exec_mode_name(mode), eo.config.plan_key().c_str(), err,
                    reports[writes].concat_inputs_in_place, reports[writes].concat_inputs_copied);
      }
      if (make_exec_config(precision, "auto", 1)->layout == Layout::kNHWC) {
        EXPECT_LT(reports["conv-copy"].concat_inputs_in_place, reports["in-place"].concat_inputs_in_place) << precision;
      }
    }
  }
}

// Chaos mode: `replays` runs with random delays before every plan step; returns how many outputs differ
// bit for bit from the unperturbed run (activations poisoned before each run).
int chaos_differences(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                      const ExecConfig& config, int replays, bool use_graph = true) {
  ExecutorOptions eo;
  eo.use_graph = use_graph;
  eo.config = config;
  eo.context = context_for(config);
  eo.chaos = true;
  auto exec = Executor::create(g, w, plan, eo);
  EXPECT_TRUE(exec) << exec.status().to_string();
  if (!exec) return -1;
  const auto input = ir::make_input(g.input_shape(), config.batch, 11);
  auto run = [&](uint64_t seed) {
    EXPECT_TRUE((*exec)->perturb(seed).is_ok());
    EXPECT_TRUE((*exec)->poison_activations().is_ok());
    EXPECT_TRUE((*exec)->set_input(input).is_ok());
    EXPECT_TRUE((*exec)->run().is_ok());
    return *(*exec)->output();
  };
  const std::vector<float> baseline = run(0);
  int differing = 0;
  for (int i = 1; i <= replays; ++i) {
    const std::vector<float> out = run(uint64_t(i));
    differing += std::memcmp(out.data(), baseline.data(), out.size() * sizeof(float)) != 0;
  }
  return differing;
}

TEST(GpuChaos, PerturbedReplaysMatchTheUnperturbedRunBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"squeezenet", "googlenet"}) {
    Reference& ref = reference_for(name);
    for (sched::Policy p : kPolicies) {
      auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kStaged);
      ASSERT_TRUE(plan) << plan.status().to_string();
      for (const std::string& precision : kPrecisions) {
        const int differing = chaos_differences(ref.graph, ref.weights, *plan, config_of(precision, "auto", 1), 20);
        EXPECT_EQ(differing, 0) << name << " " << sched::policy_flag_name(p) << " " << precision;
        std::printf("[chaos] %-12s %-18s %-5s 20 perturbed replays, %d differ\n", name,
                    sched::policy_flag_name(p).c_str(), precision.c_str(), differing);
      }
    }
  }
}

TEST(GpuChaos, DataflowGraphsStayBitIdenticalOverAHundredPerturbedReplays) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet"}) {
    Reference& ref = reference_for(name);
    for (sched::Policy p : kPolicies) {
      auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kDataflow, 50);
      ASSERT_TRUE(plan) << plan.status().to_string();
      for (const char* precision : {"fp32", "bf16"}) {
        const int differing = chaos_differences(ref.graph, ref.weights, *plan, config_of(precision, "auto", 1), 100);
        EXPECT_EQ(differing, 0) << name << " " << sched::policy_flag_name(p) << " dataflow " << precision;
        std::printf("[chaos] %-12s %-18s dataflow %-5s 100 perturbed replays, %d differ\n", name,
                    sched::policy_flag_name(p).c_str(), precision, differing);
      }
    }
  }
}

TEST(GpuChaos, AMissingDependencyIsCaught) {
  SKIP_WITHOUT_GPU();
  // Two chained convolutions on two streams: the second waits for the first's event. Dropping that wait
  // is exactly the bug chaos mode exists to expose: with the first delayed, the second reads poison.
  ir::GraphBuilder b("two_streams", {64, 28, 28});
  b.begin_block();
  b.end_block(b.conv(b.conv(b.input(), ir::Conv(64).kernel(3).pad(1)), ir::Conv(64).kernel(3).pad(1)));
  const ir::Graph g = *b.build();
  const ir::Weights w = ir::make_weights(g);
  sched::Schedule s;
  s.streams = sched::StreamSchedule{{1, 2}, {0, 1, 0}};
  auto plan = sched::compile_plan(g, s);
  ASSERT_TRUE(plan) << plan.status().to_string();
  sched::ExecutionPlan broken = *plan;
  const auto second = std::find_if(broken.steps.begin(), broken.steps.end(), [](const sched::PlanStep& st) {
    return st.kind == sched::PlanStep::Kind::kLaunch && st.ops == std::vector<ir::NodeId>{2};
  });
  ASSERT_NE(second, broken.steps.begin());
  ASSERT_EQ((second - 1)->kind, sched::PlanStep::Kind::kWait);
  broken.steps.erase(second - 1);
  EXPECT_EQ(chaos_differences(g, w, *plan, config_of("fp32", "auto", 1), 20), 0);
  EXPECT_GT(chaos_differences(g, w, broken, config_of("fp32", "auto", 1), 20), 0);
}

TEST(GpuRuntime, ExecutorsOnOneStoreMatchTheReferenceWithMergedAndSingleWeights) {
  SKIP_WITHOUT_GPU();
  Reference& ref = reference_for("inception_v3");
  auto store = std::make_shared<DeviceStore>();
  for (sched::Policy p : {sched::Policy::kDpMerge, sched::Policy::kSequential, sched::Policy::kDpBoth}) {
    auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kStaged, 50);
    ASSERT_TRUE(plan);
    ExecutorOptions eo;
    eo.config = config_of("fp32", "auto", 1);
    eo.context = context_for(eo.config);
    eo.store = store;
    auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->poison_activations().is_ok());
    ASSERT_TRUE((*exec)->set_input(ref.input[1]).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    auto out = (*exec)->output();
    ASSERT_TRUE(out);
    const double err = reference::relative_l2_error(*out, ref.output[1]);
    std::printf("[check] inception_v3 %-18s on a shared store: rel-L2 %.2e\n", sched::policy_flag_name(p).c_str(), err);
    EXPECT_LT(err, 1e-4) << sched::policy_flag_name(p);
  }
  EXPECT_GT(store->weight_bytes(), size_t{0});
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
