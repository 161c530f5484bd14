// Our own convolution kernels (runtime/conv_own.cc, conv_gemm.cc), every variant that runs a case, against the
// CPU reference: depthwise k x k (3, 5, 7) x stride (1, 2) and pointwise (a cuBLASLt product) x precision x
// layout x batch (1, 3), with bias, an activation, a residual, and input and output channel slices of wider
// buffers (whose other channels must stay untouched).
#include <cuda_runtime.h>

#include "gpu_test_support.h"
#include "runtime/conv_kernel.h"

namespace ios::rt {
namespace {

struct DepthwiseCase {
  int kernel, stride;
  std::string precision, layout;
  friend void PrintTo(const DepthwiseCase& c, std::ostream* os) {
    *os << c.kernel << "x" << c.kernel << "/s" << c.stride << "/" << c.precision << "/" << c.layout;
  }
};

std::string case_name(const ::testing::TestParamInfo<DepthwiseCase>& info) {
  const DepthwiseCase& c = info.param;
  return "k" + std::to_string(c.kernel) + "_s" + std::to_string(c.stride) + "_" + c.precision + "_" + c.layout;
}

std::vector<DepthwiseCase> depthwise_cases() {
  std::vector<DepthwiseCase> out;
  for (int k : {3, 5, 7})
    for (int s : {1, 2})
      for (const std::string& p : kPrecisions)
        for (const char* l : {"nchw", "nhwc"}) out.push_back({k, s, p, l});
  return out;
}

// A tensor of `batch` x `shape` as a channel slice [begin, begin + shape.c) of a buffer `channels` wide, in
// the storage type; the buffer's other elements hold `fill`.
struct SliceBuffer {
  SliceLayout layout;
  DeviceMemory memory;
  std::vector<uint8_t> host;  // the whole buffer as uploaded or last read
  size_t eb = 0;

