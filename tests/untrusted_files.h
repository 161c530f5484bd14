// The fixture and checks of the tests that feed a reader adversarial input: files in a temporary folder of
// the test's own, and errors that must name the problem.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/status.h"

namespace ios::testing {

class UntrustedFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir;
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("ios_untrusted_" + std::to_string(::getpid()) + "_" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

// The error's message contains `words` (and there is an error).
template <typename T>
void expect_error(const Expected<T>& r, const std::string& words) {
  ASSERT_FALSE(r) << "accepted; expected an error mentioning: " << words;
  EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
}
inline void expect_error(const Status& s, const std::string& words) {
  ASSERT_FALSE(s) << "accepted; expected an error mentioning: " << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

}  // namespace ios::testing
