// What the DP asks of its cost model: stages in batches, states solved together, limits, screening, and the
// stage cache's keys.
#include "search_test_support.h"

namespace ios::sched {
namespace {

TEST(StageBatch, BatchedRequestsGiveTheScheduleOfOneStageAtATimeInFewerRequests) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "googlenet"}) {
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
    for (int batched : {0, 1}) {
      TableCostModel table(signature_latency);
      OptimizeOptions o;
      o.max_part_size = 50;
      o.stage_batch = batched ? 8 : 1;
      r[batched] = optimize(*g, o, table);
      ASSERT_TRUE(r[batched]) << r[batched].status().to_string();
    }
    EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule)) << name;
    EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms) << name;
    EXPECT_EQ(r[1]->stats.states, r[0]->stats.states) << name;
    EXPECT_LT(r[1]->stats.cost_requests, r[0]->stats.cost_requests) << name;
    // Speculation: a batch may hold stages a better ending among them prunes; few, with the first
    // candidate of a state asked alone.
    EXPECT_GE(r[1]->stats.stages_costed, r[0]->stats.stages_costed) << name;
    EXPECT_LE(double(r[1]->stats.stages_costed), 1.1 * double(r[0]->stats.stages_costed)) << name;
  }
}

TEST(StageBatch, OneStateAtATimeRequestsHoldAtMostTheBatchExceptTheSingleOpFloors) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  for (bool prune : {true, false}) {
    BatchRecordingModel model;
    OptimizeOptions o;
    o.max_part_size = 50;
    o.stage_batch = 4;
    o.states_together = 1;
    o.bound_pruning = prune;
    ASSERT_TRUE(optimize(*g, o, model));
    size_t largest = 0;
    for (const auto& request : model.requests) {
      const bool floors = std::all_of(request.begin(), request.end(),
                                      [](const Stage& st) { return st.groups.size() == 1 && st.ops().size() == 1; });
      if (!floors) {
        EXPECT_LE(request.size(), 4u);
      }
      largest = std::max(largest, request.size());
    }
    EXPECT_GT(largest, 1u) << "no request was batched";
  }
}

TEST(StatesTogether, StatesOfOneSizeAskInOneRequestAndGiveTheScheduleOfOneStateAtATime) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "randwire"}) {  // wide blocks: many states of a size
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
    size_t largest[2] = {0, 0};
    for (int together : {0, 1}) {
      BatchRecordingModel model;
      OptimizeOptions o;
      o.max_part_size = 50;
      o.stage_batch = 4;
      o.states_together = together ? 0 : 1;
      r[together] = optimize(*g, o, model);
      ASSERT_TRUE(r[together]) << name << ": " << r[together].status().to_string();
      largest[together] = largest_request(model.requests);
    }
    EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule)) << name;
    EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms) << name;
    EXPECT_EQ(r[1]->stats.states, r[0]->stats.states) << name;
    EXPECT_EQ(r[1]->stats.transitions, r[0]->stats.transitions) << name;
    EXPECT_LE(largest[0], 4u) << name;
    EXPECT_GT(largest[1], 4u) << name;
    // Every state prunes by its own bound, as alone: the requests are fewer, the stages about as many.
    EXPECT_LT(2 * r[1]->stats.cost_requests, r[0]->stats.cost_requests) << name;
    EXPECT_LE(double(r[1]->stats.stages_costed), 1.1 * double(r[0]->stats.stages_costed)) << name;
    EXPECT_GE(double(r[1]->stats.stages_costed), 0.9 * double(r[0]->stats.stages_costed)) << name;
  }
}

TEST(StatesTogether, RequestsHoldAtMostTheBatchForEachStateTogether) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  BatchRecordingModel model;
  OptimizeOptions o;
  o.max_part_size = 50;
  o.stage_batch = 2;
  o.states_together = 3;
  ASSERT_TRUE(optimize(*g, o, model));
  EXPECT_LE(largest_request(model.requests), 6u);
  EXPECT_GT(largest_request(model.requests), 2u);
}

