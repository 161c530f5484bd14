// GPU runtime against the CPU reference: every network x every policy x every precision at batch 1
// and 4, every operator x precision x layout x batch {1, 3}, activations poisoned before each run;
// the kernel cache across two processes. Skips itself where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "activation_cases.h"
#include "common/tensor_pack.h"
#include "models/models.h"
#include "op_cases.h"
#include "reference/reference_executor.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/kernels.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#include "runtime/stage_marginals.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::rt {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

const std::vector<std::string> kPrecisions = {"fp32", "tf32", "fp16", "bf16"};
const std::vector<sched::Policy> kPolicies = {sched::Policy::kSequential, sched::Policy::kGreedy,
                                              sched::Policy::kDpMerge,    sched::Policy::kDpParallel,
                                              sched::Policy::kDpBoth,     sched::Policy::kOpara};

// The plan of `policy`'s schedule from the analytic cost model (deterministic: the same plan on any machine);
// with `barriers`, dataflow execution keeps a barrier before every other stage.
Expected<sched::ExecutionPlan> analytic_plan(const ir::Graph& g, sched::Policy policy, sched::ExecMode mode,
                                             int max_part_size = sched::OptimizeOptions{}.max_part_size,
                                             bool barriers = false) {
  sched::AnalyticCostModel model;
  sched::OptimizeOptions o;
  o.policy = policy;
  o.max_part_size = max_part_size;
  ASSIGN_OR_RETURN(sched::OptimizeResult r, sched::optimize(g, o, model));
  if (barriers)
    for (int k = 1; k < r.schedule.stage_count(); k += 2) r.schedule.dataflow_barriers.push_back(k);
  return sched::compile_plan(g, r.schedule, mode);
}

ExecConfig config_of(const std::string& precision, const std::string& layout, int batch) {
  return *make_exec_config(precision, layout, batch);
}

// One context per data type and math mode for the whole test binary, as in a real process.
std::shared_ptr<Context> context_for(const ExecConfig& c) {
  static std::map<std::string, std::shared_ptr<Context>> contexts;
  auto& ctx = contexts[c.precision()];
  if (!ctx) {
    ContextOptions o;
    o.dtype = c.dtype;
    o.math = c.math;
    ctx = *Context::create(o);
  }
  return ctx;
}

struct Reference {
  ir::Graph graph;
  ir::Weights weights;
  std::map<int, std::vector<float>> input, output;  // by batch
  double max_abs = 0;  // over every activation: beyond fp16's range the network cannot run in fp16
};

constexpr double kHalfMax = 65504;

Reference& reference_for(const std::string& model) {
  static std::map<std::string, Reference> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  Reference r;
  r.graph = *models::build_model(model);
  r.weights = ir::make_weights(r.graph);
  for (int batch : {1, 4}) {
    r.input[batch] = ir::make_input(r.graph.input_shape(), batch, 7);
    reference::Tensor in(batch, r.graph.input_shape());
    in.data = r.input[batch];
    auto all = reference::run_all(r.graph, r.weights, in, {true});
    for (const reference::Tensor& t : *all)
      for (float v : t.data) r.max_abs = std::max(r.max_abs, double(std::fabs(v)));
    r.output[batch] = std::move(all->at(size_t(r.graph.output())).data);
  }
  return cache.emplace(model, std::move(r)).first->second;
}

struct Case {
  std::string model;
  sched::Policy policy;
  sched::ExecMode mode;
  bool barriers = false;      // dataflow barriers before every other stage
  std::string name() const {  // a test name: letters, digits and underscores
    std::string n = model + "_" + sched::policy_flag_name(policy) + "_" + sched::exec_mode_name(mode) +
                    (barriers ? "_barriers" : "");
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
  }
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }
};

class GpuMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMatchesReference, EveryPrecisionAtBatchOneAndFour) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  Reference& ref = reference_for(c.model);
  auto plan = analytic_plan(ref.graph, c.policy, c.mode, 50, c.barriers);
  ASSERT_TRUE(plan) << plan.status().to_string();
  const std::string label =
      sched::policy_flag_name(c.policy) + "/" + sched::exec_mode_name(c.mode) + (c.barriers ? "+barriers" : "");
  for (const std::string& precision : kPrecisions)
    for (int batch : {1, 4}) {
      if (precision == "fp16" && ref.max_abs > kHalfMax) {
        // Seeded He weights without normalisation: activations grow past fp16's largest value.
        std::printf("[check] %-12s %-27s fp16 not checked: reference activations reach %.3g > 65504\n", c.model.c_str(),
                    label.c_str(), ref.max_abs);
        continue;
      }
      ExecutorOptions eo;
      eo.config = config_of(precision, "auto", batch);
      eo.context = context_for(eo.config);
      auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
      ASSERT_TRUE(exec) << exec.status().to_string();
      ASSERT_TRUE((*exec)->poison_activations().is_ok());
      ASSERT_TRUE((*exec)->set_input(ref.input[batch]).is_ok());
      Status ran = (*exec)->run();
      ASSERT_TRUE(ran.is_ok()) << ran.to_string();
      auto out = (*exec)->output();
      ASSERT_TRUE(out);
      const double err = reference::relative_l2_error(*out, ref.output[batch]);
      Status again = (*exec)->run();  // a second replay reuses the same memory: same answer
      ASSERT_TRUE(again.is_ok()) << again.to_string();
      EXPECT_EQ(*(*exec)->output(), *out) << "second run differs";
      EXPECT_LT(err, eo.config.tolerance()) << c.name() << " " << eo.config.key();
      const KernelReport k = (*exec)->kernel_report();
      std::printf(
          "[check] %-12s %-27s %-14s rel-L2 %.3e | convs %d fused %d legacy %d | concat inputs in place %d copied %d | "
          "graph edges %d\n",
          c.model.c_str(), label.c_str(), eo.config.key().c_str(), err, k.convs, k.fused, k.legacy,
          k.concat_inputs_in_place, k.concat_inputs_copied, (*exec)->graph_edges());
    }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* m : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet", "densenet121"})
    for (sched::Policy p : kPolicies)
      for (sched::ExecMode mode :
           {sched::ExecMode::kStaged, sched::ExecMode::kDataflow, sched::ExecMode::kDataflowOrdered})
        cases.push_back({m, p, mode});
  for (const char* m : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet", "densenet121"})
    cases.push_back({m, sched::Policy::kDpBoth, sched::ExecMode::kDataflow, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllNetworksAllPoliciesAllModes, GpuMatchesReference, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name(); });

// Every operator and input form on its own (the networks never use element mul, sigmoid, tanh, relu6,
// dilation, average pools that exclude padding or slices at batch > 1).
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
  Value group_normed = b.step(c3, GroupNormAttrs{2, 1e-5f});  // GroupNorm(2)
  Value instance_normed = b.step(b.step(b.activation(c4, Act::kSilu), GroupNormAttrs{8, 1e-5f}), PReluAttrs{});
  Value both = b.identity(
      cat({g, h, b.pool(dw, GlobalAvgPool()), b.pool(b.step(up_down, up), GlobalMaxPool()),
           b.pool(normed, GlobalAvgPool()), b.pool(framed, GlobalAvgPool()),
           b.pool(b.activation(group_normed, Act::kRelu), GlobalAvgPool()), b.pool(instance_normed, GlobalMaxPool())}));
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
    Value fused = b.conv(x, Conv(8).kernel(3).pad(1).act(c.act));
    Value alone = b.activation(plain, c.act);
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

// Runs `ios run` and returns its standard output.
std::string run_ios(const std::string& args) {
  std::string out;
  // `ios` sits next to this test binary (the build folder may have moved since it was configured).
  const std::string ios = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ios").string();
  FILE* p = popen((ios + " " + args + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

std::vector<std::string> engine_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  engine ", 0) == 0) lines.push_back(line);
  return lines;
}

TEST(GpuKernelCache, ASecondProcessBuildsTheSameEnginesWithoutTuning) {
  SKIP_WITHOUT_GPU();
  // Heuristics' engines (fp16) and hand-made ones replayed from engine + knobs (exhaustive, fp32).
  for (const char* flags : {"--precision fp16", "--precision fp32 --conv-engine graph-exhaustive"}) {
    const std::string file = ::testing::TempDir() + "/ios_kernel_cache_test.json";
    std::filesystem::remove(file);
    std::filesystem::remove_all(KernelCache::plans_dir(file));
    const std::string args = std::string("run --model squeezenet --opt sequential --iters 5 --warmup 1 ") + flags +
                             " --verbose --check --kernel-cache " + file;
    const std::string first = run_ios(args), second = run_ios(args);
    std::printf("%s\n%s\n", first.c_str(), second.c_str());
    EXPECT_NE(first.find("from the kernel cache file 0"), std::string::npos) << first;
    EXPECT_NE(second.find("| 0 engines tuned in"), std::string::npos) << second;
    // Tuning says what it cost: every engine tuned timed at least one candidate, and only losers are cut.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(first, m,
                                  std::regex(R"((\d+) engines tuned in ([\d.]+) s \(([\d.]+) s timing )"
                                             R"((\d+) candidates, (\d+) cut short; ([\d.]+) s listing, )"
                                             R"(([\d.]+) s building plans \(([\d.]+) s compiling at run time\), )"
                                             R"(([\d.]+) s first runs\))")))
        << first;
    EXPECT_GT(std::stoi(m[1]), 0);
    EXPECT_LE(std::stod(m[3]), std::stod(m[2]));
    // Its parts are parts of the whole, and compiling is part of building.
    EXPECT_LE(std::stod(m[3]) + std::stod(m[6]) + std::stod(m[7]) + std::stod(m[9]),
              std::stod(m[2]) + 0.3);  // printed to 0.1 s
    EXPECT_LE(std::stod(m[8]), std::stod(m[7]) + 0.1);
    EXPECT_GE(std::stoi(m[4]), std::stoi(m[1]) + std::stoi(m[5]));
    // A file-only process tunes its first convolution once more and keeps the file's engine.
    EXPECT_NE(second.find("; 1 tuned again, kept from the file)"), std::string::npos) << second;
    // Engines cuDNN compiled at run time come back as their compiled plans, one file each.
    int plans = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(KernelCache::plans_dir(file), ec);
         !ec && it != std::filesystem::directory_iterator(); ++it)
      ++plans;
    std::printf("[kernel cache] %s: %d compiled plans kept\n", flags, plans);
    EXPECT_NE(second.find("(" + std::to_string(plans) + " of them compiled plans loaded;"), std::string::npos)
        << second;
    // Damaged plans (their headers intact) are built again, never run: the output still checks.
    for (const auto& entry : std::filesystem::directory_iterator(KernelCache::plans_dir(file), ec)) {
      std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(f)), {});
      bytes.resize(bytes.size() - bytes.size() / 3);
      f.close();
      std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << bytes;
    }
    const std::string third = run_ios(args);
    EXPECT_NE(third.find("(0 of them compiled plans loaded;"), std::string::npos) << third;
    EXPECT_NE(third.find("PASS"), std::string::npos) << third;
    EXPECT_NE(run_ios(args).find("(" + std::to_string(plans) + " of them compiled plans loaded;"), std::string::npos)
        << "the damaged plans were written again";
    EXPECT_FALSE(engine_lines(first).empty());
    EXPECT_EQ(engine_lines(first), engine_lines(second));
    EXPECT_NE(second.find("PASS"), std::string::npos);
  }
}

