// The `ios` command as a user meets it: exit codes, help text, version, error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

Result ios(const std::string& args) {
  Result r;
  FILE* p = popen((std::string(IOS_BINARY) + " " + args + " 2>&1").c_str(), "r");
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
