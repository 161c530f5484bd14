// The part-level search: identical parts solved once, several workers giving one worker's schedule, parts
// spread over GPUs, progress, budgets.
#include "search_test_support.h"

namespace ios::sched {
namespace {

TEST(PartSearch, IdenticalCellsTakeTheFirstCellsSolutionWithTheSameSchedule) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  OptimizeOptions searched_all;
  searched_all.reuse_parts = false;
  StageCache cache_all(table, "t");
  auto all = optimize(*g, searched_all, cache_all);
  StageCache cache_reuse(table, "t");
  auto reused = optimize(*g, OptimizeOptions{}, cache_reuse);
  ASSERT_TRUE(all && reused);
  EXPECT_GT(reused->parts_reused, 0u);
  EXPECT_EQ(all->parts_reused, 0u);
  EXPECT_LT(reused->stats.states, all->stats.states);
  EXPECT_EQ(stage_lists(reused->schedule), stage_lists(all->schedule));
  EXPECT_DOUBLE_EQ(reused->schedule.meta.latency_ms, all->schedule.meta.latency_ms);
}

TEST(PartSearch, InceptionV3HasExactlyOnePairOfIdenticalParts) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  const auto keys = op_keys(*g);
  std::set<std::string> signatures;
  size_t parts = 0;
  for (size_t b = 0; b < g->blocks.size(); ++b)
    for (auto part : block_parts(*g, b, 100)) {
      std::sort(part.begin(), part.end());
      signatures.insert(part_signature(*g, keys, part));
      ++parts;
    }
  // Of Inception V3's modules only two 17x17 ones (160 channels) are identical, inputs included.
  EXPECT_EQ(signatures.size(), parts - 1);
}

TEST(PartSearch, FourWorkersGiveOneWorkersScheduleAndMeasureEachStageOnce) {
  for (const char* name : {"nasnet", "inception_v3"}) {
    models::ModelOptions mo;
    mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
    auto g = models::build_model(name, mo);
    ASSERT_TRUE(g) << name;
    const WorkerRun one = search_with_workers(*g, 1);
    const WorkerRun four = search_with_workers(*g, 4);
    ASSERT_TRUE(one.result && four.result) << name;
    EXPECT_EQ(stage_lists(four.result->schedule), stage_lists(one.result->schedule)) << name;
    EXPECT_EQ(four.result->stats.states, one.result->stats.states) << name;
    // Every stage measured exactly once over all workers: the same set as one worker measured.
    std::multiset<std::string> a(one.asked.begin(), one.asked.end()), b(four.asked.begin(), four.asked.end());
    EXPECT_EQ(a, b) << name;
    EXPECT_EQ(std::set<std::string>(b.begin(), b.end()).size(), b.size()) << name << ": a stage was measured twice";
  }
}

TEST(PartSearch, TheTimelineHasEverySearchedPartOnceOnAWorkerThatExists) {
  models::ModelOptions mo;
  mo.nasnet_filters = 32, mo.nasnet_stem_filters = 16;
  auto g = models::build_model("nasnet", mo);
  ASSERT_TRUE(g);
  const WorkerRun four = search_with_workers(*g, 4);
  ASSERT_TRUE(four.result);
  const OptimizeResult& r = *four.result;
  EXPECT_EQ(r.timeline.size(), r.parts - r.parts_reused);
  std::set<size_t> workers;
  for (const PartTiming& t : r.timeline) {
    EXPECT_LT(t.worker, 4u);
    EXPECT_GT(t.ops, 0u);
    EXPECT_LE(t.start_s, t.end_s);
    EXPECT_LE(t.end_s, r.policy_seconds);
    workers.insert(t.worker);
  }
  EXPECT_GT(workers.size(), 1u) << "the parts went to one worker";
}

TEST(PartSearch, WithNoMorePartsThanWorkersThePartsGoOneToEachGpuBeforeAnyGpuGetsASecond) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel table(signature_latency);
  auto alone = optimize(*g, OptimizeOptions{}, table);
  ASSERT_TRUE(alone);
  const size_t parts = alone->parts - alone->parts_reused;
  class OnDevice : public TableCostModel, public Measurement {
   public:
    explicit OnDevice(std::string device) : TableCostModel(signature_latency), device_(std::move(device)) {}
    Measurement* measurement() override { return this; }
    std::string timing_device() const override { return device_; }
    Expected<double> stage_latency_ms(const ir::Graph& graph, const Stage& st, int batch) override {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // a part takes long enough to be seen
      return TableCostModel::stage_latency_ms(graph, st, batch);
    }

   private:
    std::string device_;
  };
  // As many workers as parts: the first half on GPU 0, the second on GPU 1.
  const size_t workers = parts + parts % 2;
  std::vector<std::unique_ptr<OnDevice>> inner;
  for (size_t w = 0; w < workers; ++w)
    inner.push_back(std::make_unique<OnDevice>(w < workers / 2 ? "cuda:0" : "cuda:1"));
  StageCache cache(*inner[0], "t");
  std::vector<std::unique_ptr<CostModel>> views;
  OptimizeOptions o;
  for (size_t w = 1; w < workers; ++w) {
    views.push_back(cache.worker(*inner[w]));
    o.extra_models.push_back(views.back().get());
  }
  auto r = optimize(*g, o, cache);
  ASSERT_TRUE(r) << r.status().to_string();
  std::vector<PartTiming> by_size = r->timeline;  // the search's order: largest first, then search order
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.ops > b.ops; });
  ASSERT_GE(by_size.size(), 2u);
  // The devices' first workers, 0 and workers / 2, take the two largest.
  EXPECT_EQ(std::set<size_t>({by_size[0].worker, by_size[1].worker}), std::set<size_t>({0, workers / 2}))
      << "the two largest parts: workers " << by_size[0].worker << " and " << by_size[1].worker;
}

