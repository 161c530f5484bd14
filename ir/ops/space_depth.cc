#include "ir/ops/space_depth.h"

#include <algorithm>

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

namespace {
constexpr std::initializer_list<const char*> kDirections = {"to_space", "to_depth"};
constexpr std::initializer_list<const char*> kOrders = {"dcr", "crd"};
}  // namespace

Expected<Shape> SpaceDepthAttrs::infer(const Shape& in) const {
  RETURN_IF_ERROR(op_check::count("block", block, limits::kMaxWindow));
  const int64_t cells = int64_t(block) * block;
  if (to_depth) {
    RETURN_ERROR_IF(in.h % block != 0 || in.w % block != 0, ErrorCode::kInvalidGraph,
                    "field 'block' = " + std::to_string(block) + " must divide the input's " + std::to_string(in.h) +
                        "x" + std::to_string(in.w) + " pixels");
    RETURN_IF_ERROR(op_check::count("output channels", in.c * cells, limits::kMaxChannels));
    return Shape{int(in.c * cells), in.h / block, in.w / block};
  }
  RETURN_ERROR_IF(in.c % cells != 0, ErrorCode::kInvalidGraph,
                  "field 'block' = " + std::to_string(block) + " squared must divide the input's " +
                      std::to_string(in.c) + " channels");
  RETURN_ERROR_IF(int64_t(std::max(in.h, in.w)) * block > limits::kMaxSpatial, ErrorCode::kInvalidGraph,
                  "the output's height and width must be at most " + std::to_string(limits::kMaxSpatial));
  return Shape{int(in.c / cells), in.h * block, in.w * block};
}

void SpaceDepthAttrs::write(OpWriter& w) const {
  w.set_choice("direction", kDirections, int(to_depth)).set("block", block).set_choice("order", kOrders, int(order));
}

Expected<SpaceDepthAttrs> SpaceDepthAttrs::read(const OpReader& r) {
  SpaceDepthAttrs a;
  ASSIGN_OR_RETURN(int direction, r.choice("direction", kDirections, 1));
  a.to_depth = direction == 1;
  ASSIGN_OR_RETURN(a.block, r.integer("block", 1, limits::kMaxWindow));
  ASSIGN_OR_RETURN(int order, r.choice("order", kOrders, 0));
  a.order = BlockOrder(order);
  return a;
}

}  // namespace ios::ir
