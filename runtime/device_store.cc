#include "runtime/device_store.h"

#include <algorithm>

namespace ios::rt {

Expected<const void*> DeviceStore::tensor(const std::string& key,
                                          const std::function<Expected<std::vector<uint8_t>>()>& pack) {
  std::lock_guard<std::mutex> lock(tensors_mutex_);
  if (auto it = tensors_.find(key); it != tensors_.end()) return static_cast<const void*>(it->second.get());
  ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, pack());
  ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(std::max<size_t>(bytes.size(), 16)));
  if (!bytes.empty()) {
    CHECK_CUDA(cudaMemcpy(m.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    // A pageable copy returns once staged; the executors' non-blocking streams do not wait for it.
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
  }
  weight_bytes_ += bytes.size();
  return static_cast<const void*>(tensors_.emplace(key, std::move(m)).first->second.get());
}

Expected<void*> DeviceStore::arena(size_t bytes) {
  if (bytes > arena_bytes_) {
    // Grown by half again at least, so a search whose stages grow slowly reallocates rarely.
    const size_t size = std::max(bytes, arena_bytes_ + arena_bytes_ / 2);
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(size));
    if (arena_.get()) retired_.push_back(std::move(arena_));
    arena_ = std::move(m);
    arena_bytes_ = size;
  }
  return arena_.get();
}

}  // namespace ios::rt
