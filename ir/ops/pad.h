// Padding of H and W (ONNX Pad, PyTorch F.pad): a constant, the mirrored interior (reflect), or the
// nearest edge pixel (edge), each side on its own. A negative pad crops that side.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

enum class PadMode : uint8_t { kConstant, kReflect, kEdge };

struct PadAttrs {
  static constexpr const char* kType = "pad";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  PadMode mode = PadMode::kConstant;
  int top = 0, left = 0, bottom = 0, right = 0;
  float value = 0.f;  // kConstant's fill
  IOS_MEMBERWISE_EQUAL(PadAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const { return op_check::pointwise(in, out, 0); }
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<PadAttrs> read(const OpReader& r);
};

// The input index an output index `o` reads along one axis with `before` padded cells ahead of `in`
// input cells; -1: the constant fill.
IOS_HOST_DEVICE inline int pad_source(PadMode mode, int o, int before, int in) {
  const int i = o - before;
  if (i >= 0 && i < in) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : in - 1;
    case PadMode::kReflect:
      return i < 0 ? -i : 2 * (in - 1) - i;
  }
  return -1;
}

}  // namespace ios::ir
