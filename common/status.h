// One error type for every library in the project: a [[nodiscard]] Status and Expected<T>.
// Libraries return these; only main()s and tests turn an error into an exit.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ios {

enum class [[nodiscard]] ErrorCode{
    kOk = 0,
    kInvalidArgument,  // bad flag, bad attribute, malformed input
    kInvalidGraph,     // a graph that violates the IR's rules
    kInvalidSchedule,  // a schedule that violates the scheduler's rules
    kNotFound,         // unknown model, node or file
    kIoError,          // file could not be read or written
    kUnavailable,      // no GPU, missing library
    kRuntimeError,     // CUDA / cuDNN / cuBLAS / CUPTI failure
    kOutOfMemory,
    kBudgetExceeded,  // a search went past its work budget
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

  // Prefixes context ("while reading x.json: ...") keeping the code.
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status error(ErrorCode code, std::string message) { return Status(code, std::move(message)); }

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}  // NOLINT: implicit on purpose
  Expected(Status status) : storage_(std::move(status)) { assert(!std::get<Status>(storage_).is_ok()); }

  bool has_value() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<T>(storage_); }
  const T& value() const& { return std::get<T>(storage_); }
  T&& value() && { return std::get<T>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Status status() const { return has_value() ? Status::ok() : std::get<Status>(storage_); }

 private:
  std::variant<T, Status> storage_;
};

}  // namespace ios

#define IOS_CONCAT_INNER(a, b) a##b
#define IOS_CONCAT(a, b) IOS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                     \
  do {                                            \
    ::ios::Status ios_status_ = (expr);           \
    if (!ios_status_.is_ok()) return ios_status_; \
  } while (0)

#define RETURN_ERROR_IF(cond, code, msg)           \
  do {                                             \
    if (cond) return ::ios::Status((code), (msg)); \
  } while (0)

// ASSIGN_OR_RETURN(auto x, make_x()); binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr)                                                                          \
  auto IOS_CONCAT(ios_expected_, __LINE__) = (expr);                                                         \
  if (!IOS_CONCAT(ios_expected_, __LINE__).has_value()) return IOS_CONCAT(ios_expected_, __LINE__).status(); \
  lhs = std::move(IOS_CONCAT(ios_expected_, __LINE__)).value()