// A copy into a channel slice of a wider NHWC buffer (a concatenation's): by 16-byte rows where the slice
// is aligned, element by element where not; either way every element of the slice and none outside it.
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
TEST(GpuKernelCache, EnginesWhoseOutputOurKernelCopiesMatchTheReference) {
  SKIP_WITHOUT_GPU();
  for (const char* precision : {"tf32", "fp16"}) {
    const std::string file = ::testing::TempDir() + "/ios_output_copied_" + precision + ".json";
    std::filesystem::remove(file);
    std::filesystem::remove_all(KernelCache::plans_dir(file));
    const std::string args = std::string("run --model inception_v3 --opt sequential --iters 5 --warmup 1 --check ") +
                             "--precision " + precision + " --kernel-cache " + file;
    const std::string tuned = run_ios(args);
    EXPECT_NE(tuned.find("PASS"), std::string::npos) << tuned;
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string copied =
        std::regex_replace(text, std::regex(R"("output_copied": *false)"), R"("output_copied": true)");
    ASSERT_NE(copied, text) << "no choice to copy the output of";
    std::ofstream(file, std::ios::trunc) << copied;
    const std::string rebuilt = run_ios(args);
    std::printf("%s\n", rebuilt.c_str());
    EXPECT_NE(rebuilt.find("PASS"), std::string::npos) << rebuilt;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(rebuilt, m,
                                  std::regex(R"(Convolutions: (\d+) \(\d+ with bias/activation fused, )"
                                             R"(0 on the legacy API, (\d+) writing a packed output)")))
        << rebuilt;
    EXPECT_EQ(m[1], m[2]) << "every convolution's output copied";
  }
}

// A compile-ahead process builds its shard of the network's runtime-compiled plans: the shards of two
// processes add up to what one process builds alone.
TEST(GpuCompileAhead, ShardsBuildTheNetworksRuntimeCompiledPlansBetweenThem) {
  SKIP_WITHOUT_GPU();
  auto compiled = [](const std::string& shard) {
    const std::string out =
        run_ios("compile-ahead --model squeezenet --precision fp16 --kernel-cache none --shard " + shard);
    std::smatch m;
    EXPECT_TRUE(std::regex_search(out, m, std::regex(R"(compiled (\d+) plans)"))) << out;
    return m.empty() ? -1 : std::stoi(m[1]);
  };
  const int all = compiled("0/1");
  std::printf("[compile ahead] squeezenet fp16: %d plans\n", all);
  EXPECT_GT(all, 0);
  EXPECT_EQ(compiled("0/2") + compiled("1/2"), all);
}

// Tuning loads the plans a compile-ahead process wrote instead of compiling them, and the network they make
// matches the reference: SqueezeNet fp16's sequential network, its process done before the first tuning.
TEST(GpuCompileAhead, TuningLoadsThePlansTheProcessWroteAndTheNetworkMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  Reference& ref = reference_for("squeezenet");
  const std::string dir = ::testing::TempDir() + "/ios_ahead_plans_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out =
      run_ios("compile-ahead --model squeezenet --precision fp16 --kernel-cache none --shard 0/1 --plans-dir " + dir);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(compiled (\d+) plans)"))) << out;
  const auto files = std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator());
  EXPECT_EQ(files, std::stoi(m[1])) << "one file per plan compiled";
  ExecutorOptions eo;
  eo.config = config_of("fp16", "auto", 1);
  ContextOptions co;
  co.dtype = eo.config.dtype;
  co.math = eo.config.math;
  eo.context = *Context::create(co);
  eo.context->set_before_tuning([dir] { return Context::TuningCompanions{nullptr, 1, dir}; });
  auto plan = analytic_plan(ref.graph, sched::Policy::kSequential, sched::ExecMode::kStaged);
  ASSERT_TRUE(plan);
  auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
  ASSERT_TRUE(exec) << exec.status().to_string();
  ASSERT_TRUE((*exec)->set_input(ref.input[1]).is_ok());
  ASSERT_TRUE((*exec)->run().is_ok());
  auto y = (*exec)->output();
  ASSERT_TRUE(y);
  const double err = reference::relative_l2_error(*y, ref.output[1]);
  const TuningStats& t = eo.context->kernel_stats().tuning;
  std::printf(
      "[compile ahead] squeezenet fp16: %ld plans written, %d loaded by tuning, %.2f s compiling; rel-L2 %.2e\n",
      long(files), t.taken_ahead, t.compile_seconds, err);
  EXPECT_GT(t.taken_ahead, 0);
  EXPECT_LT(err, 1e-2);
  std::filesystem::remove_all(dir);
}

// The processes start at the first convolution tuned: a process that finds every kernel in the file starts none.
TEST(GpuCompileAhead, ProcessesStartOnlyWhereAConvolutionIsTuned) {
  SKIP_WITHOUT_GPU();
  const std::string file = ::testing::TempDir() + "/ios_compile_ahead_test.json";
  std::filesystem::remove(file);
  std::filesystem::remove_all(KernelCache::plans_dir(file));
  const std::string args =
      "run --model squeezenet --opt sequential --precision fp16 --iters 5 --warmup 1 --check "
      "--compile-ahead 2 --kernel-cache " +
      file;
  const std::string first = run_ios(args), second = run_ios(args);
  EXPECT_NE(first.find(", 2 processes compiling ahead"), std::string::npos) << first;
  EXPECT_EQ(second.find("processes compiling ahead"), std::string::npos) << second;
  EXPECT_NE(second.find("PASS"), std::string::npos) << second;
}

TEST(JitCache, ATurnedOffDriverJitCacheIsWarnedAboutByTheVariableThatTurnedItOff) {
  const char* names[] = {"CUDA_CACHE_DISABLE", "CUDA_CACHE_MAXSIZE"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* n : names) saved[n] = std::getenv(n) ? std::optional<std::string>(std::getenv(n)) : std::nullopt;
  for (const char* n : names) unsetenv(n);
  EXPECT_EQ(jit_cache_warning(), "");
  setenv("CUDA_CACHE_DISABLE", "0", 1);
  EXPECT_EQ(jit_cache_warning(), "");
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  EXPECT_NE(jit_cache_warning().find("CUDA_CACHE_DISABLE=1"), std::string::npos);
  unsetenv("CUDA_CACHE_DISABLE");
  setenv("CUDA_CACHE_MAXSIZE", "0", 1);
  EXPECT_NE(jit_cache_warning().find("CUDA_CACHE_MAXSIZE=0"), std::string::npos);
  setenv("CUDA_CACHE_MAXSIZE", "1073741824", 1);
  EXPECT_EQ(jit_cache_warning(), "");
  for (const auto& [n, v] : saved) v ? setenv(n.c_str(), v->c_str(), 1) : unsetenv(n.c_str());
}

