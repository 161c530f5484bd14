// Reading ONNX protobuf pieces the importer needs: constant tensors (inline, raw or in external data
// files) as float or int64 values, and node attributes with their ONNX defaults. Every error names
// the tensor or the attribute.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ios::onnx_import {

// A constant (initializer or Constant node output) as values of both kinds; ints are exact only for
// integer tensors, floats for floating-point ones.
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  int64_t numel() const;
};

// Whether an op domain is ONNX's own ("" and "ai.onnx" both name it), the only one whose ops are read.
inline bool default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }
inline bool default_domain(const onnx::NodeProto& n) { return default_domain(n.domain()); }

// `base_dir`: where external data files are looked up (the model's folder).
Expected<Constant> read_tensor(const onnx::TensorProto& t, const std::string& base_dir);

// Node attributes, with the default ONNX specifies when the attribute is absent.
class Attributes {
 public:
  explicit Attributes(const onnx::NodeProto& node) : node_(node) {}
  bool has(const std::string& name) const { return find(name) != nullptr; }
  Expected<int64_t> get_int(const std::string& name, int64_t fallback) const;
  Expected<float> get_float(const std::string& name, float fallback) const;
  Expected<std::string> get_string(const std::string& name, const std::string& fallback) const;
  Expected<std::vector<int64_t>> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  const onnx::TensorProto* get_tensor(const std::string& name) const;

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  Status wrong_type(const std::string& name, const char* expected) const;
  const onnx::NodeProto& node_;
};

}  // namespace ios::onnx_import
