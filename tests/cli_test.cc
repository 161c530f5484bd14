// The `ios` command as a user meets it: exit codes, help text, version, error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

// `redirect`: what happens to stderr (merged into the output by default).
Result ios(const std::string& args, const std::string& redirect = "2>&1") {
  Result r;
  FILE* p = popen((std::string(IOS_BINARY) + " " + args + " " + redirect).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Cli, BareIosPrintsHelpAndSucceeds) {
  const Result r = ios("");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("optimize"), std::string::npos);
}

TEST(Cli, VersionNamesTheCommitAndTheBuild) {
  const Result r = ios("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("ios "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(git "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("built with"), std::string::npos) << r.out;
}

TEST(Cli, HelpShowsEveryDefault) {
  const Result r = ios("optimize --help");
  EXPECT_EQ(r.code, 0);
  for (const char* shown : {"--opt TEXT=dp_parallel_merge", "=fp32", "--r INT:INT in [1 - 64]=3", "=auto"})
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
}

TEST(Cli, AnOutOfRangeBatchNamesTheRange) {
  const Result r = ios("optimize --model squeezenet --batch 0");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--batch: Value 0 not in range 1 to 65536"), std::string::npos) << r.out;
  EXPECT_LT(r.out.size(), 400u) << r.out;  // was a 300-digit range
}

TEST(Cli, DevicesWithoutAMeasuredSearchIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --devices 0,1 --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--devices spreads a measured DP search"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("analytic cost model"), std::string::npos) << r.out;
}

TEST(Cli, StageMarginalsWithoutTheMeasuredModelIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --stage-marginals --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--stage-marginals times stages in the network on the GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(this run: analytic)"), std::string::npos) << r.out;
}

TEST(Cli, StageMarginalsOfAStreamPolicyIsANamedError) {
  const Result r = ios("optimize --model squeezenet --opt opara --cost-model analytic --stage-marginals --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--stage-marginals times a schedule's stages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("schedules streams, not stages"), std::string::npos) << r.out;
}

TEST(Cli, WorkersPerGpuWithoutAMeasuredSearchIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --workers-per-gpu 2 --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--workers-per-gpu spreads a measured DP search"), std::string::npos) << r.out;
}

TEST(Cli, ACompileAheadThatIsNotACountIsANamedErrorOnAnyMachine) {
  for (const char* bad : {"foo", "-1", "65", "3x"}) {
    const Result r =
        ios(std::string("optimize --model squeezenet --cost-model analytic --quiet --compile-ahead ") + bad);
    EXPECT_NE(r.code, 0) << bad;
    EXPECT_NE(r.out.find("--compile-ahead must be auto or a number of processes"), std::string::npos) << r.out;
  }
  EXPECT_EQ(ios("optimize --model squeezenet --cost-model analytic --quiet --compile-ahead 0").code, 0);
}

TEST(Cli, ACompileAheadShardThatIsNotKOverNIsANamedError) {
  const Result r = ios("compile-ahead --model squeezenet --shard 2");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--shard"), std::string::npos) << r.out;
}

TEST(Cli, AScreenMarginOutsideZeroToOneIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --screen-margin 1.5 --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--screen-margin"), std::string::npos) << r.out;
}

TEST(Cli, ANegativeDataflowRefinementIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --dataflow-refine -1 --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--dataflow-refine"), std::string::npos) << r.out;
}

TEST(Cli, AMemoryBudgetUnderTheSequentialPeakIsANamedError) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --memory-budget 0.5 --quiet");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--memory-budget must be 0 (no limit) or at least 1"), std::string::npos) << r.out;
}

