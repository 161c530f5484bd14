// Serialization of step ops' attributes: each op's write() and read() go through these, so graph files,
// stage signatures and kernel-cache keys (all made from the same JSON) get every attribute at once.
// Reads are of untrusted files: every value is range-checked and errors name the op and the field.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "ir/ops/op_common.h"

namespace ios::ir {

class OpWriter {
 public:
  explicit OpWriter(nlohmann::json& j) : j_(j) {}
  template <typename T>
  OpWriter& set(const char* field, const T& value) {
    j_[field] = value;
    return *this;
  }
  OpWriter& set_pair(const char* field, int a, int b) { return set(field, nlohmann::json::array({a, b})); }
  OpWriter& set_pair(const char* field, double a, double b) { return set(field, nlohmann::json::array({a, b})); }
  OpWriter& set_act(const char* field, Act a) { return set(field, act_name(a)); }
  // One of an enum's spellings, indexed by its value.
  OpWriter& set_choice(const char* field, std::initializer_list<const char*> names, int value) {
    return set(field, names.begin()[value]);
  }

 private:
  nlohmann::json& j_;
};

class OpReader {
 public:
  OpReader(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}
  const std::string& where() const { return where_; }
  bool has(const char* field) const { return j_.contains(field); }

  Expected<std::string> string(const char* field) const;
  Expected<int> integer(const char* field, int64_t lo, int64_t hi) const;
  // [a, b] with each in [lo, hi]; `fallback` where the field is absent and not required.
  Expected<std::pair<int, int>> pair(const char* field, std::pair<int, int> fallback, bool required, int64_t lo,
                                     int64_t hi) const;
  Expected<std::pair<double, double>> number_pair(const char* field, std::pair<double, double> fallback, double lo,
                                                  double hi) const;
  Expected<double> number(const char* field, double fallback, double lo, double hi) const;
  Expected<bool> boolean(const char* field, bool fallback) const;
  Expected<Act> act(const char* field, Act fallback) const;
  // One of `names` (an enum's spellings, indexed by value).
  Expected<int> choice(const char* field, std::initializer_list<const char*> names, int fallback) const;

 private:
  std::string field_of(const char* field) const { return where_ + " field '" + field + "'"; }
  const nlohmann::json& j_;
  std::string where_;
};

}  // namespace ios::ir