TEST(GpuKernelCache, ACorruptFileIsIgnoredWithAWarning) {
  SKIP_WITHOUT_GPU();
  const std::string file = ::testing::TempDir() + "/ios_kernel_cache_corrupt.json";
  std::ofstream(file) << "{\"format\": \"ios-kernel-cache\", \"version\": 1, \"kern";
  ContextOptions o;
  o.kernel_cache_path = file;
  auto ctx = Context::create(o);
  ASSERT_TRUE(ctx) << ctx.status().to_string();
  EXPECT_NE((*ctx)->cache_warning().find("corrupt"), std::string::npos) << (*ctx)->cache_warning();
}

// One executor of `plan` built with `eo` and run once on a fixed input: its output and CUDA graph size.
struct RunResult {
  std::vector<float> output;
  int graph_nodes = -1, prefetch_nodes = 0;
};
Expected<RunResult> build_and_run(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                                  const ExecutorOptions& eo) {
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::create(g, w, plan, eo));
  RETURN_IF_ERROR(exec->set_input(ir::make_input(g.input_shape(), 1, 3)));
  RETURN_IF_ERROR(exec->run());
  ASSIGN_OR_RETURN(std::vector<float> out, exec->output());
  return RunResult{std::move(out), exec->graph_nodes(), exec->prefetch_nodes()};
}

TEST(GpuRuntime, EagerStreamsMatchGraphReplayInEveryMode) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  std::vector<std::vector<float>> outs;
  for (sched::ExecMode mode :
       {sched::ExecMode::kStaged, sched::ExecMode::kDataflow, sched::ExecMode::kDataflowOrdered}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    for (bool graph : {true, false}) {
      ExecutorOptions eo;
      eo.use_graph = graph;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
    }
  }
  for (const auto& out : outs) EXPECT_EQ(out, outs[0]);
}

// Prefetching weights, one or three stages ahead, adds one kernel node per stage that runs a convolution
// (the block has fewer than kMaxPrefetchRanges per stage) and changes no output bit, staged or dataflow.
TEST(GpuRuntime, PrefetchingWeightsAddsANodePerStageWithWeightsAndChangesNoOutput) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    std::set<int> stages_with_weights;
    for (const sched::PlanStep& st : plan->steps)
      for (ir::NodeId op : st.ops)
        if (st.kind == sched::PlanStep::Kind::kLaunch && g.node(op).is<ir::ConvAttrs>())
          stages_with_weights.insert(st.stage);
    std::vector<std::vector<float>> outs;
    std::vector<int> nodes, prefetch_nodes;
    for (int ahead : {0, 1, 3}) {
      ExecutorOptions eo;
      eo.prefetch_ahead = ahead;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
      nodes.push_back(run->graph_nodes);
      prefetch_nodes.push_back(run->prefetch_nodes);
    }
    ASSERT_GT(nodes[0], 0);
    EXPECT_EQ(prefetch_nodes[0], 0);
    for (size_t i = 1; i < outs.size(); ++i) {
      EXPECT_EQ(outs[i], outs[0]) << sched::exec_mode_name(mode) << " variant " << i;
      EXPECT_EQ(nodes[i] - nodes[0], int(stages_with_weights.size())) << sched::exec_mode_name(mode);
      EXPECT_EQ(prefetch_nodes[i], int(stages_with_weights.size())) << sched::exec_mode_name(mode);
    }
  }
}

// The measured cost model's stages replay behind a lead kernel: one node more, the same output.
TEST(GpuRuntime, ALeadKernelAddsOneNodeAndChangesNoOutput) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block();
  ir::Weights w = ir::make_weights(g);
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10), mode);
    ASSERT_TRUE(plan);
    std::vector<std::vector<float>> outs;
    std::vector<int> nodes;
    for (bool lead : {false, true}) {
      ExecutorOptions eo;
      eo.lead_kernel = lead;
      auto run = build_and_run(g, w, *plan, eo);
      ASSERT_TRUE(run) << run.status().to_string();
      outs.push_back(run->output);
      nodes.push_back(run->graph_nodes);
    }
    EXPECT_EQ(outs[1], outs[0]) << sched::exec_mode_name(mode);
    EXPECT_EQ(nodes[1], nodes[0] + 1) << sched::exec_mode_name(mode);
  }
}

// After a second of idling the clocks are brought up again: a 2 ms spin (cycles at the top clock) then runs
// in 2 ms, unless the GPU never got there and the bring-up gave up at 300 ms.
TEST(GpuRuntime, BringingUpTheClocksLeavesASpinRunningAtTheTopClock) {
  SKIP_WITHOUT_GPU();
  auto s = make_stream();
  ASSERT_TRUE(s);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const Expected<double> seconds = bring_up_clocks(*s);
  ASSERT_TRUE(seconds) << seconds.status().to_string();
  EXPECT_LE(*seconds, 0.35);
  auto begin = make_event(true), end = make_event(true);
  ASSERT_TRUE(begin && end);
  ASSERT_EQ(cudaEventRecord(*begin, *s), cudaSuccess);
  launch_spin(2.0, *s);
  ASSERT_EQ(cudaEventRecord(*end, *s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(*end), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, *begin, *end), cudaSuccess);
  std::printf("[clocks] brought up in %.1f ms; a 2 ms spin then ran %.3f ms\n", *seconds * 1e3, ms);
  if (*seconds < 0.3) {
    EXPECT_LE(ms, 2.1);
  }
}

