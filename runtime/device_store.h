// Device memory that outlives the executors built on it: every weight tensor uploaded once (keyed by
// the op, step and run configuration that produced it) and one activation arena that only grows. The
// measured cost model builds thousands of one-stage executors in a row; on a store they allocate,
// upload and free nothing. Executors sharing a store's arena must not run at the same time; its tensors may
// be asked for from several threads (execution contexts of one engine made side by side).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ios::rt {

class DeviceStore {
 public:
  // The device copy of the tensor `key` names; `pack` makes its bytes on first use (its error is returned
  // and nothing is stored).
  Expected<const void*> tensor(const std::string& key, const std::function<Expected<std::vector<uint8_t>>()>& pack);
  // An arena of at least `bytes`. A grown arena replaces the old one, which stays allocated: graphs
  // captured on it remain valid.
  Expected<void*> arena(size_t bytes);

  size_t weight_bytes() const { return weight_bytes_; }
  size_t arena_bytes() const { return arena_bytes_; }

 private:
  std::mutex tensors_mutex_;  // guards tensors_ and weight_bytes_
  std::map<std::string, DeviceMemory> tensors_;
  size_t weight_bytes_ = 0;
  DeviceMemory arena_;
  size_t arena_bytes_ = 0;
  std::vector<DeviceMemory> retired_;
};

}  // namespace ios::rt
