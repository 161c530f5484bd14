// The engine API on the CPU: plan files written and read back whole, refused with the part named when
// damaged, engines built for the CPU running as the reference does. The GPU half is engine_gpu_test.cc.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "engine/components.h"
#include "ir/json_io.h"
#include "reference/reference_executor.h"
#include "test_files.h"
#include "test_graphs.h"

namespace ios::engine {
namespace {

using testing::read_bytes;
using testing::write_bytes;

std::string temp_path(const std::string& name) { return testing::temp_path("engine_test", name); }

BuildOptions cpu_options(int batch = 2) {
  BuildOptions o;
  o.device = Device::kCpu;
  o.precision = "fp16";
  o.layout = "nhwc";
  o.search.batch = batch;
  o.exec_modes = {sched::ExecMode::kDataflow};
  o.prefetch_aheads = {1};
  return o;
}

std::shared_ptr<Engine> cpu_engine(const ir::Graph& g, int batch = 2) {
  auto builder = Builder::create(cpu_options(batch));
  EXPECT_TRUE(builder.has_value()) << builder.status().to_string();
  auto engine = (*builder)->build(g, ir::make_weights(g));
  EXPECT_TRUE(engine.has_value()) << engine.status().to_string();
  return *engine;
}

rt::KernelChoice a_choice() {
  rt::KernelChoice c;
  c.backend = rt::kGraphBackend;
  c.engine = 7;
  c.knobs = {{1, 2}, {3, 4}};
  c.name = "eng7_k1=2";
  c.fused = true;
  c.ms = 0.012;
  c.workspace = 4096;
  c.candidates = 5;
  return c;
}

// The option spellings the CLI and the Python package share.
TEST(EngineOptions, VariantNamesParseToWhatIsBuiltAndTimed) {
  EXPECT_EQ(*parse_prefetch_aheads("off", 0), std::vector<int>{0});
  EXPECT_EQ(*parse_prefetch_aheads("on", 2), std::vector<int>{2});
  EXPECT_EQ(*parse_prefetch_aheads("auto", 3), (std::vector<int>{0, 3}));
  EXPECT_NE(parse_prefetch_aheads("maybe", 1).status().message().find("must be off, on or auto, got 'maybe'"),
            std::string::npos);
  EXPECT_NE(parse_prefetch_aheads("on", 0).status().message().find("1-99"), std::string::npos);
  EXPECT_EQ(parse_exec_modes("auto")->size(), 2u);
  EXPECT_EQ(*parse_exec_modes("dataflow"), std::vector<sched::ExecMode>{sched::ExecMode::kDataflow});
  EXPECT_FALSE(parse_exec_modes("eager"));
  EXPECT_EQ(parse_concat_writes_variants("auto")->size(), 2u);
  EXPECT_FALSE(parse_concat_writes_variants("sideways"));
}

TEST(EnginePlanFile, RoundTripsEveryPart) {
  const ir::Graph g = testing::inception_block();
  EnginePlan p = cpu_engine(g)->plan();
  p.kernels["conv|fp16/nhwc/b2|x"] = a_choice();
  p.info.environment = "NVIDIA H200|132 SMs";
  p.info.device = "NVIDIA H200";
  p.info.libraries = "cuDNN 9.19.0";
  p.info.own_kernels = true;
  const std::string path = temp_path("round_trip.plan");
  ASSERT_TRUE(save_engine_plan(p, path).is_ok());
  auto q = load_engine_plan(path);
  ASSERT_TRUE(q.has_value()) << q.status().to_string();
  EXPECT_EQ(ir::graph_to_json(q->graph), ir::graph_to_json(p.graph));
  EXPECT_EQ(sched::schedule_to_json(q->graph, q->schedule), sched::schedule_to_json(p.graph, p.schedule));
  ASSERT_EQ(q->weights->per_node.size(), p.weights->per_node.size());
  for (size_t n = 0; n < p.weights->per_node.size(); ++n)
    for (size_t s = 0; s < p.weights->per_node[n].size(); ++s) {
      EXPECT_EQ(q->weights->per_node[n][s].weight, p.weights->per_node[n][s].weight);
      EXPECT_EQ(q->weights->per_node[n][s].bias, p.weights->per_node[n][s].bias);
    }
  EXPECT_EQ(q->config, p.config);
  EXPECT_EQ(q->config.precision(), "fp16");
  EXPECT_EQ(q->config.batch, 2);
  EXPECT_EQ(q->execution, p.execution);
  EXPECT_EQ(q->execution.mode, sched::ExecMode::kDataflow);
  EXPECT_EQ(q->execution.prefetch_ahead, 1);
  EXPECT_EQ(q->kernels, p.kernels);
  EXPECT_EQ(q->info, p.info);
}

// Each damage is refused with an error naming what is wrong; none crashes or loads.
TEST(EnginePlanFile, RefusesDamagedFilesNamingThePart) {
  const ir::Graph g = testing::diamond();
  EnginePlan p = cpu_engine(g, 1)->plan();
  p.kernels["k"] = a_choice();
  const std::string path = temp_path("good.plan"), bad = temp_path("bad.plan");
  ASSERT_TRUE(save_engine_plan(p, path).is_ok());
  const std::string good = read_bytes(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, good.data() + 8, 8);
  const std::string header = good.substr(16, header_length), weights = good.substr(16 + header_length);
  auto with_header = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(header);
    edit(j);
    const std::string text = j.dump();
    const uint64_t n = text.size();
    return std::string("IOSPLAN1") + std::string(reinterpret_cast<const char*>(&n), 8) + text + weights;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad magic", "XOSPLAN1" + good.substr(8)},
      {"truncated", good.substr(0, 12)},
      {"truncated header", good.substr(0, 40)},
      {"line 1", std::string("IOSPLAN1") + std::string("\x05\0\0\0\0\0\0\0", 8) + "{{{{{" + weights},
      {"version 1", with_header([](nlohmann::json& j) { j["version"] = 99; })},
      {"'config' has no field 'precision'", with_header([](nlohmann::json& j) { j["config"].erase("precision"); })},
      {"fp64", with_header([](nlohmann::json& j) { j["config"]["precision"] = "fp64"; })},
      {"'config' field 'batch'", with_header([](nlohmann::json& j) { j["config"]["batch"] = 0; })},
      {"'execution' field 'mode'", with_header([](nlohmann::json& j) { j["execution"]["mode"] = "eager"; })},
      {"'kernels' entry 'k'", with_header([](nlohmann::json& j) { j["kernels"]["k"]["engine"] = "seven"; })},
      {"'schedule'", with_header([](nlohmann::json& j) { j["schedule"]["blocks"] = 3; })},
      {"'built_for'", with_header([](nlohmann::json& j) { j.erase("built_for"); })},
      {"'built_for' field 'own_kernels'", with_header([](nlohmann::json& j) { j["built_for"]["own_kernels"] = 1; })},
      {"bad magic", with_header([](nlohmann::json&) {}).substr(0, 16 + header_length + 4) + "zzzzzzzz"},
      {"tensor of the wrong size", good.substr(0, good.size() - 3)},
      {"bytes after the last tensor", good + "x"},
  };
  for (const auto& [expected, bytes] : cases) {
    write_bytes(bad, bytes);
    auto loaded = load_engine_plan(bad);
    ASSERT_FALSE(loaded.has_value()) << expected;
    EXPECT_NE(loaded.status().message().find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << loaded.status().message();
  }
  EXPECT_FALSE(load_engine_plan(temp_path("missing.plan")).has_value());
}

// A plan without the setting holds kernel keys of cuDNN alone: it loads with our kernels off.
TEST(EnginePlanFile, APlanWithoutTheOwnKernelsSettingLoadsWithThemOff) {
  const ir::Graph g = testing::diamond();
  EnginePlan p = cpu_engine(g, 1)->plan();
  EXPECT_TRUE(p.info.own_kernels);  // what a build writes by default
  const std::string path = temp_path("without_own_kernels.plan");
  ASSERT_TRUE(save_engine_plan(p, path).is_ok());
  const std::string good = read_bytes(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, good.data() + 8, 8);
  nlohmann::json header = nlohmann::json::parse(good.substr(16, header_length));
  ASSERT_TRUE(header["built_for"].contains("own_kernels"));
  header["built_for"].erase("own_kernels");
  const std::string text = header.dump();
  const uint64_t n = text.size();
  write_bytes(path, std::string("IOSPLAN1") + std::string(reinterpret_cast<const char*>(&n), 8) + text +
                        good.substr(16 + header_length));
  auto q = load_engine_plan(path);
  ASSERT_TRUE(q.has_value()) << q.status().to_string();
  EXPECT_FALSE(q->info.own_kernels);
}

TEST(EnginePlanFile, AFailedSaveLeavesTheFileThatWasThere) {
  const ir::Graph g = testing::diamond();
  EnginePlan p = cpu_engine(g, 1)->plan();
  const std::string path = temp_path("kept.plan");
  ASSERT_TRUE(save_engine_plan(p, path).is_ok());
  const std::string before = read_bytes(path);
  ir::Weights poisoned = *p.weights;
  poisoned.per_node[1][0].weight[0] = std::nanf("");
  p.weights = std::make_shared<const ir::Weights>(std::move(poisoned));
  const Status s = save_engine_plan(p, path);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 1"), std::string::npos) << s.message();
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Engine, BuiltForTheCpuRunsAsTheReferenceBeforeAndAfterASaveAndLoad) {
  const ir::Graph g = testing::inception_block();
  std::shared_ptr<Engine> engine = cpu_engine(g);
  EXPECT_EQ(engine->device(), Device::kCpu);
  EXPECT_TRUE(engine->plan().kernels.empty());
  EXPECT_TRUE(engine->plan().info.environment.empty());  // no GPU tuned it: any GPU may run it
  const std::vector<float> input = ir::make_input(g.input_shape(), 2, 5);
  reference::Tensor in(2, g.input_shape());
  in.data = input;
  auto expected = reference::run(g, ir::make_weights(g), in);
  ASSERT_TRUE(expected.has_value());
  auto context = engine->create_context();
  ASSERT_TRUE(context.has_value()) << context.status().to_string();
  EXPECT_EQ((*context)->executor(), nullptr);
  auto out = (*context)->run(input);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(*out, expected->data);

  const std::string path = temp_path("cpu.plan");
  ASSERT_TRUE(engine->save(path).is_ok());
  auto loaded = Engine::load(path, {Device::kCpu, "", false});
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  auto again = (*loaded)->create_context();
  ASSERT_TRUE(again.has_value());
  auto out_again = (*again)->run(input);
  ASSERT_TRUE(out_again.has_value());
  EXPECT_EQ(*out_again, expected->data);
  auto short_input = (*again)->run(std::vector<float>(5));
  ASSERT_FALSE(short_input.has_value());
  EXPECT_NE(short_input.status().message().find("input has 5 floats"), std::string::npos);
  auto on_device = (*again)->enqueue(nullptr, nullptr, nullptr);
  EXPECT_FALSE(on_device.is_ok());
}

TEST(Engine, AGivenScheduleIsCheckedAgainstTheGraph) {
  const ir::Graph g = testing::inception_block();
  auto builder = Builder::create(cpu_options());
  ASSERT_TRUE(builder.has_value());
  auto schedule = (*builder)->search(g, ir::make_weights(g));
  ASSERT_TRUE(schedule.has_value());
  auto engine = (*builder)->build(g, ir::make_weights(g), *schedule);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  EXPECT_EQ((*engine)->plan().info.schedule_label, "IOS-Both");
  const ir::Graph other = testing::diamond();
  auto wrong = (*builder)->build(other, ir::make_weights(other), *schedule);
  EXPECT_FALSE(wrong.has_value());
  auto mismatched = (*builder)->build(g, ir::make_weights(other));
  ASSERT_FALSE(mismatched.has_value());
  EXPECT_NE(mismatched.status().message().find("another graph"), std::string::npos);
}

TEST(Builder, RefusesOptionsItCannotBuildWith) {
  BuildOptions o = cpu_options();
  o.cost_model = "measured";
  EXPECT_FALSE(Builder::create(o).has_value());
  o = cpu_options();
  o.precision = "fp8";
  EXPECT_FALSE(Builder::create(o).has_value());
  o = cpu_options();
  o.exec_modes.clear();
  EXPECT_FALSE(Builder::create(o).has_value());
  o = cpu_options();
  o.prefetch_aheads = {-1};
  EXPECT_FALSE(Builder::create(o).has_value());
  EXPECT_FALSE(parse_device("tpu").has_value());
}

TEST(Engine, LoadingForTheGpuWithoutOneSaysSo) {
  if (gpu_present()) GTEST_SKIP() << "this machine has a GPU";
  const ir::Graph g = testing::diamond();
  const std::string path = temp_path("gpu.plan");
  ASSERT_TRUE(cpu_engine(g, 1)->save(path).is_ok());
  auto loaded = Engine::load(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kUnavailable) << loaded.status().to_string();
  BuildOptions o = cpu_options();
  o.device = Device::kGpu;
  EXPECT_FALSE(Builder::create(o).has_value());
}

TEST(Engine, NamesExecutionVariantsAsIosRunDoes) {
  EXPECT_EQ(variant_name(Execution{}, ConcatWrites::kInPlace), "staged");
  EXPECT_EQ(variant_name(Execution{sched::ExecMode::kDataflow, 1}, ConcatWrites::kInPlace), "dataflow+prefetch");
  EXPECT_EQ(variant_name(Execution{sched::ExecMode::kStaged, 3}, ConcatWrites::kConvCopy),
            "staged+prefetch3/conv-copy");
}

}  // namespace
}  // namespace ios::engine