TEST(Cli, OptimizeReportsTheEndingsItsMemoryBudgetSkipped) {
  const Result r =
      ios("optimize --model nasnet --cost-model analytic --memory-budget 1.2 --quiet --json -", "2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_DOUBLE_EQ(j["dp"].value("memory_budget", 0.0), 1.2);
  EXPECT_GT(j["dp"].value("memory_skipped", 0), 0);
}

// The memory line counts the concatenation inputs written in place: conv-copy leaves Inception V3's
// convolutions to its concatenations (tf32, NHWC), only its pools' slices stay in place.
TEST(Cli, ConcatWritesNamesItsValuesAndConvCopyWritesFewerInputsInPlace) {
  const Result bad = ios("optimize --model squeezenet --cost-model analytic --concat-writes copy --quiet");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("--concat-writes must be in-place or conv-copy, got 'copy'"), std::string::npos) << bad.out;
  const Result bad_run = ios("run --model squeezenet --concat-writes copy");  // flags checked before the GPU
  EXPECT_EQ(bad_run.code, 1) << bad_run.out;
  if (bad_run.out.find("needs the GPU runtime") == std::string::npos) {  // a build without CUDA has no ios run
    EXPECT_NE(bad_run.out.find("--concat-writes"), std::string::npos) << bad_run.out;
  }
  // auto chooses by timing both as the schedule runs: a search alone has nothing to time
  const Result search_auto = ios("optimize --model squeezenet --cost-model analytic --concat-writes auto --quiet");
  EXPECT_EQ(search_auto.code, 1) << search_auto.out;
  EXPECT_NE(search_auto.out.find("ios run only"), std::string::npos) << search_auto.out;
  auto inputs_in_place = [](const std::string& writes) {
    const Result r =
        ios("optimize --model inception_v3 --precision tf32 --cost-model analytic --quiet --concat-writes " + writes);
    EXPECT_EQ(r.code, 0) << r.out;
    const size_t at = r.out.find(" inputs (");
    return at == std::string::npos ? -1 : std::stoi(r.out.substr(r.out.rfind(", ", at) + 2));
  };
  const int in_place = inputs_in_place("in-place"), copy = inputs_in_place("conv-copy");
  EXPECT_GT(copy, 0);
  EXPECT_LT(copy, in_place);
}

// Checked as the flags are read: a search with the analytic model makes no context that would reject it.
TEST(Cli, AnUnknownConvEngineIsANamedErrorEvenWithoutAGpu) {
  const Result run = ios("run --model squeezenet --conv-engine rtc");
  EXPECT_NE(run.code, 0) << run.out;
  if (run.out.find("needs the GPU runtime") != std::string::npos) return;  // a build without CUDA: no engines
  EXPECT_NE(run.out.find("--conv-engine must be auto, graph, graph-exhaustive, graph-rtc or legacy, got 'rtc'"),
            std::string::npos)
      << run.out;
  const Result search = ios("optimize --model squeezenet --cost-model analytic --conv-engine rtc --quiet");
  EXPECT_NE(search.code, 0) << search.out;
  EXPECT_NE(search.out.find("got 'rtc'"), std::string::npos) << search.out;
}

TEST(Cli, OptimizeSaysWhichStagesTheModelCostedAndWhichCameFromTheCache) {
  const Result r = ios("optimize --model ios_sample --cost-model analytic --quiet");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Cost model: analytic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("answered by the stage cache"), std::string::npos) << r.out;
}

TEST(Cli, BadInputExitsNonZeroWithANamedError) {
  const Result r = ios("show --graph /nonexistent/graph.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("ios: error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/graph.json"), std::string::npos) << r.out;
}

}  // namespace

namespace {

TEST(Cli, AScheduleForAnotherNetworkNamesBothNetworks) {
  const std::string file = ::testing::TempDir() + "/ios_cli_squeezenet_schedule.json";
  ASSERT_EQ(ios("optimize --model squeezenet --cost-model analytic --quiet --out " + file).code, 0);
  const Result r = ios("validate --model googlenet --schedule " + file);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("written for graph 'squeezenet', not 'googlenet'"), std::string::npos) << r.out;
  EXPECT_EQ(ios("validate --model squeezenet --schedule " + file).code, 0);
}

}  // namespace

