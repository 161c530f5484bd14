// The measured cost model: stages, merges, segments and networks timed as they run, batched requests, stop
// rules, sibling workers, the cold share and the stage boundary.
#include "gpu_test_support.h"

namespace ios::rt {
namespace {

TEST(GpuRuntime, MeasuredCostModelTimesAStage) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  auto ms = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}, {2, 3}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_LT(*ms, 10.0);
}

// What each stage adds to the staged network (the network less the network without it): the stages'
// marginals cover most of the network and none exceeds it; the largest stage adds something.
TEST(GpuRuntime, StageMarginalsAddUpToAboutTheStagedNetwork) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  const ir::Weights w = ir::make_weights(g);
  const std::vector<sched::Stage> stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}, {2, 3}, {4, 5, 6}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{7}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{8}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  ExecutorOptions options;
  options.context = context_for(options.config);
  auto m = time_stage_marginals(g, w, stages, options);
  ASSERT_TRUE(m) << m.status().to_string();
  ASSERT_EQ(m->stages.size(), stages.size());
  double sum = 0, largest = 0;
  for (const StageMarginal& s : m->stages) {
    EXPECT_LT(s.in_network_ms, m->network_ms);
    sum += s.in_network_ms;
    largest = std::max(largest, s.in_network_ms);
  }
  EXPECT_GT(m->network_ms, 0.0);
  EXPECT_GT(largest, 0.0);
  EXPECT_GT(sum, 0.5 * m->network_ms);
  EXPECT_LT(sum, 1.2 * m->network_ms);
}

// The same two convolutions merged, once writing their concatenation in place (their terms in order)
// and once copied into it by the concatenation (reversed): the copy, which the network makes in the
// concatenation's stage, is timed with the merge (sched::compile_timed_stages).
TEST(GpuRuntime, MeasuredCostModelTimesAMergeWithTheCopyItsConcatenationMakes) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::merged_terms(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  auto ms = model.stage_latencies_ms(
      g, {sched::Stage{sched::StageKind::kMerge, {{1, 2}}}, sched::Stage{sched::StageKind::kMerge, {{3, 4}}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  std::printf("merge in place %.4f ms, merge copied %.4f ms\n", (*ms)[0], (*ms)[1]);
  EXPECT_GT((*ms)[1], (*ms)[0]);
}

// A merge is also timed with the ops that read its outputs after it, and each of those alone, once per
// model: the merge's figure is charged what reading its slices costs them.
TEST(GpuRuntime, MeasuredCostModelTimesAMergeWithItsReadersAndEachReaderAloneOnce) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  // Nodes 2 and 4: the 1x1 convolutions read by 3 and 5.
  auto first = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kMerge, {{2, 4}}}, 1);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(model.stats().stages, 4);  // the merge, the merge and its readers, each reader alone
  auto again = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kMerge, {{4, 2}}}, 1);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(model.stats().stages, 6);  // the readers alone are known
  EXPECT_GT(*first, 0.0);
  EXPECT_GT(*again, 0.0);
}

