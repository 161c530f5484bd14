#include "frontends/onnx/onnx_tensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <type_traits>

#include "common/float16.h"
#include "common/limits.h"
#include "common/utf8.h"

namespace ios::onnx_import {

int64_t Constant::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {

Status tensor_error(const onnx::TensorProto& t, const std::string& msg) {
  return error(ErrorCode::kInvalidArgument, "tensor '" + t.name() + "': " + msg);
}

// A non-negative decimal integer, all digits, at most 18 of them ("0xyz", "1e3" and "-8" are errors).
std::optional<int64_t> strict_count(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  return v;
}

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The bytes of an external-data tensor. `location` must name a regular file whose real path (every
// symlink resolved) lies inside the model's real folder; it is opened without following a final
// symlink and without blocking (a FIFO is refused, not waited on), and its size is checked before
// anything is allocated.
Expected<std::string> read_external(const onnx::TensorProto& t, const std::string& base_dir, size_t bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() != "location" && kv.key() != "offset" && kv.key() != "length") continue;  // checksum
    if (kv.key() == "location") {
      location = kv.value();
      continue;
    }
    const std::optional<int64_t> v = strict_count(kv.value());
    if (!v)
      return tensor_error(t, "external data field '" + kv.key() + "' is not a non-negative integer: '" +
                                 to_valid_utf8(kv.value()) + "'");
    (kv.key() == "offset" ? offset : length) = *v;
  }
  const std::string shown = to_valid_utf8(location);
  RETURN_ERROR_IF(location.empty(), ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data without a location");
  const std::filesystem::path rel(location);
  for (const auto& part : rel)
    RETURN_ERROR_IF(rel.is_absolute() || part == "..", ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "': external data location '" + shown +
                        "' must be a relative path inside the model's folder");
  RETURN_ERROR_IF(length >= 0 && size_t(length) != bytes, ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data length " + std::to_string(length) + " is not its " +
                      std::to_string(bytes) + " bytes");
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::canonical(base_dir.empty() ? "." : base_dir, ec);
  RETURN_ERROR_IF(
      ec, ErrorCode::kIoError,
      "tensor '" + t.name() + "': the model's folder '" + base_dir + "' cannot be resolved: " + ec.message());
  const std::filesystem::path real = std::filesystem::weakly_canonical(folder / rel, ec);
  const auto [f, r] = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
  RETURN_ERROR_IF(ec || f != folder.end() || r == real.end(), ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data location '" + shown +
                      "' resolves (through a symlink) outside the model's folder");
  const FdCloser fd{::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  RETURN_ERROR_IF(fd.fd < 0, ErrorCode::kIoError,
                  "tensor '" + t.name() + "': cannot open external data file '" + shown + "': " + std::strerror(errno));
  struct stat st {};
  RETURN_ERROR_IF(::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode), ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data '" + shown + "' is not a regular file");
  RETURN_ERROR_IF(uint64_t(st.st_size) < uint64_t(offset) || uint64_t(st.st_size) - uint64_t(offset) < bytes,
                  ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data file '" + shown + "' has " + std::to_string(st.st_size) +
                      " bytes, fewer than offset " + std::to_string(offset) + " + " + std::to_string(bytes));
  std::string data(bytes, '\0');
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = ::pread(fd.fd, data.data() + done, bytes - done, off_t(offset + int64_t(done)));
    if (n < 0 && errno == EINTR) continue;
    RETURN_ERROR_IF(n <= 0, ErrorCode::kIoError,
                    "tensor '" + t.name() + "': external data file '" + shown + "' could not be read");
    done += size_t(n);
  }
  return data;
}

// Decodes `count` little-endian elements of type T from raw bytes: floats for every type, exact ints
// for the integer types.
template <typename T, typename ToFloat>
void decode(const std::string& raw, int64_t count, Constant& c, ToFloat to_float) {
  c.floats.resize(size_t(count));
  if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) c.ints.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + size_t(i) * sizeof(T), sizeof(T));
    c.floats[size_t(i)] = to_float(v);
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) c.ints[size_t(i)] = v;
  }
}

