#include "frontends/onnx/onnx_tensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>

#include "common/float16.h"
#include "common/limits.h"

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

// The bytes of an external-data tensor: `location` must be a relative path inside the model's folder.
Expected<std::string> read_external(const onnx::TensorProto& t, const std::string& base_dir, size_t bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoll(kv.value());
      if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      return tensor_error(t, "external data field '" + kv.key() + "' is not a number: '" + kv.value() + "'");
    }
  }
  const std::filesystem::path rel(location);
  RETURN_ERROR_IF(location.empty(), ErrorCode::kInvalidArgument,
                  "tensor '" + t.name() + "': external data without a location");
  for (const auto& part : rel)
    RETURN_ERROR_IF(rel.is_absolute() || part == "..", ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "': external data location '" + location +
                        "' must be a relative path inside the model's folder");
  RETURN_ERROR_IF(
      offset < 0 || (length >= 0 && size_t(length) != bytes), ErrorCode::kInvalidArgument,
      "tensor '" + t.name() + "': external data offset/length do not match its " + std::to_string(bytes) + " bytes");
  const std::string path = (std::filesystem::path(base_dir) / rel).string();
  std::ifstream in(path, std::ios::binary);
  RETURN_ERROR_IF(!in, ErrorCode::kIoError, "tensor '" + t.name() + "': cannot open external data file '" + path + "'");
  in.seekg(offset);
  std::string data(bytes, '\0');
  RETURN_ERROR_IF(!in.read(data.data(), static_cast<std::streamsize>(bytes)), ErrorCode::kIoError,
                  "tensor '" + t.name() + "': external data file '" + path + "' ends before offset " +
                      std::to_string(offset) + " + " + std::to_string(bytes) + " bytes");
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
  std::string raw(bytes, '\0');
  auto fill = [&](const auto& field, auto convert) -> Status {
    RETURN_ERROR_IF(field.size() != count, ErrorCode::kInvalidArgument,
                    "tensor '" + t.name() + "' holds " + std::to_string(field.size()) + " values, its shape needs " +
                        std::to_string(count));
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