TEST(GpuRuntime, MeasuredCostModelTimesSegmentsAsOneDataflowGraph) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  const sched::Stage first{sched::StageKind::kConcurrent, {{1}, {2}, {4}, {7}}};
  const sched::Stage second{sched::StageKind::kConcurrent, {{3}, {5}, {8}}};
  auto alone = model.stage_latencies_ms(g, {first, second}, 1);
  auto segments = model.segment_latencies_ms(g, {{first}, {second}, {first, second}}, 1);
  ASSERT_TRUE(alone && segments) << alone.status().to_string() << segments.status().to_string();
  std::printf("stages alone %.4f %.4f ms | segments %.4f %.4f ms, both without a barrier %.4f ms\n", (*alone)[0],
              (*alone)[1], (*segments)[0], (*segments)[1], (*segments)[2]);
  // One stage is the same graph either way: every group on its own branch.
  EXPECT_NEAR((*segments)[0], (*alone)[0], 0.3 * (*alone)[0]);
  EXPECT_NEAR((*segments)[1], (*alone)[1], 0.3 * (*alone)[1]);
  // Without the barrier the two stages overlap, but each still runs.
  EXPECT_GT((*segments)[2], 0.8 * std::max((*segments)[0], (*segments)[1]));
  EXPECT_LT((*segments)[2], 1.3 * ((*segments)[0] + (*segments)[1]));
  sched::Schedule s = sched::sequential_schedule(g);
  s.blocks[0].stages = {first, second, sched::Stage{sched::StageKind::kConcurrent, {{6}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  auto placed = sched::place_barriers(g, s, model, sched::BarrierOptions{});
  ASSERT_TRUE(placed) << placed.status().to_string();
  s.dataflow_barriers = placed->barriers;
  EXPECT_TRUE(sched::validate(g, s));
  EXPECT_LE(placed->dataflow_ms, placed->barriers_ms);
}

TEST(GpuRuntime, MeasuredCostModelTimesWholeNetworksUnderEachBarrierSet) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  sched::Schedule s = sched::sequential_schedule(g);
  s.blocks[0].stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}, {2}, {4}, {7}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{3}, {5}, {8}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{6}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  auto ms = model.network_latencies_ms(g, s, {{1, 2, 3}, {}, {2}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  ASSERT_EQ(ms->size(), 3u);
  // Every barrier is the staged schedule: timed behind the lane's head start, less the stage boundary, it
  // leaves out what `ios run` pays an inference at a time for the launch (H200: 0.0145 against 0.0206 ms).
  auto plan = sched::compile_plan(g, s, sched::ExecMode::kStaged);
  ASSERT_TRUE(plan);
  ExecutorOptions options;
  options.context = context_for(ExecConfig{});
  auto staged = Executor::create(g, *model.weights(), *plan, options);
  ASSERT_TRUE(staged) << staged.status().to_string();
  auto t = (*staged)->time(20, 200);
  ASSERT_TRUE(t);
  std::printf("every barrier %.4f ms (staged graph %.4f) | none %.4f | one %.4f\n", (*ms)[0], t->median_ms, (*ms)[1],
              (*ms)[2]);
  EXPECT_LE((*ms)[0], 1.1 * t->median_ms);
  EXPECT_GE((*ms)[0], 0.4 * t->median_ms);
  for (double x : *ms) EXPECT_GT(x, 0.3 * (*ms)[0]);
  // Refinement chooses among sets it timed, and its choice is a valid schedule.
  auto placed = sched::place_barriers(g, s, model, sched::BarrierOptions{});
  ASSERT_TRUE(placed);
  auto refined = sched::refine_barriers(g, s, model, *placed, sched::RefineOptions{});
  ASSERT_TRUE(refined) << refined.status().to_string();
  s.dataflow_barriers = refined->barriers;
  EXPECT_TRUE(sched::validate(g, s));
  if (refined->passes > 0) {
    EXPECT_LE(refined->measured_ms, refined->every_barrier_ms * 1.05);
  }
}

TEST(GpuRuntime, MeasuredCostModelUploadsEachWeightOnceAndFollowsTheStopRule) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{1, 2, 3, 5, 0.5};
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  const sched::Stage a{sched::StageKind::kConcurrent, {{1}, {2, 3}}};
  const sched::Stage b{sched::StageKind::kConcurrent, {{1}}};
  for (const sched::Stage& st : {a, b, a}) {
    auto ms = model.stage_latency_ms(g, st, 1);
    ASSERT_TRUE(ms) << ms.status().to_string();
    EXPECT_GT(*ms, 0.0);
  }
  const sched::StageTimingStats& t = model.stats();
  EXPECT_EQ(t.stages, 3);
  EXPECT_GE(t.rounds, 3 * 3);  // min_rounds each, at most max_rounds
  EXPECT_LE(t.rounds, 3 * 5);
  EXPECT_GE(t.replays, 3 * 1 + t.rounds * 2);
  // A stage past min_rounds is warmed up again; a round the GPU reached too early is queued again.
  EXPECT_LE(t.replays, 3 * 2 + (t.rounds + t.requeued) * 2);
  EXPECT_EQ(t.passes, 3);  // one stage per request
}

// Stages asked together are timed in one pass, the GPU replaying one while the host builds the next: each
// latency is the one the stage gets alone, in the order asked (the two convolutions differ in cost by
// more than 10x, so a mix-up shows).
TEST(GpuRuntime, MeasuredCostModelTimesABatchInOnePassLikeOneStageAtATime) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("big_and_small", {256, 56, 56});
  gb.begin_block();
  const ir::Value big = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));  // node 1: ~3.7 GFLOP
  const ir::Value small = gb.conv(gb.input(), ir::Conv(8));                   // node 2: launch-bound
  gb.end_block(gb.identity(ir::cat({big, small})));
  const ir::Graph g = *gb.build();
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  std::vector<sched::Stage> stages;
  for (const std::vector<std::vector<ir::NodeId>>& groups :
       std::vector<std::vector<std::vector<ir::NodeId>>>{{{1}}, {{2}}, {{1}, {2}}, {{2}}, {{1}}})
    stages.push_back(sched::Stage{sched::StageKind::kConcurrent, groups});
  std::vector<double> alone;
  for (const sched::Stage& st : stages) {
    auto ms = model.stage_latency_ms(g, st, 1);
    ASSERT_TRUE(ms) << ms.status().to_string();
    alone.push_back(*ms);
  }
  const int64_t passes = model.stats().passes;
  auto batched = model.stage_latencies_ms(g, stages, 1);
  ASSERT_TRUE(batched) << batched.status().to_string();
  ASSERT_EQ(batched->size(), stages.size());
  EXPECT_EQ(model.stats().passes, passes + 1);
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("[batch] stage %zu: alone %.4f ms, in a batch %.4f ms\n", i, alone[i], (*batched)[i]);
    EXPECT_GT((*batched)[i], 0.5 * alone[i]) << i;
    EXPECT_LT((*batched)[i], 2.0 * alone[i]) << i;
  }
}