size_t element_size(int type) {
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
      return 8;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

// The tensor's bytes in raw little-endian form, whichever field holds them.
Expected<std::string> raw_bytes(const onnx::TensorProto& t, const std::string& base_dir, int64_t count) {
  const size_t bytes = size_t(count) * element_size(t.data_type());
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return read_external(t, base_dir, bytes);
  if (t.has_raw_data()) {
    RETURN_ERROR_IF(t.raw_data().size() != bytes, ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "': raw_data holds " + std::to_string(t.raw_data().size()) +
                        " bytes, its shape needs " + std::to_string(bytes));
    return t.raw_data();
  }
  // The typed field's length is checked before the bytes are allocated: a declared shape alone never
  // costs memory.
  std::string raw;
  auto fill = [&](const auto& field, auto convert) -> Status {
    RETURN_ERROR_IF(field.size() != count, ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "' holds " + std::to_string(field.size()) + " values, its shape needs " +
                        std::to_string(count));
    raw.assign(bytes, '\0');
    for (int64_t i = 0; i < count; ++i) {
      auto v = convert(field[int(i)]);
      std::memcpy(raw.data() + size_t(i) * sizeof(v), &v, sizeof(v));
    }
    return Status::ok();
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      RETURN_IF_ERROR(fill(t.float_data(), [](float v) { return v; }));
      break;
    case onnx::TensorProto::DOUBLE:
      RETURN_IF_ERROR(fill(t.double_data(), [](double v) { return v; }));
      break;
    case onnx::TensorProto::INT64:
      RETURN_IF_ERROR(fill(t.int64_data(), [](int64_t v) { return v; }));
      break;
    case onnx::TensorProto::INT32:
      RETURN_IF_ERROR(fill(t.int32_data(), [](int32_t v) { return v; }));
      break;
    default:  // float16 / bfloat16: bit patterns in int32_data
      RETURN_IF_ERROR(fill(t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); }));
  }
  return raw;
}

}  // namespace

Expected<Constant> read_tensor(const onnx::TensorProto& t, const std::string& base_dir) {
  RETURN_ERROR_IF(element_size(t.data_type()) == 0, ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "' has data type " +
                      onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t.data_type())) +
                      "; only float, double, float16, bfloat16, int32 and int64 constants are supported");
  Constant c;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    RETURN_ERROR_IF(d < 0 || (d > 0 && count > limits::kMaxTensorElements / d), ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "' has a negative dimension or more than " +
                        std::to_string(limits::kMaxTensorElements) + " elements");
    count *= d;
    c.dims.push_back(d);
  }
  ASSIGN_OR_RETURN(std::string raw, raw_bytes(t, base_dir, count));
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      decode<float>(raw, count, c, [](float v) { return v; });
      break;
    case onnx::TensorProto::DOUBLE:
      decode<double>(raw, count, c, [](double v) { return static_cast<float>(v); });
      break;
    case onnx::TensorProto::FLOAT16:
      decode<uint16_t>(raw, count, c, [](uint16_t v) { return half_to_float(v); });
      break;
    case onnx::TensorProto::BFLOAT16:
      decode<uint16_t>(raw, count, c, [](uint16_t v) { return bf16_to_float(v); });
      break;
    case onnx::TensorProto::INT32:
      decode<int32_t>(raw, count, c, [](int32_t v) { return static_cast<float>(v); });
      break;
    default:  // INT64
      decode<int64_t>(raw, count, c, [](int64_t v) { return static_cast<float>(v); });
  }
  // A NaN is never a weight, and a double beyond float's range would silently become an infinity.
  // Infinities written as such are kept: Clip's bounds may be one (a weight that is one is refused
  // once the graph is built).
  for (size_t i = 0; i < c.floats.size(); ++i) {
    RETURN_ERROR_IF(std::isnan(c.floats[i]), ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "' holds NaN at element " + std::to_string(i));
    if (t.data_type() == onnx::TensorProto::DOUBLE && std::isinf(c.floats[i])) {
      double d;
      std::memcpy(&d, raw.data() + i * sizeof(double), sizeof(double));
      RETURN_ERROR_IF(std::isfinite(d), ErrorCode::kInvalidArgument,
                      "tensor '" + t.name() + "' holds " + std::to_string(d) + " at element " + std::to_string(i) +
                          ", beyond the range of float32");
    }
  }
  return c;
}

const onnx::AttributeProto* Attributes::find(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

Status Attributes::wrong_type(const std::string& name, const char* expected) const {
  return error(ErrorCode::kInvalidArgument, "attribute '" + name + "' must be " + expected);
}

Expected<int64_t> Attributes::get_int(const std::string& name, int64_t fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) return wrong_type(name, "an int");
  return a->i();
}

Expected<float> Attributes::get_float(const std::string& name, float fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) return wrong_type(name, "a float");
  return a->f();
}

Expected<std::string> Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) return wrong_type(name, "a string");
  return a->s();
}

Expected<std::vector<int64_t>> Attributes::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INTS) return wrong_type(name, "a list of ints");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

const onnx::TensorProto* Attributes::get_tensor(const std::string& name) const {
  const auto* a = find(name);
  return a && a->type() == onnx::AttributeProto::TENSOR ? &a->t() : nullptr;
}

}  // namespace ios::onnx_import
