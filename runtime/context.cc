#include "runtime/context.h"

namespace ios::rt {

Expected<Precision> parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "tf32") return Precision::kTf32;
  return error(ErrorCode::kInvalidArgument, "--precision must be fp32 or tf32, got '" + s + "'");
}
const char* precision_name(Precision p) { return p == Precision::kFp32 ? "fp32" : "tf32"; }

Expected<std::shared_ptr<Context>> Context::create(Precision precision) {
  RETURN_IF_ERROR(require_gpu());
  std::shared_ptr<Context> c(new Context(precision));
  RETURN_IF_ERROR(c->ensure_streams(1));
  return c;
}

Status Context::ensure_streams(int count) {
  constexpr size_t kCublasWorkspace = size_t{4} << 20;
  while (streams() < count) {
    ASSIGN_OR_RETURN(Stream s, make_stream());
    ASSIGN_OR_RETURN(CudnnHandle h, make_cudnn());
    CHECK_CUDNN(cudnnSetStream(h, s));
    ASSIGN_OR_RETURN(CublasHandle b, make_cublas());
    CHECK_CUBLAS(cublasSetStream(b, s));
    CHECK_CUBLAS(
        cublasSetMathMode(b, precision_ == Precision::kFp32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_TF32_TENSOR_OP_MATH));
    ASSIGN_OR_RETURN(DeviceMemory cw, device_alloc(kCublasWorkspace));
    CHECK_CUBLAS(cublasSetWorkspace(b, cw.get(), kCublasWorkspace));
    streams_.push_back(std::move(s));
    cudnn_.push_back(std::move(h));
    cublas_.push_back(std::move(b));
    cublas_workspace_.push_back(std::move(cw));
    workspace_.emplace_back();
    workspace_size_.push_back(0);
  }
  return Status::ok();
}

Expected<void*> Context::workspace(int stream, size_t bytes) {
  RETURN_ERROR_IF(stream < 0 || stream >= streams(), ErrorCode::kInvalidArgument,
                  "stream " + std::to_string(stream) + " does not exist");
  if (bytes > workspace_size_[size_t(stream)]) {
    ASSIGN_OR_RETURN(DeviceMemory m, device_alloc(bytes));
    if (workspace_[size_t(stream)].get()) retired_.push_back(std::move(workspace_[size_t(stream)]));
    workspace_[size_t(stream)] = std::move(m);
    workspace_size_[size_t(stream)] = bytes;
  }
  return workspace_[size_t(stream)].get();
}

}  // namespace ios::rt