// Stages asked with limits start with one round: the big convolution, far past a limit of 1 us, stops
// there; the small one, far within its limit, resumes to the rule's minimum (2) and settles. Their figures
// match those timed without limits.
TEST(GpuRuntime, MeasuredCostModelStopsAStageFarPastItsLimitAfterOneRound) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("big_and_small", {256, 56, 56});
  gb.begin_block();
  const ir::Value big = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));  // node 1
  const ir::Value small = gb.conv(gb.input(), ir::Conv(8));                   // node 2
  gb.end_block(gb.identity(ir::cat({big, small})));
  const ir::Graph g = *gb.build();
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  const std::vector<sched::Stage> stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{2}}}};
  auto free = model.stage_latencies_ms(g, stages, 1);
  ASSERT_TRUE(free) << free.status().to_string();
  const sched::StageTimingStats before = model.stats();
  auto limited = model.limited_stage_latencies_ms(g, stages, {0.001, 1000.0}, 1);
  ASSERT_TRUE(limited) << limited.status().to_string();
  const sched::StageTimingStats& after = model.stats();
  EXPECT_EQ(after.stopped_early - before.stopped_early, 1);
  EXPECT_GE(after.rounds - before.rounds, 1 + 2);
  EXPECT_LE(after.rounds - before.rounds, 1 + 4);
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("[limits] stage %zu: no limit %.4f ms, limited %.4f ms\n", i, (*free)[i], (*limited)[i]);
    EXPECT_GT((*limited)[i], 0.5 * (*free)[i]) << i;
    EXPECT_LT((*limited)[i], 2.0 * (*free)[i]) << i;
  }
}