// Two kernel nodes joined by a programmatic (PDL) edge, as stream capture makes of cuDNN's launches:
// the edge becomes one full dependency, the graph still runs, and a second pass finds nothing to change.
TEST(GpuRuntime, ProgrammaticEdgesOfAGraphBecomeFullDependencies) {
  SKIP_WITHOUT_GPU();
  cudaGraph_t raw = nullptr;
  ASSERT_EQ(cudaGraphCreate(&raw, 0), cudaSuccess);
  CudaGraph graph(raw);
  const PrefetchRanges nothing{};
  ASSERT_EQ(add_l2_prefetch_node(graph.get(), nullptr, 0, nothing), cudaSuccess);
  ASSERT_EQ(add_l2_prefetch_node(graph.get(), nullptr, 0, nothing), cudaSuccess);
  size_t count = 2;
  cudaGraphNode_t nodes[2];
  ASSERT_EQ(cudaGraphGetNodes(graph.get(), nodes, &count), cudaSuccess);
  cudaGraphEdgeData programmatic{};
  programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  ASSERT_EQ(cudaGraphAddDependencies(graph.get(), &nodes[0], &nodes[1], &programmatic, 1), cudaSuccess);

  Expected<int> changed = make_edges_full(graph.get());
  ASSERT_TRUE(changed) << changed.status().to_string();
  EXPECT_EQ(*changed, 1);
  size_t edges = 1;
  cudaGraphNode_t from = nullptr, to = nullptr;
  cudaGraphEdgeData data{};
  data.type = cudaGraphDependencyTypeProgrammatic;
  ASSERT_EQ(cudaGraphGetEdges(graph.get(), &from, &to, &data, &edges), cudaSuccess);
  ASSERT_EQ(edges, 1u);
  EXPECT_EQ(from, nodes[0]);
  EXPECT_EQ(to, nodes[1]);
  EXPECT_EQ(data.type, cudaGraphDependencyTypeDefault);
  EXPECT_EQ(data.from_port, 0);
  EXPECT_EQ(*make_edges_full(graph.get()), 0);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph.get(), 0), cudaSuccess);
  CudaGraphExec owned(exec);
  ASSERT_EQ(cudaGraphLaunch(owned.get(), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(ConvTuning, StridedSlicesAreNHWCChannelSlicesOrNCHWOnesBeyondBatchOne) {
  auto conv = [](const std::string& layout, int batch, int x_buffer_channels, int y_buffer_channels) {
    ConvSpec s;
    s.config = *make_exec_config("tf32", layout, batch);
    s.in = {64, 17, 17};
    s.out = {96, 17, 17};
    s.x = slice_layout(s.config.layout, x_buffer_channels, 0, 17, 17);
    s.y = slice_layout(s.config.layout, y_buffer_channels, 32, 17, 17);
    return s;
  };
  EXPECT_FALSE(touches_strided_slice(conv("nhwc", 1, 64, 96)));
  EXPECT_TRUE(touches_strided_slice(conv("nhwc", 1, 64, 768)));    // writes a concatenation's slice
  EXPECT_TRUE(touches_strided_slice(conv("nhwc", 1, 192, 96)));    // reads a merged convolution's slice
  EXPECT_FALSE(touches_strided_slice(conv("nchw", 1, 192, 768)));  // one sample's channel slice is dense
  EXPECT_TRUE(touches_strided_slice(conv("nchw", 2, 64, 768)));
  ConvSpec residual = conv("nhwc", 1, 64, 96);
  residual.z = slice_layout(Layout::kNHWC, 288, 0, 17, 17);
  EXPECT_TRUE(touches_strided_slice(residual));
}

TEST(ConvTuning, EveryEngineChoiceParsesFromItsNameAndAWrongOneIsNamed) {
  for (ConvEngine e : {ConvEngine::kAuto, ConvEngine::kGraph, ConvEngine::kGraphExhaustive,
                       ConvEngine::kGraphRuntimeCompiled, ConvEngine::kLegacy}) {
    auto parsed = parse_conv_engine(conv_engine_name(e));
    ASSERT_TRUE(parsed) << conv_engine_name(e);
    EXPECT_EQ(*parsed, e);
  }
  auto bad = parse_conv_engine("rtc");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().to_string().find("--conv-engine"), std::string::npos);
  EXPECT_NE(bad.status().to_string().find("'rtc'"), std::string::npos);
  EXPECT_EQ(resolve_conv_engine(ConvEngine::kAuto, DataType::kF32, MathMode::kTf32), ConvEngine::kGraphRuntimeCompiled);
  EXPECT_EQ(resolve_conv_engine(ConvEngine::kAuto, DataType::kF16, MathMode::kStrict),
            ConvEngine::kGraphRuntimeCompiled);
  EXPECT_EQ(resolve_conv_engine(ConvEngine::kAuto, DataType::kF32, MathMode::kStrict), ConvEngine::kGraphExhaustive);
}

TEST(TuningBudget, StopsAfterSixLosingCandidatesInARowOrSixteenTimedUnlessExhaustive) {
  TuningBudget graph = TuningBudget::for_engine(ConvEngine::kGraph, 64);
  graph.timed(true);
  for (int i = 0; i < 5; ++i) graph.timed(false);
  EXPECT_TRUE(graph.wants_more());  // 5 losing in a row
  graph.timed(true);                // a new best starts the count again
  for (int i = 0; i < 5; ++i) graph.timed(false);
  EXPECT_TRUE(graph.wants_more());
  graph.timed(false);
  EXPECT_FALSE(graph.wants_more());  // 6 losing in a row
  EXPECT_EQ(graph.timed_count(), 13);
  TuningBudget improving = TuningBudget::for_engine(ConvEngine::kGraph, 64);
  for (int i = 0; i < 16; ++i) improving.timed(true);
  EXPECT_FALSE(improving.wants_more());  // at most 16 timed
  TuningBudget exhaustive = TuningBudget::for_engine(ConvEngine::kGraphExhaustive, 40);
  exhaustive.timed(true);
  for (int i = 0; i < 38; ++i) exhaustive.timed(false);
  EXPECT_TRUE(exhaustive.wants_more());  // every candidate it has
  exhaustive.timed(false);
  EXPECT_FALSE(exhaustive.wants_more());
}

TEST(PrefetchSuffix, NamesHowManyStagesAheadAndRejectsAnythingElse) {
  EXPECT_EQ(prefetch_suffix(0), "");
  EXPECT_EQ(prefetch_suffix(1), "+prefetch");
  EXPECT_EQ(prefetch_suffix(3), "+prefetch3");
  for (int ahead : {0, 1, 3, 12}) {
    auto split = split_prefetch_suffix("dataflow" + prefetch_suffix(ahead));
    ASSERT_TRUE(split) << split.status().to_string();
    EXPECT_EQ(split->base, "dataflow");
    EXPECT_EQ(split->ahead, ahead);
  }
  for (const char* bad : {"staged+prefetch0", "staged+prefetchx", "staged+prefetch-1", "staged+prefetch123"}) {
    auto split = split_prefetch_suffix(bad);
    ASSERT_FALSE(split) << bad;
    EXPECT_NE(split.status().to_string().find(bad), std::string::npos) << split.status().to_string();
  }
}

// One run of `plan` on poisoned activations: its output's relative L2 error against `want`, and its kernels.
struct CheckedRun {
  double error = 1;
  KernelReport kernels;
};
CheckedRun run_checked(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                       const ExecutorOptions& eo, const std::vector<float>& input, const std::vector<float>& want) {
  auto exec = Executor::create(g, w, plan, eo);
  EXPECT_TRUE(exec) << exec.status().to_string();
  if (!exec) return {};
  const bool ran = (*exec)->poison_activations().is_ok() && (*exec)->set_input(input).is_ok() && (*exec)->run().is_ok();
  EXPECT_TRUE(ran) << eo.config.plan_key();
  if (!ran) return {};
  return {reference::relative_l2_error(*(*exec)->output(), want), (*exec)->kernel_report()};
}

TEST(GpuRuntime, DenseLayersReadingPrefixesOfOneSharedBufferMatchTheReference) {
  const ir::Graph g = testing::dense_block(4, /*growth=*/8, /*channels=*/8, /*size=*/6);
  const ir::Weights w = ir::make_weights(g);
  for (int batch : {1, 3}) {
    reference::Tensor in(batch, g.input_shape());
    in.data = ir::make_input(g.input_shape(), batch, 5);
    auto want = reference::run_all(g, w, in, {true});
    ASSERT_TRUE(want);
    SKIP_WITHOUT_GPU();
    for (sched::Policy policy : {sched::Policy::kSequential, sched::Policy::kDpBoth}) {
      auto plan = analytic_plan(g, policy, sched::ExecMode::kStaged);
      ASSERT_TRUE(plan);
      for (const std::string& precision : kPrecisions)
        for (const char* layout : {"nchw", "nhwc"}) {
          ExecutorOptions eo;
          eo.config = config_of(precision, layout, batch);
          eo.context = context_for(eo.config);
          const CheckedRun r = run_checked(g, w, *plan, eo, in.data, want->at(size_t(g.output())).data);
          const double err = r.error;
          EXPECT_LT(err, eo.config.tolerance()) << eo.config.key();
          const KernelReport& k = r.kernels;
          EXPECT_EQ(k.concat_inputs_copied, 0) << eo.config.key();  // 8-channel slices are aligned in every config
          std::printf("[dense] %-10s %-14s rel-L2 %.3e | concat inputs in place %d copied %d\n",
                      sched::policy_flag_name(policy).c_str(), eo.config.key().c_str(), err, k.concat_inputs_in_place,
                      k.concat_inputs_copied);
        }
    }
  }
}

// conv-copy: Inception V3's convolutions write tensors of their own and its concatenations copy them (NHWC);
// the output still matches the reference at every precision, staged and dataflow, and in NHWC fewer
// concatenation inputs are written in place than with in-place writes.
TEST(GpuRuntime, ConvolutionsLeftToTheirConcatenationsMatchTheReference) {
  const ir::Graph g = *models::build_model("inception_v3");
  const ir::Weights w = ir::make_weights(g);
  reference::Tensor in(1, g.input_shape());
  in.data = ir::make_input(g.input_shape(), 1, 5);
  auto want = reference::run(g, w, in);
  ASSERT_TRUE(want);
  SKIP_WITHOUT_GPU();
  for (sched::ExecMode mode : {sched::ExecMode::kStaged, sched::ExecMode::kDataflow}) {
    auto plan = analytic_plan(g, sched::Policy::kDpBoth, mode);
    ASSERT_TRUE(plan);
    for (const std::string& precision : kPrecisions) {
      std::map<std::string, KernelReport> reports;
      for (const char* writes : {"in-place", "conv-copy"}) {
        ExecutorOptions eo;
        eo.config = *make_exec_config(precision, "auto", 1, writes);
        eo.context = context_for(eo.config);
        const CheckedRun r = run_checked(g, w, *plan, eo, in.data, want->data);
        const double err = r.error;
        EXPECT_LT(err, eo.config.tolerance()) << eo.config.plan_key();
        reports[writes] = r.kernels;
        std::printf("[conv-copy] %-9s %-24s rel-L2 %.3e | concat inputs in place %d copied %d\n",
                    sched::exec_mode_name(mode), eo.config.plan_key().c_str(), err,
                    reports[writes].concat_inputs_in_place, reports[writes].concat_inputs_copied);
      }
      if (make_exec_config(precision, "auto", 1)->layout == Layout::kNHWC) {
        EXPECT_LT(reports["conv-copy"].concat_inputs_in_place, reports["in-place"].concat_inputs_in_place) << precision;
      }
    }
  }
}

// Chaos mode: `replays` runs with random delays before every plan step; returns how many outputs differ
// bit for bit from the unperturbed run (activations poisoned before each run).
int chaos_differences(const ir::Graph& g, const ir::Weights& w, const sched::ExecutionPlan& plan,
                      const ExecConfig& config, int replays, bool use_graph = true) {
  ExecutorOptions eo;
  eo.use_graph = use_graph;
  eo.config = config;
  eo.context = context_for(config);
  eo.chaos = true;
  auto exec = Executor::create(g, w, plan, eo);
  EXPECT_TRUE(exec) << exec.status().to_string();
  if (!exec) return -1;
  const auto input = ir::make_input(g.input_shape(), config.batch, 11);
  auto run = [&](uint64_t seed) {
    EXPECT_TRUE((*exec)->perturb(seed).is_ok());
    EXPECT_TRUE((*exec)->poison_activations().is_ok());
    EXPECT_TRUE((*exec)->set_input(input).is_ok());
    EXPECT_TRUE((*exec)->run().is_ok());
    return *(*exec)->output();
  };
  const std::vector<float> baseline = run(0);
  int differing = 0;
  for (int i = 1; i <= replays; ++i) {
    const std::vector<float> out = run(uint64_t(i));
    differing += std::memcmp(out.data(), baseline.data(), out.size() * sizeof(float)) != 0;
  }
  return differing;
}

TEST(GpuChaos, PerturbedReplaysMatchTheUnperturbedRunBitForBit) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"squeezenet", "googlenet"}) {
    Reference& ref = reference_for(name);
    for (sched::Policy p : kPolicies) {
      auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kStaged);
      ASSERT_TRUE(plan) << plan.status().to_string();
      for (const std::string& precision : kPrecisions) {
        const int differing = chaos_differences(ref.graph, ref.weights, *plan, config_of(precision, "auto", 1), 20);
        EXPECT_EQ(differing, 0) << name << " " << sched::policy_flag_name(p) << " " << precision;
        std::printf("[chaos] %-12s %-18s %-5s 20 perturbed replays, %d differ\n", name,
                    sched::policy_flag_name(p).c_str(), precision.c_str(), differing);
      }
    }
  }
}

