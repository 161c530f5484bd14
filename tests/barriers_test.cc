// Barrier placement for dataflow plans: the segment DP over measured stage and segment latencies, its refinement
// against the whole network, the stage cache, and spreading the timing over several GPUs.
#include "scheduler/barriers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "schedule_cases.h"
#include "scheduler/dataflow.h"
#include "scheduler/policies.h"
#include "scheduler/timing_devices.h"
#include "test_graphs.h"

namespace ios::sched {
namespace {

using schedule_cases::one_op_stages;

TEST(Dataflow, PlaceBarriersFindsTheCheapestCutsOfEverySegmentation) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  const int n = 9, longest = 3;
  // A segment of stages [a, b) costs a pseudo-random amount, cheaper or dearer than its stages alone.
  auto cost = [](int a, int b) { return 1.0 + double((a * 7919 + b * 104729) % 97) / 50.0; };
  auto first_op = [](const std::vector<Stage>& seg) { return int(seg.front().groups[0][0]) - 1; };
  TableCostModel model([&](const ir::Graph&, const Stage& st) { return cost(int(st.groups[0][0]) - 1, 0); },
                       [&](const ir::Graph&, const std::vector<Stage>& seg) {
                         const int a = first_op(seg);
                         return cost(a, a + int(seg.size()));
                       });
  auto placed = place_barriers(g, s, model, BarrierOptions{longest, 1});
  ASSERT_TRUE(placed) << placed.status().to_string();
  // Brute force: every set of cuts between the 9 stages whose segments are at most 3 long.
  double best = 1e9;
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    double total = 0;
    int start = 0;
    bool fits = true;
    for (int end = 1; end <= n; ++end)
      if (end == n || (cuts >> (end - 1) & 1)) {
        fits &= end - start <= longest;
        total += cost(start, end);
        start = end;
      }
    if (fits) best = std::min(best, total);
  }
  EXPECT_DOUBLE_EQ(placed->dataflow_ms, best);
  double chosen = 0;
  int start = 0;
  std::vector<int> ends = placed->barriers;
  ends.push_back(n);
  for (int end : ends) {
    EXPECT_LE(end - start, longest);
    chosen += cost(start, end);
    start = end;
  }
  EXPECT_DOUBLE_EQ(chosen, best) << "the barriers must cut the schedule into the segments priced";
  EXPECT_EQ(placed->segments, 3 * n - 3);  // lengths 1..3 ending at each stage
}

TEST(Dataflow, PlaceBarriersKeepsEveryBarrierWhenTheModelSeesNoOverlap) {
  const ir::Graph g = testing::inception_block();
  Schedule s = one_op_stages(g);
  // Segments cost the sum of their stages, added in another order than the DP adds them (rounding).
  TableCostModel model([](const ir::Graph&, const Stage& st) { return 0.1 * double(st.groups[0][0]) / 3.0; });
  auto placed = place_barriers(g, s, model, BarrierOptions{4, 1});
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_NEAR(placed->dataflow_ms, placed->barriers_ms, 1e-12);
  s.dataflow_barriers = placed->barriers;
  EXPECT_TRUE(validate(g, s));
}

