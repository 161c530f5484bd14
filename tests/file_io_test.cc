// The one file layer: atomic writes (a failed write keeps the file that was there), file locks, and
// the .npy reader's hand parser.
#include "common/file_io.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "common/tensor_file.h"
#include "common/utf8.h"
#include "test_processes.h"

namespace ios {
namespace {

class FileWrites : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::path(::testing::TempDir()) / ("ios_file_io_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t files() const {
    return size_t(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()));
  }
};

TEST_F(FileWrites, AWriteReplacesTheFileWholeAndLeavesNoTemporaryFile) {
  ASSERT_TRUE(write_text_file(path("f.json"), "first"));
  ASSERT_TRUE(write_text_file(path("f.json"), "second, longer"));
  EXPECT_EQ(*read_file(path("f.json")), "second, longer");
  EXPECT_EQ(files(), 1u);
}

TEST_F(FileWrites, AWriteKeepsTheFilesPermissions) {
  ASSERT_TRUE(write_text_file(path("f"), "a"));
  ASSERT_EQ(::chmod(path("f").c_str(), 0640), 0);
  ASSERT_TRUE(write_text_file(path("f"), "b"));
  struct stat st {};
  ASSERT_EQ(::stat(path("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// Past `ulimit -f` (SIGXFSZ ignored, as `ios` does), the write fails with an error and the good file
// that was there is kept whole.
TEST_F(FileWrites, AWritePastTheFileSizeLimitFailsAndKeepsTheOldFile) {
  const std::string good(100000, 'g');
  ASSERT_TRUE(write_text_file(path("schedule.json"), good));
  testing::in_processes(1, [&](int) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{65536, 65536};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return false;
    const Status s = write_text_file(path("schedule.json"), std::string(200000, 'n'));
    return !s && s.message().find("unchanged") != std::string::npos;
  });
  EXPECT_EQ(*read_file(path("schedule.json")), good);
  EXPECT_EQ(files(), 1u) << "the temporary file is removed";
}

TEST_F(FileWrites, AFullDeviceIsWrittenInPlaceAndItsFailureReported) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const Status s = write_text_file("/dev/full", std::string(1 << 16, 'x'));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("failed writing '/dev/full'"), std::string::npos) << s.message();
}

TEST_F(FileWrites, AnUncommittedFileLeavesNothingBehind) {
  {
    auto f = AtomicFile::create(path("never"));
    ASSERT_TRUE(f);
    f->write("abc", 3);
  }
  EXPECT_FALSE(std::filesystem::exists(path("never")));
  EXPECT_EQ(files(), 0u);
}

TEST_F(FileWrites, ALockIsHeldByOneProcessAtATime) {
  // Each process appends its id twice under the lock; interleaving would split a pair.
  const std::string log = path("log");
  testing::in_processes(4, [&](int i) {
    for (int round = 0; round < 20; ++round) {
      auto lock = FileLock::acquire(log);
      if (!lock) return false;
      for (int k = 0; k < 2; ++k) {
        std::ofstream(log, std::ios::app) << i;
        ::usleep(100);
      }
    }
    return true;
  });
  const std::string text = *read_file(log);
  ASSERT_EQ(text.size(), 160u);
  for (size_t k = 0; k < text.size(); k += 2) EXPECT_EQ(text[k], text[k + 1]) << "at " << k;
}

TEST(Utf8, ValidTextIsKeptAndInvalidBytesAreWrittenAsEscapes) {
  EXPECT_EQ(to_valid_utf8("plain \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80"), "plain \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(to_valid_utf8("a\xff"
                          "b"),
            "a\\xFFb");
  EXPECT_EQ(to_valid_utf8("\xc0\xaf"), "\\xC0\\xAF");           // overlong
  EXPECT_EQ(to_valid_utf8("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(to_valid_utf8("\xe2\x82"), "\\xE2\\x82");           // truncated
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));
  EXPECT_TRUE(is_valid_utf8(to_valid_utf8("\x80\x81\xfe")));
}

// .npy headers: numpy's own, and crafted ones that once crashed a regex reader or overflowed.
std::string npy_with_header(std::string header) {
  std::string out("\x93NUMPY\x01\x00", 8);
  header += '\n';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header;
}

void expect_npy_error(const std::string& bytes, const std::string& fragment) {
  auto r = decode_npy(bytes, nullptr, "t.npy");
  ASSERT_FALSE(r) << "accepted, expected '" << fragment << "'";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(TensorFile, NumpysHeaderFormsAreRead) {
  std::vector<int64_t> shape;
  const float v[2] = {1.5f, -2.f};
  const std::string data(reinterpret_cast<const char*>(v), sizeof(v));
  for (const char* h : {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                        "{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}",
                        "{'descr':'<f4','fortran_order':False,'shape':(2,1,)}   "}) {
    auto r = decode_npy(npy_with_header(h) + data, &shape, "t.npy");
    ASSERT_TRUE(r) << h << ": " << r.status().to_string();
    EXPECT_EQ(*r, std::vector<float>({1.5f, -2.f}));
  }
  auto scalar = decode_npy(
      npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }") + data.substr(0, 4), &shape, "t.npy");
  ASSERT_TRUE(scalar) << scalar.status().to_string();
  EXPECT_TRUE(shape.empty());
}

TEST(TensorFile, CraftedHeadersAreErrorsNotCrashes) {
  const std::string tail = "'fortran_order': False, 'shape': (2,), }";
  expect_npy_error(npy_with_header("{'descr': '" + std::string(60000, 'f') + "', " + tail), "unsupported string");
  expect_npy_error(npy_with_header("{'descr': '<f4', " + std::string(60000, ' ') + tail), "holds 0 data bytes");
  expect_npy_error(
      npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(60000, '1') + ",), }"),
      "more than 12 digits");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (12345678901234567890,), }"),
                   "more than 12 digits");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), "negative");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 16777216, "
                                   "3), }"),
                   "more than");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }"), "Fortran-order");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'x': 'fortran_order': False', 'shape': (2,), }"), "unknown key");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'descr': '<f4', " + tail), "appears twice");
  expect_npy_error(npy_with_header("{'descr': '<f8', " + tail) + std::string(16, '\0'), "'<f8'");
  expect_npy_error(npy_with_header("{'descr': '<f4', " + tail + " trailing") + std::string(8, '\0'), "after its");
  expect_npy_error(npy_with_header("{'descr': '<f4', 'shape': (2,)}") + std::string(8, '\0'), "'fortran_order'");
  std::string v2("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  expect_npy_error(v2, "over the limit");
}

class TensorFiles : public FileWrites {};

TEST_F(TensorFiles, ANpyFileMustHaveTheNetworksShapeNotJustItsCount) {
  const std::vector<float> v(192, 1.f);
  ASSERT_TRUE(write_tensor_file(path("x.npy"), v, {1, 8, 8, 3}));
  auto r = read_tensor_file(path("x.npy"), {1, 3, 8, 8});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("has shape (1, 8, 8, 3); the network needs (1, 3, 8, 8)"), std::string::npos)
      << r.status().message();
  ASSERT_TRUE(write_tensor_file(path("x.npy"), v, {1, 3, 8, 8}));
  EXPECT_TRUE(read_tensor_file(path("x.npy"), {1, 3, 8, 8}));
}

}  // namespace
}  // namespace ios
