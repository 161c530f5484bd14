// The engine API on the GPU: a built engine saved, loaded in a fresh runtime context (no search, no tuning)
// and run from device buffers on streams of the caller, giving the builder's bits; batch buckets, whose
// engines read one copy of the weights on the device; plans tuned elsewhere refused.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/buckets.h"
#include "engine/engine.h"
#include "reference/reference_executor.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "test_files.h"
#include "test_graphs.h"

namespace ios::engine {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!rt::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

std::string temp_path(const std::string& name) { return testing::temp_path("engine_gpu_test", name); }

BuildOptions gpu_options(const std::string& precision, int batch) {
  BuildOptions o;
  o.precision = precision;
  o.search.batch = batch;
  o.cost_model = "analytic";  // the same schedule on any machine; the kernels are still tuned on the GPU
  o.exec_modes = {sched::ExecMode::kStaged, sched::ExecMode::kDataflow};  // both timed, one kept
  return o;
}

// Device buffers for one inference of `engine`.
struct DeviceBuffers {
  float* in = nullptr;
  float* out = nullptr;
  explicit DeviceBuffers(const Engine& e) {
    EXPECT_EQ(cudaMalloc(&in, e.input_size() * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&out, e.output_size() * sizeof(float)), cudaSuccess);
  }
  ~DeviceBuffers() {
    cudaFree(in);
    cudaFree(out);
  }
};

TEST(GpuEngine, ALoadedPlanRunsFromDeviceBuffersWithTheBuildersBits) {
  SKIP_WITHOUT_GPU();
  for (const std::string precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    const ir::Graph g = testing::inception_block(16, 9);
    auto builder = Builder::create(gpu_options(precision, 2));
    ASSERT_TRUE(builder.has_value()) << builder.status().to_string();
    BuildReport report;
    auto built = (*builder)->build(g, ir::make_weights(g), std::nullopt, {}, &report);
    ASSERT_TRUE(built.has_value()) << built.status().to_string();
    EXPECT_EQ(report.variants_ms.size(), 2u);
    EXPECT_FALSE((*built)->plan().kernels.empty());
    EXPECT_EQ((*built)->plan().info.environment, rt::kernel_environment());
    const std::vector<float> input = ir::make_input(g.input_shape(), 2, 3);
    auto first = (*built)->create_context();
    ASSERT_TRUE(first.has_value()) << first.status().to_string();
    auto expected = (*first)->run(input);
    ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
    reference::Tensor in(2, g.input_shape());
    in.data = input;
    auto ref = reference::run(g, ir::make_weights(g), in);
    ASSERT_TRUE(ref.has_value());
    EXPECT_LT(reference::relative_l2_error(*expected, ref->data), (*built)->config().tolerance());

    const std::string path = temp_path("engine_" + precision + ".plan");
    ASSERT_TRUE((*built)->save(path).is_ok());
    auto loaded = Engine::load(path);  // a fresh runtime context, kernels from the plan
    ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
    EXPECT_EQ((*loaded)->plan().execution, (*built)->plan().execution);
    // Two contexts of one engine, each on a stream of the caller's, side by side.
    auto a = (*loaded)->create_context();
    auto b = (*loaded)->create_context();
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ((*a)->executor()->context().kernel_stats().tuned, 0) << "a loaded engine tunes nothing";
    DeviceBuffers da(**loaded), db(**loaded);
    cudaStream_t sa = nullptr, sb = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking), cudaSuccess);
    for (float* d : {da.in, db.in})
      ASSERT_EQ(cudaMemcpy(d, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*a)->enqueue(da.in, da.out, sa).is_ok());
      ASSERT_TRUE((*b)->enqueue(db.in, db.out, sb).is_ok());
    }
    ASSERT_EQ(cudaStreamSynchronize(sa), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(sb), cudaSuccess);
    for (float* d : {da.out, db.out}) {
      std::vector<float> got((*loaded)->output_size());
      ASSERT_EQ(cudaMemcpy(got.data(), d, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(got, *expected) << "the loaded engine's output differs from the builder's";
    }
    cudaStreamDestroy(sa);
    cudaStreamDestroy(sb);
  }
}