TEST(Dataflow, PlaceBarriersDropsABarrierOnlyWhenTheSegmentWinsByTheMargin) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  // Every stage 1 ms; two stages without their barrier 1.9 ms (5 % less), longer segments no better.
  TableCostModel model([](const ir::Graph&, const Stage&) { return 1.0; },
                       [](const ir::Graph&, const std::vector<Stage>& seg) {
                         return seg.size() == 1 ? 1.0 : 0.95 * double(seg.size());
                       });
  auto eager = place_barriers(g, s, model, BarrierOptions{2, 1, 0.0});
  auto careful = place_barriers(g, s, model, BarrierOptions{2, 1, 0.06});
  ASSERT_TRUE(eager && careful);
  EXPECT_EQ(eager->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(eager->dataflow_ms, 4 * 1.9 + 1.0);
  EXPECT_EQ(careful->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_DOUBLE_EQ(careful->dataflow_ms, 9.0);
  EXPECT_FALSE(place_barriers(g, s, model, BarrierOptions{2, 1, -0.1}));
}

// Every stage 1 ms; two stages without their barrier 1.9 ms, longer segments no better, so the segment
// DP (segments of 2) keeps the barriers {2, 4, 6, 8} and leaves out {1, 3, 5, 7}. `penalty` adds what the whole network
// loses per missing barrier.
struct PairsModel {
  std::map<int, double> penalty;
  TableCostModel model{
      [](const ir::Graph&, const Stage&) { return 1.0; },
      [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 1 ? 1.0 : 0.95 * double(seg.size()); },
      [this](const std::vector<int>& barriers) { return network(barriers); }};
  double network(const std::vector<int>& barriers) const {
    double ms = 0;
    int start = 0;
    std::vector<int> ends = barriers;
    ends.push_back(9);
    for (int end : ends) ms += end - start == 2 ? 1.9 : double(end - start), start = end;  // pairs gain only
    for (const auto& [cut, extra] : penalty)
      if (!std::binary_search(barriers.begin(), barriers.end(), cut)) ms += extra;
    return ms;
  }
};

Expected<BarrierRefinement> placed_and_refined(const ir::Graph& g, const Schedule& s, CostModel& model,
                                               RefineOptions options = {}) {
  ASSIGN_OR_RETURN(BarrierPlacement placed, place_barriers(g, s, model, BarrierOptions{2, 1}));
  EXPECT_EQ(placed.barriers, (std::vector<int>{2, 4, 6, 8}));
  return refine_barriers(g, s, model, placed, options);
}

TEST(Dataflow, RefineBarriersRestoresABarrierTheWholeNetworkNeeds) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.5}};  // stages 2 and 3 overlap well alone, badly between their neighbours
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 3, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, m.network(refined->barriers));
  EXPECT_DOUBLE_EQ(refined->placed_ms, 4 * 1.9 + 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(refined->every_barrier_ms, 9.0);
  // One barrier out, then the other two improving ones at once.
  EXPECT_EQ(refined->passes, 2);
}

TEST(Dataflow, RefineBarriersKeepsEveryBarrierUnlessTheNetworkRunsFasterWithout) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{1, 0.2}, {3, 0.2}, {5, 0.2}, {7, 0.2}};
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, 9.0);
  EXPECT_EQ(refined->passes, 1);
}

TEST(Dataflow, RefineBarriersDropsEveryBarrierWhenTheWholeNetworkOverlapsBestWithout) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  // Overlaps across many stages that no segment of 2 can see: only the set without barriers shows them.
  TableCostModel model([](const ir::Graph&, const Stage&) { return 1.0; },
                       [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 2 ? 1.9 : 1.0; },
                       [&](const std::vector<int>& barriers) { return barriers.empty() ? 8.0 : m.network(barriers); });
  auto refined = placed_and_refined(g, s, model);
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_TRUE(refined->barriers.empty());
  EXPECT_DOUBLE_EQ(refined->measured_ms, 8.0);
}

TEST(Dataflow, RefineBarriersTriesEveryImprovingToggleAtOnce) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{1, 0.45}, {5, 0.25}};  // the first pass removes one barrier, the next the other one too
  auto refined = placed_and_refined(g, s, m.model, RefineOptions{2, 24, 0.005, 1});
  ASSERT_TRUE(refined) << refined.status().to_string();
  EXPECT_EQ(refined->barriers, (std::vector<int>{1, 2, 4, 5, 6, 8}));
  EXPECT_EQ(refined->passes, 2);
}

// A GPU of its own with `inner`'s figures, counting the segments it was asked.
class DeviceModel : public CostModel, public Measurement {
 public:
  DeviceModel(CostModel& inner, std::string device) : inner_(inner), device_(std::move(device)) {}
  Measurement* measurement() override { return this; }
  std::string name() const override { return "device"; }
  std::string timing_device() const override { return device_; }
  Expected<double> stage_latency_ms(const ir::Graph& g, const Stage& st, int batch) override {
    return inner_.stage_latency_ms(g, st, batch);
  }
  Expected<std::vector<double>> segment_latencies_ms(const ir::Graph& g,
                                                     const std::vector<std::vector<Stage>>& segments,
                                                     int batch) override {
    segments_asked += int64_t(segments.size());
    return inner_.segment_latencies_ms(g, segments, batch);
  }
  // Its figures `slower` times the inner model's: another GPU of the same model, a little slower.
  Expected<std::vector<double>> network_latencies_ms(const ir::Graph& g, const Schedule& s,
                                                     const std::vector<std::vector<int>>& barrier_sets,
                                                     int batch) override {
    sets_asked += int64_t(barrier_sets.size());
    requests.push_back(barrier_sets);
    ASSIGN_OR_RETURN(std::vector<double> ms, inner_.network_latencies_ms(g, s, barrier_sets, batch));
    for (double& x : ms) x *= slower;
    if (answers_short && !ms.empty()) ms.pop_back();
    return ms;
  }
  std::atomic<int64_t> segments_asked{0};
  int64_t sets_asked = 0;
  std::vector<std::vector<std::vector<int>>> requests;
  double slower = 1;
  bool answers_short = false;  // one latency fewer than the sets asked: a broken model

