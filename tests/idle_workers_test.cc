// Idle workers lending themselves to others: who helps whom, pieces of a request, limits, errors.
#include "search_test_support.h"

namespace ios::sched {
namespace {

// Answers signature_latency, records what it timed (and each request's size), and can be told to hold each
// request until another model has been asked (so that a waiting worker surely takes a piece) or to fail.
class GatedModel : public CostModel, public Measurement {
 public:
  Measurement* measurement() override { return this; }
  std::string name() const override { return "gated"; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
    return signature_latency(g, st);
  }
  Expected<std::vector<double>> stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages, int) override {
    if (wait_for && !wait_for->asked_within(std::chrono::seconds(20)))
      return error(ErrorCode::kRuntimeError, "the other model was never asked");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      timed.insert(timed.end(), stages.begin(), stages.end());
      pieces.push_back(stages.size());
      asked_ = true;
    }
    asked_cv_.notify_all();
    if (fails) return error(ErrorCode::kRuntimeError, "GPU 2 fell off the bus");
    std::vector<double> out;
    for (const Stage& st : stages) out.push_back(signature_latency(g, st));
    return out;
  }
  std::string timing_device() const override { return device_name; }
  bool asked_within(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return asked_cv_.wait_for(lock, limit, [&] { return asked_; });
  }
  GatedModel* wait_for = nullptr;
  bool fails = false;
  std::string device_name;
  std::vector<Stage> timed;
  std::vector<size_t> pieces;

 private:
  std::mutex mutex_;
  std::condition_variable asked_cv_;
  bool asked_ = false;
};

std::vector<Stage> single_op_stages(int count) {
  std::vector<Stage> out;
  for (int i = 1; i <= count; ++i) out.push_back(Stage{StageKind::kConcurrent, {{ir::NodeId(i)}}});
  return out;
}

// Worker `i` of `pool` out of parts, serving on a thread of its own from construction (which returns once
// it waits) until the pool is closed.
class Serving {
 public:
  Serving(IdleWorkers& pool, size_t i) : pool_(pool) {
    const size_t before = pool.waiting();
    thread_ = std::thread([&pool, i] { pool.serve(i); });
    while (pool.waiting() == before) std::this_thread::yield();
  }
  ~Serving() {
    pool_.close();
    thread_.join();
  }

 private:
  IdleWorkers& pool_;
  std::thread thread_;
};

// Every stage of `stages` timed once by one of `models`, each model's stages in runs of consecutive ones.
void expect_shared_out(const std::vector<Stage>& stages, const std::vector<const GatedModel*>& models) {
  std::map<ir::NodeId, int> times;
  for (const GatedModel* m : models)
    for (const Stage& st : m->timed) ++times[st.groups[0][0]];
  ASSERT_EQ(times.size(), stages.size()) << "a stage was not timed";
  for (const auto& [op, n] : times) EXPECT_EQ(n, 1) << "stage of op " << op << " timed " << n << " times";
  for (const GatedModel* m : models) {
    size_t at = 0;
    for (size_t piece : m->pieces) {
      for (size_t k = at + 1; k < at + piece; ++k)
        EXPECT_EQ(m->timed[k].groups[0][0], m->timed[k - 1].groups[0][0] + 1) << "a piece is not contiguous";
      at += piece;
    }
  }
}

TEST(IdleWorkers, AWaitingWorkerTimesPiecesOfAnotherWorkersRequestAndTheAnswersKeepTheirOrder) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, idle;
  busy.wait_for = &idle;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(idle);
  pool.open();
  auto helper = std::make_unique<Serving>(pool, 1);
  EXPECT_EQ(spare_workers(asker), 1u);
  const std::vector<Stage> stages = single_op_stages(24);
  auto ms = asker.stage_latencies_ms(*g, stages, 1);
  helper.reset();  // closes the pool
  ASSERT_TRUE(ms) << ms.status().to_string();
  ASSERT_EQ(ms->size(), stages.size());
  for (size_t i = 0; i < stages.size(); ++i) EXPECT_DOUBLE_EQ((*ms)[i], signature_latency(*g, stages[i])) << i;
  expect_shared_out(stages, {&busy, &idle});
  // The asker takes the first piece before the request is shared: the least piece, 8 of 24 over 2 takers.
  ASSERT_FALSE(busy.pieces.empty());
  EXPECT_EQ(busy.pieces[0], IdleWorkers::kMinPiece);
  EXPECT_EQ(busy.timed[0], stages[0]);
  EXPECT_FALSE(idle.timed.empty());
  EXPECT_EQ(pool.stats().chunks_lent, int64_t(idle.pieces.size()));
  EXPECT_EQ(pool.stats().stages_lent, int64_t(idle.timed.size()));
  EXPECT_EQ(spare_workers(asker), 0u) << "closed";
}