// Two search workers on sibling contexts (shared timing stream and kernel choices) build stages side by side
// but take turns on the GPU: a compute-bound convolution timed by both at once gets its alone latency, not
// the ~2x it would show if their replays, or one's kernel set-up and the other's replays, overlapped.
TEST(GpuRuntime, SiblingWorkersTimeStagesAsIfAlone) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("two_convs", {256, 56, 56});
  gb.begin_block();
  const ir::Value a = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));
  const ir::Value b = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(2).dilation(2, 2));
  gb.end_block(gb.identity(ir::cat({a, b})));
  const ir::Graph g = *gb.build();
  auto parent = Context::create(ContextOptions{});
  ASSERT_TRUE(parent) << parent.status().to_string();
  MeasuredCostModel alone(g, MeasuredCostModel::Params{}, *parent);
  const sched::Stage first{sched::StageKind::kConcurrent, {{1}}}, second{sched::StageKind::kConcurrent, {{2}}};
  auto alone_ms = alone.stage_latencies_ms(g, std::vector<sched::Stage>(16, first), 1);
  ASSERT_TRUE(alone_ms) << alone_ms.status().to_string();
  std::vector<std::unique_ptr<MeasuredCostModel>> workers;
  for (int w = 0; w < 2; ++w) {
    auto sibling = (*parent)->sibling();
    ASSERT_TRUE(sibling) << sibling.status().to_string();
    EXPECT_EQ((*sibling)->timing_stream(), (*parent)->timing_stream());
    workers.push_back(std::make_unique<MeasuredCostModel>(alone, MeasuredCostModel::Params{}, *sibling));
  }
  // Each worker's stages alternate between the convolution timed alone above and one its context has
  // to tune first (node 2, the dilated one), so tuning in one worker meets timing in the other.
  std::vector<sched::Stage> mixed;
  for (int i = 0; i < 16; ++i) mixed.push_back(i % 4 == 1 ? second : first);
  std::vector<Expected<std::vector<double>>> shared(2, std::vector<double>{});
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&, w] { shared[size_t(w)] = workers[size_t(w)]->stage_latencies_ms(g, mixed, 1); });
  for (std::thread& t : threads) t.join();
  const double reference = sched::median_of(*alone_ms);
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(shared[size_t(w)]) << shared[size_t(w)].status().to_string();
    std::vector<double> of_first;
    for (size_t i = 0; i < mixed.size(); ++i)
      if (i % 4 != 1) of_first.push_back((*shared[size_t(w)])[i]);
    const double median = sched::median_of(of_first);
    std::printf("[lane] worker %d: median %.4f ms, alone %.4f ms\n", w, median, reference);
    EXPECT_LT(median, 1.1 * reference) << w;
    EXPECT_GT(median, 0.9 * reference) << w;
  }
}

// Screening times a stage for one round and keeps its executor: settling it afterwards replays that
// executor (no new build) and counts the screening round as its first.
TEST(GpuRuntime, ScreenedStagesAreSettledOnTheirExecutorWithTheScreeningRoundCounted) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{1, 2, 3, 3, 0.05};
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  const sched::Stage a{sched::StageKind::kConcurrent, {{1}, {2, 3}}}, b{sched::StageKind::kConcurrent, {{1}}};
  auto screened = model.screen_latencies_ms(g, {a, b}, 1);
  ASSERT_TRUE(screened) << screened.status().to_string();
  EXPECT_EQ(model.stats().rounds, 2);  // one round each
  auto settled = model.stage_latencies_ms(g, {a}, 1);
  ASSERT_TRUE(settled) << settled.status().to_string();
  EXPECT_EQ(model.stats().reused_screened, 1);
  EXPECT_EQ(model.stats().rounds, 2 + 3);  // the screening round counted among a's three
  EXPECT_GT((*settled)[0], 0.5 * (*screened)[0]);
  EXPECT_LT((*settled)[0], 2.0 * (*screened)[0]);
  auto again = model.stage_latencies_ms(g, {a}, 1);  // its executor went to the settled timing
  ASSERT_TRUE(again);
  EXPECT_EQ(model.stats().reused_screened, 1);
}

// One stage of `g` (its op 1) timed under `l2`; `share` receives the model's cold share calibration.
double stage_ms(const ir::Graph& g, sched::L2Timing l2, MeasuredCostModel::ShareCalibration* share = nullptr,
                int prefetch_ahead = 0) {
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{2, 4, 5, 5, 0.0};
  params.rule.l2 = l2;
  params.rule.prefetch_ahead = prefetch_ahead;
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  auto t = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 1);
  EXPECT_TRUE(t) << t.status().to_string();
  EXPECT_EQ(model.stats().rounds, 5);
  if (share) *share = model.cold_share(1).value_or(MeasuredCostModel::ShareCalibration{-1, 0, 0, 0});
  return t ? *t : 0.0;
}

ir::Graph linear_layer(int in_features, int out_features) {
  ir::GraphBuilder b("linear", {in_features, 1, 1});
  b.begin_block();
  b.end_block(b.linear(b.input(), ir::LinearAttrs{out_features, true, ir::Act::kNone}));
  return *b.build();
}

