// The runtime's plain C++ parts, tested on the CPU: the kernel cache file (every field, several writers,
// foreign and damaged files) and which runtime-compiled engines keep losing.
#include "runtime/kernel_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/losing_engines.h"
#include "test_processes.h"

namespace ios {
namespace {

class KernelCacheFile : public ::testing::Test {
 protected:
  // One file per test: ctest runs these tests in parallel processes.
  std::string path = ::testing::TempDir() + "/kernel_cache_test_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  void SetUp() override { std::filesystem::remove(path); }
  void write(const std::string& text) { std::ofstream(path) << text; }
  rt::KernelChoice choice() {
    rt::KernelChoice c;
    c.backend = "graph";
    c.engine = 12;
    c.knobs = {{3, 1}, {7, 4}};
    c.name = "eng12_k3=1_k7=4";
    c.fused = true;
    c.ms = 0.0125;
    c.workspace = 4096;
    c.candidates = 9;
    return c;
  }
};

TEST_F(KernelCacheFile, RoundTripsEveryFieldOfEveryBackend) {
  rt::KernelCache a("H100|132");
  for (const char* backend : {rt::kGraphBackend, rt::kExploredBackend, rt::kLegacyBackend, rt::kOwnBackend}) {
    rt::KernelChoice c = choice();
    c.backend = backend;
    a.put(backend, c);
  }
  ASSERT_TRUE(a.save(path).is_ok());
  rt::KernelCache b("H100|132");
  EXPECT_EQ(b.load(path), "");
  for (const char* backend : {rt::kGraphBackend, rt::kExploredBackend, rt::kLegacyBackend, rt::kOwnBackend}) {
    ASSERT_TRUE(b.find(backend)) << backend;
    EXPECT_EQ(b.find(backend)->backend, backend);
    EXPECT_EQ(b.find(backend)->knobs, choice().knobs);
  }
  EXPECT_FALSE(b.dirty());
}

TEST_F(KernelCacheFile, AnOutputCopiedChoiceComesBackAsOneAndFilesFromBeforeAreTunedAgain) {
  rt::KernelCache a("env");
  rt::KernelChoice copied = choice();
  copied.output_copied = true;
  a.put("copied", copied);
  a.put("direct", choice());
  ASSERT_TRUE(a.save(path).is_ok());
  rt::KernelCache b("env");
  EXPECT_EQ(b.load(path), "");
  ASSERT_TRUE(b.find("copied") && b.find("direct"));
  EXPECT_EQ(*b.find("copied"), copied);
  EXPECT_EQ(*b.find("direct"), choice());
  // A version-2 file's picks never met the copied output as a candidate: its convolutions are tuned again.
  write(
      "{\"format\":\"ios-kernel-cache\",\"version\":2,\"environment\":\"env\",\"kernels\":{\"old\":"
      "{\"backend\":\"graph\",\"engine\":12,\"knobs\":[],\"name\":\"eng12\",\"fused\":true,\"ms\":0.01,"
      "\"workspace\":0,\"candidates\":3}}}");
  rt::KernelCache old("env");
  EXPECT_NE(old.load(path).find("not an ios kernel cache of version 3"), std::string::npos);
  EXPECT_FALSE(old.find("old"));
}

TEST_F(KernelCacheFile, TwoContextsSavingToOneFileKeepEachOthersChoices) {
  rt::KernelCache first("H100|132"), second("H100|132");
  first.put("tuned by the first worker", choice());
  rt::KernelChoice other = choice();
  other.engine = 3;
  second.put("tuned by the second worker", other);
  ASSERT_TRUE(first.save(path).is_ok());
  ASSERT_TRUE(second.save(path).is_ok());
  rt::KernelCache both("H100|132");
  EXPECT_EQ(both.load(path), "");
  EXPECT_EQ(both.size(), 2u);
  ASSERT_TRUE(both.find("tuned by the first worker"));
  EXPECT_EQ(both.find("tuned by the second worker")->engine, 3);
}

// Processes sharing one file, each saving after every new choice: the file's lock around read-merge-write
// keeps every process's choices.
TEST_F(KernelCacheFile, ProcessesSavingToOneFileKeepEachOthersChoices) {
  testing::in_processes(4, [&](int process) {
    rt::KernelCache c("H100|132");
    for (int k = 0; k < 25; ++k) {
      c.put("process " + std::to_string(process) + " key " + std::to_string(k), choice());
      if (!c.save(path)) return false;
    }
    return true;
  });
  rt::KernelCache all("H100|132");
  EXPECT_EQ(all.load(path), "");
  EXPECT_EQ(all.size(), 100u);
}

TEST_F(KernelCacheFile, CompiledPlansComeBackByKeyAndOnlyForTheirEnvironment) {
  std::filesystem::remove_all(rt::KernelCache::plans_dir(path));
  const std::vector<uint8_t> bytes = {0, 1, 255, '\n', 7};  // binary, newlines included
  rt::KernelCache a("H100|132");
  a.put("k", choice());
  a.put_plan("k", bytes);
  EXPECT_EQ(a.plan("k"), bytes);  // before it is saved
  ASSERT_TRUE(a.save(path).is_ok());
  rt::KernelCache b("H100|132");
  EXPECT_EQ(b.load(path), "");
  EXPECT_EQ(b.plan("k"), bytes);
  EXPECT_TRUE(b.plan("other key").empty());
  rt::KernelCache foreign("A100|108");
  (void)foreign.load(path);
  EXPECT_TRUE(foreign.plan("k").empty());
  // A plan file whose header names another key (a hash collision, a file copied by hand) is not used.
  for (const auto& entry : std::filesystem::directory_iterator(rt::KernelCache::plans_dir(path)))
    std::ofstream(entry.path(), std::ios::binary) << "H100|132\nsomething else\n\x01";
  EXPECT_TRUE(b.plan("k").empty());
}

TEST_F(KernelCacheFile, APlanFileGivesItsBytesBackOnlyUnderItsOwnHeader) {
  const std::string file = path + ".plan";
  const std::vector<uint8_t> bytes = {'{', 0, 1, 255, '}'};
  ASSERT_TRUE(rt::write_plan_file(file, "conv A|fused|eng53\n", bytes).is_ok());
  EXPECT_EQ(rt::read_plan_file(file, "conv A|fused|eng53\n"), bytes);
  EXPECT_TRUE(rt::read_plan_file(file, "conv B|fused|eng53\n").empty());  // another plan hashed to the same name
  EXPECT_TRUE(rt::read_plan_file(path + ".missing", "conv A|fused|eng53\n").empty());
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp" + std::to_string(::getpid())));  // renamed, not left behind
}

TEST_F(KernelCacheFile, AMissingFileIsAnEmptyCache) {
  rt::KernelCache c("env");
  EXPECT_EQ(c.load(path), "");
  EXPECT_EQ(c.size(), 0u);
}

TEST_F(KernelCacheFile, AForeignEnvironmentIsIgnoredWithAWarning) {
  rt::KernelCache a("A100|108");
  a.put("k", choice());
  ASSERT_TRUE(a.save(path).is_ok());
  rt::KernelCache b("H100|132");
  EXPECT_NE(b.load(path).find("another GPU"), std::string::npos);
  EXPECT_EQ(b.size(), 0u);
}

TEST_F(KernelCacheFile, AFileOfTheEagerlyTimedVersionIsIgnoredWithAWarning) {
  write("{\"format\":\"ios-kernel-cache\",\"version\":1,\"environment\":\"env\",\"kernels\":{}}");
  rt::KernelCache c("env");
  const std::string warning = c.load(path);
  EXPECT_NE(warning.find("not an ios kernel cache of version 3"), std::string::npos) << warning;
  EXPECT_EQ(c.size(), 0u);
}

TEST_F(KernelCacheFile, TruncatedAndCorruptFilesAreIgnoredWithAWarning) {
  rt::KernelCache a("env");
  a.put("k", choice());
  ASSERT_TRUE(a.save(path).is_ok());
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string& bad :
       {text.substr(0, text.size() / 2), std::string("not json"), std::string("[1, 2]"), std::string("{\"w\":1e400}"),
        std::string("{\"format\":\"ios-kernel-cache\",\"version\":2,\"environment\":\"env\",\"kernels\":{\"k\":5}}"),
        std::string("{\"format\":\"ios-kernel-cache\",\"version\":2,\"environment\":\"env\",\"kernels\":{\"k\":"
                    "{\"backend\":\"graph\",\"engine\":-4,\"knobs\":[],\"name\":\"x\",\"fused\":true,\"ms\":1,"
                    "\"workspace\":0,\"candidates\":1}}}"),
        std::string("{\"format\":\"ios-kernel-cache\",\"version\":88888888888.8}"),
        // a float where an integer belongs (found by fuzz_kernel_cache: converting it was undefined behaviour)
        std::string("{\"format\":\"ios-kernel-cache\",\"version\":2,\"environment\":\"env\",\"kernels\":{\"k\":"
                    "{\"backend\":\"graph\",\"engine\":3,\"knobs\":[],\"name\":\"x\",\"fused\":true,\"ms\":1,"
                    "\"workspace\":8.9e51,\"candidates\":1}}}")}) {
    write(bad);
    rt::KernelCache b("env");
    EXPECT_NE(b.load(path), "") << bad;
    EXPECT_EQ(b.size(), 0u) << bad;
  }
}

using rt::LosingEngines;

// One convolution on which `loser` took `ratio` times `winner`'s time.
void lose(LosingEngines& l, const std::string& group, const std::string& loser, const std::string& winner,
          double ratio) {
  l.record(group, {{loser, ratio * 0.01}, {winner, 0.01}});
}

TEST(LosingEngines, AnEngineBeatenByTheMarginOnEveryTrialIsBeatenByThatSibling) {
  LosingEngines l;
  for (int i = 0; i < LosingEngines::kTrials; ++i) {
    EXPECT_TRUE(l.beaten_by("tf32", "eng52").empty()) << "after " << i << " trials";
    lose(l, "tf32", "eng52", "eng53", 2.0);
  }
  EXPECT_EQ(l.beaten_by("tf32", "eng52"), std::vector<std::string>{"eng53"});
  EXPECT_TRUE(l.beaten_by("tf32", "eng53").empty());  // the winner is never skipped
}

TEST(LosingEngines, OneTrialWithinTheMarginKeepsAnEngineForever) {
  LosingEngines l;
  lose(l, "tf32", "eng52", "eng53", 1.2);  // lost, but not by the margin
  for (int i = 0; i < 10 * LosingEngines::kTrials; ++i) lose(l, "tf32", "eng52", "eng53", 3.0);
  EXPECT_TRUE(l.beaten_by("tf32", "eng52").empty());
}

TEST(LosingEngines, GroupsLearnApart) {
  LosingEngines l;
  for (int i = 0; i < LosingEngines::kTrials; ++i) lose(l, "tf32/nhwc/b1|fused", "eng52", "eng53", 2.0);
  EXPECT_FALSE(l.beaten_by("tf32/nhwc/b1|fused", "eng52").empty());
  EXPECT_TRUE(l.beaten_by("fp16/nhwc/b1|fused", "eng52").empty());
}

TEST(LosingEngines, AFloorLosesOnlyWhereItIsPastTheMargin) {
  LosingEngines l;
  // Cut short at its warm-up (5x the best), or after its batches tied the best (a floor of the best's time).
  for (int i = 0; i < LosingEngines::kTrials; ++i) l.record("g", {{"eng53", 0.01}, {"eng52", 0.05}, {"eng60", 0.01}});
  EXPECT_EQ(l.beaten_by("g", "eng52"), (std::vector<std::string>{"eng53", "eng60"}));
  EXPECT_TRUE(l.beaten_by("g", "eng60").empty());
}

TEST(LosingEngines, TimingOrderPutsABeatenEngineRightAfterItsWinnerOnlyWhereTheWinnerIsACandidate) {
  LosingEngines l;
  for (int i = 0; i < LosingEngines::kTrials; ++i) lose(l, "g", "eng52", "eng53", 2.0);
  const std::vector<bool> compiled = {true, true, false, false};
  EXPECT_EQ(l.timing_order("g", {"eng52", "eng53", "eng0", "eng51"}, compiled), (std::vector<size_t>{1, 0, 2, 3}));
  EXPECT_EQ(l.timing_order("g", {"eng52", "eng0", "eng51"}, compiled), (std::vector<size_t>{0, 1, 2}));  // kept
  EXPECT_EQ(l.timing_order("other", {"eng52", "eng53"}, compiled), (std::vector<size_t>{0, 1}));
}

TEST(LosingEngines, OnlyRuntimeCompiledEnginesAreMovedAndTheyMayWaitForAPrecompiledOne) {
  LosingEngines l;
  for (int i = 0; i < LosingEngines::kTrials; ++i) {
    l.record("g", {{"eng52", 0.04}, {"eng0", 0.01}, {"eng11", 0.02}});
  }
  // eng52 (compiled) waits for the first of those it loses to; eng11 lost to eng0 too but is precompiled, so
  // it stays where it was.
  EXPECT_EQ(l.beaten_by("g", "eng52"), (std::vector<std::string>{"eng0", "eng11"}));
  EXPECT_EQ(l.timing_order("g", {"eng52", "eng11", "eng0"}, {true, false, false}), (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(l.timing_order("g", {"eng52", "eng0"}, {true, false}), (std::vector<size_t>{1, 0}));
}

TEST(LosingEngines, TimingOrderSettlesAChainOfLosers) {
  LosingEngines l;
  for (int i = 0; i < LosingEngines::kTrials; ++i) {
    lose(l, "g", "a", "b", 2.0);
    lose(l, "g", "b", "c", 2.0);
  }
  EXPECT_EQ(l.timing_order("g", {"a", "b", "c"}, {true, true, true}), (std::vector<size_t>{2, 1, 0}));
}

}  // namespace
}  // namespace ios
