#include "ir/ops/resize.h"

#include <cmath>

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

namespace {
constexpr std::initializer_list<const char*> kModes = {"nearest", "linear"};
constexpr std::initializer_list<const char*> kCoords = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                                        "asymmetric"};
constexpr std::initializer_list<const char*> kRounds = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
}  // namespace

Expected<Shape> ResizeAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::pair("size", out_h, out_w, 1, limits::kMaxSpatial));
  RETURN_ERROR_IF(!(scale_h >= 0 && scale_w >= 0 && std::isfinite(scale_h) && std::isfinite(scale_w)),
                  ErrorCode::kInvalidGraph, "field 'scales' must be finite and not negative");
  return Shape{in.c, out_h, out_w};
}

NodeCost ResizeAttrs::cost(const Shape& in, const Shape& out) const {
  // Each output reads its taps (4 pixels bilinear, 1 nearest), mostly from cache.
  return op_check::pointwise(in, out, mode == ResizeMode::kLinear ? 8 : 1);
}

void ResizeAttrs::write(OpWriter& w) const {
  w.set_choice("mode", kModes, int(mode))
      .set_choice("coordinate_transformation_mode", kCoords, int(coord))
      .set_choice("nearest_mode", kRounds, int(round))
      .set_pair("size", out_h, out_w)
      .set_pair("scales", scale_h, scale_w);
}

Expected<ResizeAttrs> ResizeAttrs::read(const OpReader& r) {
  ResizeAttrs a;
  ASSIGN_OR_RETURN(int mode, r.choice("mode", kModes, 0));
  ASSIGN_OR_RETURN(int coord, r.choice("coordinate_transformation_mode", kCoords, 0));
  ASSIGN_OR_RETURN(int round, r.choice("nearest_mode", kRounds, 0));
  a.mode = ResizeMode(mode), a.coord = ResizeCoord(coord), a.round = ResizeRound(round);
  ASSIGN_OR_RETURN(auto size, r.pair("size", {0, 0}, true, 1, limits::kMaxSpatial));
  a.out_h = size.first, a.out_w = size.second;
  ASSIGN_OR_RETURN(auto scales, r.number_pair("scales", {0.0, 0.0}, 0, limits::kMaxSpatial));
  a.scale_h = scales.first, a.scale_w = scales.second;
  return a;
}

}  // namespace ios::ir
