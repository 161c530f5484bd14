#include "runtime/device.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace ios::rt {

Expected<Stream> make_stream() {
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Expected<Event> make_event(bool timing) {
  cudaEvent_t e = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(e);
}

Expected<DeviceMemory> device_alloc(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return DeviceMemory();
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return Status(e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory : ErrorCode::kRuntimeError,
                  "cudaMalloc of " + std::to_string(bytes >> 20) + " MiB failed: " + cudaGetErrorString(e));
  }
  return DeviceMemory(p);
}

Expected<CudnnHandle> make_cudnn() {
  cudnnHandle_t h = nullptr;
  CHECK_CUDNN(cudnnCreate(&h));
  return CudnnHandle(h);
}

Expected<CublasHandle> make_cublas() {
  cublasHandle_t h = nullptr;
  CHECK_CUBLAS(cublasCreate(&h));
  return CublasHandle(h);
}

Expected<TensorDesc> make_nd_tensor_desc(cudnnDataType_t type, const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides) {
  cudnnTensorDescriptor_t d = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
  TensorDesc owned(d);
  std::vector<int> di(dims.begin(), dims.end()), st(strides.begin(), strides.end());
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(d, type, int(di.size()), di.data(), st.data()));
  return owned;
}

Expected<FilterDesc> make_filter_desc(cudnnDataType_t type, bool nhwc, int k, int c, int h, int w) {
  cudnnFilterDescriptor_t d = nullptr;
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&d));
  FilterDesc owned(d);
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(d, type, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, k, c, h, w));
  return owned;
}

Expected<ActDesc> make_act_desc(cudnnActivationMode_t mode) {
  cudnnActivationDescriptor_t d = nullptr;
  CHECK_CUDNN(cudnnCreateActivationDescriptor(&d));
  ActDesc owned(d);
  CHECK_CUDNN(cudnnSetActivationDescriptor(d, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return owned;
}

Expected<int> make_edges_full(cudaGraph_t graph) {
  size_t n = 0;
  CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n));
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  CHECK_CUDA(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &n));
  const cudaGraphEdgeData full{};
  int changed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (data[i].type == cudaGraphDependencyTypeDefault && data[i].from_port == 0 && data[i].to_port == 0) continue;
    CHECK_CUDA(cudaGraphRemoveDependencies(graph, &from[i], &to[i], &data[i], 1));
    CHECK_CUDA(cudaGraphAddDependencies(graph, &from[i], &to[i], &full, 1));
    ++changed;
  }
  return changed;
}

std::string jit_cache_warning() {
  const char* disable = std::getenv("CUDA_CACHE_DISABLE");
  const char* max_size = std::getenv("CUDA_CACHE_MAXSIZE");
  std::string set;
  if (disable && std::string(disable) == "1")
    set = "CUDA_CACHE_DISABLE=1";
  else if (max_size && std::string(max_size) == "0")
    set = "CUDA_CACHE_MAXSIZE=0";
  if (set.empty()) return "";
  return set +
         " turns off the driver's JIT cache: cuDNN's runtime-compiled engines are compiled from "
         "scratch every time (tf32/fp16/bf16 tuning about ten times slower)";
}

bool gpu_available() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

Status require_gpu() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    return Status(ErrorCode::kUnavailable,
                  std::string("no usable CUDA GPU (") + (e == cudaSuccess ? "no device" : cudaGetErrorString(e)) + ")");
  }
  return Status::ok();
}

Expected<std::vector<int>> select_devices(const std::string& spec) {
  RETURN_IF_ERROR(require_gpu());
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  std::vector<int> devices;
  if (spec == "all") {
    for (int d = 0; d < count; ++d) devices.push_back(d);
  } else {
    std::stringstream in(spec);
    for (std::string item; std::getline(in, item, ',');) {
      char* end = nullptr;
      const long d = std::strtol(item.c_str(), &end, 10);
      RETURN_ERROR_IF(
          item.empty() || *end != '\0' || d < 0 || d >= count, ErrorCode::kInvalidArgument,
          "--devices: '" + item + "' is not a device of this machine (0.." + std::to_string(count - 1) + ", or all)");
      RETURN_ERROR_IF(std::find(devices.begin(), devices.end(), int(d)) != devices.end(), ErrorCode::kInvalidArgument,
                      "--devices: device " + item + " is listed twice");
      devices.push_back(int(d));
    }
  }
  RETURN_ERROR_IF(devices.empty(), ErrorCode::kInvalidArgument, "--devices lists no device");
  // Stage latencies from different GPU models would not be comparable in one search.
  cudaDeviceProp first{};
  CHECK_CUDA(cudaGetDeviceProperties(&first, devices[0]));
  for (int d : devices) {
    cudaDeviceProp p{};
    CHECK_CUDA(cudaGetDeviceProperties(&p, d));
    RETURN_ERROR_IF(std::string(p.name) != first.name || p.multiProcessorCount != first.multiProcessorCount,
                    ErrorCode::kInvalidArgument,
                    "--devices: device " + std::to_string(d) + " is a " + p.name + ", device " +
                        std::to_string(devices[0]) + " a " + first.name + "; one search needs identical GPUs");
  }
  return devices;
}

}  // namespace ios::rt
