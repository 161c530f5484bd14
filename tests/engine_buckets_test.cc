// Batch buckets (engine/buckets.h) and the file of several plans on the CPU: built per batch, saved in one
// file and read back whole, a call's batch mapped to its bucket, damaged files refused naming the part;
// and engine/network.h, which opens the networks engines are built of.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/buckets.h"
#include "engine/network.h"
#include "ir/json_io.h"
#include "reference/reference_executor.h"
#include "test_files.h"
#include "test_graphs.h"

namespace ios::engine {
namespace {

using testing::read_bytes;
using testing::write_bytes;

std::string temp_path(const std::string& name) { return testing::temp_path("buckets_test", name); }

BuildOptions cpu_options() {
  BuildOptions o;
  o.device = Device::kCpu;
  o.cost_model = "analytic";
  return o;
}

TEST(BatchBuckets, OneEnginePerBatchEachRunningAsTheReferenceAfterASaveAndLoad) {
  const ir::Graph g = testing::inception_block();
  const ir::Weights w = ir::make_weights(g);
  auto buckets = BatchBuckets::build(cpu_options(), g, w, {4, 1});
  ASSERT_TRUE(buckets.has_value()) << buckets.status().to_string();
  EXPECT_EQ(buckets->batches(), (std::vector<int>{1, 4}));
  const std::string path = temp_path("two.buckets");
  ASSERT_TRUE(buckets->save(path).is_ok());
  EXPECT_EQ(*plan_file_kind(path), PlanFileKind::kBuckets);
  auto loaded = BatchBuckets::load(path, {Device::kCpu, "", false});
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  ASSERT_EQ(loaded->batches(), (std::vector<int>{1, 4}));
  for (const auto& engine : loaded->engines()) {
    const int batch = engine->config().batch;
    const std::vector<float> input = ir::make_input(g.input_shape(), batch, 3);
    reference::Tensor in(batch, g.input_shape());
    in.data = input;
    auto expected = reference::run(g, w, in);
    ASSERT_TRUE(expected.has_value());
    auto context = engine->create_context();
    ASSERT_TRUE(context.has_value());
    auto out = (*context)->run(input);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_EQ(*out, expected->data) << "batch " << batch;
  }
}

TEST(BatchBuckets, ACallGoesToTheSmallestBucketHoldingIt) {
  const ir::Graph g = testing::inception_block();
  auto buckets = BatchBuckets::build(cpu_options(), g, ir::make_weights(g), {1, 3, 8});
  ASSERT_TRUE(buckets.has_value());
  EXPECT_EQ((*buckets->engine_for(1))->config().batch, 1);
  EXPECT_EQ((*buckets->engine_for(2))->config().batch, 3);
  EXPECT_EQ((*buckets->engine_for(3))->config().batch, 3);
  EXPECT_EQ((*buckets->engine_for(8))->config().batch, 8);
  auto too_many = buckets->engine_for(9);
  ASSERT_FALSE(too_many.has_value());
  EXPECT_NE(too_many.status().message().find("a batch of 9 samples: the largest of the engine's batch buckets "
                                             "(1, 3, 8) is 8"),
            std::string::npos)
      << too_many.status().message();
  EXPECT_FALSE(buckets->engine_for(0).has_value());
}

TEST(BatchBuckets, RefusesBatchListsItCannotBuild) {
  const ir::Graph g = testing::inception_block();
  const ir::Weights w = ir::make_weights(g);
  for (const auto& [batches, message] :
       std::vector<std::pair<std::vector<int>, std::string>>{{{}, "give 1 to 64 batch sizes"},
                                                             {{2, 2}, "a batch size is given twice (2, 2)"},
                                                             {{0, 4}, "batch sizes start at 1"}}) {
    auto b = BatchBuckets::build(cpu_options(), g, w, batches);
    ASSERT_FALSE(b.has_value());
    EXPECT_NE(b.status().message().find(message), std::string::npos) << b.status().message();
  }
}

TEST(BatchBuckets, DamagedFilesAreRefusedNamingThePart) {
  const ir::Graph g = testing::inception_block();
  auto buckets = BatchBuckets::build(cpu_options(), g, ir::make_weights(g), {1, 2});
  ASSERT_TRUE(buckets.has_value());
  const std::string path = temp_path("good.buckets");
  ASSERT_TRUE(buckets->save(path).is_ok());
  const std::string good = read_bytes(path);
  const auto refused = [](const std::string& bytes, const std::string& message) {
    const std::string bad = temp_path("bad.buckets");
    write_bytes(bad, bytes);
    auto b = BatchBuckets::load(bad, {Device::kCpu, "", false});
    ASSERT_FALSE(b.has_value()) << message;
    EXPECT_NE(b.status().message().find(message), std::string::npos) << b.status().message();
  };
  refused(good.substr(0, good.size() - 3), "plan 2 of 2");
  refused(good + "x", "unexpected bytes after the last plan");
  refused("IOSPLAN1" + good.substr(8), "not a file of batch buckets");
  std::string zero = good;
  zero[8] = zero[9] = zero[10] = zero[11] = 0;
  refused(zero, "a plan count outside 1-64");

  // Two plans of decreasing batch: written by hand, since BatchBuckets sorts them.
  const EnginePlan& small = buckets->engines()[0]->plan();
  const EnginePlan& large = buckets->engines()[1]->plan();
  const std::string swapped = temp_path("swapped.buckets");
  ASSERT_TRUE(save_engine_plans({&large, &small}, swapped).is_ok());
  auto b = BatchBuckets::load(swapped, {Device::kCpu, "", false});
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.status().message().find("batch sizes do not increase"), std::string::npos);