TEST(IdleWorkers, PiecesShrinkAsFewerStagesAreLeftDownToTheLeastPiece) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, first, second;
  first.device_name = "cuda:1", second.device_name = "cuda:2";
  busy.wait_for = first.wait_for = &second;  // each helper takes a piece before the asker's first comes back
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(first);
  pool.add(second);
  pool.open();
  Serving one(pool, 1), two(pool, 2);
  const std::vector<Stage> stages = single_op_stages(96);
  ASSERT_TRUE(asker.stage_latencies_ms(*g, stages, 1));
  expect_shared_out(stages, {&busy, &first, &second});
  // Three takers: a sixth of what is left, at least 8; the asker takes the first.
  EXPECT_EQ(busy.pieces[0], 16u);
  std::vector<size_t> all;
  for (const GatedModel* m : {&busy, &first, &second}) all.insert(all.end(), m->pieces.begin(), m->pieces.end());
  std::sort(all.begin(), all.end(), std::greater<>());
  EXPECT_EQ(all, (std::vector<size_t>{16, 14, 11, 10, 8, 8, 8, 8, 8, 5}));
}

TEST(IdleWorkers, WithoutAWaitingWorkerOrAfterCloseTheAskerTimesEverything) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel own, other;
  IdleWorkers pool;
  CostModel& asker = pool.add(own);
  pool.add(other);
  pool.open();
  ASSERT_TRUE(asker.stage_latencies_ms(*g, single_op_stages(4), 1));
  pool.close();
  pool.serve(1);  // returns at once: closed
  ASSERT_TRUE(asker.stage_latencies_ms(*g, single_op_stages(4), 1));
  EXPECT_EQ(own.timed.size(), 8u);
  EXPECT_TRUE(other.timed.empty());
  EXPECT_EQ(pool.stats().chunks_lent, 0);
}

TEST(IdleWorkers, OnlyWorkersOnAnotherLaneHelp) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, sibling, other_gpu;
  busy.device_name = sibling.device_name = "cuda:0";
  other_gpu.device_name = "cuda:1";
  busy.wait_for = &other_gpu;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(sibling);
  pool.add(other_gpu);
  pool.open();
  Serving on_same_gpu(pool, 1);
  EXPECT_EQ(spare_workers(asker), 0u) << "its sibling on the same GPU counted";
  Serving on_other_gpu(pool, 2);
  EXPECT_EQ(spare_workers(asker), 1u);
  const std::vector<Stage> stages = single_op_stages(24);
  auto ms = asker.stage_latencies_ms(*g, stages, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_TRUE(sibling.timed.empty());
  EXPECT_FALSE(other_gpu.timed.empty());
  expect_shared_out(stages, {&busy, &other_gpu});
}

TEST(IdleWorkers, ASiblingOutOfPartsHelpsWithLargeRequestsOnly) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, sibling;
  busy.device_name = sibling.device_name = "cuda:0";
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(sibling);
  pool.open();
  Serving on_same_gpu(pool, 1);
  EXPECT_EQ(spare_workers(asker), 0u) << "the DP's batch grew for a sibling";
  const size_t n = IdleWorkers::kSiblingMinStages;
  auto small = asker.stage_latencies_ms(*g, single_op_stages(int(n - 1)), 1);
  ASSERT_TRUE(small) << small.status().to_string();
  EXPECT_TRUE(sibling.timed.empty());
  busy.wait_for = &sibling;  // so that the sibling surely takes a piece
  busy.timed.clear(), busy.pieces.clear();
  const std::vector<Stage> stages = single_op_stages(int(n));
  auto large = asker.stage_latencies_ms(*g, stages, 1);
  ASSERT_TRUE(large) << large.status().to_string();
  EXPECT_FALSE(sibling.timed.empty());
  expect_shared_out(stages, {&busy, &sibling});
}

TEST(IdleWorkers, WorkersHelpOnlyOnceEveryWorkerOfTheirGpuIsOutOfParts) {
  GatedModel busy, helper, still_searching;
  busy.device_name = "cuda:0";
  helper.device_name = still_searching.device_name = "cuda:1";
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(helper);
  pool.add(still_searching);
  pool.open();
  Serving first(pool, 1);
  EXPECT_EQ(spare_workers(asker), 0u) << "its GPU still searches a part";
  Serving second(pool, 2);
  EXPECT_EQ(spare_workers(asker), 2u);
}

TEST(IdleWorkers, AWaitingWorkersErrorReachesTheAsker) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  GatedModel busy, broken;
  busy.wait_for = &broken;
  broken.fails = true;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(broken);
  pool.open();
  Serving helper(pool, 1);
  auto ms = asker.stage_latencies_ms(*g, single_op_stages(16), 1);
  ASSERT_FALSE(ms);
  EXPECT_NE(ms.status().message().find("fell off the bus"), std::string::npos) << ms.status().message();
}

