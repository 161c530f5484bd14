#include "ir/ops/activation_op.h"

#include "ir/ops/op_io.h"

namespace ios::ir {

void ActivationAttrs::write(OpWriter& w) const { w.set_act("act_type", activation).set("inplace", false); }

Expected<ActivationAttrs> ActivationAttrs::read(const OpReader& r) {
  ASSIGN_OR_RETURN(std::string a, r.string("act_type"));
  auto act = parse_act(a);
  RETURN_ERROR_IF(!act, ErrorCode::kInvalidGraph, r.where() + ": field 'act_type' has unknown value '" + a + "'");
  return ActivationAttrs{*act};
}

}  // namespace ios::ir
