// The persistent kernel cache: which convolution engine (and its knobs) won autotuning for each
// full convolution spec, with its time, in a JSON file keyed by the environment that measured it
// (GPU name, SM count, driver, cuDNN and cudnn-frontend versions). A second process reads it and
// builds the same engines without tuning. A corrupt or foreign file is ignored with a warning.
// Plain C++ (no CUDA): the file handling is tested on the CPU.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ios::rt {

// How a recorded choice is rebuilt: an engine configuration the cudnn-frontend heuristics list (found
// again by name), one made from an engine id and the knobs set (exhaustive tuning), a legacy algorithm, or
// one of our own kernels (found by name: runtime/conv_own.cc).
inline constexpr char kGraphBackend[] = "graph";
inline constexpr char kExploredBackend[] = "graph-knobs";
inline constexpr char kLegacyBackend[] = "legacy";
inline constexpr char kOwnBackend[] = "ios";

struct KernelChoice {
  std::string backend;                             // kGraphBackend, kExploredBackend, kLegacyBackend, kOwnBackend
  int64_t engine = -1;                             // graph: engine id; legacy: algorithm enum; ours: 0
  std::vector<std::pair<int64_t, int64_t>> knobs;  // graph(-knobs): (knob type, value); legacy: {(0, math type)}
  std::string name;                                // engine tag as cuDNN names it, for reports
  bool fused = false;                              // bias and activation run inside the engine
  bool output_copied = false;  // the engine writes a packed tensor, copied into the output's strides (graph)
  double ms = 0;               // median time measured while tuning
  int64_t workspace = 0;
  int candidates = 0;  // how many engines were timed
  bool operator==(const KernelChoice&) const = default;
};

class KernelCache {
 public:
  explicit KernelCache(std::string environment) : environment_(std::move(environment)) {}

  // Reads `path`. A missing file is an empty cache; a file that cannot be parsed, has the wrong
  // format or another environment is ignored: the returned text says why (empty when all is well).
  std::string load(const std::string& path);
  std::string load_text(const std::string& text, const std::string& source_name);
  // Writes atomically (a temporary file renamed over the old one), keeping the file's other entries.
  Status save(const std::string& path) const;

  std::optional<KernelChoice> find(const std::string& key) const;
  void put(const std::string& key, const KernelChoice& choice);
  // A choice that comes with the network (an engine plan's): found like the file's, never written to it.
  void preset(const std::string& key, const KernelChoice& choice);
  // The built plans of engines cuDNN compiles at run time, as cuDNN serializes them, so that a later process
  // loads their kernels instead of compiling them again (30-70 ms a plan on the H100). They live beside
  // the file, one file each (plans_dir(path), named by a hash of the environment and the key, which the
  // file repeats), read when asked for; save() writes those put since. Empty: none, or one of another
  // environment or key.
  std::vector<uint8_t> plan(const std::string& key) const;
  void put_plan(const std::string& key, std::vector<uint8_t> bytes);
  static std::string plans_dir(const std::string& path) { return path + ".plans"; }
  size_t size() const;
  bool dirty() const;
  const std::string& environment() const { return environment_; }

 private:
  std::string environment_;
  mutable std::mutex mutex_;
  std::map<std::string, KernelChoice> entries_;
  std::map<std::string, KernelChoice> presets_;            // found before entries_, never saved
  std::string plans_dir_;                                  // where load() found the file's plans
  std::map<std::string, std::vector<uint8_t>> new_plans_;  // put_plan since load, by key; every save writes them
  bool dirty_ = false;
  std::string plan_file(const std::string& dir, const std::string& key) const;
  std::string plan_header(const std::string& key) const;
  Status save_plans(const std::string& dir) const;
};

// A plan file: `header` (what the plan is, checked when read), then the plan's bytes. Written under a temporary
// name and renamed, so that a reader, in this process or another, finds all of it or nothing.
Status write_plan_file(const std::string& file, const std::string& header, const std::vector<uint8_t>& bytes);
// The plan's bytes; empty where the file is missing, unreadable or does not start with `header`.
std::vector<uint8_t> read_plan_file(const std::string& file, const std::string& header);

// $IOS_KERNEL_CACHE, else $XDG_CACHE_HOME/ios/kernel_cache.json, else ~/.cache/ios/kernel_cache.json
// ($HOME, or the account's home folder when HOME is unset); "none" (not persisted) when there is no home.
std::string default_kernel_cache_path();

}  // namespace ios::rt
