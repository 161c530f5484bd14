// Every operator, activation and op case in every precision and layout at batch 1 and 3 against the CPU
// reference; our copy kernel writing exactly a channel slice.
#include "gpu_test_support.h"

namespace ios::rt {
namespace {

ir::Graph op_matrix_graph() {
  using namespace ir;
  GraphBuilder b("ops", {6, 9, 9});
  b.begin_block();
  Value x = b.input();
  Value c1 = b.conv(x, Conv(8).kernel(3).pad(2).dilation(2, 2).act(Act::kSigmoid));
  Value c2 = b.conv(x.slice(1, 5), Conv(8).kernel(1, 3).pad(0, 1).act(Act::kTanh));
  Value c3 = b.conv(x, Conv(8).kernel(3).pad(1).grouped(2).act(Act::kNone).bias(false));
  Value c4 = b.conv(x, Conv(8).kernel(3).pad(1).act(Act::kRelu6));
  Value m = b.element({c1, c2}, ElementOp::kMul);
  Value gated = b.element({c2, b.pool(c1, GlobalAvgPool())}, ElementOp::kMul);  // a C x 1 x 1 gate
  Value a = b.element({add({c1, c2, c3, c4, gated}), m}, ElementOp::kAdd);
  Value p = b.pool(cat({a.slice(0, 4), x}), MaxPool(3).stride(2).pad(1).ceil());
  Value q = b.pool(a, AvgPool(3).stride(2).pad(1).include_pad(false));
  Value r = b.activation(cat({p, q}), Act::kTanh);
  Value s = b.sep_conv(b.activation(b.identity(add({r, r, r, r, r, r, r, r})), Act::kRelu6), 16, 3, 1, 1);
  Value g = b.pool(s, GlobalMaxPool());
  Value h = b.pool(s, GlobalAvgPool());
  Value dw = b.conv(x, Conv(6).grouped(6).act(Act::kRelu6));  // a per-channel affine (imported BatchNorm)
  ResizeAttrs up;  // 9x9 -> 14x19, bilinear, and nearest back down into a sequential's steps
  up.mode = ResizeMode::kLinear, up.coord = ResizeCoord::kHalfPixel, up.out_h = 14, up.out_w = 19;
  ResizeAttrs down;
  down.mode = ResizeMode::kNearest, down.coord = ResizeCoord::kAsymmetric, down.round = ResizeRound::kFloor;
  down.out_h = 5, down.out_w = 4;
  Value shuffled = b.step(cat({c1, c3}), ChannelShuffleAttrs{4});
  Value up_down = b.sequential(shuffled, SequentialAttrs{{up, ChannelShuffleAttrs{2}, down}});
  Value normed = b.step(b.conv(c4, Conv(12).act(Act::kNone)), ChannelNormAttrs{1e-6f});  // ConvNeXt's LayerNorm
  Value padded =
      b.step(b.step(c3, PadAttrs{PadMode::kReflect, 2, 1, 0, 3, 0.f}), PadAttrs{PadMode::kEdge, 1, 0, 2, 1, 0.f});
  Value framed = b.conv(b.step(padded, PadAttrs{PadMode::kConstant, 0, 1, 1, 0, -0.5f}), Conv(4).kernel(3));
  Value group_normed = b.step(c3, GroupNormAttrs{2, 1e-5f});                         // GroupNorm(2)
  Value responded = b.step(b.activation(c3, Act::kGelu), ResponseNormAttrs{1e-6f});  // ConvNeXt V2's GRN
  Value instance_normed = b.step(b.step(b.activation(c4, Act::kSilu), GroupNormAttrs{8, 1e-5f}), PReluAttrs{});
  Value gate = b.step(h, ChannelConvAttrs{5, 2, true});        // ECA's gate
  Value shares = b.step(cat({g, h}), ChannelSoftmaxAttrs{2});  // split attention's softmax across two paths
  // 8 x 9 x 9 -> 2 x 18 x 18 (pixel shuffle) -> 18 x 6 x 6 (space-to-depth by 3)
  Value blocks =
      b.step(b.step(c3, SpaceDepthAttrs{false, 2, BlockOrder::kCrd}), SpaceDepthAttrs{true, 3, BlockOrder::kDcr});
  Value both =
      b.identity(cat({g, h, gate, shares, b.pool(responded, GlobalMaxPool()), b.pool(dw, GlobalAvgPool()),
                      b.pool(b.step(up_down, up), GlobalMaxPool()), b.pool(normed, GlobalAvgPool()),
                      b.pool(framed, GlobalAvgPool()), b.pool(b.activation(group_normed, Act::kRelu), GlobalAvgPool()),
                      b.pool(instance_normed, GlobalMaxPool()), b.pool(blocks, GlobalAvgPool())}));
  b.end_block(b.linear(both, LinearAttrs{16, true, Act::kRelu}));
  return *b.build();
}

TEST(GpuOps, TheOpMatrixCoversEveryOpKind) {
  const ir::Graph g = op_matrix_graph();
  std::set<ir::OpKind> kinds;
  for (const ir::Node& n : g.nodes) kinds.insert(n.kind());
  std::vector<std::string> missing;
  for (size_t k = 0; k < std::variant_size_v<ir::Op>; ++k)
    if (!kinds.count(ir::OpKind(k))) missing.push_back(ir::op_kind_name(ir::OpKind(k)));
  EXPECT_TRUE(missing.empty()) << "op kinds without a GPU case: " << ::testing::PrintToString(missing);
}

struct OpCase {
  std::string precision, layout;
  friend void PrintTo(const OpCase& c, std::ostream* os) { *os << c.precision << "/" << c.layout; }
};

class GpuOps : public ::testing::TestWithParam<OpCase> {};

// Runs every node of `graph` on the GPU in `c`'s precision and layout at batch 1 and 3, and compares each
// with the CPU reference.
void expect_every_node_matches(const ir::Graph& graph, const OpCase& c) {
  ir::Weights w = make_weights(graph);
  for (int batch : {1, 3}) {
    reference::Tensor in(batch, graph.input_shape());
    in.data = ir::make_input(graph.input_shape(), batch, 11);
    auto want = reference::run_all(graph, w, in, {true});
    ASSERT_TRUE(want);
    SKIP_WITHOUT_GPU();
    auto plan = sched::compile_plan(graph, sched::sequential_schedule(graph));
    ExecutorOptions eo;
    eo.config = config_of(c.precision, c.layout, batch);
    eo.context = context_for(eo.config);
    eo.keep_all = true;  // every node is read back
    auto exec = Executor::create(graph, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->poison_activations().is_ok());
    ASSERT_TRUE((*exec)->set_input(in.data).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    double worst = 0;
    for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(graph.nodes.size()); ++id) {
      auto got = (*exec)->read(id);
      ASSERT_TRUE(got);
      const double err = reference::relative_l2_error(*got, (*want)[size_t(id)].data);
      worst = std::max(worst, err);
      EXPECT_LT(err, eo.config.tolerance()) << "node " << graph.node(id).name << " ("
                                            << ir::op_kind_name(graph.node(id).kind()) << ") " << eo.config.key();
    }
    std::printf("[%s] %-14s worst node rel-L2 %.3e\n", graph.name.c_str(), eo.config.key().c_str(), worst);
  }
}

TEST_P(GpuOps, EachOperatorMatchesTheReferenceAtBatchOneAndThree) {
  expect_every_node_matches(op_matrix_graph(), GetParam());
}

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (const std::string& p : kPrecisions)
    for (const char* l : {"nchw", "nhwc"}) cases.push_back({p, l});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryPrecisionAndLayout, GpuOps, ::testing::ValuesIn(op_cases()),
                         [](const auto& info) { return info.param.precision + "_" + info.param.layout; });

// The generated cases of tests/op_cases.h, one op (and attribute variant or activation) each, every precision
// and layout: `--gtest_filter='Ops/GpuOp.*/GroupNorm_*'` runs one op.
struct OneOpCase {
  size_t index;
  OpCase config;
  std::string name;
  friend void PrintTo(const OneOpCase& c, std::ostream* os) { *os << c.name; }
};

class GpuOp : public ::testing::TestWithParam<OneOpCase> {};

TEST_P(GpuOp, MatchesTheReferenceAtBatchOneAndThree) {
  static const std::vector<ios::testing::OpGraphCase> graphs = ios::testing::op_graph_cases();
  expect_every_node_matches(graphs.at(GetParam().index).build(), GetParam().config);
}

std::vector<OneOpCase> one_op_cases() {
  std::vector<OneOpCase> cases;
  const std::vector<ios::testing::OpGraphCase> graphs = ios::testing::op_graph_cases();
  for (size_t i = 0; i < graphs.size(); ++i)
    for (const OpCase& c : op_cases()) cases.push_back({i, c, graphs[i].name + "_" + c.precision + "_" + c.layout});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuOp, ::testing::ValuesIn(one_op_cases()),
                         [](const auto& info) { return info.param.name; });

// Every activation of the table (tests/activation_cases.h) fused into a convolution's epilogue (cuDNN's
// pointwise mode where it has one, else the convolution alone and our epilogue kernel), as a node of its
// own, and after a linear op.
ir::Graph activation_graph() {
  using namespace ir;
  GraphBuilder b("activations", {6, 9, 9});
  b.begin_block();
  Value x = b.input();
  Value plain = b.conv(x, Conv(8).kernel(3).pad(1).act(Act::kNone));
  std::vector<Value> heads;
  for (const auto& c : ios::testing::activation_cases()) {
    Value alone = b.activation(ios::testing::in_domain(c, b, plain), c.act);
    if (c.positive_only) {  // a convolution's or a linear op's output is of either sign
      heads.push_back(b.linear(b.pool(alone, GlobalAvgPool()), LinearAttrs{4, true, Act::kNone}));
      continue;
    }
    Value fused = b.conv(x, Conv(8).kernel(3).pad(1).act(c.act));
    Value pooled = b.pool(b.identity(add({fused, alone})), GlobalAvgPool());
    heads.push_back(b.linear(pooled, LinearAttrs{4, true, c.act}));
  }
  b.end_block(b.identity(cat(heads)));
  return *b.build();
}

class GpuActivations : public ::testing::TestWithParam<OpCase> {};

TEST_P(GpuActivations, EachActivationFusedAloneAndAfterALinearOpMatchesTheReference) {
  const ir::Graph graph = activation_graph();
  ir::Weights w = make_weights(graph);
  for (int batch : {1, 3}) {
    reference::Tensor in(batch, graph.input_shape());
    in.data = ir::make_input(graph.input_shape(), batch, 5);
    for (float& v : in.data) v *= 3.f;  // reach the activations' bends (+-3 for the hard ones)
    auto want = reference::run_all(graph, w, in, {true});
    ASSERT_TRUE(want);
    SKIP_WITHOUT_GPU();
    auto plan = sched::compile_plan(graph, sched::sequential_schedule(graph));
    ExecutorOptions eo;
    eo.config = config_of(GetParam().precision, GetParam().layout, batch);
    eo.context = context_for(eo.config);
    eo.keep_all = true;
    auto exec = Executor::create(graph, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->poison_activations().is_ok());
    ASSERT_TRUE((*exec)->set_input(in.data).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(graph.nodes.size()); ++id) {
      auto got = (*exec)->read(id);
      ASSERT_TRUE(got);
      const double err = reference::relative_l2_error(*got, (*want)[size_t(id)].data);
      const ir::Node& n = graph.node(id);
      std::string act;
      if (const auto* c = std::get_if<ir::ConvAttrs>(&n.op)) act = ir::act_name(c->activation);
      if (const auto* a = std::get_if<ir::ActivationAttrs>(&n.op)) act = ir::act_name(a->activation);
      if (const auto* l = std::get_if<ir::LinearAttrs>(&n.op)) act = ir::act_name(l->activation);
      EXPECT_LT(err, eo.config.tolerance())
          << "node " << n.name << " (" << ir::op_kind_name(n.kind()) << ", " << act << ") " << eo.config.key();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPrecisionAndLayout, GpuActivations, ::testing::ValuesIn(op_cases()),
                         [](const auto& info) { return info.param.precision + "_" + info.param.layout; });

TEST(GpuKernels, CopiesIntoAChannelSliceWriteExactlyTheSlice) {
  SKIP_WITHOUT_GPU();
  constexpr int kHw = 35 * 35, kChannels = 64, kWide = 256;
  for (DataType t : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
    const size_t eb = element_bytes(t);
    for (int first : {64, 3}) {  // 16-byte aligned rows, and not
      std::vector<uint8_t> src(size_t(kHw) * kChannels * eb), dst(size_t(kHw) * kWide * eb);
      for (size_t i = 0; i < src.size() / eb; ++i) store_element(&src[i * eb], t, float(i % 1000) * 0.5f);
      for (size_t i = 0; i < dst.size() / eb; ++i) store_element(&dst[i * eb], t, -1.f);
      auto d_src = device_alloc(src.size());
      auto d_dst = device_alloc(dst.size());
      ASSERT_TRUE(d_src && d_dst);
      ASSERT_EQ(cudaMemcpy(d_src->get(), src.data(), src.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d_dst->get(), dst.data(), dst.size(), cudaMemcpyHostToDevice), cudaSuccess);
      const DevTensor from{d_src->get(), kHw * kChannels, 1, kChannels};
      const DevTensor to{static_cast<uint8_t*>(d_dst->get()) + first * eb, kHw * kWide, 1, kWide};
      launch_gather(t, &from, 1, to, Extent{1, kChannels, kHw, true}, /*accumulate=*/false, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dst.data(), d_dst->get(), dst.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      int wrong = 0;
      for (int p = 0; p < kHw; ++p)
        for (int c = 0; c < kWide; ++c) {
          const bool inside = c >= first && c < first + kChannels;
          const float want = inside ? load_element(&src[(size_t(p) * kChannels + c - first) * eb], t) : -1.f;
          wrong += load_element(&dst[(size_t(p) * kWide + c) * eb], t) != want;
        }
      EXPECT_EQ(wrong, 0) << "dtype " << int(t) << ", slice from channel " << first;
    }
  }
}

// Every convolution rebuilt from the kernel cache as its engine writing a packed tensor that our kernel
// copies into the output (NHWC concatenation slices, strided, among them) still matches the CPU reference.

}  // namespace
}  // namespace ios::rt
