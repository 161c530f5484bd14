// Constant arithmetic evaluated at import: exporters compute reshape targets, sizes and paddings with
// Shape, Gather, Unsqueeze, Concat, Slice, Cast, Ceil, Floor, Clip, Max and integer arithmetic, and some
// models compute their weights from parameters (weight standardization: ReduceMean, Sub, Pow, Sqrt, Div
// of initializers). Where every input of such a node is a constant (Shape reads only its input's static
// shape), the importer evaluates it here, so that none of it reaches the IR.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "frontends/onnx/onnx_tensors.h"

namespace ios::onnx_import {

// Ops that are only ever evaluated here: an activation input is an error for them.
bool is_constant_only_op(const std::string& op_type);
// Ops evaluated here when every input is a constant (the constant-only ones and arithmetic, Concat,
// Slice, Reshape on constants).
bool is_foldable_op(const std::string& op_type);

// The node's output from its constant inputs (nullptr for an omitted optional input). Results are
// limited to kMaxFoldedElements values.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;
Expected<Constant> fold_node(const onnx::NodeProto& n, const std::vector<const Constant*>& inputs, int opset);

}  // namespace ios::onnx_import