  SliceBuffer(const ExecConfig& c, const ir::Shape& shape, int channels, int begin, float fill)
      : layout(slice_layout(c.layout, channels, begin, shape.h, shape.w)), eb(c.element_bytes()) {
    const size_t elements = size_t(c.batch) * channels * shape.h * shape.w;
    host.resize(elements * eb);
    for (size_t i = 0; i < elements; ++i) store_element(host.data() + i * eb, c.dtype, fill);
    Expected<DeviceMemory> m = device_alloc(host.size());
    if (m) memory = std::move(*m);
  }
  size_t index(int n, int ch, int h, int w) const {
    return size_t(layout.offset + n * layout.n + ch * layout.c + h * layout.h + w * layout.w);
  }
  void put(const ExecConfig& c, const ir::Shape& s, const std::vector<float>& packed) {
    for (int n = 0; n < c.batch; ++n)
      for (int ch = 0; ch < s.c; ++ch)
        for (int h = 0; h < s.h; ++h)
          for (int w = 0; w < s.w; ++w)
            store_element(host.data() + index(n, ch, h, w) * eb, c.dtype,
                          packed[((size_t(n) * s.c + ch) * s.h + h) * s.w + w]);
    ASSERT_EQ(cudaMemcpy(memory.get(), host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  void read() { ASSERT_EQ(cudaMemcpy(host.data(), memory.get(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess); }
  float at(DataType t, size_t i) const { return load_element(host.data() + i * eb, t); }
  void* first() const { return static_cast<char*>(memory.get()) + layout.offset * eb; }
};

DeviceMemory upload(const ExecConfig& c, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * c.element_bytes());
  for (size_t i = 0; i < v.size(); ++i) store_element(bytes.data() + i * c.element_bytes(), c.dtype, v[i]);
  Expected<DeviceMemory> allocated = device_alloc(std::max<size_t>(bytes.size(), 1));
  EXPECT_TRUE(allocated);
  if (!allocated) return DeviceMemory();
  DeviceMemory m = std::move(*allocated);
  EXPECT_EQ(cudaMemcpy(m.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return m;
}

// Runs every variant of ours that runs the one convolution of `g` on the GPU and compares it with the CPU
// reference at batch 1 and 3: x a channel slice [2, 2 + C) of a buffer C + 4 wide; y a slice [2, 2 + C) of
// one C + 2 wide, or with `odd_y` [1, 1 + C) of one C + 1 wide; with `residual`, z (packed) added after the
// activation. Variants cuBLASLt has no algorithm for are skipped; the first must build.
void expect_every_variant_matches(const ir::Graph& g, const std::string& precision, const std::string& layout,
                                  bool residual, bool odd_y) {
  const ir::Node& node = g.nodes[size_t(g.output())];
  const ir::Weights weights = ir::make_weights(g);
  for (int batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const ExecConfig c = config_of(precision, layout, batch);
    reference::Tensor in(batch, g.input_shape());
    in.data = ir::make_input(g.input_shape(), batch, 5);
    std::vector<float> want = std::move(reference::run_all(g, weights, in, {true})->at(size_t(g.output())).data);
    const std::vector<float> z_values = ir::make_input(node.output_shape, batch, 6);
    if (residual)
      for (size_t i = 0; i < want.size(); ++i) want[i] += z_values[i];
    const int cin = g.input_shape().c, cout = node.output_shape.c;
    SliceBuffer x(c, g.input_shape(), cin + 4, 2, 0.f);
    x.put(c, g.input_shape(), in.data);
    SliceBuffer y(c, node.output_shape, cout + (odd_y ? 1 : 2), odd_y ? 1 : 2, 7.f);
    y.put(c, node.output_shape, std::vector<float>(want.size(), 7.f));
    SliceBuffer z(c, node.output_shape, cout, 0, 0.f);
    z.put(c, node.output_shape, z_values);
    DeviceMemory w = upload(c, weights.at(g.output()).weight), b = upload(c, weights.at(g.output()).bias);

    ConvSpec spec;
    spec.config = c;
    spec.attrs = node.attrs<ir::ConvAttrs>();
    spec.in = node.input_shape, spec.out = node.output_shape;
    spec.x = x.layout, spec.y = y.layout;
    spec.x_align = pointer_alignment(x.first()), spec.y_align = pointer_alignment(y.first());
    if (residual) spec.z = z.layout, spec.z_align = pointer_alignment(z.first());
    const ConvBuffers buffers{x.first(), w.get(), b.get(), y.first(), residual ? z.first() : nullptr};

    const std::vector<std::string> names = own_conv_kernels(spec);
    ASSERT_FALSE(names.empty());
    DeviceMemory workspace;
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      auto kernel = make_own_conv_kernel(spec, name);
      if (!kernel && name != names.front() && kernel.status().code() == ErrorCode::kUnavailable) continue;
      ASSERT_TRUE(kernel) << kernel.status().to_string();
      EXPECT_EQ((*kernel)->choice().backend, kOwnBackend);
      Expected<DeviceMemory> ws = device_alloc(std::max<size_t>((*kernel)->workspace_bytes(), 16));
      ASSERT_TRUE(ws);
      ASSERT_TRUE((*kernel)->run(context_for(c)->cudnn(0), buffers, ws->get()));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      y.read();
      std::vector<float> got(want.size());
      const ir::Shape& s = node.output_shape;
      for (int n = 0; n < batch; ++n)
        for (int ch = 0; ch < s.c; ++ch)
          for (int h = 0; h < s.h; ++h)
            for (int ww = 0; ww < s.w; ++ww)
              got[((size_t(n) * s.c + ch) * s.h + h) * s.w + ww] = y.at(c.dtype, y.index(n, ch, h, ww));
      EXPECT_LE(reference::relative_l2_error(got, want), c.tolerance());
      // The rest of y's buffer (the other channels of its concatenation) keeps its 7s.
      size_t touched = 0;
      for (size_t i = 0; i < y.host.size() / y.eb; ++i) touched += y.at(c.dtype, i) != 7.f;
      EXPECT_LE(touched, want.size());
      y.put(c, s, std::vector<float>(want.size(), 7.f));  // the next variant starts from the sentinel again
    }
  }
}

class GpuOwnDepthwise : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(GpuOwnDepthwise, EveryVariantMatchesTheCpuReference) {
  const DepthwiseCase& p = GetParam();
  // Even channels (pairs fit) with stride 1, which also adds a residual; odd ones with stride 2, written at an
  // odd channel offset.
  const int channels = p.stride == 1 ? 10 : 7;
  const ir::Act act = p.kernel == 3 ? ir::Act::kRelu6 : p.kernel == 5 ? ir::Act::kSilu : ir::Act::kHardSwish;
  ir::GraphBuilder gb("depthwise", {channels, 9, 11});
  gb.begin_block();
  gb.end_block(gb.conv(
      gb.input(), ir::Conv(channels).kernel(p.kernel).stride(p.stride).pad(p.kernel / 2).grouped(channels).act(act)));
  const ir::Graph g = *gb.build();
  SKIP_WITHOUT_GPU();
  if (p.stride == 1) {
    ConvSpec probe;  // channel pairs are offered where the layout allows them
    probe.config = config_of(p.precision, p.layout, 1);
    probe.attrs = g.nodes[size_t(g.output())].attrs<ir::ConvAttrs>();
    probe.in = probe.out = g.input_shape();
    probe.x = probe.y = slice_layout(probe.config.layout, channels, 0, 9, 11);
    const std::vector<std::string> names = own_conv_kernels(probe);
    const bool pairs = std::any_of(names.begin(), names.end(), [](auto& n) { return n.find("pairs") != n.npos; });
    EXPECT_EQ(pairs, p.layout == "nhwc");
  }
  expect_every_variant_matches(g, p.precision, p.layout, /*residual=*/p.stride == 1, /*odd_y=*/p.stride == 2);
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuOwnDepthwise, ::testing::ValuesIn(depthwise_cases()), case_name);

struct PointwiseCase {
  std::string precision, layout;
  bool residual;
  friend void PrintTo(const PointwiseCase& c, std::ostream* os) {
    *os << c.precision << "/" << c.layout << (c.residual ? "/residual" : "");
  }
};

class GpuOwnPointwise : public ::testing::TestWithParam<PointwiseCase> {};

// 1x1 convolutions as cuBLASLt products: 12 -> 20 channels at 9x11, and a squeeze-excite-like 24 -> 6 at 1x1.
TEST_P(GpuOwnPointwise, EveryVariantMatchesTheCpuReference) {
  const PointwiseCase& p = GetParam();
  for (const auto& [in, out, act] : std::vector<std::tuple<ir::Shape, int, ir::Act>>{
           {{12, 9, 11}, 20, ir::Act::kHardSwish}, {{24, 1, 1}, 6, ir::Act::kRelu}}) {
    SCOPED_TRACE(in.to_string());
    ir::GraphBuilder gb("pointwise", in);
    gb.begin_block();
    gb.end_block(gb.conv(gb.input(), ir::Conv(out).kernel(1).act(act)));
    const ir::Graph g = *gb.build();
    SKIP_WITHOUT_GPU();
    expect_every_variant_matches(g, p.precision, p.layout, p.residual, /*odd_y=*/false);
  }
}

std::vector<PointwiseCase> pointwise_cases() {
  std::vector<PointwiseCase> out;
  for (const std::string& p : kPrecisions)
    for (const char* l : {"nchw", "nhwc"})
      for (bool residual : {false, true}) out.push_back({p, l, residual});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuOwnPointwise, ::testing::ValuesIn(pointwise_cases()), [](const auto& info) {
  return info.param.precision + "_" + info.param.layout + (info.param.residual ? "_residual" : "");
});

TEST(GpuOwnKernels, ConvolutionsOursDoNotRunGetNone) {
  ConvSpec spec;
  spec.config = config_of("fp16", "nhwc", 1);
  spec.in = {8, 9, 9}, spec.out = {8, 9, 9};
  spec.attrs.out_channels = 8, spec.attrs.kh = spec.attrs.kw = 3, spec.attrs.ph = spec.attrs.pw = 1;
  spec.attrs.groups = 8;
  spec.x = spec.y = slice_layout(Layout::kNHWC, 8, 0, 9, 9);
  EXPECT_FALSE(own_conv_kernels(spec).empty());
  ConvSpec dense = spec;
  dense.attrs.groups = 1;
  EXPECT_TRUE(own_conv_kernels(dense).empty());
  ConvSpec pointwise = dense;
  pointwise.attrs.kh = pointwise.attrs.kw = 1, pointwise.attrs.ph = pointwise.attrs.pw = 0;
  const std::vector<std::string> gemms = own_conv_kernels(pointwise);
  ASSERT_FALSE(gemms.empty());
  for (const std::string& n : gemms) EXPECT_EQ(n.rfind("ios_gemm_h", 0), 0u) << n;
  ConvSpec strided = pointwise;
  strided.attrs.sh = strided.attrs.sw = 2, strided.out = {8, 5, 5};
  strided.y = slice_layout(Layout::kNHWC, 8, 0, 5, 5);
  EXPECT_TRUE(own_conv_kernels(strided).empty());
  ConvSpec dilated = spec;
  dilated.attrs.dh = dilated.attrs.dw = 2;
  EXPECT_TRUE(own_conv_kernels(dilated).empty());
  ConvSpec wide = spec;
  wide.attrs.kh = wide.attrs.kw = 9;
  EXPECT_TRUE(own_conv_kernels(wide).empty());
  ConvSpec multiplier = spec;
  multiplier.attrs.out_channels = 16, multiplier.out.c = 16;
  EXPECT_TRUE(own_conv_kernels(multiplier).empty());
  auto unknown = make_own_conv_kernel(spec, "ios_winograd");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find("ios_winograd"), std::string::npos);
  auto wrong = make_own_conv_kernel(dense, "ios_depthwise_r2");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.status().message().find("does not run"), std::string::npos);
}

// A choice of ours recorded for a network (as an engine plan or the kernel cache file holds it) is what an
// executor runs: NasNet-style separable convolutions (depthwise 5x5 stride 2, then 3x3 stride 1, each with a
// pointwise convolution after it) on our kernels, every node as the CPU reference computes it.
TEST(GpuOwnKernels, AnExecutorRunsRecordedChoicesOfOursAndMatchesTheReference) {
  ir::GraphBuilder gb("separable", {8, 15, 15});
  gb.begin_block();
  gb.end_block(gb.sep_conv(gb.sep_conv(gb.input(), 16, 5, 2, 2), 16, 3, 1, 1));
  const ir::Graph g = *gb.build();
  const ir::Weights w = ir::make_weights(g);
  reference::Tensor in(1, g.input_shape());
  in.data = ir::make_input(g.input_shape(), 1, 3);
  auto want = reference::run_all(g, w, in, {true});
  ASSERT_TRUE(want);
  SKIP_WITHOUT_GPU();
  for (const char* precision : {"fp32", "fp16"})
    for (const char* layout : {"nchw", "nhwc"}) {
      SCOPED_TRACE(std::string(precision) + "/" + layout);
      ExecutorOptions eo;
      eo.config = config_of(precision, layout, 1);
      eo.keep_all = true;
      auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
      ASSERT_TRUE(plan);
      auto specs = Executor::conv_specs(g, w, *plan, eo);
      ASSERT_TRUE(specs) << specs.status().to_string();
      ContextOptions co;
      co.dtype = eo.config.dtype, co.math = eo.config.math;
      const ConvEngine engine = resolve_conv_engine(co.conv_engine, co.dtype, co.math);
      int ours = 0;
      for (const ConvSpec& spec : *specs) {
        const std::vector<std::string> names = own_conv_kernels(spec);
        if (spec.attrs.groups == 1 || names.empty()) continue;  // the pointwise ones are tuned
        auto k = make_own_conv_kernel(spec, names.back());
        ASSERT_TRUE(k);
        co.preset_kernels[kernel_cache_key(spec, engine, co.own_kernels)] = (*k)->choice();
        ++ours;
      }
      EXPECT_EQ(ours, 2) << "both depthwise convolutions run on ours";
      auto ctx = Context::create(co);
      ASSERT_TRUE(ctx) << ctx.status().to_string();
      eo.context = *ctx;
      auto exec = Executor::create(g, w, *plan, eo);
      ASSERT_TRUE(exec) << exec.status().to_string();
      ASSERT_TRUE((*exec)->set_input(in.data).is_ok());
      ASSERT_TRUE((*exec)->run().is_ok());
      EXPECT_GE((*exec)->kernel_report().own, ours);  // the pointwise ones may pick ours too
      EXPECT_EQ((*ctx)->kernel_stats().tuned, 2) << "the two pointwise convolutions, no depthwise one";
      for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id) {
        auto got = (*exec)->read(id);
        ASSERT_TRUE(got);
        EXPECT_LT(reference::relative_l2_error(*got, (*want)[size_t(id)].data), eo.config.tolerance())
            << g.node(id).name;
      }
    }
}

}  // namespace
}  // namespace ios::rt
