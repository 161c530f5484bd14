// Files the tests write and read: a folder of the process's own per test binary (ctest runs tests in parallel
// processes), and whole files in and out.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ios::testing {

// `name` in <system temporary folder>/ios_<prefix>_<pid>/, made if missing.
inline std::string temp_path(const std::string& prefix, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ios_" + prefix + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces the file's contents.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace ios::testing
