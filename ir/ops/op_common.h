// What every step op declares, and the helpers their definitions share.
//
// A step op maps one input tensor (C x H x W per sample) to one output tensor. It runs alone as a node
// or as a step of a sequential node. Each step op is one struct in its own file under ir/ops/, holding
// its attributes and the facts every layer asks of it:
//   kType                 the name in graph files, signatures and kernel-cache keys
//   kTraits               what the memory plan and the cost models may assume (OpTraits)
//   infer(in)             validation of the attributes against the input, and the output shape
//   cost(in, out)         FLOPs, bytes and launches for the analytic cost model
//   params(in)            the parameter tensors it reads (weights.h makes and stores them)
//   write(w)/read(r)      the one serialization of its attributes (op_io.h: OpWriter, OpReader)
// The CPU reference (reference/) and the GPU runtime (runtime/) hold one case per op in a visit that
// names every alternative, so the compiler points at a backend that lacks the op. docs/adding_an_op.md
// has the recipe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/status.h"
#include "ir/activation.h"

// Attributes compare member by member. kernels.cu includes op headers for their device functions and is
// compiled as C++17 (CMake 3.25 has no C++20 dialect for nvcc); it never compares attributes.
#if __cplusplus >= 202002L
#define IOS_MEMBERWISE_EQUAL(T) bool operator==(const T&) const = default;
#else
#define IOS_MEMBERWISE_EQUAL(T)
#endif

namespace ios::ir {

const char* act_name(Act act);  // the table's name (ir/activation.h): identity, relu, sigmoid, ...
std::optional<Act> parse_act(const std::string& s);

struct Shape {
  int c = 0, h = 0, w = 0;
  int64_t numel() const { return int64_t{c} * h * w; }
  IOS_MEMBERWISE_EQUAL(Shape)
  std::string to_string() const;
};

// Cost figures of one op at batch 1 (float32 bytes).
struct NodeCost {
  double flops = 0;  // multiply-add counted as 2
  double bytes = 0;  // activations read + written + parameters
  int kernels = 0;   // kernel launches a straightforward runtime needs
};

// Element counts of a step's parameter tensors (weight, bias) and the weights' fan-in (for their scale).
struct ParamSizes {
  size_t weight = 0, bias = 0, fan_in = 0;
};

struct OpTraits {
  bool memory_bound;    // limited by memory traffic, not arithmetic (Opara's resource estimate)
  bool writes_strided;  // its GPU kernel can write a channel slice of a larger buffer (a concatenation)
};

namespace op_check {
// Both values of an attribute pair within [lo, hi] (limits.h), so window arithmetic cannot overflow.
Status pair(const char* field, int a, int b, int64_t lo, int64_t hi);
// A count in [1, limit].
Status count(const char* field, int64_t value, int64_t limit);
// An output within the spatial and element limits.
Status tensor_size(const Shape& s);
// floor((in + 2p - d(k-1) - 1) / s) + 1, IOS's formula generalised to dilation and ceil mode.
int window_output(int in, int k, int s, int p, int d, bool ceil_mode);
// Element-wise cost: reads the input, writes the output, `flops_per_output` each.
NodeCost pointwise(const Shape& in, const Shape& out, double flops_per_output);
}  // namespace op_check

// An op's attributes as fields of a graph file (ir/ops/op_io.h); only op files and json_io.cc see the
// JSON library, so these headers mix with cudnn-frontend's own copy of it.
class OpWriter;
class OpReader;

}  // namespace ios::ir
