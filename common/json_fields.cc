#include "common/json_fields.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ios {

namespace {
std::string range_text(const std::string& lo, const std::string& hi) { return "[" + lo + ", " + hi + "]"; }
}  // namespace

Expected<int64_t> json_integer(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi,
                               ErrorCode code) {
  const std::string rule = what + " must be an integer in " + range_text(std::to_string(lo), std::to_string(hi));
  RETURN_ERROR_IF(!v.is_number_integer(), code, rule + ", got " + std::string(v.type_name()));
  // Unsigned values past int64's range compare as unsigned; everything else fits int64.
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    const bool below = lo > 0 && u < static_cast<uint64_t>(lo);
    RETURN_ERROR_IF(below || hi < 0 || u > static_cast<uint64_t>(hi), code, rule + ", got " + std::to_string(u));
    return static_cast<int64_t>(u);
  }
  const int64_t x = v.get<int64_t>();
  RETURN_ERROR_IF(x < lo || x > hi, code, rule + ", got " + std::to_string(x));
  return x;
}

Expected<double> json_number(const nlohmann::json& v, const std::string& what, double lo, double hi, ErrorCode code) {
  const std::string rule =
      what + " must be a finite number in " + range_text(nlohmann::json(lo).dump(), nlohmann::json(hi).dump());
  RETURN_ERROR_IF(!v.is_number(), code, rule + ", got " + std::string(v.type_name()));
  const double x = v.get<double>();
  RETURN_ERROR_IF(!std::isfinite(x) || x < lo || x > hi, code, rule + ", got " + nlohmann::json(x).dump());
  return x;
}

Expected<std::string> json_string(const nlohmann::json& v, const std::string& what, ErrorCode code) {
  RETURN_ERROR_IF(!v.is_string(), code, what + " must be a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

Expected<bool> json_bool(const nlohmann::json& v, const std::string& what, ErrorCode code) {
  RETURN_ERROR_IF(!v.is_boolean(), code, what + " must be true or false, got " + std::string(v.type_name()));
  return v.get<bool>();
}

}  // namespace ios
