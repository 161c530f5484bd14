#include "ir/ops/op_common.h"

#include <sstream>

#include "common/json_fields.h"
#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

using nlohmann::json;

std::string Shape::to_string() const {
  std::ostringstream os;
  os << c << "x" << h << "x" << w;
  return os.str();
}

const char* act_name(Act act) {
  switch (act) {
#define IOS_ACT_NAME(e, name, value) \
  case Act::e:                       \
    return name;
    IOS_ACTIVATIONS(IOS_ACT_NAME)
#undef IOS_ACT_NAME
  }
  return "?";
}

std::optional<Act> parse_act(const std::string& s) {
  if (s == "none") return Act::kNone;  // IOS's files also write "identity"
  for (int a = 0; a < kActCount; ++a)
    if (s == act_name(Act(a))) return Act(a);
  return std::nullopt;
}

namespace op_check {

Status pair(const char* field, int a, int b, int64_t lo, int64_t hi) {
  RETURN_ERROR_IF(a < lo || a > hi || b < lo || b > hi, ErrorCode::kInvalidGraph,
                  std::string("field '") + field + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got [" + std::to_string(a) + ", " + std::to_string(b) + "]");
  return Status::ok();
}

Status count(const char* field, int64_t value, int64_t limit) {
  RETURN_ERROR_IF(
      value <= 0 || value > limit, ErrorCode::kInvalidGraph,
      std::string("field '") + field + "' must be in [1, " + std::to_string(limit) + "], got " + std::to_string(value));
  return Status::ok();
}

Status tensor_size(const Shape& s) {
  RETURN_ERROR_IF(s.h > limits::kMaxSpatial || s.w > limits::kMaxSpatial || s.numel() > limits::kMaxTensorElements,
                  ErrorCode::kInvalidGraph,
                  "output " + s.to_string() + " is past the limits of " + std::to_string(limits::kMaxSpatial) +
                      " pixels a side and " + std::to_string(limits::kMaxTensorElements) + " elements");
  return Status::ok();
}

int window_output(int in, int k, int s, int p, int d, bool ceil_mode) {
  const int span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;
  int out = span / s + 1;
  if (ceil_mode && span % s != 0) {
    ++out;
    if ((out - 1) * s >= in + p) --out;  // the last window must start inside the input or left pad
  }
  return out;
}

NodeCost pointwise(const Shape& in, const Shape& out, double flops_per_output) {
  return NodeCost{flops_per_output * static_cast<double>(out.numel()),
                  4.0 * static_cast<double>(in.numel() + out.numel()), 1};
}

}  // namespace op_check

namespace {
constexpr ErrorCode kCode = ErrorCode::kInvalidGraph;
}  // namespace

Expected<std::string> OpReader::string(const char* field) const {
  RETURN_ERROR_IF(!j_.contains(field), kCode, where_ + ": missing field '" + field + "'");
  return json_string(j_[field], field_of(field), kCode);
}

Expected<int> OpReader::integer(const char* field, int64_t lo, int64_t hi) const {
  RETURN_ERROR_IF(!j_.contains(field), kCode, where_ + ": missing field '" + field + "'");
  ASSIGN_OR_RETURN(int64_t v, json_integer(j_[field], field_of(field), lo, hi, kCode));
  return static_cast<int>(v);
}

Expected<std::pair<int, int>> OpReader::pair(const char* field, std::pair<int, int> fallback, bool required, int64_t lo,
                                             int64_t hi) const {
  if (!j_.contains(field) || j_[field].is_null()) {
    RETURN_ERROR_IF(required, kCode, where_ + ": missing field '" + field + "'");
    return fallback;
  }
  const json& v = j_[field];
  RETURN_ERROR_IF(!v.is_array() || v.size() != 2, kCode, field_of(field) + " must be an array of 2 integers");
  ASSIGN_OR_RETURN(int64_t a, json_integer(v[0], field_of(field) + "[0]", lo, hi, kCode));
  ASSIGN_OR_RETURN(int64_t b, json_integer(v[1], field_of(field) + "[1]", lo, hi, kCode));
  return std::make_pair(static_cast<int>(a), static_cast<int>(b));
}

Expected<std::pair<double, double>> OpReader::number_pair(const char* field, std::pair<double, double> fallback,
                                                          double lo, double hi) const {
  if (!j_.contains(field)) return fallback;
  const json& v = j_[field];
  RETURN_ERROR_IF(!v.is_array() || v.size() != 2, kCode, field_of(field) + " must be an array of 2 numbers");
  ASSIGN_OR_RETURN(double a, json_number(v[0], field_of(field) + "[0]", lo, hi, kCode));
  ASSIGN_OR_RETURN(double b, json_number(v[1], field_of(field) + "[1]", lo, hi, kCode));
  return std::make_pair(a, b);
}

Expected<double> OpReader::number(const char* field, double fallback, double lo, double hi) const {
  if (!j_.contains(field)) return fallback;
  return json_number(j_[field], field_of(field), lo, hi, kCode);
}

Expected<bool> OpReader::boolean(const char* field, bool fallback) const {
  if (!j_.contains(field)) return fallback;
  return json_bool(j_[field], field_of(field), kCode);
}

Expected<Act> OpReader::act(const char* field, Act fallback) const {
  if (!j_.contains(field)) return fallback;
  ASSIGN_OR_RETURN(std::string name, json_string(j_[field], field_of(field), kCode));
  auto a = parse_act(name);
  RETURN_ERROR_IF(!a, kCode, field_of(field) + " has unknown activation '" + name + "'");
  return *a;
}

Expected<int> OpReader::choice(const char* field, std::initializer_list<const char*> names, int fallback) const {
  if (!j_.contains(field)) return fallback;
  ASSIGN_OR_RETURN(std::string name, json_string(j_[field], field_of(field), kCode));
  int index = 0;
  std::string allowed;
  for (const char* n : names) {
    if (name == n) return index;
    allowed += std::string(index ? ", " : "") + "'" + n + "'";
    ++index;
  }
  return error(kCode, field_of(field) + " has unknown value '" + name + "' (one of " + allowed + ")");
}

}  // namespace ios::ir
