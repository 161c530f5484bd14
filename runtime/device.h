// Move-only RAII owners of CUDA, cuDNN and cuBLAS objects. Creation returns Expected; destruction
// never throws and ignores errors (the context may already be torn down).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/element_types.h"
#include "runtime/cuda_check.h"

namespace ios::rt {

// The CUDA library type (cuBLAS, cuBLASLt) of a storage type.
inline cudaDataType_t cuda_type(DataType t) {
  switch (t) {
    case DataType::kF32:
      return CUDA_R_32F;
    case DataType::kF16:
      return CUDA_R_16F;
    case DataType::kBF16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

template <typename Handle, typename Deleter>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle h) : h_(h) {}
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }
  Handle get() const { return h_; }
  operator Handle() const { return h_; }  // NOLINT: passes straight to the C APIs
  void reset() {
    if (h_) Deleter{}(h_);
    h_ = Handle{};
  }

 private:
  Handle h_{};
};

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const { cudaGraphDestroy(g); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
struct DeviceMemDeleter {
  void operator()(void* p) const { cudaFree(p); }
};
struct CudnnDeleter {
  void operator()(cudnnHandle_t h) const { cudnnDestroy(h); }
};
struct CublasDeleter {
  void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};
struct TensorDescDeleter {
  void operator()(cudnnTensorDescriptor_t d) const { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDescDeleter {
  void operator()(cudnnFilterDescriptor_t d) const { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDescDeleter {
  void operator()(cudnnConvolutionDescriptor_t d) const { cudnnDestroyConvolutionDescriptor(d); }
};
struct ActDescDeleter {
  void operator()(cudnnActivationDescriptor_t d) const { cudnnDestroyActivationDescriptor(d); }
};

using Stream = Owned<cudaStream_t, StreamDeleter>;
using Event = Owned<cudaEvent_t, EventDeleter>;
using CudaGraph = Owned<cudaGraph_t, GraphDeleter>;
using CudaGraphExec = Owned<cudaGraphExec_t, GraphExecDeleter>;
using DeviceMemory = Owned<void*, DeviceMemDeleter>;
using CudnnHandle = Owned<cudnnHandle_t, CudnnDeleter>;
using CublasHandle = Owned<cublasHandle_t, CublasDeleter>;
using TensorDesc = Owned<cudnnTensorDescriptor_t, TensorDescDeleter>;
using FilterDesc = Owned<cudnnFilterDescriptor_t, FilterDescDeleter>;
using ConvDesc = Owned<cudnnConvolutionDescriptor_t, ConvDescDeleter>;
using ActDesc = Owned<cudnnActivationDescriptor_t, ActDescDeleter>;

Expected<Stream> make_stream();
Expected<Event> make_event(bool timing = false);
Expected<DeviceMemory> device_alloc(size_t bytes);
Expected<CudnnHandle> make_cudnn();
Expected<CublasHandle> make_cublas();
// A tensor of any rank described by dims and element strides (layout is just strides).
Expected<TensorDesc> make_nd_tensor_desc(cudnnDataType_t type, const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides);
// A packed filter, KCRS (nhwc false) or KRSC.
Expected<FilterDesc> make_filter_desc(cudnnDataType_t type, bool nhwc, int k, int c, int h, int w);
Expected<ActDesc> make_act_desc(cudnnActivationMode_t mode);

// cuDNN launches some kernels with programmatic stream serialization (PDL), which stream capture turns
// into programmatic edges: the kernel after the edge may start before the one before it ends, and must
// wait in its own code before reading. One that does not wait (by inference cuDNN's sm80 runtime-compiled
// convolution, engine 52) can then end first, and a kernel after it reads its predecessor's output
// unfinished: SqueezeNet at tf32 with --conv-engine graph-rtc read a half-written concatenation in graph
// replays (relative L2 0.10 to 0.15; right on streams, whose launch gaps never let kernels overlap, and
// under compute-sanitizer). Makes every such edge of `graph` a full dependency; returns how many there were.
Expected<int> make_edges_full(cudaGraph_t graph);

// Non-empty when the environment turns off the driver's JIT cache (CUDA_CACHE_DISABLE=1 or
// CUDA_CACHE_MAXSIZE=0), which holds the kernels of cuDNN's runtime-compiled engines: without it Inception
// V3's tf32 search compiled them for 75 s instead of 8 (H100).
std::string jit_cache_warning();

// Fails with kUnavailable and a clear message when no CUDA device can be used.
Status require_gpu();
bool gpu_available();
// --devices: "all" or a comma list of device indices, every one present, none twice, all of one GPU model.
Expected<std::vector<int>> select_devices(const std::string& spec);

}  // namespace ios::rt
