// The one CHECK family for CUDA, cuDNN and cuBLAS: each failure becomes a Status naming the call,
// the call site and the library's decoded message. Libraries propagate it; mains decide to exit.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "common/status.h"

namespace ios::rt {

Status cuda_error(cudaError_t e, const char* call, const char* file, int line);
Status cudnn_error(cudnnStatus_t e, const char* call, const char* file, int line);
Status cublas_error(cublasStatus_t e, const char* call, const char* file, int line);

}  // namespace ios::rt

#define CHECK_CUDA(call)                                                                        \
  do {                                                                                          \
    const cudaError_t ios_err_ = (call);                                                        \
    if (ios_err_ != cudaSuccess) return ::ios::rt::cuda_error(ios_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define CHECK_CUDNN(call)                                                                                \
  do {                                                                                                   \
    const cudnnStatus_t ios_err_ = (call);                                                               \
    if (ios_err_ != CUDNN_STATUS_SUCCESS) return ::ios::rt::cudnn_error(ios_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define CHECK_CUBLAS(call)                                                                                  \
  do {                                                                                                      \
    const cublasStatus_t ios_err_ = (call);                                                                 \
    if (ios_err_ != CUBLAS_STATUS_SUCCESS) return ::ios::rt::cublas_error(ios_err_, #call, __FILE__, __LINE__); \
  } while (0)