TEST(GpuChaos, DataflowGraphsStayBitIdenticalOverAHundredPerturbedReplays) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"squeezenet", "googlenet", "inception_v3", "randwire", "nasnet"}) {
    Reference& ref = reference_for(name);
    for (sched::Policy p : kPolicies) {
      auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kDataflow, 50);
      ASSERT_TRUE(plan) << plan.status().to_string();
      for (const char* precision : {"fp32", "bf16"}) {
        const int differing = chaos_differences(ref.graph, ref.weights, *plan, config_of(precision, "auto", 1), 100);
        EXPECT_EQ(differing, 0) << name << " " << sched::policy_flag_name(p) << " dataflow " << precision;
        std::printf("[chaos] %-12s %-18s dataflow %-5s 100 perturbed replays, %d differ\n", name,
                    sched::policy_flag_name(p).c_str(), precision, differing);
      }
    }
  }
}

TEST(GpuChaos, AMissingDependencyIsCaught) {
  SKIP_WITHOUT_GPU();
  // Two chained convolutions on two streams: the second waits for the first's event. Dropping that wait
  // is exactly the bug chaos mode exists to expose: with the first delayed, the second reads poison.
  ir::GraphBuilder b("two_streams", {64, 28, 28});
  b.begin_block();
  b.end_block(b.conv(b.conv(b.input(), ir::Conv(64).kernel(3).pad(1)), ir::Conv(64).kernel(3).pad(1)));
  const ir::Graph g = *b.build();
  const ir::Weights w = ir::make_weights(g);
  sched::Schedule s;
  s.streams = sched::StreamSchedule{{1, 2}, {0, 1, 0}};
  auto plan = sched::compile_plan(g, s);
  ASSERT_TRUE(plan) << plan.status().to_string();
  sched::ExecutionPlan broken = *plan;
  const auto second = std::find_if(broken.steps.begin(), broken.steps.end(), [](const sched::PlanStep& st) {
    return st.kind == sched::PlanStep::Kind::kLaunch && st.ops == std::vector<ir::NodeId>{2};
  });
  ASSERT_NE(second, broken.steps.begin());
  ASSERT_EQ((second - 1)->kind, sched::PlanStep::Kind::kWait);
  broken.steps.erase(second - 1);
  EXPECT_EQ(chaos_differences(g, w, *plan, config_of("fp32", "auto", 1), 20), 0);
  EXPECT_GT(chaos_differences(g, w, broken, config_of("fp32", "auto", 1), 20), 0);
}

TEST(GpuRuntime, MeasuredCostModelTimesAStage) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  auto ms = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}, {2, 3}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_LT(*ms, 10.0);
}

// What each stage adds to the staged network (the network less the network without it): the stages'
// marginals cover most of the network and none exceeds it; the largest stage adds something.
TEST(GpuRuntime, StageMarginalsAddUpToAboutTheStagedNetwork) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  const ir::Weights w = ir::make_weights(g);
  const std::vector<sched::Stage> stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}, {2, 3}, {4, 5, 6}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{7}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{8}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  ExecutorOptions options;
  options.context = context_for(options.config);
  auto m = time_stage_marginals(g, w, stages, options);
  ASSERT_TRUE(m) << m.status().to_string();
  ASSERT_EQ(m->stages.size(), stages.size());
  double sum = 0, largest = 0;
  for (const StageMarginal& s : m->stages) {
    EXPECT_LT(s.in_network_ms, m->network_ms);
    sum += s.in_network_ms;
    largest = std::max(largest, s.in_network_ms);
  }
  EXPECT_GT(m->network_ms, 0.0);
  EXPECT_GT(largest, 0.0);
  EXPECT_GT(sum, 0.5 * m->network_ms);
  EXPECT_LT(sum, 1.2 * m->network_ms);
}

// The same two convolutions merged, once writing their concatenation in place (their terms in order)
// and once copied into it by the concatenation (reversed): the copy, which the network makes in the
// concatenation's stage, is timed with the merge (sched::compile_timed_stages).
TEST(GpuRuntime, MeasuredCostModelTimesAMergeWithTheCopyItsConcatenationMakes) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::merged_terms(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  auto ms = model.stage_latencies_ms(
      g, {sched::Stage{sched::StageKind::kMerge, {{1, 2}}}, sched::Stage{sched::StageKind::kMerge, {{3, 4}}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  std::printf("merge in place %.4f ms, merge copied %.4f ms\n", (*ms)[0], (*ms)[1]);
  EXPECT_GT((*ms)[1], (*ms)[0]);
}

// A merge is also timed with the ops that read its outputs after it, and each of those alone, once per
// model: the merge's figure is charged what reading its slices costs them.
TEST(GpuRuntime, MeasuredCostModelTimesAMergeWithItsReadersAndEachReaderAloneOnce) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  // Nodes 2 and 4: the 1x1 convolutions read by 3 and 5.
  auto first = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kMerge, {{2, 4}}}, 1);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(model.stats().stages, 4);  // the merge, the merge and its readers, each reader alone
  auto again = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kMerge, {{4, 2}}}, 1);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(model.stats().stages, 6);  // the readers alone are known
  EXPECT_GT(*first, 0.0);
  EXPECT_GT(*again, 0.0);
}

TEST(GpuRuntime, MeasuredCostModelTimesSegmentsAsOneDataflowGraph) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  const sched::Stage first{sched::StageKind::kConcurrent, {{1}, {2}, {4}, {7}}};
  const sched::Stage second{sched::StageKind::kConcurrent, {{3}, {5}, {8}}};
  auto alone = model.stage_latencies_ms(g, {first, second}, 1);
  auto segments = model.segment_latencies_ms(g, {{first}, {second}, {first, second}}, 1);
  ASSERT_TRUE(alone && segments) << alone.status().to_string() << segments.status().to_string();
  std::printf("stages alone %.4f %.4f ms | segments %.4f %.4f ms, both without a barrier %.4f ms\n", (*alone)[0],
              (*alone)[1], (*segments)[0], (*segments)[1], (*segments)[2]);
  // One stage is the same graph either way: every group on its own branch.
  EXPECT_NEAR((*segments)[0], (*alone)[0], 0.3 * (*alone)[0]);
  EXPECT_NEAR((*segments)[1], (*alone)[1], 0.3 * (*alone)[1]);
  // Without the barrier the two stages overlap, but each still runs.
  EXPECT_GT((*segments)[2], 0.8 * std::max((*segments)[0], (*segments)[1]));
  EXPECT_LT((*segments)[2], 1.3 * ((*segments)[0] + (*segments)[1]));
  sched::Schedule s = sched::sequential_schedule(g);
  s.blocks[0].stages = {first, second, sched::Stage{sched::StageKind::kConcurrent, {{6}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  auto placed = sched::place_barriers(g, s, model, sched::BarrierOptions{});
  ASSERT_TRUE(placed) << placed.status().to_string();
  s.dataflow_barriers = placed->barriers;
  EXPECT_TRUE(sched::validate(g, s));
  EXPECT_LE(placed->dataflow_ms, placed->barriers_ms);
}

TEST(GpuRuntime, MeasuredCostModelTimesWholeNetworksUnderEachBarrierSet) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  sched::Schedule s = sched::sequential_schedule(g);
  s.blocks[0].stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}, {2}, {4}, {7}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{3}, {5}, {8}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{6}}},
                        sched::Stage{sched::StageKind::kConcurrent, {{9}}}};
  auto ms = model.network_latencies_ms(g, s, {{1, 2, 3}, {}, {2}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  ASSERT_EQ(ms->size(), 3u);
  // Every barrier is the staged schedule: timed behind the lane's head start, less the stage boundary, it
  // leaves out what `ios run` pays an inference at a time for the launch (H200: 0.0145 against 0.0206 ms).
  auto plan = sched::compile_plan(g, s, sched::ExecMode::kStaged);
  ASSERT_TRUE(plan);
  ExecutorOptions options;
  options.context = context_for(ExecConfig{});
  auto staged = Executor::create(g, *model.weights(), *plan, options);
  ASSERT_TRUE(staged) << staged.status().to_string();
  auto t = (*staged)->time(20, 200);
  ASSERT_TRUE(t);
  std::printf("every barrier %.4f ms (staged graph %.4f) | none %.4f | one %.4f\n", (*ms)[0], t->median_ms, (*ms)[1],
              (*ms)[2]);
  EXPECT_LE((*ms)[0], 1.1 * t->median_ms);
  EXPECT_GE((*ms)[0], 0.4 * t->median_ms);
  for (double x : *ms) EXPECT_GT(x, 0.3 * (*ms)[0]);
  // Refinement chooses among sets it timed, and its choice is a valid schedule.
  auto placed = sched::place_barriers(g, s, model, sched::BarrierOptions{});
  ASSERT_TRUE(placed);
  auto refined = sched::refine_barriers(g, s, model, *placed, sched::RefineOptions{});
  ASSERT_TRUE(refined) << refined.status().to_string();
  s.dataflow_barriers = refined->barriers;
  EXPECT_TRUE(sched::validate(g, s));
  if (refined->passes > 0) {
    EXPECT_LE(refined->measured_ms, refined->every_barrier_ms * 1.05);
  }
}

TEST(GpuRuntime, MeasuredCostModelUploadsEachWeightOnceAndFollowsTheStopRule) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{1, 2, 3, 5, 0.5};
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  const sched::Stage a{sched::StageKind::kConcurrent, {{1}, {2, 3}}};
  const sched::Stage b{sched::StageKind::kConcurrent, {{1}}};
  for (const sched::Stage& st : {a, b, a}) {
    auto ms = model.stage_latency_ms(g, st, 1);
    ASSERT_TRUE(ms) << ms.status().to_string();
    EXPECT_GT(*ms, 0.0);
  }
  const sched::StageTimingStats& t = model.stats();
  EXPECT_EQ(t.stages, 3);
  EXPECT_GE(t.rounds, 3 * 3);  // min_rounds each, at most max_rounds
  EXPECT_LE(t.rounds, 3 * 5);
  EXPECT_GE(t.replays, 3 * 1 + t.rounds * 2);
  // A stage past min_rounds is warmed up again; a round the GPU reached too early is queued again.
  EXPECT_LE(t.replays, 3 * 2 + (t.rounds + t.requeued) * 2);
  EXPECT_EQ(t.passes, 3);  // one stage per request
}

