// The execution config: precisions, layouts and keys, slice strides in both layouts, host conversions, and
// what the config changes in the memory plan.
#include "common/exec_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/float16.h"
#include "common/tensor_pack.h"
#include "models/models.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"

namespace ios {
namespace {

TEST(ExecConfig, PrecisionNamesMapToStorageAndMath) {
  EXPECT_EQ(make_exec_config("tf32", "auto", 1)->dtype, DataType::kF32);
  EXPECT_EQ(make_exec_config("tf32", "auto", 1)->math, MathMode::kTf32);
  EXPECT_EQ(make_exec_config("bf16", "nchw", 2)->dtype, DataType::kBF16);
  for (const char* p : {"fp32", "tf32", "fp16", "bf16"}) EXPECT_EQ(make_exec_config(p, "auto", 1)->precision(), p);
}

TEST(ExecConfig, AutoLayoutIsNhwcWhereTensorCoresRun) {
  EXPECT_EQ(make_exec_config("fp32", "auto", 1)->layout, Layout::kNCHW);
  EXPECT_EQ(make_exec_config("tf32", "auto", 1)->layout, Layout::kNHWC);
  EXPECT_EQ(make_exec_config("fp16", "auto", 1)->layout, Layout::kNHWC);
  EXPECT_EQ(make_exec_config("fp16", "nchw", 1)->layout, Layout::kNCHW);
}

TEST(ExecConfig, BadValuesAreNamedErrors) {
  auto p = make_exec_config("fp8", "auto", 1);
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("--precision"), std::string::npos);
  auto l = make_exec_config("fp32", "chwn", 1);
  ASSERT_FALSE(l);
  EXPECT_NE(l.status().message().find("--layout"), std::string::npos);
  EXPECT_FALSE(make_exec_config("fp32", "auto", 0));
  auto w = make_exec_config("tf32", "auto", 1, "copy");
  ASSERT_FALSE(w);
  EXPECT_NE(w.status().message().find("--concat-writes"), std::string::npos);
}

// Kernels do not depend on how concatenations are written (their cache stays shared); stage figures do.
TEST(ExecConfig, ConcatWritesChangeThePlanKeyButNotTheKernelKey) {
  const ExecConfig in_place = *make_exec_config("tf32", "auto", 1);
  const ExecConfig copy = *make_exec_config("tf32", "auto", 1, "conv-copy");
  EXPECT_EQ(in_place.concat_writes, ConcatWrites::kInPlace);
  EXPECT_EQ(copy.concat_writes, ConcatWrites::kConvCopy);
  EXPECT_EQ(copy.key(), in_place.key());
  EXPECT_EQ(in_place.plan_key(), in_place.key());  // stage-cache files of earlier versions keep their keys
  EXPECT_EQ(copy.plan_key(), "tf32/nhwc/b1/conv-copy");
}

TEST(ExecConfig, KeysDifferInEveryField) {
  const ExecConfig a = *make_exec_config("fp16", "nhwc", 1);
  EXPECT_EQ(a.key(), "fp16/nhwc/b1");
  EXPECT_NE(a.key(), make_exec_config("bf16", "nhwc", 1)->key());
  EXPECT_NE(a.key(), make_exec_config("fp16", "nchw", 1)->key());
  EXPECT_NE(a.key(), make_exec_config("fp16", "nhwc", 2)->key());
  EXPECT_EQ(a.element_bytes(), 2u);
  EXPECT_EQ(make_exec_config("tf32", "nhwc", 1)->element_bytes(), 4u);
}

TEST(SliceLayout, NchwSliceIsAnOffsetOfWholePlanes) {
  const SliceLayout s = slice_layout(Layout::kNCHW, 10, 3, 4, 5);
  EXPECT_EQ(s.offset, 3 * 20);
  EXPECT_EQ(s.n, 10 * 20);
  EXPECT_EQ(s.c, 20);
  EXPECT_EQ(s.h, 5);
  EXPECT_EQ(s.w, 1);
}

TEST(SliceLayout, NhwcSliceStepsOverTheWholeBufferPerPixel) {
  const SliceLayout s = slice_layout(Layout::kNHWC, 10, 3, 4, 5);
  EXPECT_EQ(s.offset, 3);
  EXPECT_EQ(s.n, 10 * 20);
  EXPECT_EQ(s.c, 1);
  EXPECT_EQ(s.h, 5 * 10);
  EXPECT_EQ(s.w, 10);
}

TEST(Float16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << h;
  }
}

TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 2048)), 1.0f);                // tie to even (down)
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie to even (up)
  EXPECT_EQ(half_to_float(float_to_half(70000.f)), INFINITY);
  EXPECT_EQ(half_to_float(float_to_half(1e-8f)), 0.f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(TensorPack, NhwcPackingMovesChannelsInnermostAndBack) {
  std::vector<float> x(2 * 3 * 2 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  const auto packed = pack_tensor(x.data(), 2, 3, 2, 2, DataType::kF32, Layout::kNHWC);
  // sample 0, pixel (0, 1): channels 0, 1, 2 are NCHW elements 1, 5, 9
  EXPECT_EQ(load_element(packed.data() + 4 * 3, DataType::kF32), 1.f);
  EXPECT_EQ(load_element(packed.data() + 4 * 4, DataType::kF32), 5.f);
  EXPECT_EQ(load_element(packed.data() + 4 * 5, DataType::kF32), 9.f);
  for (DataType t : {DataType::kF32, DataType::kF16, DataType::kBF16})
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      const auto bytes = pack_tensor(x.data(), 2, 3, 2, 2, t, l);
      EXPECT_EQ(bytes.size(), x.size() * element_bytes(t));
      std::vector<float> back(x.size());
      unpack_tensor(bytes.data(), 2, 3, 2, 2, t, l, back.data());
      EXPECT_EQ(back, x);  // small integers are exact in every type
      EXPECT_TRUE(pack_tensor(x.data(), 0, 3, 2, 2, t, l).empty());
    }
}

TEST(MemoryPlanConfig, TwoByteElementsHalveEveryBuffer) {
  const ir::Graph g = *models::build_model("inception_v3");
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  ASSERT_TRUE(plan);
  sched::MemoryOptions f32, f16;
  f32.config = *make_exec_config("fp32", "nchw", 1);
  f16.config = *make_exec_config("fp16", "nchw", 1);
  f32.reuse = f16.reuse = false;
  auto a = sched::plan_memory(g, *plan, f32);
  auto b = sched::plan_memory(g, *plan, f16);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->buffer_bytes.size(), b->buffer_bytes.size());
  for (size_t i = 0; i < a->buffer_bytes.size(); ++i) EXPECT_EQ(a->buffer_bytes[i], 2 * b->buffer_bytes[i]);
}

TEST(MemoryPlanConfig, InPlaceConcatSlicesAreSixteenByteAligned) {
  const ir::Graph g = *models::build_model("inception_v3");
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  for (const char* layout : {"nchw", "nhwc"})
    for (const char* precision : {"fp32", "fp16"}) {
      sched::MemoryOptions o;
      o.config = *make_exec_config(precision, layout, 1);
      auto m = sched::plan_memory(g, *plan, o);
      ASSERT_TRUE(m);
      for (size_t id = 1; id < g.nodes.size(); ++id) {
        const sched::Placement& p = m->placement[id];
        if (!p.placed() || p.channels == g.nodes[id].output_shape.c) continue;
        EXPECT_TRUE(sched::slice_aligned(o.config, p.channels, p.begin, g.nodes[id].output_shape))
            << g.nodes[id].name << " " << o.config.key();
      }
    }
}

TEST(MemoryPlanConfig, NhwcSlicesAreReadInPlaceOnlyWhenContiguous) {
  EXPECT_TRUE(sched::slice_aligned(*make_exec_config("fp16", "nhwc", 1), 64, 8, ir::Shape{8, 5, 5}));
  EXPECT_FALSE(sched::slice_aligned(*make_exec_config("fp16", "nhwc", 1), 64, 4, ir::Shape{4, 5, 5}));
  EXPECT_FALSE(sched::slice_aligned(*make_exec_config("fp16", "nhwc", 1), 36, 0, ir::Shape{8, 5, 5}));
  EXPECT_FALSE(sched::slice_aligned(*make_exec_config("fp16", "nchw", 1), 64, 1, ir::Shape{1, 5, 5}));
}

}  // namespace
}  // namespace ios
