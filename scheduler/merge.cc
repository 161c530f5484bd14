#include "scheduler/merge.h"

#include <algorithm>

#include "common/limits.h"

namespace ios::sched {

std::string merge_violation(const ir::Graph& g, const std::vector<ir::NodeId>& ops) {
  if (ops.empty()) return "a merge stage needs at least one op";
  const ir::Node& first = g.node(ops[0]);
  auto name = [&](ir::NodeId id) { return "op '" + g.node(id).name + "'"; };
  if (!first.is<ir::ConvAttrs>()) return name(ops[0]) + " is not a convolution";
  const ir::ConvAttrs& c0 = first.attrs<ir::ConvAttrs>();
  int64_t channels = 0;  // summed before merged_conv does, so its int cannot overflow
  for (ir::NodeId id : ops)
    if (const auto* c = std::get_if<ir::ConvAttrs>(&g.node(id).op)) channels += c->out_channels;
  if (channels > limits::kMaxChannels)
    return "the merged convolution would have " + std::to_string(channels) + " channels, more than the limit of " +
           std::to_string(limits::kMaxChannels);
  const ir::ConvAttrs merged = merged_conv(g, ops);
  for (ir::NodeId id : ops) {
    const ir::Node& n = g.node(id);
    if (!n.is<ir::ConvAttrs>()) return name(id) + " is not a convolution";
    const ir::ConvAttrs& c = n.attrs<ir::ConvAttrs>();
    if (c.groups != 1) return name(id) + " is a grouped convolution";
    if (c.activation != c0.activation) return name(id) + " has a different activation";
    if (c.sh != c0.sh || c.sw != c0.sw) return name(id) + " has a different stride";
    if (c.dh != 1 || c.dw != 1) return name(id) + " is dilated";
    if (c.has_bias != c0.has_bias) return name(id) + " differs in bias";
    if (n.inputs.size() != 1 || n.inputs[0].size() != 1 || n.inputs != first.inputs)
      return name(id) + " does not read exactly the same single value as " + name(ops[0]);
    if (n.output_shape.h != first.output_shape.h || n.output_shape.w != first.output_shape.w)
      return name(id) + " has a different output size";
    // Centring must be exact: the kernel grows by an even amount and the padding by half of it.
    const int dkh = merged.kh - c.kh, dkw = merged.kw - c.kw;
    if (dkh % 2 != 0 || dkw % 2 != 0 || merged.ph - c.ph != dkh / 2 || merged.pw - c.pw != dkw / 2)
      return name(id) + " cannot be centred in the merged kernel (kernel/padding mismatch)";
  }
  return "";
}

ir::ConvAttrs merged_conv(const ir::Graph& g, const std::vector<ir::NodeId>& ops) {
  ir::ConvAttrs m = g.node(ops[0]).attrs<ir::ConvAttrs>();
  m.out_channels = 0;
  for (ir::NodeId id : ops) {
    const auto* c = std::get_if<ir::ConvAttrs>(&g.node(id).op);
    if (!c) continue;
    m.out_channels += c->out_channels;
    m.kh = std::max(m.kh, c->kh), m.kw = std::max(m.kw, c->kw);
    m.ph = std::max(m.ph, c->ph), m.pw = std::max(m.pw, c->pw);
  }
  return m;
}

}  // namespace ios::sched