// Stages asked together are timed in one pass, the GPU replaying one while the host builds the next: each
// latency is the one the stage gets alone, in the order asked (the two convolutions differ in cost by
// more than 10x, so a mix-up shows).
TEST(GpuRuntime, MeasuredCostModelTimesABatchInOnePassLikeOneStageAtATime) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("big_and_small", {256, 56, 56});
  gb.begin_block();
  const ir::Value big = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));  // node 1: ~3.7 GFLOP
  const ir::Value small = gb.conv(gb.input(), ir::Conv(8));                   // node 2: launch-bound
  gb.end_block(gb.identity(ir::cat({big, small})));
  const ir::Graph g = *gb.build();
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  std::vector<sched::Stage> stages;
  for (const std::vector<std::vector<ir::NodeId>>& groups :
       std::vector<std::vector<std::vector<ir::NodeId>>>{{{1}}, {{2}}, {{1}, {2}}, {{2}}, {{1}}})
    stages.push_back(sched::Stage{sched::StageKind::kConcurrent, groups});
  std::vector<double> alone;
  for (const sched::Stage& st : stages) {
    auto ms = model.stage_latency_ms(g, st, 1);
    ASSERT_TRUE(ms) << ms.status().to_string();
    alone.push_back(*ms);
  }
  const int64_t passes = model.stats().passes;
  auto batched = model.stage_latencies_ms(g, stages, 1);
  ASSERT_TRUE(batched) << batched.status().to_string();
  ASSERT_EQ(batched->size(), stages.size());
  EXPECT_EQ(model.stats().passes, passes + 1);
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("[batch] stage %zu: alone %.4f ms, in a batch %.4f ms\n", i, alone[i], (*batched)[i]);
    EXPECT_GT((*batched)[i], 0.5 * alone[i]) << i;
    EXPECT_LT((*batched)[i], 2.0 * alone[i]) << i;
  }
}

// Stages asked with limits start with one round: the big convolution, far past a limit of 1 us, stops
// there; the small one, far within its limit, resumes to the rule's minimum (2) and settles. Their figures
// match those timed without limits.
TEST(GpuRuntime, MeasuredCostModelStopsAStageFarPastItsLimitAfterOneRound) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("big_and_small", {256, 56, 56});
  gb.begin_block();
  const ir::Value big = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));  // node 1
  const ir::Value small = gb.conv(gb.input(), ir::Conv(8));                   // node 2
  gb.end_block(gb.identity(ir::cat({big, small})));
  const ir::Graph g = *gb.build();
  MeasuredCostModel model(g, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  const std::vector<sched::Stage> stages = {sched::Stage{sched::StageKind::kConcurrent, {{1}}},
                                            sched::Stage{sched::StageKind::kConcurrent, {{2}}}};
  auto free = model.stage_latencies_ms(g, stages, 1);
  ASSERT_TRUE(free) << free.status().to_string();
  const sched::StageTimingStats before = model.stats();
  auto limited = model.limited_stage_latencies_ms(g, stages, {0.001, 1000.0}, 1);
  ASSERT_TRUE(limited) << limited.status().to_string();
  const sched::StageTimingStats& after = model.stats();
  EXPECT_EQ(after.stopped_early - before.stopped_early, 1);
  EXPECT_GE(after.rounds - before.rounds, 1 + 2);
  EXPECT_LE(after.rounds - before.rounds, 1 + 4);
  for (size_t i = 0; i < stages.size(); ++i) {
    std::printf("[limits] stage %zu: no limit %.4f ms, limited %.4f ms\n", i, (*free)[i], (*limited)[i]);
    EXPECT_GT((*limited)[i], 0.5 * (*free)[i]) << i;
    EXPECT_LT((*limited)[i], 2.0 * (*free)[i]) << i;
  }
}

// Two search workers on sibling contexts (shared timing stream and kernel choices) build stages side by side
// but take turns on the GPU: a compute-bound convolution timed by both at once gets its alone latency, not
// the ~2x it would show if their replays, or one's kernel set-up and the other's replays, overlapped.
TEST(GpuRuntime, SiblingWorkersTimeStagesAsIfAlone) {
  SKIP_WITHOUT_GPU();
  ir::GraphBuilder gb("two_convs", {256, 56, 56});
  gb.begin_block();
  const ir::Value a = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(1));
  const ir::Value b = gb.conv(gb.input(), ir::Conv(256).kernel(3).pad(2).dilation(2, 2));
  gb.end_block(gb.identity(ir::cat({a, b})));
  const ir::Graph g = *gb.build();
  auto parent = Context::create(ContextOptions{});
  ASSERT_TRUE(parent) << parent.status().to_string();
  MeasuredCostModel alone(g, MeasuredCostModel::Params{}, *parent);
  const sched::Stage first{sched::StageKind::kConcurrent, {{1}}}, second{sched::StageKind::kConcurrent, {{2}}};
  auto alone_ms = alone.stage_latencies_ms(g, std::vector<sched::Stage>(16, first), 1);
  ASSERT_TRUE(alone_ms) << alone_ms.status().to_string();
  std::vector<std::unique_ptr<MeasuredCostModel>> workers;
  for (int w = 0; w < 2; ++w) {
    auto sibling = (*parent)->sibling();
    ASSERT_TRUE(sibling) << sibling.status().to_string();
    EXPECT_EQ((*sibling)->timing_stream(), (*parent)->timing_stream());
    workers.push_back(std::make_unique<MeasuredCostModel>(alone, MeasuredCostModel::Params{}, *sibling));
  }
  // Each worker's stages alternate between the convolution timed alone above and one its context has
  // to tune first (node 2, the dilated one), so tuning in one worker meets timing in the other.
  std::vector<sched::Stage> mixed;
  for (int i = 0; i < 16; ++i) mixed.push_back(i % 4 == 1 ? second : first);
  std::vector<Expected<std::vector<double>>> shared(2, std::vector<double>{});
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&, w] { shared[size_t(w)] = workers[size_t(w)]->stage_latencies_ms(g, mixed, 1); });
  for (std::thread& t : threads) t.join();
  const double reference = sched::median_of(*alone_ms);
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(shared[size_t(w)]) << shared[size_t(w)].status().to_string();
    std::vector<double> of_first;
    for (size_t i = 0; i < mixed.size(); ++i)
      if (i % 4 != 1) of_first.push_back((*shared[size_t(w)])[i]);
    const double median = sched::median_of(of_first);
    std::printf("[lane] worker %d: median %.4f ms, alone %.4f ms\n", w, median, reference);
    EXPECT_LT(median, 1.1 * reference) << w;
    EXPECT_GT(median, 0.9 * reference) << w;
  }
}

// Screening times a stage for one round and keeps its executor: settling it afterwards replays that
// executor (no new build) and counts the screening round as its first.
TEST(GpuRuntime, ScreenedStagesAreSettledOnTheirExecutorWithTheScreeningRoundCounted) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{1, 2, 3, 3, 0.05};
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  const sched::Stage a{sched::StageKind::kConcurrent, {{1}, {2, 3}}}, b{sched::StageKind::kConcurrent, {{1}}};
  auto screened = model.screen_latencies_ms(g, {a, b}, 1);
  ASSERT_TRUE(screened) << screened.status().to_string();
  EXPECT_EQ(model.stats().rounds, 2);  // one round each
  auto settled = model.stage_latencies_ms(g, {a}, 1);
  ASSERT_TRUE(settled) << settled.status().to_string();
  EXPECT_EQ(model.stats().reused_screened, 1);
  EXPECT_EQ(model.stats().rounds, 2 + 3);  // the screening round counted among a's three
  EXPECT_GT((*settled)[0], 0.5 * (*screened)[0]);
  EXPECT_LT((*settled)[0], 2.0 * (*screened)[0]);
  auto again = model.stage_latencies_ms(g, {a}, 1);  // its executor went to the settled timing
  ASSERT_TRUE(again);
  EXPECT_EQ(model.stats().reused_screened, 1);
}

