// The kernel cache across processes, compile-ahead processes, the driver's JIT cache, and how tuning picks
// and names engines.
#include "gpu_test_support.h"

namespace ios::rt {
namespace {

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
    ASSERT_TRUE(
        std::regex_search(rebuilt, m,
                          std::regex(R"(Convolutions: (\d+) \(\d+ with bias/activation fused, \d+ on our kernels, )"
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

// One run of `plan` on poisoned activations: its output's relative L2 error against `want`, and its kernels.

}  // namespace
}  // namespace ios::rt