TEST(StatesTogether, ANegativeCountIsRejectedByName) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  OptimizeOptions o;
  o.states_together = -1;
  auto r = optimize(*g, o, table);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("--states-together"), std::string::npos);
}

TEST(StageBatch, TheCacheMeasuresEachMissingStageOnceAndCountsTheRestAsHits) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}}, c{StageKind::kConcurrent, {{3}}};
  BatchRecordingModel inner;
  StageCache cache(inner, "t");
  auto first = cache.stage_latencies_ms(*g, {a, b, a}, 1);
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_EQ(inner.requests.size(), 1u);
  EXPECT_EQ(inner.requests[0].size(), 2u);  // a's second copy waits for the first
  EXPECT_DOUBLE_EQ((*first)[0], (*first)[2]);
  EXPECT_DOUBLE_EQ((*first)[1], signature_latency(*g, b));
  auto second = cache.stage_latencies_ms(*g, {b, c}, 1);
  ASSERT_TRUE(second);
  ASSERT_EQ(inner.requests.size(), 2u);
  EXPECT_EQ(inner.requests[1].size(), 1u);
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(StageBatch, AFailedRequestLeavesItsStagesToBeMeasuredAgain) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  BatchRecordingModel inner;
  StageCache cache(inner, "t");
  inner.fail_next = true;
  auto failed = cache.stage_latencies_ms(*g, {a, b}, 1);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.status().message().find("timed out"), std::string::npos);
  EXPECT_EQ(cache.size(), 0u);
  auto again = cache.stage_latencies_ms(*g, {a, b}, 1);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(inner.requests.size(), 1u);
  EXPECT_EQ(cache.size(), 2u);
}

// ---------- limits (DpOptions::limited_timing) ----------

// signature_latency's figures; records each stage asked and its limit (infinity: asked without one).
class LimitRecordingModel : public CostModel {
 public:
  std::string name() const override { return "limit-recording"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    asked.push_back({signature_latency(g, st), kNone});
    return asked.back().first;
  }
  Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                           const std::vector<double>& limits, int) override {
    std::vector<double> out;
    for (size_t i = 0; i < stages.size(); ++i) {
      out.push_back(signature_latency(g, stages[i]));
      asked.push_back({out.back(), limits[i]});
    }
    return out;
  }
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, double>> asked;  // (figure, limit)
};

TEST(DpLimits, StagesAreAskedWithWhatWouldBeatTheBestEndingSoFarAndTheOptimumIsUnchanged) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  OptimizeOptions o;
  o.max_part_size = 50;
  LimitRecordingModel model;
  auto limited = optimize(*g, o, model);
  ASSERT_TRUE(limited) << limited.status().to_string();
  int64_t finite = 0, past = 0;
  for (const auto& [figure, limit] : model.asked) {
    if (std::isinf(limit)) continue;
    ++finite;
    past += figure > limit;
    EXPECT_GT(limit, 0) << "a limit lies above the stage's floor, itself at least 0";
  }
  EXPECT_GT(finite, int64_t(model.asked.size()) / 2);
  EXPECT_GT(past, 0) << "some stages asked lose to the best ending so far";
  // The model ignores the limits: the same search without them finds the same schedule.
  TableCostModel table(signature_latency);
  auto plain = optimize(*g, o, table);
  ASSERT_TRUE(plain);
  EXPECT_EQ(stage_lists(limited->schedule), stage_lists(plain->schedule));
  EXPECT_DOUBLE_EQ(limited->schedule.meta.latency_ms, plain->schedule.meta.latency_ms);
}

TEST(DpLimits, NoLimitsWithFullTimingOrWithoutBoundPruning) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  for (bool prune : {true, false}) {
    OptimizeOptions o;
    o.bound_pruning = prune;
    o.limited_timing = !prune;  // full timing when pruning; limits asked for but no bound to give them
    LimitRecordingModel model;
    ASSERT_TRUE(optimize(*g, o, model));
    EXPECT_TRUE(std::all_of(model.asked.begin(), model.asked.end(), [](const auto& a) { return std::isinf(a.second); }))
        << "prune " << prune;
  }
}