// One stage of `g` (its op 1) timed under `l2`; `share` receives the model's cold share calibration.
double stage_ms(const ir::Graph& g, sched::L2Timing l2, MeasuredCostModel::ShareCalibration* share = nullptr,
                int prefetch_ahead = 0) {
  MeasuredCostModel::Params params;
  params.rule = sched::StageTimingRule{2, 4, 5, 5, 0.0};
  params.rule.l2 = l2;
  params.rule.prefetch_ahead = prefetch_ahead;
  MeasuredCostModel model(g, params, context_for(ExecConfig{}));
  auto t = model.stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 1);
  EXPECT_TRUE(t) << t.status().to_string();
  EXPECT_EQ(model.stats().rounds, 5);
  if (share) *share = model.cold_share(1).value_or(MeasuredCostModel::ShareCalibration{-1, 0, 0, 0});
  return t ? *t : 0.0;
}

ir::Graph linear_layer(int in_features, int out_features) {
  ir::GraphBuilder b("linear", {in_features, 1, 1});
  b.begin_block();
  b.end_block(b.linear(b.input(), ir::LinearAttrs{out_features, true, ir::Act::kNone}));
  return *b.build();
}

// Two batch-1 linear layers of 38 MB of weights each: either fits the 50 MB L2 alone, both do not.
ir::Graph two_linear_layers() {
  ir::GraphBuilder b("two_linears", {9216, 1, 1});
  b.begin_block();
  const ir::Value hidden = b.linear(b.input(), ir::LinearAttrs{1024, true, ir::Act::kRelu});
  b.end_block(b.linear(hidden, ir::LinearAttrs{9216, true, ir::Act::kNone}));
  return *b.build();
}

// Whether `c` is the share at which the ops' figures add up to the network's: exactly in between, or
// clamped where the network runs outside [warm, cold].
void expect_share_adds_up(const MeasuredCostModel::ShareCalibration& c) {
  const double predicted = c.ops_warm_ms + c.share * (c.ops_cold_ms - c.ops_warm_ms);
  if (c.share > 0 && c.share < 1) {
    EXPECT_NEAR(predicted, c.network_ms, 1e-9);
  }
  if (c.share == 0) {
    EXPECT_LE(c.network_ms, c.ops_warm_ms + MeasuredCostModel::kMinColdGap * c.ops_warm_ms);
  }
  if (c.share == 1) {
    EXPECT_GE(c.network_ms, c.ops_cold_ms);
  }
}

// The cold share is the share of a cold replay at which the ops, each timed alone, add up to the
// network run end to end (the sequential schedule replayed back to back). One 134 MB layer replayed
// back to back misses the L2 when timed warm already, so its share is about 0 (a rule of bytes said
// 1 - L2 / 134 MB = 0.63). Two 38 MB layers: each fits the 50 MB L2 alone, both do not; measured on the
// H100 they still find most of their weights there (share 0.08), and a stage is timed
// between its warm and cold figures.
TEST(GpuRuntime, ColdShareIsTheShareAtWhichTheOpsAloneAddUpToTheNetworkRunEndToEnd) {
  SKIP_WITHOUT_GPU();
  MeasuredCostModel::ShareCalibration share;
  const ir::Graph big = linear_layer(16384, 2048);
  const double big_warm = stage_ms(big, sched::L2Timing::kWarm);
  const double big_share = stage_ms(big, sched::L2Timing::kColdShare, &share);
  std::printf("[l2] 134 MB linear: warm %.4f, l2-share %.4f ms, share %.2f (ops %.4f warm, %.4f cold, network %.4f)\n",
              big_warm, big_share, share.share, share.ops_warm_ms, share.ops_cold_ms, share.network_ms);
  expect_share_adds_up(share);
  EXPECT_LT(share.share, 0.3);
  EXPECT_LT(big_share, 1.05 * big_warm);
  const ir::Graph two = two_linear_layers();
  const double warm = stage_ms(two, sched::L2Timing::kWarm);
  const double cold = stage_ms(two, sched::L2Timing::kColdWeights);
  const double between = stage_ms(two, sched::L2Timing::kColdShare, &share);
  std::printf(
      "[l2] two 38 MB linears: first one warm %.4f, cold-weights %.4f, l2-share %.4f ms, share %.2f (ops %.4f warm, "
      "%.4f cold, network %.4f)\n",
      warm, cold, between, share.share, share.ops_warm_ms, share.ops_cold_ms, share.network_ms);
  expect_share_adds_up(share);
  EXPECT_GT(share.ops_cold_ms, share.ops_warm_ms);
  EXPECT_GT(between, 0.9 * std::min(warm, cold));
  EXPECT_LT(between, 1.1 * std::max(warm, cold));
  // Calibrated for prefetching too: the network is also timed with prefetch nodes, and the faster counts.
  EXPECT_EQ(share.prefetched_network_ms, 0);
  stage_ms(two, sched::L2Timing::kColdShare, &share, 1);
  std::printf("[l2] two 38 MB linears, prefetching: share %.2f (network %.4f, prefetching %.4f)\n", share.share,
              share.network_ms, share.prefetched_network_ms);
  EXPECT_GT(share.prefetched_network_ms, 0);
  EXPECT_LE(share.network_ms, share.prefetched_network_ms);
  expect_share_adds_up(share);
}

// The default rule's L2 mode follows the network: a 134 MB layer's weights exceed any GPU's L2 we run on, so
// every replay is timed with them cold and no share is calibrated; a small block's fit, and are weighed by
// the share.
TEST(GpuRuntime, TheDefaultRuleTimesWeightsColdWhereTheNetworkExceedsTheL2) {
  SKIP_WITHOUT_GPU();
  const ir::Graph big = linear_layer(16384, 2048), small = testing::inception_block(64, 28);
  MeasuredCostModel big_model(big, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  MeasuredCostModel small_model(small, MeasuredCostModel::Params{}, context_for(ExecConfig{}));
  EXPECT_EQ(big_model.rule().l2, sched::L2Timing::kColdWeights) << big_model.rule().describe();
  EXPECT_EQ(small_model.rule().l2, sched::L2Timing::kColdShare) << small_model.rule().describe();
  ASSERT_TRUE(big_model.rule().footprint);
  EXPECT_GE(big_model.rule().footprint->weight_bytes, int64_t{16384} * 2048 * 4);
  auto ms = big_model.stage_latency_ms(big, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 1);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_FALSE(big_model.cold_share(1).has_value());  // nothing to weigh: no calibration
}

// With workers on two GPUs the calibration's ops are dealt out over both (the workers wait for it): the
// sums and the share come out as on one GPU, up to timing noise, and the second GPU's worker times after.
TEST(GpuRuntime, TheColdShareCalibratedOnTwoGpusAddsUpAsOnOne) {
  SKIP_WITHOUT_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two GPUs";
  const ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule.l2 = sched::L2Timing::kColdShare;
  const sched::Stage stage{sched::StageKind::kConcurrent, {{1}}};
  std::vector<MeasuredCostModel::ShareCalibration> shares;
  auto calibrated = [&](int on_devices) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    auto first_context = Context::create(ContextOptions{});
    ASSERT_TRUE(first_context) << first_context.status().to_string();
    MeasuredCostModel first(g, params, *first_context);
    std::unique_ptr<MeasuredCostModel> second;
    if (on_devices == 2) {
      ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
      auto context = Context::create(ContextOptions{});
      ASSERT_TRUE(context) << context.status().to_string();
      second = std::make_unique<MeasuredCostModel>(first, params, *context);
      ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
    ASSERT_TRUE(first.stage_latency_ms(g, stage, 1));
    if (second) {
      ASSERT_TRUE(second->stage_latency_ms(g, stage, 1)) << "the second GPU's worker times after";
    }
    const auto c = first.cold_share(1);
    ASSERT_TRUE(c);
    std::printf("[calibration] %d GPU(s): %d ops %.4f ms warm, %.4f cold, network %.4f, share %.2f, %.2f s\n",
                on_devices, c->ops, c->ops_warm_ms, c->ops_cold_ms, c->network_ms, c->share,
                first.calibration_time().seconds);
    shares.push_back(*c);
  };
  calibrated(1);
  calibrated(2);
  ASSERT_EQ(shares.size(), 2u);
  // Every op timed once; the sums of a dozen 3-4 us kernels on two GPUs within timing noise (an H200 pair
  // differed by up to 10 %).
  EXPECT_EQ(shares[0].ops, int(sched::all_stages(sched::sequential_schedule(g)).size()));
  EXPECT_EQ(shares[1].ops, shares[0].ops);
  EXPECT_NEAR(shares[1].ops_warm_ms, shares[0].ops_warm_ms, 0.25 * shares[0].ops_warm_ms);
  EXPECT_NEAR(shares[1].ops_cold_ms, shares[0].ops_cold_ms, 0.25 * shares[0].ops_cold_ms);
  EXPECT_NEAR(shares[1].network_ms, shares[0].network_ms, 0.25 * shares[0].network_ms);
}

// Workers on two GPUs asking at once: a worker out of slots times again a slot the other GPU still times
// (its first kernels' builds), and each slot counts once, whoever finishes it first.
TEST(GpuRuntime, TwoGpusCalibratingAtOnceCountEveryOpOnce) {
  SKIP_WITHOUT_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two GPUs";
  const ir::Graph g = testing::inception_block(64, 28);
  MeasuredCostModel::Params params;
  params.rule.l2 = sched::L2Timing::kColdShare;
  std::vector<std::unique_ptr<MeasuredCostModel>> models;
  for (int device : {0, 1}) {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    auto context = Context::create(ContextOptions{});
    ASSERT_TRUE(context) << context.status().to_string();
    models.push_back(device == 0 ? std::make_unique<MeasuredCostModel>(g, params, *context)
                                 : std::make_unique<MeasuredCostModel>(*models[0], params, *context));
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<Expected<double>> figures(2, error(ErrorCode::kNotFound, "not asked"));
  std::vector<std::thread> workers;
  for (size_t w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      figures[w] =
          models[w]->stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{ir::NodeId(w + 1)}}}, 1);
    });
  for (std::thread& t : workers) t.join();
  for (size_t w = 0; w < 2; ++w) ASSERT_TRUE(figures[w]) << w << ": " << figures[w].status().to_string();
  const auto c = models[0]->cold_share(1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ops, int(sched::all_stages(sched::sequential_schedule(g)).size()));
  EXPECT_GT(c->network_ms, 0);
  // The job is gone: a later batch calibrates anew on both.
  ASSERT_TRUE(models[1]->stage_latency_ms(g, sched::Stage{sched::StageKind::kConcurrent, {{1}}}, 2));
  ASSERT_TRUE(models[0]->cold_share(2));
  EXPECT_EQ(models[0]->cold_share(2)->ops, c->ops);
}

