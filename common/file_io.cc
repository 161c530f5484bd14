#include "common/file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

namespace ios {

namespace {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Deepest [ / { nesting of JSON text, strings skipped; stops counting once past `limit`.
int nesting_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"')
      in_string = true;
    else if (ch == '[' || ch == '{')
      deepest = std::max(deepest, ++depth);
    else if (ch == ']' || ch == '}')
      --depth;
    if (deepest > limit) break;
  }
  return deepest;
}

std::string line_and_column(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n')
      ++line, col = 1;
    else
      ++col;
  }
  return std::to_string(line) + ":" + std::to_string(col);
}
}  // namespace

Expected<std::string> read_file(const std::string& path, size_t max_bytes) {
  File f(std::fopen(path.c_str(), "rb"));
  RETURN_ERROR_IF(!f, ErrorCode::kIoError, "cannot open '" + path + "'");
  std::string text;
  char buffer[1 << 16];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), f.get())) {
    RETURN_ERROR_IF(text.size() + n > max_bytes, ErrorCode::kInvalidArgument,
                    "'" + path + "' is larger than the limit of " + std::to_string(max_bytes) + " bytes");
    text.append(buffer, n);
  }
  RETURN_ERROR_IF(std::ferror(f.get()), ErrorCode::kIoError, "failed reading '" + path + "'");
  return text;
}

Expected<nlohmann::json> parse_json_text(const std::string& text, const std::string& source_name) {
  RETURN_ERROR_IF(
      nesting_depth(text, limits::kMaxJsonDepth) > limits::kMaxJsonDepth, ErrorCode::kInvalidArgument,
      source_name + ": JSON nests deeper than the limit of " + std::to_string(limits::kMaxJsonDepth) + " levels");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return error(ErrorCode::kInvalidArgument,
                 source_name + ":" + line_and_column(text, e.byte) + ": malformed JSON (" + e.what() + ")");
  } catch (const nlohmann::json::exception& e) {  // numbers out of range of a double, invalid UTF-8, ...
    return error(ErrorCode::kInvalidArgument, source_name + ": unreadable JSON (" + e.what() + ")");
  }
}

Expected<nlohmann::json> read_json_file(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_json_text(text, path);
}

namespace {

std::string errno_text(int err) { return std::string(std::strerror(err)); }

// A fresh name beside `path` that no other writer can predict, created exclusively (O_EXCL), so the
// umask applies as to any new file.
Expected<std::pair<std::string, int>> create_temporary(const std::string& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ uint64_t(::getpid()) << 32};
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof(suffix), ".tmp%016llx", static_cast<unsigned long long>(rng()));
    std::string tmp = path + suffix;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) return std::pair{std::move(tmp), fd};
    if (errno != EEXIST)
      return error(ErrorCode::kIoError, "cannot write '" + path + "' (temporary file: " + errno_text(errno) + ")");
  }
  return error(ErrorCode::kIoError, "cannot write '" + path + "': no free temporary name");
}

}  // namespace

Expected<AtomicFile> AtomicFile::create(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {  // a device or FIFO: written in place
    f.fd_ = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    RETURN_ERROR_IF(f.fd_ < 0, ErrorCode::kIoError, "cannot write '" + path + "': " + errno_text(errno));
    return f;
  }
  ASSIGN_OR_RETURN(auto created, create_temporary(path));
  f.tmp_ = std::move(created.first);
  f.fd_ = created.second;
  if (exists) (void)::fchmod(f.fd_, st.st_mode & 07777);  // the replacement keeps the file's permissions
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), fd_(other.fd_), error_(other.error_) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    tmp_ = std::move(other.tmp_);
    fd_ = other.fd_;
    error_ = other.error_;
    other.fd_ = -1;
    other.tmp_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0 && error_ == 0 && fd_ >= 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;
      break;
    }
    p += n;
    bytes -= size_t(n);
  }
}

Status AtomicFile::commit() {
  RETURN_ERROR_IF(fd_ < 0, ErrorCode::kIoError, "cannot write '" + path_ + "': already committed");
  const bool in_place = tmp_.empty();
  if (error_ == 0 && !in_place && ::fsync(fd_) != 0) error_ = errno;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && error_ == 0) error_ = errno;
  if (error_ == 0 && !in_place && ::rename(tmp_.c_str(), path_.c_str()) != 0) error_ = errno;
  if (error_ != 0) {
    const int err = error_;
    discard();
    return error(ErrorCode::kIoError, "failed writing '" + path_ + "': " + errno_text(err) +
                                          (in_place ? "" : " (the file that was there is unchanged)"));
  }
  tmp_.clear();
  return Status::ok();
}

Status write_text_file(const std::string& path, const std::string& text) {
  ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(path));
  f.write(text.data(), text.size());
  return f.commit();
}

Expected<FileLock> FileLock::acquire(const std::string& path) {
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  RETURN_ERROR_IF(fd < 0, ErrorCode::kIoError, "cannot open lock file '" + lock_path + "': " + errno_text(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    return error(ErrorCode::kIoError, "cannot lock '" + lock_path + "': " + errno_text(err));
  }
  return FileLock(fd);
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace ios
