#include "ir/ops/prelu.h"

namespace ios::ir {

NodeCost PReluAttrs::cost(const Shape& in, const Shape& out) const {
  NodeCost c = op_check::pointwise(in, out, 2);  // compare, multiply
  c.bytes += 4.0 * in.c;
  return c;
}

}  // namespace ios::ir
