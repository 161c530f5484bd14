#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "models/models.h"

namespace ios::models {
namespace {

struct Expect {
  std::string name;
  size_t blocks;
  int ops;
  ir::Shape output;
  double gflops_min, gflops_max;
  friend void PrintTo(const Expect& e, std::ostream* os) { *os << e.name; }
};

class ModelShape : public ::testing::TestWithParam<Expect> {};

TEST_P(ModelShape, HasIosOpCountBlocksOutputAndFlops) {
  const Expect& e = GetParam();
  auto g = build_model(e.name);
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->blocks.size(), e.blocks);
  EXPECT_EQ(g->op_count(), e.ops);
  EXPECT_EQ(g->output_shape(), e.output);
  const double gflops = g->total_flops() / 1e9;
  EXPECT_GE(gflops, e.gflops_min);
  EXPECT_LE(gflops, e.gflops_max);
}

// FLOP ranges: multiply-adds x2. Published: Inception V3 5.7 GMAC, GoogLeNet 1.5 GMAC, NASNet-A
// Large 23.8 GMAC, DenseNet-121 2.87 GMAC. SqueezeNet 1.0 is 0.82 GMAC plus ~0.35 GMAC of bypass convs; RandWire's four stages
// of pointwise convs at C=154 add to ~8.3 GMAC (1.19 + 3 x 2.38).
INSTANTIATE_TEST_SUITE_P(
    Networks, ModelShape,
    ::testing::Values(Expect{"inception_v3", 13, 119, {2048, 1, 1}, 11.0, 11.9},
                      Expect{"squeezenet", 12, 50, {1000, 1, 1}, 2.2, 2.5},
                      Expect{"nasnet", 1, 374, {3360, 1, 1}, 40.0, 50.0},
                      Expect{"randwire", 6, 120, {1280, 1, 1}, 14.0, 17.0},
                      Expect{"googlenet", 13, 81, {1000, 1, 1}, 2.9, 3.1},
                      Expect{"densenet121", 6, 188, {1000, 1, 1}, 5.6, 5.9}),
    [](const auto& info) { return info.param.name; });

TEST(NasNet, IsSplitIntoOnePartPerCell) {
  auto g = nasnet();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->blocks[0].parts.size(), 25u);
}

TEST(NasNet, SmallVariantBuilds) {
  auto g = nasnet(6, 32);
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->op_count(), 374);
  EXPECT_EQ(g->output_shape().c, 640);
}

TEST(RandWire, WattsStrogatzIsDeterministicAndHasLatticeEdgeCount) {
  WiringGraph a = watts_strogatz(32, 4, 0.75, 7);
  WiringGraph b = watts_strogatz(32, 4, 0.75, 7);
  EXPECT_EQ(a.edges, b.edges);
  EXPECT_EQ(a.edges.size(), 64u);  // rewiring keeps the edge count n*k/2
  for (auto [u, v] : a.edges) EXPECT_LT(u, v);
  EXPECT_NE(watts_strogatz(32, 4, 0.75, 8).edges, a.edges);
}

std::string ios_graph_dir() {
  if (const char* env = std::getenv("IOS_RANDWIRE_GRAPHS")) return env;
  return IOS_RANDWIRE_GRAPHS_DIR;
}

TEST(RandWire, IosGraphFilesGive120Ops) {
  const std::string dir = ios_graph_dir();
  if (!std::filesystem::exists(dir + "/ws-16-4-0.75-2.txt")) GTEST_SKIP() << "IOS RandWire graphs not found in " << dir;
  ModelOptions options;
  options.randwire_graphs_dir = dir;
  auto g = randwire(options);
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->op_count(), 120);
  EXPECT_EQ(g->blocks.size(), 6u);
  EXPECT_EQ(g->blocks[1].members().size(), 17u);
}

TEST(RandWire, MissingGraphFolderIsAClearError) {
  ModelOptions options;
  options.randwire_graphs_dir = "/nonexistent";
  auto g = randwire(options);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("ws-16-4-0.75-2.txt"), std::string::npos);
}

TEST(Registry, UnknownModelListsKnownOnes) {
  auto g = build_model("resnet9000");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(g.status().message().find("inception_v3"), std::string::npos);
}

}  // namespace
}  // namespace ios::models