// Two batch-1 linear layers of 38 MB of weights each: either fits the 50 MB L2 alone, both do not.
ir::Graph two_linear_layers() {
  ir::GraphBuilder b("two_linears", {9216, 1, 1});
  b.begin_block();
  const ir::Value hidden = b.linear(b.input(), ir::LinearAttrs{1024, true, ir::Act::kRelu});
  b.end_block(b.linear(hidden, ir::LinearAttrs{9216, true, ir::Act::kNone}));
  return *b.build();
}

// Whether `c` is the share at which the ops' figures add up to the network's: exactly in between, or
// clamped where the network runs outside [warm, cold].
void expect_share_adds_up(const MeasuredCostModel::ShareCalibration& c) {
  const double predicted = c.ops_warm_ms + c.share * (c.ops_cold_ms - c.ops_warm_ms);
  if (c.share > 0 && c.share < 1) {
    EXPECT_NEAR(predicted, c.network_ms, 1e-9);
  }
  if (c.share == 0) {
    EXPECT_LE(c.network_ms, c.ops_warm_ms + MeasuredCostModel::kMinColdGap * c.ops_warm_ms);
  }
  if (c.share == 1) {
    EXPECT_GE(c.network_ms, c.ops_cold_ms);
  }
}

// The cold share is the share of a cold replay at which the ops, each timed alone, add up to the
// network run end to end (the sequential schedule replayed back to back). One 134 MB layer replayed
// back to back misses the L2 when timed warm already, so its share is about 0 (a rule of bytes said
// 1 - L2 / 134 MB = 0.63). Two 38 MB layers: each fits the 50 MB L2 alone, both do not; measured on the
// H100 they still find most of their weights there (share 0.08), and a stage is timed
// between its warm and cold figures.
TEST(GpuRuntime, ColdShareIsTheShareAtWhichTheOpsAloneAddUpToTheNetworkRunEndToEnd) {
  SKIP_WITHOUT_GPU();
  MeasuredCostModel::ShareCalibration share;
  const ir::Graph big = linear_layer(16384, 2048);
  const double big_warm = stage_ms(big, sched::L2Timing::kWarm);
  const double big_share = stage_ms(big, sched::L2Timing::kColdShare, &share);
  std::printf("[l2] 134 MB linear: warm %.4f, l2-share %.4f ms, share %.2f (ops %.4f warm, %.4f cold, network %.4f)\n",
              big_warm, big_share, share.share, share.ops_warm_ms, share.ops_cold_ms, share.network_ms);
  expect_share_adds_up(share);
  EXPECT_LT(share.share, 0.3);
  EXPECT_LT(big_share, 1.05 * big_warm);
  const ir::Graph two = two_linear_layers();
  const double warm = stage_ms(two, sched::L2Timing::kWarm);
  const double cold = stage_ms(two, sched::L2Timing::kColdWeights);
  const double between = stage_ms(two, sched::L2Timing::kColdShare, &share);
  std::printf(
      "[l2] two 38 MB linears: first one warm %.4f, cold-weights %.4f, l2-share %.4f ms, share %.2f (ops %.4f warm, "
      "%.4f cold, network %.4f)\n",
      warm, cold, between, share.share, share.ops_warm_ms, share.ops_cold_ms, share.network_ms);
  expect_share_adds_up(share);
  EXPECT_GT(share.ops_cold_ms, share.ops_warm_ms);
  EXPECT_GT(between, 0.9 * std::min(warm, cold));
  EXPECT_LT(between, 1.1 * std::max(warm, cold));
  // Calibrated for prefetching too: the network is also timed with prefetch nodes, and the faster counts.
  EXPECT_EQ(share.prefetched_network_ms, 0);
  stage_ms(two, sched::L2Timing::kColdShare, &share, 1);
  std::printf("[l2] two 38 MB linears, prefetching: share %.2f (network %.4f, prefetching %.4f)\n", share.share,
              share.network_ms, share.prefetched_network_ms);
  EXPECT_GT(share.prefetched_network_ms, 0);
  EXPECT_LE(share.network_ms, share.prefetched_network_ms);
  expect_share_adds_up(share);
}

