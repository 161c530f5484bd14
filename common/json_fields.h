// Typed, range-checked access to values of an untrusted JSON document. Integers are read as 64-bit and
// checked against a range before any narrowing; numbers must be finite. `what` names the value in
// errors, as a path in the document: "node 'c1' field 'kernel'", "schedule field 'batch'".
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/status.h"

namespace ios {

Expected<int64_t> json_integer(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi,
                               ErrorCode code = ErrorCode::kInvalidArgument);
Expected<double> json_number(const nlohmann::json& v, const std::string& what, double lo, double hi,
                             ErrorCode code = ErrorCode::kInvalidArgument);
Expected<std::string> json_string(const nlohmann::json& v, const std::string& what,
                                  ErrorCode code = ErrorCode::kInvalidArgument);
Expected<bool> json_bool(const nlohmann::json& v, const std::string& what,
                         ErrorCode code = ErrorCode::kInvalidArgument);

// An int in [lo, hi] (both within int's range).
inline Expected<int> json_int(const nlohmann::json& v, const std::string& what, int lo, int hi,
                              ErrorCode code = ErrorCode::kInvalidArgument) {
  ASSIGN_OR_RETURN(int64_t x, json_integer(v, what, lo, hi, code));
  return static_cast<int>(x);
}

}  // namespace ios
