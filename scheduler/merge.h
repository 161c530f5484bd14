// IOS's operator merge: sibling convolutions that read the same value become one wider convolution.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace ios::sched {

// Empty when legal; otherwise the rule that fails, naming the op.
std::string merge_violation(const ir::Graph& g, const std::vector<ir::NodeId>& ops);
inline bool can_merge(const ir::Graph& g, const std::vector<ir::NodeId>& ops) {
  return ops.size() >= 2 && merge_violation(g, ops).empty();
}

// The merged convolution: output channels summed in op order, kernel and padding the element-wise
// maximum (each original kernel centred in it).
ir::ConvAttrs merged_conv(const ir::Graph& g, const std::vector<ir::NodeId>& ops);

}  // namespace ios::sched
