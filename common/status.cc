#include "common/status.h"

namespace ios {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidGraph:
      return "invalid graph";
    case ErrorCode::kInvalidSchedule:
      return "invalid schedule";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kIoError:
      return "I/O error";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kRuntimeError:
      return "runtime error";
    case ErrorCode::kOutOfMemory:
      return "out of memory";
    case ErrorCode::kBudgetExceeded:
      return "budget exceeded";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

}  // namespace ios
