#include "runtime/cuda_check.h"

#include <string>

namespace ios::rt {

namespace {
std::string site(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}
}  // namespace

Status cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory
                         : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) ? ErrorCode::kUnavailable
                                                                                        : ErrorCode::kRuntimeError;
  return Status(code, site(call, file, line) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

Status cudnn_error(cudnnStatus_t e, const char* call, const char* file, int line) {
  const ErrorCode code = e == CUDNN_STATUS_ALLOC_FAILED ? ErrorCode::kOutOfMemory : ErrorCode::kRuntimeError;
  return Status(code, site(call, file, line) + ": " + cudnnGetErrorString(e));
}

Status cublas_error(cublasStatus_t e, const char* call, const char* file, int line) {
  const ErrorCode code = e == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kOutOfMemory : ErrorCode::kRuntimeError;
  return Status(code, site(call, file, line) + ": " + cublasGetStatusString(e));
}

}  // namespace ios::rt
