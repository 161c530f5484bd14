// ONNX front end: a ModelProto (opsets 11-21, weights inline or in external data files) becomes an
// ir::Graph with IOS blocks derived from its DAG and the model's own weights in the IR's layout.
// BatchNormalization, per-channel Mul/Add and activations are folded into the convolution or linear
// op before them where they are its only reader; Dropout and Identity are dropped; Add/Sum and Concat
// become the IR's summed and concatenated input terms. Anything else is an error that lists every
// unsupported node of the file (name, op type, opset), not just the first.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "ir/graph.h"
#include "ir/weights.h"

namespace ios::onnx_import {

inline constexpr int kMinOpset = 11;
inline constexpr int kMaxOpset = 21;

struct ImportedModel {
  ir::Graph graph;
  ir::Weights weights;  // the model's initializers, folds applied, in the IR's layout
  int opset = 0;
  std::vector<std::string> notes;  // what the import did beyond a one-to-one translation
};

// ONNX op types (default domain) the importer translates, sorted.
std::vector<std::string> supported_ops();

// External data files are looked up beside `path`; the graph is named after the file.
Expected<ImportedModel> import_file(const std::string& path);
// `bytes`: a serialized ModelProto; `base_dir`: where its external data files are.
Expected<ImportedModel> import_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir);

}  // namespace ios::onnx_import