namespace {

nlohmann::json parse_or_fail(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << text;
  return j;
}

TEST(CliJson, OptimizeWritesEveryFigureAsJsonOnStdoutAndTheTextOnStderr) {
  const Result r = ios("optimize --model squeezenet --cost-model analytic --quiet --json -", "2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = parse_or_fail(r.out);
  EXPECT_EQ(j.value("model", ""), "squeezenet");
  EXPECT_EQ(j.value("policy", ""), "dp_parallel_merge");
  EXPECT_GT(j.value("latency_ms", 0.0), 0.0);
  EXPECT_GT(j["dp"].value("states", 0), 0);
  EXPECT_GT(j["cost_model"].value("stages_costed", 0), 0);
  EXPECT_GT(j["memory"].value("peak_activation_bytes", 0), 0);
  const Result text = ios("optimize --model squeezenet --cost-model analytic --quiet --json -", "2>&1 >/dev/null");
  EXPECT_NE(text.out.find("Model: squeezenet"), std::string::npos) << text.out;
}

TEST(CliJson, OparaHasNoDpStatisticsAndItsLatencyIsLabelledAnEstimate) {
  const std::string file = ::testing::TempDir() + "/ios_cli_opara.json";
  const Result r = ios("optimize --model squeezenet --opt opara --cost-model analytic --quiet --json " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("States:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Stages: 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("streams"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("contention-free estimate"), std::string::npos) << r.out;
  std::ifstream in(file);
  const nlohmann::json j = parse_or_fail(std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_FALSE(j.contains("dp"));
  EXPECT_EQ(j.value("latency_kind", ""), "opara_estimate");
  EXPECT_GT(j.value("launches", 0), 0);
}

TEST(CliJson, ValidateReportsTheScheduleAsJson) {
  const std::string file = ::testing::TempDir() + "/ios_cli_validate_schedule.json";
  ASSERT_EQ(ios("optimize --model squeezenet --cost-model analytic --quiet --out " + file).code, 0);
  const Result r = ios("validate --model squeezenet --schedule " + file + " --json -", "2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = parse_or_fail(r.out);
  EXPECT_TRUE(j.value("valid", false));
  EXPECT_EQ(j.value("kind", ""), "staged");
  EXPECT_GT(j.value("stages", 0), 0);
  // IOS-Both's concurrent stages keep more activations live than one op at a time does.
  EXPECT_GE(j.value("peak_activation_bytes", size_t{0}), j.value("sequential_peak_activation_bytes", size_t{1}));
  EXPECT_GT(j.value("sequential_peak_activation_bytes", size_t{0}), size_t{0});
}

TEST(Cli, ShowListsAScheduleFilesStages) {
  const std::string file = ::testing::TempDir() + "/ios_cli_show_schedule.json";
  ASSERT_EQ(ios("optimize --model squeezenet --cost-model analytic --quiet --out " + file).code, 0);
  const Result r = ios("show --model squeezenet --schedule " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("schedule for 'squeezenet'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage 0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(":conv"), std::string::npos) << r.out;
}

TEST(Cli, ShowMarksBlocksWithoutExplicitParts) {
  const Result r = ios("show --model squeezenet");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  int blocks = 0;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    std::string block, ops, parts;
    cols >> block >> ops >> parts;
    if (block.empty() || !std::isdigit(static_cast<unsigned char>(block[0]))) continue;
    ++blocks;
    EXPECT_NE(parts, "0") << "a parts column of 0 reads as an empty block: " << line;
  }
  EXPECT_GT(blocks, 0) << r.out;
}

TEST(Cli, RunTakesTrtexecTimingFlagsAndExecutionModes) {
  const Result help = ios("run --help");
  ASSERT_EQ(help.code, 0) << help.out;
  if (help.out.find("not in this build") != std::string::npos) {  // a build without the GPU runtime
    const Result r = ios("run --model squeezenet");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.out.find("needs the GPU runtime"), std::string::npos) << r.out;
    return;
  }
  for (const char* flag : {"--warmUp", "--duration", "--exportTimes", "--iterations", "--exec", "--json"})
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag << "\n" << help.out;
  const Result bad = ios("run --model squeezenet --exec eager");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("--exec"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("'eager'"), std::string::npos) << bad.out;
  // auto chooses between CUDA graphs by timing them: without graphs there is nothing to choose from
  const Result auto_eager = ios("run --model squeezenet --opt greedy --exec auto --no-graph");
  EXPECT_EQ(auto_eager.code, 1);
  EXPECT_NE(auto_eager.out.find("--exec auto"), std::string::npos) << auto_eager.out;
  EXPECT_NE(auto_eager.out.find("--no-graph"), std::string::npos) << auto_eager.out;
  // prefetching adds graph nodes: its flag names its values, and without a graph it has nothing to add to
  const Result bad_prefetch = ios("run --model squeezenet --prefetch-weights always");
  EXPECT_EQ(bad_prefetch.code, 1);
  EXPECT_NE(bad_prefetch.out.find("--prefetch-weights"), std::string::npos) << bad_prefetch.out;
  EXPECT_NE(bad_prefetch.out.find("'always'"), std::string::npos) << bad_prefetch.out;
  const Result bad_ahead = ios("run --model squeezenet --prefetch-weights on --prefetch-ahead 0");
  EXPECT_NE(bad_ahead.code, 0);
  EXPECT_NE(bad_ahead.out.find("--prefetch-ahead"), std::string::npos) << bad_ahead.out;
  const Result prefetch_eager = ios("run --model squeezenet --opt greedy --prefetch-weights on --no-graph");
  EXPECT_EQ(prefetch_eager.code, 1);
  EXPECT_NE(prefetch_eager.out.find("--no-graph"), std::string::npos) << prefetch_eager.out;
}

// `ios build --save` and `ios run --plan` on the CPU: the plan runs as the network it was built from.
TEST(Cli, BuildSavesAPlanThatRunRunsAsTheNetwork) {
  const std::string dir = ::testing::TempDir() + "ios_cli_plan_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const Result built = ios("build --model squeezenet --device cpu --batch 2 --save " + dir + "/sq.plan");
  ASSERT_EQ(built.code, 0) << built.out;
  EXPECT_NE(built.out.find("Built squeezenet"), std::string::npos) << built.out;
  const Result from_plan = ios("run --plan " + dir + "/sq.plan --device cpu --output " + dir + "/plan.npy");
  ASSERT_EQ(from_plan.code, 0) << from_plan.out;
  EXPECT_NE(from_plan.out.find("Batchsize: 2"), std::string::npos) << from_plan.out;
  const Result direct = ios("run --model squeezenet --device cpu --batch 2 --output " + dir + "/direct.npy");
  ASSERT_EQ(direct.code, 0) << direct.out;
  std::ifstream a(dir + "/plan.npy", std::ios::binary), b(dir + "/direct.npy", std::ios::binary);
  const std::string plan_bytes((std::istreambuf_iterator<char>(a)), {}),
      direct_bytes((std::istreambuf_iterator<char>(b)), {});
  EXPECT_FALSE(plan_bytes.empty());
  EXPECT_EQ(plan_bytes, direct_bytes);
  const Result other_batch = ios("run --plan " + dir + "/sq.plan --device cpu --batch 3");
  EXPECT_EQ(other_batch.code, 1);
  EXPECT_NE(other_batch.out.find("is an engine of batch 2"), std::string::npos) << other_batch.out;
  const Result missing = ios("run --plan " + dir + "/none.plan --device cpu");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("none.plan"), std::string::npos) << missing.out;
  const Result not_a_plan = ios("run --plan " + dir + "/direct.npy --device cpu");
  EXPECT_EQ(not_a_plan.code, 1);
  EXPECT_NE(not_a_plan.out.find("neither an engine plan nor a file of batch buckets"), std::string::npos)
      << not_a_plan.out;
  const Result with_schedule = ios("run --plan " + dir + "/sq.plan --schedule s.json");
  EXPECT_EQ(with_schedule.code, 1);
  EXPECT_NE(with_schedule.out.find("--plan"), std::string::npos) << with_schedule.out;
  // the CPU reference has no precision, schedule or timing: their flags are named, not ignored
  for (const std::string flag : {"--precision fp16", "--opt greedy", "--layout nhwc", "--check", "--iters 5"}) {
    const Result ignored = ios("run --model squeezenet --device cpu " + flag);
    EXPECT_EQ(ignored.code, 1) << flag;
    EXPECT_NE(ignored.out.find(flag.substr(0, flag.find(' ')) + " applies to the GPU only"), std::string::npos)
        << ignored.out;
  }
  // the builder's search keeps its stage figures in --stage-cache, as ios optimize's does, and reuses them
  const Result cached =
      ios("build --model squeezenet --device cpu --stage-cache " + dir + "/stages.json --save " + dir + "/cached.plan");
  ASSERT_EQ(cached.code, 0) << cached.out;
  std::ifstream stages(dir + "/stages.json");
  const std::string stage_text((std::istreambuf_iterator<char>(stages)), {});
  EXPECT_NE(stage_text.find("\"key\":\"analytic|fp32/nchw/b1|"), std::string::npos) << stage_text.substr(0, 200);
  const Result spread = ios("build --model squeezenet --device cpu --devices 0,1 --save " + dir + "/spread.plan");
  EXPECT_EQ(spread.code, 1);
  EXPECT_NE(spread.out.find("--devices spreads a measured DP search"), std::string::npos) << spread.out;
  const Result no_save = ios("build --model squeezenet --device cpu");
  EXPECT_NE(no_save.code, 0);
  EXPECT_NE(no_save.out.find("--save"), std::string::npos) << no_save.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, BuildWithBatchesSavesBatchBucketsInOneFile) {
  const std::string dir = ::testing::TempDir() + "ios_cli_buckets_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const Result built = ios("build --model ios_sample --device cpu --batches 4,1 --save " + dir + "/b.plan");
  ASSERT_EQ(built.code, 0) << built.out;
  EXPECT_NE(built.out.find("Built ios_sample | Batchsize: 1"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("Built ios_sample | Batchsize: 4"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("(2 batch buckets)"), std::string::npos) << built.out;
  // `ios run --plan` runs the bucket --batch names, and names the buckets where --batch is missing or none
  const Result run = ios("run --plan " + dir + "/b.plan --device cpu --batch 4");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("Batchsize: 4"), std::string::npos) << run.out;
  const Result unnamed = ios("run --plan " + dir + "/b.plan --device cpu");
  EXPECT_EQ(unnamed.code, 1);
  EXPECT_NE(unnamed.out.find("holds batch buckets of 1, 4: give --batch"), std::string::npos) << unnamed.out;
  const Result between = ios("run --plan " + dir + "/b.plan --device cpu --batch 2");
  EXPECT_EQ(between.code, 1);
  EXPECT_NE(between.out.find("--batch 2: "), std::string::npos) << between.out;
  const Result twice = ios("build --model ios_sample --device cpu --batches 2,2 --save " + dir + "/c.plan");
  EXPECT_EQ(twice.code, 1);
  EXPECT_NE(twice.out.find("given twice"), std::string::npos) << twice.out;
  const Result zero = ios("build --model ios_sample --device cpu --batches 0,2 --save " + dir + "/c.plan");
  EXPECT_NE(zero.code, 0);
  EXPECT_NE(zero.out.find("--batches"), std::string::npos) << zero.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