// The default rule's L2 mode follows the network: a 134 MB layer's weights exceed any GPU's L2 we run on, so
// every replay is timed with them cold and no share is calibrated; a small block's fit, and are weighed by
// the share.
TEST(GpuRuntime, TheDefaultRuleTimesWeightsColdWhereTheNetworkExceedsTheL2) {
  SKIP_WITHOUT_GPU();
  const ir::Graph big = linear_layer(16384, 2048), small = testing::inception_block(64, 28);
  MeasuredCostModel big_model(big, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  MeasuredCostModel small_model(small, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  EXPECT_EQ(big_model.rule().l2, sched::L2Timing::kColdWeights) << big_model.rule().describe();
  EXPECT_EQ(small_model.rule().l2, sched::L2Timing::kColdShare) << small_model.rule().describe();
  ASSERT_TRUE(big_model.rule().footprint);
  EXPECT_GE(big_model.rule().footprint->weight_bytes, int64_t{16384} * 2048 * 4);
  auto ms = big_model.stage_latency_ms(big, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_FALSE(big_model.cold_share(1).has_value());  // nothing to weigh: no calibration
}

// With workers on two GPUs the calibration's ops are dealt out over both (the workers wait for it): the
// sums and the share come out as on one GPU, up to timing noise, and the second GPU's worker times after.
TEST(GpuRuntime, TheColdShareCalibratedOnTwoGpusAddsUpAsOnOne) {
  SKIP_WITHOUT_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two GPUs";
  const ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule.l2 = sched::L2Timing::kColdShare;
  const sched::Stage stage{sched::StageKind::kConcurrent, {{1}}};
  std::vector<MeasuredCostModel::ShareCalibration> shares;
  auto calibrated = [&](int on_devices) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    auto first_context = Context::create(ContextOptions{});
    ASSERT_TRUE(first_context) << first_context.status().to_string();
    MeasuredCostModel first(g, params, *first_context);
    std::unique_ptr<MeasuredCostModel> second;
    if (on_devices == 2) {
      ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
      auto context = Context::create(ContextOptions{});
      ASSERT_TRUE(context) << context.status().to_string();
      second = std::make_unique<MeasuredCostModel>(first, params, *context);
      ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
    ASSERT_TRUE(first.stage_latency_ms(g, stage, 1));
    if (second) {
      ASSERT_TRUE(second->stage_latency_ms(g, stage, 1)) << "the second GPU's worker times after";
    }
    const auto c = first.cold_share(1);
    ASSERT_TRUE(c);
    std::printf("[calibration] %d GPU(s): %d ops %.4f ms warm, %.4f cold, network %.4f, share %.2f, %.2f s\n",
                on_devices, c->ops, c->ops_warm_ms, c->ops_cold_ms, c->network_ms, c->share,
                first.calibration_time().seconds);
    shares.push_back(*c);
  };
  calibrated(1);
  calibrated(2);
  ASSERT_EQ(shares.size(), 2u);
  // Every op timed once; the sums of a dozen 3-4 us kernels on two GPUs within timing noise (an H200 pair
  // differed by up to 10 %).
  EXPECT_EQ(shares[0].ops, int(sched::all_stages(sched::sequential_schedule(g)).size()));
  EXPECT_EQ(shares[1].ops, shares[0].ops);
  EXPECT_NEAR(shares[1].ops_warm_ms, shares[0].ops_warm_ms, 0.25 * shares[0].ops_warm_ms);
  EXPECT_NEAR(shares[1].ops_cold_ms, shares[0].ops_cold_ms, 0.25 * shares[0].ops_cold_ms);
  EXPECT_NEAR(shares[1].network_ms, shares[0].network_ms, 0.25 * shares[0].network_ms);
}

// Workers on two GPUs asking at once: a worker out of slots times again a slot the other GPU still times
// (its first kernels' builds), and each slot counts once, whoever finishes it first.
TEST(GpuRuntime, TwoGpusCalibratingAtOnceCountEveryOpOnce) {
  SKIP_WITHOUT_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two GPUs";
  const ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule.l2 = sched::L2Timing::kColdShare;
  std::vector<std::unique_ptr<MeasuredCostModel>> models;
  for (int device : {0, 1}) {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    auto context = Context::create(ContextOptions{});
    ASSERT_TRUE(context) << context.status().to_string();
    models.push_back(device == 0 ? std::make_unique<MeasuredCostModel>(g, params, *context)
                                 : std::make_unique<MeasuredCostModel>(*models[0], params, *context));
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<Expected<double>> figures(2, error(ErrorCode::kNotFound, "not asked"));
  std::vector<std::thread> workers;
  for (size_t w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      figures[w] =
          models[w]->stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{ir::NodeId(w + 1)}}}, 1);
    });
  for (std::thread& t : workers) t.join();
  for (size_t w = 0; w < 2; ++w) ASSERT_TRUE(figures[w]) << w << ": " << figures[w].status().to_string();
  const auto c = models[0]->cold_share(1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ops, int(sched::all_stages(sched::sequential_schedule(g)).size()));
  EXPECT_GT(c->network_ms, 0);
  // The job is gone: a later batch calibrates anew on both.
  ASSERT_TRUE(models[1]->stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 2));
  ASSERT_TRUE(models[0]->cold_share(2));
  EXPECT_EQ(models[0]->cold_share(2)->ops, c->ops);
}