TEST(GpuEngine, EnqueueWithoutACudaGraphJoinsTheCallersStream) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::diamond();
  BuildOptions o = gpu_options("fp32", 1);
  o.exec_modes = {sched::ExecMode::kStaged};
  o.cuda_graph = false;
  auto builder = Builder::create(o);
  ASSERT_TRUE(builder.has_value());
  auto engine = (*builder)->build(g, ir::make_weights(g));
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  auto context = (*engine)->create_context();
  ASSERT_TRUE(context.has_value());
  const std::vector<float> input = ir::make_input(g.input_shape(), 1, 9);
  auto expected = (*context)->run(input);
  ASSERT_TRUE(expected.has_value());
  DeviceBuffers d(**engine);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d.in, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_TRUE((*context)->enqueue(d.in, d.out, s).is_ok());
  std::vector<float> got((*engine)->output_size());
  ASSERT_EQ(cudaMemcpyAsync(got.data(), d.out, got.size() * sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(got, *expected);
  cudaStreamDestroy(s);
}

// Each bucket has its own schedule and kernels but reads the first bucket's device weights: every bucket,
// built and loaded, matches the CPU reference at its batch.
TEST(GpuEngine, BatchBucketsShareTheirDeviceWeightsAndEachMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::inception_block(16, 9);
  const ir::Weights w = ir::make_weights(g);
  auto built = BatchBuckets::build(gpu_options("fp16", 1), g, w, {1, 3, 4});
  ASSERT_TRUE(built.has_value()) << built.status().to_string();
  const std::string path = temp_path("three.buckets");
  ASSERT_TRUE(built->save(path).is_ok());
  auto loaded = BatchBuckets::load(path, {});
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  for (const BatchBuckets* buckets : {&*built, &*loaded}) {
    for (const auto& engine : buckets->engines()) {
      const int batch = engine->config().batch;
      SCOPED_TRACE("batch " + std::to_string(batch) + (buckets == &*built ? ", built" : ", loaded"));
      const std::vector<float> input = ir::make_input(g.input_shape(), batch, 5);
      auto context = engine->create_context();
      ASSERT_TRUE(context.has_value()) << context.status().to_string();
      auto got = (*context)->run(input);
      ASSERT_TRUE(got.has_value()) << got.status().to_string();
      reference::Tensor in(batch, g.input_shape());
      in.data = input;
      auto ref = reference::run(g, w, in);
      ASSERT_TRUE(ref.has_value());
      EXPECT_LT(reference::relative_l2_error(*got, ref->data), engine->config().tolerance());
    }
  }
}

TEST(GpuEngine, RefusesAPlanTunedOnAnotherGpu) {
  SKIP_WITHOUT_GPU();
  const ir::Graph g = testing::diamond();
  auto builder = Builder::create(gpu_options("fp32", 1));
  ASSERT_TRUE(builder.has_value());
  auto engine = (*builder)->build(g, ir::make_weights(g));
  ASSERT_TRUE(engine.has_value());
  EnginePlan p = (*engine)->plan();
  p.info.environment = "NVIDIA A100-SXM4-80GB|108 SMs|driver 12040|cuDNN 90100|frontend 11000";
  const std::string path = temp_path("foreign.plan");
  ASSERT_TRUE(save_engine_plan(p, path).is_ok());
  auto loaded = Engine::load(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.status().message().find("tuned on 'NVIDIA A100"), std::string::npos) << loaded.status().message();
  EXPECT_TRUE(Engine::load(path, {Device::kCpu, "", false}).has_value()) << "the CPU may still run it";
}

}  // namespace
}  // namespace ios::engine