TEST(IdleWorkers, LimitsTravelWithTheirStages) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  class LimitRecording : public GatedModel {
   public:
    Expected<std::vector<double>> limited_stage_latencies_ms(const ir::Graph& g, const std::vector<Stage>& stages,
                                                             const std::vector<double>& limits, int batch) override {
      for (size_t i = 0; i < stages.size(); ++i) seen[stages[i].groups[0][0]] = limits[i];
      return stage_latencies_ms(g, stages, batch);
    }
    std::map<ir::NodeId, double> seen;
  } busy, idle;
  busy.wait_for = &idle;
  IdleWorkers pool;
  CostModel& asker = pool.add(busy);
  pool.add(idle);
  pool.open();
  Serving helper(pool, 1);
  std::vector<double> limits;
  for (int i = 1; i <= 16; ++i) limits.push_back(10.0 * i);
  auto ms = asker.limited_stage_latencies_ms(*g, single_op_stages(16), limits, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_FALSE(idle.seen.empty());
  EXPECT_EQ(busy.seen.size() + idle.seen.size(), 16u);
  for (const auto* seen : {&busy.seen, &idle.seen})
    for (const auto& [op, limit] : *seen) EXPECT_DOUBLE_EQ(limit, 10.0 * double(op)) << "stage of op " << op;
  EXPECT_FALSE(asker.limited_stage_latencies_ms(*g, single_op_stages(4), {10}, 1)) << "one limit for four stages";
}

TEST(IdleWorkers, SpareWorkersMakeTheDpAskMoreStagesAtOnceForTheSameSchedule) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  class Spare : public BatchRecordingModel, public Measurement {
   public:
    Measurement* measurement() override { return this; }
    std::string timing_device() const override { return ""; }
    size_t spare_workers() const override { return spare; }
    size_t spare = 0;
  };
  Expected<OptimizeResult> r[2] = {error(ErrorCode::kNotFound, ""), error(ErrorCode::kNotFound, "")};
  size_t largest[2] = {0, 0};
  for (int spare : {0, 1}) {
    Spare model;
    model.spare = spare ? 3 : 0;
    OptimizeOptions o;
    o.max_part_size = 50;
    o.stage_batch = 4;
    o.states_together = 1;
    r[spare] = optimize(*g, o, model);
    ASSERT_TRUE(r[spare]) << r[spare].status().to_string();
    largest[spare] = largest_request(model.requests);
  }
  EXPECT_EQ(stage_lists(r[1]->schedule), stage_lists(r[0]->schedule));
  EXPECT_DOUBLE_EQ(r[1]->schedule.meta.latency_ms, r[0]->schedule.meta.latency_ms);
  EXPECT_LE(largest[0], 4u);
  EXPECT_GT(largest[1], 4u);
  EXPECT_LE(largest[1], 16u);  // the batch times (1 + 3 spare workers)
  EXPECT_LT(r[1]->stats.cost_requests, r[0]->stats.cost_requests);
}

TEST(IdleWorkers, ASearchWithWorkersLentGivesOneWorkersScheduleAndMeasuresEachStageOnce) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  auto g = models::build_model("nasnet", mo);
  ASSERT_TRUE(g);
  const WorkerRun one = search_with_workers(*g, 1);
  std::vector<std::unique_ptr<CountingModel>> inner;
  for (int i = 0; i < 4; ++i) inner.push_back(std::make_unique<CountingModel>(*g));
  IdleWorkers pool;
  StageCache cache(pool.add(*inner[0]), "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (size_t i = 1; i < inner.size(); ++i) {
    views.push_back(cache.worker(pool.add(*inner[i])));
    o.extra_models.push_back(views.back().get());
  }
  o.idle_workers = &pool;
  auto lent = optimize(*g, o, cache);
  ASSERT_TRUE(one.result && lent) << lent.status().to_string();
  EXPECT_EQ(stage_lists(lent->schedule), stage_lists(one.result->schedule));
  EXPECT_EQ(lent->stats.states, one.result->stats.states);
  std::vector<std::string> asked;
  for (const auto& m : inner) {
    auto a = m->asked();
    asked.insert(asked.end(), a.begin(), a.end());
  }
  EXPECT_EQ(std::set<std::string>(asked.begin(), asked.end()).size(), asked.size()) << "a stage was measured twice";
  EXPECT_EQ(spare_workers(cache), 0u) << "the search closed the pool";
}

TEST(IdleWorkers, APoolOfAnotherSizeThanTheWorkersIsAnError) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel a(signature_latency), b(signature_latency);
  IdleWorkers pool;
  StageCache cache(pool.add(a), "t");
  auto view = cache.worker(b);  // not pooled
  OptimizeOptions o;
  o.extra_models = {view.get()};
  o.idle_workers = &pool;
  auto r = optimize(*g, o, cache);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("1 models pooled for 2 workers"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ios::sched
