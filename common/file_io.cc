#include "common/file_io.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

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

Status write_text_file(const std::string& path, const std::string& text) {
  File f(std::fopen(path.c_str(), "wb"));
  RETURN_ERROR_IF(!f, ErrorCode::kIoError, "cannot write '" + path + "'");
  const bool written = std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  const bool closed = std::fclose(f.release()) == 0;  // a full device often shows only when the data is flushed
  RETURN_ERROR_IF(!written || !closed, ErrorCode::kIoError, "failed writing '" + path + "'");
  return Status::ok();
}

}  // namespace ios
