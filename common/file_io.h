// Every file the project reads or writes goes through here, so the limits of common/limits.h hold for
// all of them: a size cap (endless devices end with an error), a JSON nesting cap checked on the text
// before parsing, and every parser exception turned into a Status that names the file. Writes are
// atomic: a failed write leaves the file that was there untouched.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/limits.h"
#include "common/status.h"

namespace ios {

// The whole file; an error if it cannot be opened or holds more than `max_bytes`.
Expected<std::string> read_file(const std::string& path, size_t max_bytes = limits::kMaxFileBytes);

// Parses JSON text; errors name `source_name`, the line and column, or the nesting limit.
Expected<nlohmann::json> parse_json_text(const std::string& text, const std::string& source_name);
Expected<nlohmann::json> read_json_file(const std::string& path);

// A file written in full or not at all. The data goes to a fresh, unpredictably named file in the
// target's folder; commit() flushes, syncs and renames it over the target, so readers see the old file
// or the new one, never a part. Dropped without commit(), the temporary file is removed. A target that
// exists and is not a regular file (/dev/stdout, a FIFO) is written in place, as a rename cannot
// replace it.
class AtomicFile {
 public:
  static Expected<AtomicFile> create(const std::string& path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends bytes; the first failure is kept and reported by commit().
  void write(const void* data, size_t bytes);
  Status commit();

 private:
  AtomicFile() = default;
  void discard();

  std::string path_, tmp_;  // tmp_ empty: writing the target in place
  int fd_ = -1;
  int error_ = 0;  // errno of the first failed write
};

// Writes the whole text atomically (AtomicFile) and reports any failure, including one that shows only
// when the data is flushed.
Status write_text_file(const std::string& path, const std::string& text);

// An exclusive advisory lock (flock) on `path + ".lock"`, held until destruction: processes that share a
// cache file take it around read-merge-write, so neither loses the other's entries. The lock file, not
// the data file, is locked, because an atomic write replaces the data file's inode.
class FileLock {
 public:
  static Expected<FileLock> acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ios