 private:
  CostModel& inner_;
  std::string device_;
};

TEST(TimingDevices, OnePerDeviceKeepsEachGpusFirstModelAndEveryModelWithoutADevice) {
  TableCostModel table([](const ir::Graph&, const Stage&) { return 1.0; });
  DeviceModel a0(table, "cuda:0"), a1(table, "cuda:0"), b(table, "cuda:1");
  EXPECT_EQ(one_per_device({&a0, &a1, &b, &table, &table}), (std::vector<CostModel*>{&a0, &b, &table, &table}));
}

TEST(TimingDevices, ChunksCoverTheRangeInOrderWithSizesDifferingByOneAtMost) {
  for (size_t n : {0, 1, 3, 10, 11}) {
    const std::vector<Chunk> chunks = chunks_of(n, 4);
    EXPECT_EQ(chunks.size(), std::min<size_t>(n, 4)) << n;
    size_t next = 0, smallest = n, largest = 0;
    for (const Chunk& c : chunks) {
      EXPECT_EQ(c.begin, next) << n;
      next = c.end;
      smallest = std::min(smallest, c.size()), largest = std::max(largest, c.size());
    }
    EXPECT_EQ(next, n);
    if (!chunks.empty()) {
      EXPECT_LE(largest - smallest, 1u) << n;
    }
  }
}

TEST(TimingDevices, PlaceBarriersOnTwoGpusTimesEachSegmentOnceAndPlacesAsOneGpu) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1"), sibling(m.model, "cuda:1");
  auto one = place_barriers(g, s, m.model, BarrierOptions{2, 1});
  auto two = place_barriers(g, s, std::vector<CostModel*>{&gpu0, &gpu1, &sibling}, BarrierOptions{2, 1});
  ASSERT_TRUE(one && two);
  EXPECT_EQ(two->barriers, one->barriers);
  EXPECT_DOUBLE_EQ(two->dataflow_ms, one->dataflow_ms);
  EXPECT_EQ(gpu0.segments_asked + gpu1.segments_asked, one->segments);
  EXPECT_GT(gpu0.segments_asked, 0);
  EXPECT_GT(gpu1.segments_asked, 0);
  EXPECT_EQ(sibling.segments_asked, 0) << "a second model on one GPU would time beside the first";
}

TEST(TimingDevices, RefineBarriersOnTwoGpusComparesEachSetWithTheCurrentOneTimedOnItsGpu) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.5}};
  auto placed = place_barriers(g, s, m.model, BarrierOptions{2, 1});
  ASSERT_TRUE(placed);
  auto one = refine_barriers(g, s, m.model, *placed, RefineOptions{});
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1"), sibling(m.model, "cuda:1");
  gpu1.slower = 1.1;  // as slow as ten times the threshold: it must not decide which set wins
  auto two = refine_barriers(g, s, std::vector<CostModel*>{&gpu0, &gpu1, &sibling}, *placed, RefineOptions{});
  ASSERT_TRUE(one && two) << (one ? two.status() : one.status()).to_string();
  EXPECT_EQ(two->barriers, one->barriers);
  EXPECT_EQ(two->passes, one->passes);
  EXPECT_NEAR(two->measured_ms, one->measured_ms, 1e-12);
  EXPECT_EQ(sibling.sets_asked, 0) << "a second model on one GPU would time beside the first";
  ASSERT_EQ(gpu0.requests.size(), size_t(two->passes));
  ASSERT_EQ(gpu1.requests.size(), size_t(two->passes));
  for (int pass = 0; pass < two->passes; ++pass) {
    EXPECT_EQ(gpu1.requests[pass].front(), gpu0.requests[pass].front()) << "both GPUs time the current set";
    EXPECT_GT(gpu1.requests[pass].size(), 1u);
  }
  // Each set once, the current one once more per pass on the second GPU.
  EXPECT_EQ(gpu0.sets_asked + gpu1.sets_asked, two->sets_timed + two->passes);
}

