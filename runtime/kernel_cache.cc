#include "runtime/kernel_cache.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/json_fields.h"
#include "runtime/kernel_choice_json.h"
#include "scheduler/cost_model.h"

namespace ios::rt {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "ios-kernel-cache";
// 2: engines timed on the GPU alone (conv_kernel.cc, CandidateTimer); version 1 timed small convolutions
// by the host's overhead of issuing them, so its picks are not reused. 3: a strided output may be written
// packed and copied into its slice (output_copied), a candidate version 2's picks never met.
constexpr int kVersion = 3;
constexpr size_t kMaxFileBytes = size_t{64} << 20;

}  // namespace

json kernel_choice_to_json(const KernelChoice& c) {
  json knobs = json::array();
  for (const auto& [type, value] : c.knobs) knobs.push_back({type, value});
  return {{"backend", c.backend}, {"engine", c.engine},       {"knobs", knobs},
          {"name", c.name},       {"fused", c.fused},         {"output_copied", c.output_copied},
          {"ms", c.ms},           {"workspace", c.workspace}, {"candidates", c.candidates}};
}

namespace {

// Every field type- and range-checked before conversion (a float read as an integer is undefined
// behaviour); throws std::invalid_argument naming the field, and the caller ignores the file.
KernelChoice from_json(const json& j) {
  auto value = [](const auto& v) {
    if (!v) throw std::invalid_argument(v.status().message());
    return *v;
  };
  auto field = [&](const char* name) -> const json& {
    if (!j.is_object() || !j.contains(name)) throw std::invalid_argument(std::string("missing field '") + name + "'");
    return j[name];
  };
  constexpr int64_t kMax = int64_t{1} << 62;
  KernelChoice c;
  c.backend = value(json_string(field("backend"), "'backend'"));
  if (c.backend != kGraphBackend && c.backend != kExploredBackend && c.backend != kLegacyBackend &&
      c.backend != kOwnBackend)
    throw std::invalid_argument("unknown backend " + c.backend);
  c.engine = value(json_integer(field("engine"), "'engine'", 0, kMax));
  const json& knobs = field("knobs");
  if (!knobs.is_array()) throw std::invalid_argument("'knobs' must be an array");
  for (const json& k : knobs) {
    if (!k.is_array() || k.size() != 2) throw std::invalid_argument("a knob must be [type, value]");
    c.knobs.emplace_back(value(json_integer(k[0], "knob type", -kMax, kMax)),
                         value(json_integer(k[1], "knob value", -kMax, kMax)));
  }
  c.name = value(json_string(field("name"), "'name'"));
  c.fused = value(json_bool(field("fused"), "'fused'"));
  c.output_copied = value(json_bool(field("output_copied"), "'output_copied'"));
  c.ms = value(json_number(field("ms"), "'ms'", 0, 1e6));
  c.workspace = value(json_integer(field("workspace"), "'workspace'", 0, kMax));
  c.candidates = static_cast<int>(value(json_integer(field("candidates"), "'candidates'", 0, 1 << 20)));
  return c;
}

}  // namespace

Expected<KernelChoice> kernel_choice_from_json(const json& j) {
  try {
    return from_json(j);
  } catch (const std::exception& e) {
    return error(ErrorCode::kInvalidArgument, std::string("kernel choice: ") + e.what());
  }
}

std::string KernelCache::load(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    plans_dir_ = plans_dir(path);
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "";
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
    // Checked by type before comparing: json::value() would convert a float version to int (undefined).
    const bool ours = j.is_object() && j.contains("format") && j["format"] == kFormat && j.contains("version") &&
                      json_integer(j["version"], "version", kVersion, kVersion).has_value();
    if (!ours)
      return "kernel cache '" + path + "' is not an ios kernel cache of version " + std::to_string(kVersion) +
             ": ignored";
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
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  {
    // Read-merge-write under the file's lock: choices another process or context wrote since this one
    // loaded are kept, and two writers cannot interleave.
    ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(path));
    KernelCache on_disk(environment_);
    (void)on_disk.load(path);  // an unreadable file is replaced
    json kernels = json::object();
    for (const auto& [key, value] : on_disk.entries_) kernels[key] = kernel_choice_to_json(value);
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (const auto& [key, value] : entries_) kernels[key] = kernel_choice_to_json(value);
    }
    const json j = {{"format", kFormat}, {"version", kVersion}, {"environment", environment_}, {"kernels", kernels}};
    RETURN_IF_ERROR(write_text_file(path, j.dump(1) + "\n").with_context("kernel cache"));
  }
  return save_plans(plans_dir(path));
}

Status KernelCache::save_plans(const std::string& dir) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (new_plans_.empty()) return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  RETURN_ERROR_IF(ec, ErrorCode::kIoError, "cannot make the kernel cache's plan folder '" + dir + "': " + ec.message());
  for (const auto& [key, bytes] : new_plans_)
    RETURN_IF_ERROR(write_plan_file(plan_file(dir, key), plan_header(key), bytes));
  return Status::ok();
}

Status write_plan_file(const std::string& file, const std::string& header, const std::vector<uint8_t>& bytes) {
  return write_text_file(file, header + std::string(bytes.begin(), bytes.end())).with_context("kernel plan");
}

std::vector<uint8_t> read_plan_file(const std::string& file, const std::string& header) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  Expected<std::string> text = read_file(file, kMaxFileBytes);
  if (!text || text->size() <= header.size() || text->compare(0, header.size(), header) != 0) return {};
  return std::vector<uint8_t>(text->begin() + std::ptrdiff_t(header.size()), text->end());
}

// A name for the file, not its identity (the header is that).
std::string KernelCache::plan_file(const std::string& dir, const std::string& key) const {
  return dir + "/" + sched::signature_hash(plan_header(key)) + ".plan";
}

std::string KernelCache::plan_header(const std::string& key) const { return environment_ + "\n" + key + "\n"; }

std::vector<uint8_t> KernelCache::plan(const std::string& key) const {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = new_plans_.find(key); it != new_plans_.end()) return it->second;
    dir = plans_dir_;
  }
  if (dir.empty()) return {};
  return read_plan_file(plan_file(dir, key), plan_header(key));
}

void KernelCache::put_plan(const std::string& key, std::vector<uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  new_plans_[key] = std::move(bytes);
  dirty_ = true;
}

std::optional<KernelChoice> KernelCache::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto preset = presets_.find(key); preset != presets_.end()) return preset->second;
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void KernelCache::preset(const std::string& key, const KernelChoice& choice) {
  std::lock_guard<std::mutex> lock(mutex_);
  presets_[key] = choice;
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
  // No HOME: the account's home folder from the password database, never the working folder (which may
  // be shared or read by others).
  std::vector<char> buffer(16384);
  passwd entry{}, *found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_dir &&
      found->pw_dir[0] == '/')
    return std::string(found->pw_dir) + "/.cache/ios/kernel_cache.json";
  return "none";
}

}  // namespace ios::rt