TEST(DpLimits, TheStageCachePassesTheLimitsOfTheStagesItMeasures) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  LimitRecordingModel inner;
  StageCache cache(inner, "t");
  ASSERT_TRUE(cache.stage_latencies_ms(*g, {a}, 1));
  auto both = cache.limited_stage_latencies_ms(*g, {a, b}, {0.5, 0.25}, 1);
  ASSERT_TRUE(both) << both.status().to_string();
  ASSERT_EQ(inner.asked.size(), 2u);  // a from the cache
  EXPECT_DOUBLE_EQ(inner.asked[1].second, 0.25);
  EXPECT_DOUBLE_EQ((*both)[1], signature_latency(*g, b));
  auto mismatched = cache.limited_stage_latencies_ms(*g, {a, b}, {0.5}, 1);
  ASSERT_FALSE(mismatched);
  EXPECT_NE(mismatched.status().message().find("1 limits for 2 stages"), std::string::npos);
}

// ---------- screening (DpOptions::screen_margin) ----------

// Settled figures: signature_latency scaled to real stage latencies (0.1-5 ms, so that the margin's
// 2 us is small beside them); screening figures off by up to `error` either way, the same for a stage
// every time. Records every stage it settled.
double scaled_latency(const ir::Graph& g, const Stage& st) { return 100 * signature_latency(g, st); }

class ScreeningModel : public CostModel {
 public:
  explicit ScreeningModel(double error) : error_(error) {}
  std::string name() const override { return "screening"; }
  bool screens() const override { return true; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    settled.insert(signature(g, st));
    return scaled_latency(g, st);
  }
  Expected<std::vector<double>> screen_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                    int) override {
    std::vector<double> out;
    for (const Stage& st : stages) {
      const std::string h = signature_hash(signature(g, st));
      const double unit = double(std::stoull(h.substr(0, 8), nullptr, 16)) / double(0xFFFFFFFFull);  // [0, 1]
      out.push_back(scaled_latency(g, st) * (1 + error_ * (2 * unit - 1)));
      ++screened;
    }
    return out;
  }
  std::string signature(const ir::Graph& g, const Stage& st) {
    if (keys_.attrs.size() != g.nodes.size()) keys_ = op_keys(g);
    return stage_signature(g, keys_, st);
  }
  std::set<std::string> settled;
  int64_t screened = 0;

 private:
  double error_;
  OpKeys keys_;
};

TEST(Screening, FiguresWithinTheMarginGiveTheScheduleOfSettlingEveryStageWithFewerSettled) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  for (const char* name : {"inception_v3", "nasnet", "googlenet"}) {
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    TableCostModel table(scaled_latency);
    OptimizeOptions o;
    o.max_part_size = 50;
    auto all_settled = optimize(*g, o, table);
    ASSERT_TRUE(all_settled) << all_settled.status().to_string();
    ScreeningModel screening(0.08);
    o.screen_margin = 0.1;
    auto screened = optimize(*g, o, screening);
    ASSERT_TRUE(screened) << screened.status().to_string();
    EXPECT_EQ(stage_lists(screened->schedule), stage_lists(all_settled->schedule)) << name;
    EXPECT_NEAR(screened->schedule.meta.latency_ms, all_settled->schedule.meta.latency_ms, 1e-9) << name;
    EXPECT_GT(screened->stats.stages_settled, 0) << name;
    EXPECT_LT(screening.settled.size(), size_t(all_settled->stats.stages_costed)) << name;
    std::printf("[screening] %s: %zu stages settled of %lld screened; %lld settled without screening\n", name,
                screening.settled.size(), static_cast<long long>(screening.screened),
                static_cast<long long>(all_settled->stats.stages_costed));
  }
}