  auto as_one_engine = Engine::load(path, {Device::kCpu, "", false});
  ASSERT_FALSE(as_one_engine.has_value());
  EXPECT_NE(as_one_engine.status().message().find("a file of batch buckets, not one engine plan"), std::string::npos);

  const std::string single = temp_path("single.plan");
  ASSERT_TRUE(buckets->engines()[0]->save(single).is_ok());
  EXPECT_EQ(*plan_file_kind(single), PlanFileKind::kEngine);
  auto neither = plan_file_kind(path + ".missing");
  EXPECT_FALSE(neither.has_value());
  write_bytes(temp_path("text.plan"), "hello, world");
  auto text = plan_file_kind(temp_path("text.plan"));
  ASSERT_FALSE(text.has_value());
  EXPECT_NE(text.status().message().find("neither an engine plan nor a file of batch buckets"), std::string::npos);
}

// The weights are written once: a later bucket of the same graph and weights says so and holds none. A
// file of the first format (a copy per plan: "IOSBKTS1" and the plan files one after another) still reads.
TEST(BatchBuckets, AFileHoldsTheWeightsOnceAndFilesOfCopiesStillRead) {
  const ir::Graph g = testing::inception_block();
  const ir::Weights w = ir::make_weights(g);
  auto buckets = BatchBuckets::build(cpu_options(), g, w, {1, 2, 4});
  ASSERT_TRUE(buckets.has_value());
  const std::string path = temp_path("three.buckets");
  ASSERT_TRUE(buckets->save(path).is_ok());
  std::string plans;
  for (const auto& e : buckets->engines()) {
    const std::string one = temp_path("one.plan");
    ASSERT_TRUE(e->save(one).is_ok());
    plans += read_bytes(one);
  }
  const size_t weight_bytes = w.parameter_count() * sizeof(float);
  // 12 bytes of magic and count, and each later plan's header 64 bytes longer at most ("weights")
  EXPECT_LE(read_bytes(path).size() + 2 * weight_bytes, plans.size() + 12 + 2 * 64) << "the weights once";
  const uint32_t count = 3;
  const std::string copies = temp_path("copies.buckets");
  write_bytes(copies, "IOSBKTS1" + std::string(reinterpret_cast<const char*>(&count), 4) + plans);
  for (const std::string& file : {path, copies}) {
    auto loaded = BatchBuckets::load(file, {Device::kCpu, "", false});
    ASSERT_TRUE(loaded.has_value()) << file << ": " << loaded.status().to_string();
    ASSERT_EQ(loaded->batches(), (std::vector<int>{1, 2, 4}));
    for (const auto& e : loaded->engines()) EXPECT_EQ(e->plan().weights->per_node.size(), w.per_node.size());
    EXPECT_EQ(loaded->engines()[2]->plan().weights->at(1).weight, w.at(1).weight) << file;
    // One copy in memory where the file holds one (a hostile file of 64 plans cannot make 64 copies)
    if (file == path) {
      EXPECT_EQ(loaded->engines()[2]->plan().weights, loaded->engines()[0]->plan().weights);
    }
  }
}

TEST(Network, OpensModelsGraphFilesAndOnnxByTheirNames) {
  EXPECT_EQ(network_source("m.onnx").onnx_file, "m.onnx");
  EXPECT_EQ(network_source("g.json").graph_file, "g.json");
  EXPECT_EQ(network_source("squeezenet").model, "squeezenet");
  auto model = open_network(network_source("ios_sample"));
  ASSERT_TRUE(model.has_value()) << model.status().to_string();
  EXPECT_FALSE(model->own_weights.has_value());
  const std::string graph_file = temp_path("sample.json");
  ASSERT_TRUE(ir::save_graph(model->graph, graph_file).is_ok());
  auto from_file = open_network(network_source(graph_file));
  ASSERT_TRUE(from_file.has_value()) << from_file.status().to_string();
  EXPECT_EQ(from_file->graph.nodes.size(), model->graph.nodes.size());

  auto unknown = open_network(network_source("resnet9000"));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("resnet9000"), std::string::npos);
  EXPECT_FALSE(open_network({}).has_value());
  NetworkSource two;
  two.model = "squeezenet";
  two.graph_file = graph_file;
  EXPECT_NE(open_network(two).status().message().find("only one of"), std::string::npos);
  NetworkSource onnx_and_weights;
  onnx_and_weights.onnx_file = "m.onnx";
  onnx_and_weights.weights_file = "w.bin";
  EXPECT_NE(open_network(onnx_and_weights).status().message().find("brings its own weights"), std::string::npos);
}

}  // namespace
}  // namespace ios::engine
