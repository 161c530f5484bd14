#include "runtime/kernel_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"

namespace ios::rt {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "ios-kernel-cache";
constexpr int kVersion = 1;
constexpr size_t kMaxFileBytes = size_t{64} << 20;

json to_json(const KernelChoice& c) {
  json knobs = json::array();
  for (const auto& [type, value] : c.knobs) knobs.push_back({type, value});
  return {{"backend", c.backend}, {"engine", c.engine}, {"knobs", knobs},           {"name", c.name},
          {"fused", c.fused},     {"ms", c.ms},         {"workspace", c.workspace}, {"candidates", c.candidates}};
}

// Throws json::exception on any field of the wrong type; the caller rejects the file.
KernelChoice from_json(const json& j) {
  KernelChoice c;
  c.backend = j.at("backend").get<std::string>();
  if (c.backend != "graph" && c.backend != "legacy") throw std::invalid_argument("unknown backend " + c.backend);
  c.engine = j.at("engine").get<int64_t>();
  for (const json& k : j.at("knobs")) c.knobs.emplace_back(k.at(0).get<int64_t>(), k.at(1).get<int64_t>());
  c.name = j.at("name").get<std::string>();
  c.fused = j.at("fused").get<bool>();
  c.ms = j.at("ms").get<double>();
  c.workspace = j.at("workspace").get<int64_t>();
  const int64_t candidates = j.at("candidates").get<int64_t>();
  if (c.engine < 0 || c.workspace < 0 || !(c.ms >= 0) || candidates < 0 || candidates > (1 << 20))
    throw std::invalid_argument("engine, workspace, time or candidate count out of range");
  c.candidates = static_cast<int>(candidates);
  return c;
}

}  // namespace

std::string KernelCache::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "";
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > kMaxFileBytes)
    return "kernel cache '" + path + "' is not a regular file under 64 MiB: ignored";
  Expected<std::string> text = read_file(path, kMaxFileBytes);
  if (!text) return "kernel cache '" + path + "' is unreadable (" + text.status().message() + "): ignored";
  return load_text(*text, path);
}

std::string KernelCache::load_text(const std::string& text, const std::string& path) {
  Expected<json> parsed = parse_json_text(text, path);
  if (!parsed) return "kernel cache '" + path + "' is unreadable (" + parsed.status().message() + "): ignored";
  std::map<std::string, KernelChoice> entries;
  try {
    const json& j = *parsed;
    if (!j.is_object() || j.value("format", "") != kFormat || j.value("version", 0) != kVersion)
      return "kernel cache '" + path + "' is not an ios kernel cache of version 1: ignored";
    if (j.at("environment").get<std::string>() != environment_)
      return "kernel cache '" + path + "' was measured on another GPU or library version: ignored";
    for (const auto& [key, value] : j.at("kernels").items()) entries[key] = from_json(value);
  } catch (const std::exception& e) {
    return "kernel cache '" + path + "' is corrupt (" + e.what() + "): ignored";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, value] : entries) entries_.emplace(key, std::move(value));
  return "";
}

Status KernelCache::save(const std::string& path) const {
  json kernels = json::object();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, value] : entries_) kernels[key] = to_json(value);
  }
  const json j = {{"format", kFormat}, {"version", kVersion}, {"environment", environment_}, {"kernels", kernels}};
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.dump(1) << "\n";
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return error(ErrorCode::kIoError, "cannot write kernel cache '" + tmp + "'");
    }
  }
  std::filesystem::rename(tmp, target, ec);
  RETURN_ERROR_IF(ec, ErrorCode::kIoError, "cannot write kernel cache '" + path + "': " + ec.message());
  return Status::ok();
}

std::optional<KernelChoice> KernelCache::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void KernelCache::put(const std::string& key, const KernelChoice& choice) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = choice;
  dirty_ = true;
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

bool KernelCache::dirty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dirty_;
}

std::string default_kernel_cache_path() {
  if (const char* p = std::getenv("IOS_KERNEL_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ios/kernel_cache.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ios/kernel_cache.json";
  return "ios_kernel_cache.json";
}

}  // namespace ios::rt