// A stage replayed as its own CUDA graph pays a launch that inside the network's graph is one more
// dependency: a microsecond or so on the H100, never negative, and taken off every figure.
TEST(GpuRuntime, TheStageBoundaryIsMeasuredOnceAndIsAFewMicrosecondsAtMost) {
  SKIP_WITHOUT_GPU();
  auto context = Context::create(ContextOptions{});
  ASSERT_TRUE(context) << context.status().to_string();
  auto first = (*context)->timing_stream()->stage_boundary();
  ASSERT_TRUE(first) << first.status().to_string();
  std::printf("[boundary] %.3f us a replay of the lead's graph, %.3f us an event\n", first->graph_ms * 1e3,
              first->event_ms * 1e3);
  EXPECT_GT(first->graph_ms, 0.0);
  EXPECT_LT(first->graph_ms, 0.01);
  EXPECT_GE(first->event_ms, 0.0);
  EXPECT_LT(first->event_ms, 0.01);
  auto again = (*context)->timing_stream()->stage_boundary();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->graph_ms, first->graph_ms);
  EXPECT_EQ(again->event_ms, first->event_ms);
}

// The L2 each timing rule leaves a replay. A batch-1 linear layer with 38 MB of weights is bound by
// reading them: replayed back to back they stay in the L2 (50 MB on the H100); flushed before each replay
// (cold-l2, cold-weights) they come from memory. A pooling layer reading a 12.8 MB activation finds it in
// the L2 when warm and when its activations are read back after the flush (cold-weights), not when only
// flushed (cold-l2).
TEST(GpuRuntime, ColdTimingsEvictWeightsAndColdWeightsKeepsActivationsInTheL2) {
  SKIP_WITHOUT_GPU();
  const ir::Graph linear = linear_layer(9216, 1024);
  ir::GraphBuilder pool_builder("activation_bound", {64, 224, 224});
  pool_builder.begin_block();
  pool_builder.end_block(pool_builder.pool(pool_builder.input(), ir::MaxPool(3).stride(1).pad(1)));
  const ir::Graph pool = *pool_builder.build();
  const sched::L2Timing modes[] = {sched::L2Timing::kWarm, sched::L2Timing::kFlushed, sched::L2Timing::kColdWeights};
  double lin[3], act[3];
  for (int m = 0; m < 3; ++m) {
    lin[m] = stage_ms(linear, modes[m]);
    act[m] = stage_ms(pool, modes[m]);
  }
  std::printf("[l2] weights-bound linear: warm %.4f, cold-l2 %.4f, cold-weights %.4f ms\n", lin[0], lin[1], lin[2]);
  std::printf("[l2] activation-bound pool: warm %.4f, cold-l2 %.4f, cold-weights %.4f ms\n", act[0], act[1], act[2]);
  // H100: 4.6-7.4 %, since a span of one replay (cold) loses a whole event and a span of two (warm) half of
  // one each (TimingStream::Boundary).
  EXPECT_GT(lin[1], 1.03 * lin[0]);
  EXPECT_GT(lin[2], 1.03 * lin[0]);
  EXPECT_LT(act[2], act[1]);
  EXPECT_LT(act[2], 1.1 * act[0]);
}

// Executors on one store share weights by op and step: a plan that merges convolutions and one that
// does not, built on the same store (merged and single weights side by side), both match the CPU.

}  // namespace
}  // namespace ios::rt
