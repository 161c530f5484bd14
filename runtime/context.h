// Streams, cuDNN/cuBLAS handles and per-stream workspaces, shared by every executor of a process
// that uses the same precision: the measured cost model builds thousands of stage executors, and
// creating handles would dominate its time. Workspaces only grow; a replaced one is kept alive, so
// graphs captured earlier stay valid.
#pragma once

#include <memory>
#include <vector>

#include "runtime/device.h"

namespace ios::rt {

enum class Precision { kFp32, kTf32 };
Expected<Precision> parse_precision(const std::string& s);
const char* precision_name(Precision p);

class Context {
 public:
  static Expected<std::shared_ptr<Context>> create(Precision precision);

  Status ensure_streams(int count);
  // The workspace of `stream`, at least `bytes` large.
  Expected<void*> workspace(int stream, size_t bytes);

  Precision precision() const { return precision_; }
  int streams() const { return static_cast<int>(streams_.size()); }
  cudaStream_t stream(int i) const { return streams_[size_t(i)]; }
  cudnnHandle_t cudnn(int i) const { return cudnn_[size_t(i)]; }
  cublasHandle_t cublas(int i) const { return cublas_[size_t(i)]; }

 private:
  explicit Context(Precision p) : precision_(p) {}
  Precision precision_;
  std::vector<Stream> streams_;
  std::vector<CudnnHandle> cudnn_;
  std::vector<CublasHandle> cublas_;
  std::vector<DeviceMemory> cublas_workspace_, workspace_, retired_;
  std::vector<size_t> workspace_size_;
};

}  // namespace ios::rt