TEST(TimingDevices, SpreadNetworkLatenciesOnOneDeviceIsOneRequestOfEverySet) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0");
  gpu0.slower = 1.1;
  const std::vector<std::vector<int>> sets{{1, 2}, {}, {2}};
  auto ms = spread_network_latencies(g, s, {&gpu0}, sets, 1);
  ASSERT_TRUE(ms);
  ASSERT_EQ(gpu0.requests.size(), 1u);
  EXPECT_EQ(gpu0.requests[0], sets);
  for (size_t i = 0; i < sets.size(); ++i) EXPECT_DOUBLE_EQ((*ms)[i], 1.1 * m.network(sets[i]));
  EXPECT_TRUE(spread_network_latencies(g, s, {&gpu0}, {}, 1)->empty());
}

TEST(TimingDevices, SpreadNetworkLatenciesNamesADeviceThatAnswersShort) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  DeviceModel gpu0(m.model, "cuda:0"), gpu1(m.model, "cuda:1");
  gpu1.answers_short = true;
  // The second GPU is asked the first set and the last of the other three.
  auto ms = spread_network_latencies(g, s, {&gpu0, &gpu1}, {{1, 2}, {}, {2}, {1}}, 1);
  ASSERT_FALSE(ms);
  EXPECT_NE(ms.status().message().find("answered 1 latencies for 2 barrier sets"), std::string::npos)
      << ms.status().to_string();
}

TEST(Dataflow, RefineBarriersIgnoresGainsUnderTheThreshold) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{3, 0.12}};  // keeping barrier 3 beside the DP's set gains 0.2 %: noise
  auto refined = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(refined);
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(refined->passes, 2);
  EXPECT_EQ(refined->sets_timed, (3 + 4) + (2 + 4));  // the current, the DP's and none / the combined set; toggles
  EXPECT_FALSE(placed_and_refined(g, s, m.model, RefineOptions{-1, 24, 0.005, 1}));
}

TEST(Dataflow, RefineBarriersTogglesOnlyTheFirstCutsItIsAllowed) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  m.penalty = {{7, 0.3}};
  auto all = placed_and_refined(g, s, m.model);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->barriers, (std::vector<int>{2, 4, 6, 7, 8}));
  // Equal expected gains: the earliest cut comes first, so with one toggle barrier 7 is never tried.
  auto one = placed_and_refined(g, s, m.model, RefineOptions{3, 1, 0.005, 1});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(one->sets_timed, 4 + 2);
}

TEST(Dataflow, RefineBarriersWithoutANetworkModelKeepsTheSearchSet) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  // No network function: sets are priced by their segments, the DP's own view, where its set is optimal.
  TableCostModel model(
      [](const ir::Graph&, const Stage&) { return 1.0; },
      [](const ir::Graph&, const std::vector<Stage>& seg) { return seg.size() == 2 ? 1.9 : double(seg.size()); });
  auto refined = placed_and_refined(g, s, model);
  ASSERT_TRUE(refined);
  EXPECT_EQ(refined->barriers, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(refined->measured_ms, 4 * 1.9 + 1.0);
  EXPECT_EQ(refined->passes, 2);
}

TEST(Dataflow, StageCacheReusesNetworkTimingsOnlyForTheSameComparison) {
  const ir::Graph g = testing::inception_block();
  const Schedule s = one_op_stages(g);
  PairsModel m;
  StageCache cache(m.model, "test");
  const std::vector<std::vector<int>> sets{{2, 4, 6, 8}, {1, 2, 3, 4, 5, 6, 7, 8}};
  auto first = cache.network_latencies_ms(g, s, sets, 1);
  auto again = cache.network_latencies_ms(g, s, sets, 1);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(m.model.network_requests(), 1);
  // The same set beside another one is timed again: figures are compared only with those timed with them.
  auto other = cache.network_latencies_ms(g, s, {sets[0], {2, 3, 4, 6, 8}}, 1);
  ASSERT_TRUE(other);
  EXPECT_EQ(m.model.network_requests(), 2);
}

}  // namespace
}  // namespace ios::sched