TEST(PartSearch, WorkerLoadSumsBusyTimePerWorkerAndNamesThePartThatEndedLast) {
  const std::vector<PartTiming> timeline = {
      {0, 40, 0.0, 3.0}, {1, 30, 0.0, 1.0}, {1, 20, 1.0, 1.5}, {0, 10, 3.0, 3.2}, {2, 8, 0.5, 4.0}};
  const WorkerLoad load = worker_load(timeline, 3);
  EXPECT_DOUBLE_EQ(load.span_s, 4.0);
  ASSERT_EQ(load.busy_s.size(), 3u);
  EXPECT_NEAR(load.busy_s[0], 3.2, 1e-12);
  EXPECT_NEAR(load.busy_s[1], 1.5, 1e-12);
  EXPECT_NEAR(load.busy_s[2], 3.5, 1e-12);
  EXPECT_NEAR(load.idle_s(), 12.0 - 8.2, 1e-12);
  EXPECT_EQ(load.last.ops, 8u);
  EXPECT_EQ(load.last.worker, 2u);
  EXPECT_NE(load.summary().find("busy 3.2, 1.5, 3.5 s"), std::string::npos) << load.summary();
}

TEST(PartSearch, AWorkersFailureEndsTheSearchWithItsError) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  TableCostModel fine(signature_latency);
  class Failing : public CostModel {
   public:
    std::string name() const override { return "failing"; }
    Expected<double> stage_latency_ms(const ir::Graph&, const Stage&, int) override {
      return error(ErrorCode::kRuntimeError, "GPU 3 fell off the bus");
    }
  } broken;
  StageCache cache(fine, "t");
  auto view = cache.worker(broken);
  OptimizeOptions o;
  o.extra_models = {view.get()};
  auto r = optimize(*g, o, cache);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("fell off the bus"), std::string::npos) << r.status().message();
}

TEST(PartSearch, ProgressCountsEveryPartOnceAndEndsAtTheTotals) {
  auto g = models::nasnet(6, 32);
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  std::vector<SearchProgress> seen;
  OptimizeOptions o;
  o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().parts_done, 0u);  // the totals come first
  size_t parts_reported = 0;
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_LE(seen[i].parts_done, seen[i - 1].parts_done + 1);  // one callback per part done
    EXPECT_GE(seen[i].parts_done, seen[i - 1].parts_done);
    parts_reported += seen[i].parts_done > seen[i - 1].parts_done;
  }
  EXPECT_EQ(parts_reported, r->parts);
  EXPECT_EQ(seen.back().parts_done, r->parts);
  EXPECT_EQ(seen.back().ops_done, seen.back().ops_total);
  EXPECT_EQ(seen.back().ops_running, 0.0);
  EXPECT_EQ(seen.back().parts_reused, r->parts_reused);
}

// The ops done, counting the parts being searched by the share of their states solved.
double ops_progress(const SearchProgress& p) { return double(p.ops_done) + p.ops_running; }

TEST(PartSearch, ProgressInsideAPartGrowsWithItsStatesSolvedBeforeThePartEnds) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  for (int workers : {1, 2}) {
    // A part's states take a while, so that the calling thread reports between a part's sizes.
    class Slow : public CostModel {
     public:
      std::string name() const override { return "slow"; }
      Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int) override {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        return signature_latency(g, st);
      }
    };
    Slow model, second;
    std::vector<SearchProgress> seen;
    OptimizeOptions o;
    o.max_part_size = 50;
    if (workers > 1) o.extra_models = {&second};
    o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
    auto r = optimize(*g, o, model);
    ASSERT_TRUE(r) << r.status().to_string();
    bool inside = false;
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(ops_progress(seen[i]), ops_progress(seen[i - 1]) - 1e-9) << workers << " workers";
      inside = inside || (seen[i].ops_running > 0 && seen[i].parts_done == seen[i - 1].parts_done);
    }
    EXPECT_TRUE(inside) << workers << " workers: no progress reported inside a part";
    EXPECT_DOUBLE_EQ(ops_progress(seen.back()), double(seen.back().ops_total));
  }
}

TEST(PartSearch, APartSplitByTheBudgetReportsEachHalfAsHalfItsProgress) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  std::vector<SearchProgress> seen;
  OptimizeOptions o;
  o.max_part_size = 50;
  o.max_transitions = 300;
  o.on_part = [&](const SearchProgress& p) { seen.push_back(p); };
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r) << r.status().to_string();
  ASSERT_GT(r->stats.budget_splits, 0);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(ops_progress(seen[i]), ops_progress(seen[i - 1]) - 1e-9);
}

TEST(PartSearch, ASmallSearchBudgetSplitsPartsAndTheNoteNamesTheFlag) {
  auto g = models::inception_v3();
  ASSERT_TRUE(g);
  AnalyticCostModel model;
  OptimizeOptions o;
  o.max_transitions = 200;
  auto r = optimize(*g, o, model);
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_GT(r->stats.budget_splits, 0);
  ASSERT_FALSE(r->schedule.meta.notes.empty());
  EXPECT_NE(r->schedule.meta.notes.back().find("--search-budget"), std::string::npos);
  EXPECT_TRUE(validate(*g, r->schedule));
}

}  // namespace
}  // namespace ios::sched
