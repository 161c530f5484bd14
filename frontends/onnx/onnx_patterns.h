// Subgraphs that exporters write for one activation, rewritten to that activation's ONNX op before the
// import proper: x * Sigmoid(x) becomes Swish (SiLU), and PyTorch's erf form of GELU,
// Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) and the dynamo exporter's two orderings of it, becomes
// Gelu. ConvNeXt V2's global response normalization, Mul(x, Div(ReduceL2(x), Add(ReduceMean(ReduceL2(x)), eps))),
// becomes one node of the importer's own kResponseNormOp, which no ONNX model names; a Reshape to 6-D,
// Transpose, Reshape to 4-D becomes one kBlockMoveOp. A pattern is rewritten only
// where each of its intermediate tensors has no reader outside it.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ios::onnx_import {

// The op the GRN pattern becomes: input 0 the tensor, inputs 1 and 2 the ReduceL2's and the ReduceMean's axes
// inputs (empty where they had attributes), attributes 'epsilon', 'spatial_axes' and 'channel_axes' (copied
// where the reductions had them).
inline constexpr const char* kResponseNormOp = "ios::GlobalResponseNorm";

// The op a block move between space and channels written as Reshape to 6-D, Transpose, Reshape to 4-D becomes
// (PyTorch's pixel_unshuffle, TResNet's space-to-depth): inputs the tensor, the 6-D shape and the 4-D shape,
// attribute 'perm' copied from the Transpose, 'allowzero' = 1 where a Reshape sets it. The importer decides which block
// move it is, if any.
inline constexpr const char* kBlockMoveOp = "ios::BlockMove";

// EvoNorm-S0's x / (group standard deviation of x), the standard deviation expanded back to x's shape: input 0
// the tensor, attributes 'groups' and 'epsilon'.
inline constexpr const char* kGroupStdDivideOp = "ios::GroupStdDivide";

// The value of a tensor that is a constant scalar (an initializer or a Constant node), else nullopt.
using ScalarLookup = std::function<std::optional<float>(const std::string& name)>;
// The values of a tensor that is an integer constant (an initializer or a Constant node), else nullopt.
using IntsLookup = std::function<std::optional<std::vector<int64_t>>(const std::string& name)>;

// The graph's nodes with the patterns rewritten; `counts` gains one line per kind of rewrite.
std::vector<onnx::NodeProto> rewrite_patterns(const onnx::GraphProto& graph, const ScalarLookup& scalar,
                                              const IntsLookup& ints, std::map<std::string, int>& counts);

}  // namespace ios::onnx_import