// A stage replayed as its own CUDA graph pays a launch that inside the network's graph is one more
// dependency: a microsecond or so on the H100, never negative, and taken off every figure.
TEST(GpuRuntime, TheStageBoundaryIsMeasuredOnceAndIsAFewMicrosecondsAtMost) {
  SKIP_WITHOUT_GPU();
  auto context = Context::create(ContextOptions{});
  ASSERT_TRUE(context) << context.status().to_string();
  auto first = (*context)->timing_stream()->stage_boundary();
  ASSERT_TRUE(first) << first.status().to_string();
  std::printf("[boundary] %.3f us a replay of the lead's graph, %.3f us an event\n", first->graph_ms * 1e3,
              first->event_ms * 1e3);
  EXPECT_GT(first->graph_ms, 0.0);
  EXPECT_LT(first->graph_ms, 0.01);
  EXPECT_GE(first->event_ms, 0.0);
  EXPECT_LT(first->event_ms, 0.01);
  auto again = (*context)->timing_stream()->stage_boundary();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->graph_ms, first->graph_ms);
  EXPECT_EQ(again->event_ms, first->event_ms);
}

// The L2 each timing rule leaves a replay. A batch-1 linear layer with 38 MB of weights is bound by
// reading them: replayed back to back they stay in the L2 (50 MB on the H100); flushed before each replay
// (cold-l2, cold-weights) they come from memory. A pooling layer reading a 12.8 MB activation finds it in
// the L2 when warm and when its activations are read back after the flush (cold-weights), not when only
// flushed (cold-l2).
TEST(GpuRuntime, ColdTimingsEvictWeightsAndColdWeightsKeepsActivationsInTheL2) {
  SKIP_WITHOUT_GPU();
  const ir::Graph linear = linear_layer(9216, 1024);
  ir::GraphBuilder pool_builder("activation_bound", {64, 224, 224});
  pool_builder.begin_block();
  pool_builder.end_block(pool_builder.pool(pool_builder.input(), ir::MaxPool(3).stride(1).pad(1)));
  const ir::Graph pool = *pool_builder.build();
  const sched::L2Timing modes[] = {sched::L2Timing::kWarm, sched::L2Timing::kFlushed, sched::L2Timing::kColdWeights};
  double lin[3], act[3];
  for (int m = 0; m < 3; ++m) {
    lin[m] = stage_ms(linear, modes[m]);
    act[m] = stage_ms(pool, modes[m]);
  }
  std::printf("[l2] weights-bound linear: warm %.4f, cold-l2 %.4f, cold-weights %.4f ms\n", lin[0], lin[1], lin[2]);
  std::printf("[l2] activation-bound pool: warm %.4f, cold-l2 %.4f, cold-weights %.4f ms\n", act[0], act[1], act[2]);
  // H100: 4.6-7.4 %, since a span of one replay (cold) loses a whole event and a span of two (warm) half of
  // one each (TimingStream::Boundary).
  EXPECT_GT(lin[1], 1.03 * lin[0]);
  EXPECT_GT(lin[2], 1.03 * lin[0]);
  EXPECT_LT(act[2], act[1]);
  EXPECT_LT(act[2], 1.1 * act[0]);
}

// Executors on one store share weights by op and step: a plan that merges convolutions and one that
// does not, built on the same store (merged and single weights side by side), both match the CPU.
TEST(GpuRuntime, ExecutorsOnOneStoreMatchTheReferenceWithMergedAndSingleWeights) {
  SKIP_WITHOUT_GPU();
  Reference& ref = reference_for("inception_v3");
  auto store = std::make_shared<DeviceStore>();
  for (sched::Policy p : {sched::Policy::kDpMerge, sched::Policy::kSequential, sched::Policy::kDpBoth}) {
    auto plan = analytic_plan(ref.graph, p, sched::ExecMode::kStaged, 50);
    ASSERT_TRUE(plan);
    ExecutorOptions eo;
    eo.config = config_of("fp32", "auto", 1);
    eo.context = context_for(eo.config);
    eo.store = store;
    auto exec = Executor::create(ref.graph, ref.weights, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    ASSERT_TRUE((*exec)->poison_activations().is_ok());
    ASSERT_TRUE((*exec)->set_input(ref.input[1]).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    auto out = (*exec)->output();
    ASSERT_TRUE(out);
    const double err = reference::relative_l2_error(*out, ref.output[1]);
    std::printf("[check] inception_v3 %-18s on a shared store: rel-L2 %.2e\n", sched::policy_flag_name(p).c_str(), err);
    EXPECT_LT(err, 1e-4) << sched::policy_flag_name(p);
  }
  EXPECT_GT(store->weight_bytes(), size_t{0});
}

TEST(GpuProfiler, AttributesGraphReplayKernelsToOpsAndMeasuresSharedMemory) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::inception_block(64, 28);
  ir::Weights w = ir::make_weights(g);
  auto plan = sched::compile_plan(g, sched::greedy_schedule(g, 10));
  ASSERT_TRUE(plan);
  for (bool graph : {true, false}) {
    auto profiler = KernelProfiler::create();
    ASSERT_TRUE(profiler) << profiler.status().to_string();
    ExecutorOptions eo;
    eo.use_graph = graph;
    eo.observer = profiler->get();
    auto exec = Executor::create(g, w, *plan, eo);
    ASSERT_TRUE(exec) << exec.status().to_string();
    auto records = profile_runs(**exec, **profiler, 2);
    ASSERT_TRUE(records) << records.status().to_string();
    ASSERT_FALSE(records->empty());
    int attributed = 0;
    for (const KernelRecord& k : *records) attributed += k.plan_step >= 0;
    std::printf("[profile] %s: %zu kernels, %d attributed\n", graph ? "graph" : "eager", records->size(), attributed);
    EXPECT_EQ(attributed, int(records->size())) << (graph ? "graph replay" : "eager");
    const Utilization u = summarize_utilization(*records);
    EXPECT_GT(u.busy_fraction, 0.0);
    EXPECT_LE(u.busy_fraction, 1.0);
  }
  auto profile = measure_resource_profile(g, w, ExecutorOptions{});
  ASSERT_TRUE(profile) << profile.status().to_string();
  EXPECT_EQ(profile->source, "cupti");
  double conv_smem = 0;
  for (const auto& [id, bytes] : profile->shared_memory_bytes)
    if (g.node(id).is<ir::ConvAttrs>()) conv_smem += bytes;
  EXPECT_GT(conv_smem, 0.0);
}

TEST(GpuRuntime, WrongInputSizeIsAClearError) {
  SKIP_WITHOUT_GPU();
  ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  auto exec = Executor::create(g, ir::make_weights(g), *plan, ExecutorOptions{});
  ASSERT_TRUE(exec);
  Status s = (*exec)->set_input({1.f, 2.f});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("expected"), std::string::npos);
}

TEST(GpuRuntime, NoGpuIsReportedNotCrashed) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  ir::Graph g = testing::diamond();
  auto plan = sched::compile_plan(g, sched::sequential_schedule(g));
  auto exec = Executor::create(g, ir::make_weights(g), *plan, ExecutorOptions{});
  ASSERT_FALSE(exec);
  EXPECT_EQ(exec.status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace ios::rt
