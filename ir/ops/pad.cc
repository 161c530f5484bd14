#include "ir/ops/pad.h"

#include <cmath>

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

namespace {
constexpr std::initializer_list<const char*> kModes = {"constant", "reflect", "edge"};
}  // namespace

Expected<Shape> PadAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::pair("pads_begin", top, left, -limits::kMaxPadding, limits::kMaxPadding));
  RETURN_IF_ERROR(op_check::pair("pads_end", bottom, right, -limits::kMaxPadding, limits::kMaxPadding));
  RETURN_ERROR_IF(
      in.h + top + bottom < 1 || in.w + left + right < 1, ErrorCode::kInvalidGraph,
      "negative pads crop all of the input's " + std::to_string(in.h) + "x" + std::to_string(in.w) + " pixels");
  RETURN_ERROR_IF(!std::isfinite(value), ErrorCode::kInvalidGraph, "field 'value' must be finite");
  // A reflection mirrors the interior once: each pad must be shorter than the side it mirrors.
  RETURN_ERROR_IF(mode == PadMode::kReflect && std::max(top, bottom) >= in.h, ErrorCode::kInvalidGraph,
                  "reflect padding of " + std::to_string(std::max(top, bottom)) + " rows needs more than " +
                      std::to_string(in.h) + " input rows");
  RETURN_ERROR_IF(mode == PadMode::kReflect && std::max(left, right) >= in.w, ErrorCode::kInvalidGraph,
                  "reflect padding of " + std::to_string(std::max(left, right)) + " columns needs more than " +
                      std::to_string(in.w) + " input columns");
  return Shape{in.c, in.h + top + bottom, in.w + left + right};
}

void PadAttrs::write(OpWriter& w) const {
  w.set_choice("mode", kModes, int(mode)).set_pair("pads_begin", top, left).set_pair("pads_end", bottom, right);
  w.set("value", value);
}

Expected<PadAttrs> PadAttrs::read(const OpReader& r) {
  PadAttrs a;
  ASSIGN_OR_RETURN(int mode, r.choice("mode", kModes, 0));
  a.mode = PadMode(mode);
  ASSIGN_OR_RETURN(auto begin, r.pair("pads_begin", {0, 0}, true, -limits::kMaxPadding, limits::kMaxPadding));
  ASSIGN_OR_RETURN(auto end, r.pair("pads_end", {0, 0}, true, -limits::kMaxPadding, limits::kMaxPadding));
  a.top = begin.first, a.left = begin.second, a.bottom = end.first, a.right = end.second;
  ASSIGN_OR_RETURN(double value, r.number("value", 0, -3.4e38, 3.4e38));
  a.value = float(value);
  return a;
}

}  // namespace ios::ir