TEST(Screening, EveryStageOfTheChosenScheduleWasSettled) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  ScreeningModel screening(0.3);  // figures off by more than the margin: choices may differ, never unsettled
  OptimizeOptions o;
  o.screen_margin = 0.1;
  auto r = optimize(*g, o, screening);
  ASSERT_TRUE(r) << r.status().to_string();
  for (const auto& block : r->schedule.blocks)
    for (const Stage& st : block.stages) EXPECT_TRUE(screening.settled.count(screening.signature(*g, st)));
}

TEST(Screening, AModelThatDoesNotScreenIsSettledAtOnce) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
  for (int margin : {0, 1}) {
    TableCostModel table(signature_latency);
    OptimizeOptions o;
    o.screen_margin = margin ? 0.1 : 0.0;
    r[margin] = optimize(*g, o, table);
    ASSERT_TRUE(r[margin]) << r[margin].status().to_string();
  }
  EXPECT_EQ(r[1]->stats.stages_settled, 0);
  EXPECT_EQ(r[1]->stats.stages_costed, r[0]->stats.stages_costed);
  EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule));
}

TEST(Screening, TheStageCacheAnswersAScreeningRequestWithASettledFigureButNeverTheReverse) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const Stage a{StageKind::kConcurrent, {{1}}}, b{StageKind::kConcurrent, {{2}}};
  ScreeningModel inner(0.5);
  StageCache cache(inner, "t");
  ASSERT_TRUE(cache.stage_latencies_ms(*g, {a}, 1));  // a settled
  auto screened = cache.screen_latencies_ms(*g, {a, b}, 1);
  ASSERT_TRUE(screened);
  EXPECT_DOUBLE_EQ((*screened)[0], scaled_latency(*g, a));  // the settled figure
  EXPECT_EQ(inner.screened, 1);                             // only b was screened
  auto settled = cache.stage_latencies_ms(*g, {b}, 1);
  ASSERT_TRUE(settled);
  EXPECT_DOUBLE_EQ((*settled)[0], scaled_latency(*g, b));  // b timed again, settled
  EXPECT_EQ(inner.settled.size(), 2u);
}

// A stage's signature leaves out which of its groups share an outside input; a one-stage segment's
// keeps it. Over the stages a NasNet search asks (analytic model), the stage signatures are far fewer.
TEST(StageCacheKeys, StagesThatDifferOnlyInSharedInputsAreMeasuredOnceOverARealSearch) {
  auto g = models::nasnet();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> stages, with_links;
  TableCostModel record([&](const ir::Graph& graph, const Stage& st) {
    stages.insert(stage_signature(graph, keys, st));
    with_links.insert(segment_signature(graph, keys, {st}));
    return signature_latency(graph, st);
  });
  OptimizeOptions o;
  o.max_part_size = 50;
  ASSERT_TRUE(optimize(*g, o, record));
  std::printf("[signatures] nasnet: %zu distinct stages, %zu with shared-input links\n", stages.size(),
              with_links.size());
  EXPECT_LT(4 * stages.size(), 3 * with_links.size());  // 24,244 of 42,234 when written
}

TEST(StageCacheKeys, SignaturesHashToFixedWidthKeysWithoutCollisionsOverARealSearch) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> signatures, hashes;
  TableCostModel record([&](const ir::Graph& graph, const Stage& st) {
    const std::string sig = stage_signature(graph, keys, st);
    signatures.insert(sig);
    hashes.insert(signature_hash(sig));
    return signature_latency(graph, st);
  });
  OptimizeOptions o;
  o.bound_pruning = false;  // every ending costed: thousands of distinct signatures
  ASSERT_TRUE(optimize(*g, o, record));
  EXPECT_GT(signatures.size(), 3000u);
  EXPECT_EQ(hashes.size(), signatures.size());
  for (const std::string& h : hashes) EXPECT_EQ(h.size(), 32u);
  EXPECT_NE(signature_hash("a"), signature_hash("b"));
}

}  // namespace
}  // namespace ios::sched
