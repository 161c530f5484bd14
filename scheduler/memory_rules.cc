#include "scheduler/memory_rules.h"

#include <algorithm>
#include <map>

namespace ios::sched {

namespace memory_rules {

size_t tensor_bytes(const ir::Shape& s, const ExecConfig& c) {
  return c.element_bytes() * size_t(s.numel()) * size_t(c.batch);
}

// Ops that can write their output into a channel slice of a larger buffer (strided descriptors).
bool writes_strided(const ir::Node& n) {
  if (const std::optional<ir::OpTraits> traits = ir::op_traits(n.op)) return traits->writes_strided;
  if (const auto* seq = std::get_if<ir::SequentialAttrs>(&n.op))
    return ir::step_traits(seq->steps.back()).writes_strided;
  if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) return e->op == ir::ElementOp::kAdd;
  return n.is<ir::IdentityAttrs>();  // the graph input writes nothing
}

bool ends_with_conv(const ir::Node& n) {
  if (n.is<ir::ConvAttrs>()) return true;
  return n.is<ir::SequentialAttrs>() &&
         std::holds_alternative<ir::ConvAttrs>(n.attrs<ir::SequentialAttrs>().steps.back());
}

// Whether `writer` may write its output as the channel slice [begin, begin + c) of a buffer with
// `buffer_channels` channels and `shape`'s pixels: aligned as vectorised and tensor-core engines need,
// and, where the config has convolutions copy (ConcatWrites::kConvCopy), dense for a convolution
// (cuDNN wraps a strided output in copy kernels; our own kernels write strides directly).
// `conv`: the writer ends with a convolution; `channels`: how many it writes.
bool may_write_channels(bool conv, int channels, const ExecConfig& config, int buffer_channels, int begin,
                        const ir::Shape& shape) {
  if (!slice_aligned(config, buffer_channels, begin, shape)) return false;
  if (config.concat_writes == ConcatWrites::kInPlace || !conv) return true;
  return channels == buffer_channels ||
         (config.batch == 1 && (config.layout == Layout::kNCHW || shape.h * shape.w == 1));
}

bool may_write_slice(const ir::Node& writer, const ExecConfig& config, int buffer_channels, int begin,
                     const ir::Shape& shape) {
  return may_write_channels(ends_with_conv(writer), writer.output_shape.c, config, buffer_channels, begin, shape);
}

bool reads_with_conv(const ir::Node& n) {
  if (n.is<ir::ConvAttrs>()) return true;
  if (const auto* seq = std::get_if<ir::SequentialAttrs>(&n.op))
    return std::holds_alternative<ir::ConvAttrs>(seq->steps.front());
  return false;
}

bool reads_contiguous_only(const ir::Node& n) {
  if (n.is<ir::LinearAttrs>()) return true;
  if (const auto* seq = std::get_if<ir::SequentialAttrs>(&n.op))
    return std::holds_alternative<ir::LinearAttrs>(seq->steps.front());
  return false;
}

// True when `reader` is the only op that reads `value` (a stage's plan is placed per stage, hundreds of
// thousands of times in a measured search: no consumer lists of the whole graph).
bool read_only_by(const ir::Graph& g, ir::NodeId value, ir::NodeId reader) {
  bool read = false;
  for (size_t id = 0; id < g.nodes.size(); ++id)
    for (const ir::Term& term : g.nodes[id].inputs)
      for (const ir::Value& v : term)
        if (v.node == value) {
          if (ir::NodeId(id) != reader) return false;
          read = true;
        }
  return read;
}

// The producers of a concatenation an op reads directly (no Identity node between: DenseNet's layers
// read the block input and every earlier layer's output), each term one whole value of a distinct
// producer; nullopt for any other input.
std::optional<std::vector<ir::NodeId>> concat_read(const ir::Graph& g, const ir::Node& n) {
  if (n.is<ir::IdentityAttrs>() || n.is<ir::ElementAttrs>() || n.inputs.size() < 2) return std::nullopt;
  std::vector<ir::NodeId> producers;
  for (const ir::Term& term : n.inputs) {
    if (term.size() != 1) return std::nullopt;
    const ir::Value& v = term[0];
    if (v.begin != 0 || v.end != g.node(v.node).output_shape.c ||
        std::find(producers.begin(), producers.end(), v.node) != producers.end())
      return std::nullopt;
    producers.push_back(v.node);
  }
  return producers;
}

// Producer lists of the concatenations ops read directly, grouped so that one list extends every
// list of its group (DenseNet: layer k reads x0, y1 .. y(k-1); the transition reads them all). A
// producer joins one group at one position; a list sharing a producer with a longer one joins no
// group (it reads in place when it is a prefix of that group, else it gathers as before).
std::vector<std::vector<ir::NodeId>> prefix_groups(const ir::Graph& g, const ExecutionPlan& plan) {
  std::vector<std::vector<ir::NodeId>> lists;
  for (const PlanStep& st : plan.steps)
    if (st.kind == PlanStep::Kind::kLaunch && st.ops.size() == 1)
      if (auto list = concat_read(g, g.node(st.ops[0]))) lists.push_back(std::move(*list));
  std::stable_sort(lists.begin(), lists.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<bool> grouped(g.nodes.size(), false);
  std::vector<std::vector<ir::NodeId>> groups;
  for (const std::vector<ir::NodeId>& list : lists) {
    if (std::any_of(list.begin(), list.end(), [&](ir::NodeId p) { return grouped[size_t(p)]; })) continue;
    for (ir::NodeId p : list) grouped[size_t(p)] = true;
    groups.push_back(list);
  }
  return groups;
}

int channels_of(const ir::Graph& g, const std::vector<ir::NodeId>& producers) {
  int c = 0;
  for (ir::NodeId p : producers) c += g.node(p).output_shape.c;
  return c;
}

// The longest prefix of a group whose slices are all aligned in a buffer holding just that prefix
// (the buffer's channel count sets the strides, so shortening the group can realign it).
size_t aligned_prefix(const ir::Graph& g, std::vector<ir::NodeId> list, const ExecConfig& config) {
  while (list.size() >= 2) {
    const int channels = channels_of(g, list);
    size_t aligned = 0;
    for (int begin = 0; aligned < list.size(); begin += g.node(list[aligned++]).output_shape.c)
      if (!may_write_slice(g.node(list[aligned]), config, channels, begin, g.node(list[0]).output_shape)) break;
    if (aligned == list.size()) break;
    list.resize(aligned);
  }
  return list.size();
}

// The channel slice of one buffer that holds an op's whole input: its single value, or the values of
// its terms side by side in order. nullopt when the input is not one slice.
std::optional<Placement> input_slice(const ir::Node& n, const std::vector<Placement>& placement) {
  if (n.is<ir::IdentityAttrs>() || n.is<ir::ElementAttrs>()) return std::nullopt;
  std::optional<Placement> slice;
  int width = 0;
  for (const ir::Term& term : n.inputs) {
    if (term.size() != 1) return std::nullopt;
    const ir::Value& v = term[0];
    const Placement& p = placement[size_t(v.node)];
    if (!p.placed()) return std::nullopt;
    if (!slice) slice = Placement{p.buffer, p.channels, p.begin + v.begin};
    if (p.buffer != slice->buffer || p.begin + v.begin != slice->begin + width) return std::nullopt;
    width += v.channels();
  }
  return slice;
}

// The identity nodes the plan's concat elision considers: concatenations, and sums of two values.
bool concatenates(const ir::Node& n) {
  return n.is<ir::IdentityAttrs>() && (n.inputs.size() >= 2 || n.inputs[0].size() == 2);
}

// The concatenation whose buffer the whole network's plan writes a value into, and the value's first
// channel there: the outermost of its chain (concat_chain) unless an unaligned slice on the way makes
// the network copy. nullopt where the value's own slice is unaligned. Mirrors the elision in
// plan_memory: the outer concatenation decides first, and one it cannot take becomes a root itself.
std::optional<ConcatLevel> network_slice(const ir::Graph& g, ir::NodeId value, const std::vector<ConcatLevel>& chain,
                                         const ExecConfig& config) {
  ConcatLevel root{chain.back().concat, 0};
  for (size_t k = chain.size(); k-- > 0;) {
    const int begin = root.begin + chain[k].begin;
    const ir::Node& writer = g.node(k == 0 ? value : chain[k - 1].concat);
    const bool in_place = may_write_slice(writer, config, g.node(root.concat).output_shape.c, begin,
                                          g.node(chain[k].concat).output_shape);
    if (k == 0) return in_place ? std::optional<ConcatLevel>(ConcatLevel{root.concat, begin}) : std::nullopt;
    root = in_place ? ConcatLevel{root.concat, begin} : ConcatLevel{chain[k - 1].concat, 0};
  }
  return std::nullopt;
}

// The chain of concat_chain, each level found among the nodes `for_each_reader(v, visit)` visits.
template <typename ForEachReader>
std::vector<ConcatLevel> chain_through(const ir::Graph& g, ir::NodeId value, ForEachReader for_each_reader) {
  std::vector<ConcatLevel> chain;
  for (ir::NodeId v = value; v != g.input() && v != g.output() && writes_strided(g.node(v));) {
    int concats = 0;
    std::optional<ConcatLevel> level;
    for_each_reader(v, [&](ir::NodeId id) {
      const ir::Node& n = g.node(id);
      if (!concatenates(n)) return;
      int reads = 0, begin = 0;
      std::optional<int> at;
      for (const ir::Term& term : n.inputs) {
        for (const ir::Value& x : term) reads += x.node == v;
        if (term.size() == 1 && term[0].node == v && term[0].begin == 0 && term[0].end == g.node(v).output_shape.c)
          at = begin;
        begin += term[0].channels();
      }
      if (reads == 0) return;
      ++concats;
      if (reads == 1 && at && n.inputs.size() >= 2) level = ConcatLevel{id, *at};
    });
    if (concats != 1 || !level) break;
    chain.push_back(*level);
    v = level->concat;
  }
  return chain;
}

// Per op of the plan: the outermost concatenation outside the plan whose buffer the network writes its
// output into, and its first channel there (a timed stage's branches, concatenated in a later stage);
// nullopt for the rest. Merged launches write their own buffer. Readers are found by scanning the nodes
// after each value: a measured search plans every stage it times, and a consumer list of the whole graph
// per plan cost more than the rest of the plan.
std::vector<std::optional<ConcatLevel>> outside_concat_slices(const ir::Graph& g, const ExecutionPlan& plan,
                                                              const std::vector<int>& step_of,
                                                              const ExecConfig& config) {
  std::vector<std::optional<ConcatLevel>> slices(g.nodes.size());
  auto later_nodes = [&](ir::NodeId v, const auto& visit) {  // readers come after (topological ids)
    for (size_t id = size_t(v) + 1; id < g.nodes.size(); ++id) visit(ir::NodeId(id));
  };
  for (const PlanStep& st : plan.steps) {
    if (st.kind != PlanStep::Kind::kLaunch || st.ops.size() != 1) continue;
    const std::vector<ConcatLevel> chain = chain_through(g, st.ops[0], later_nodes);
    if (chain.empty() ||
        std::any_of(chain.begin(), chain.end(), [&](const ConcatLevel& l) { return step_of[size_t(l.concat)] >= 0; }))
      continue;
    slices[size_t(st.ops[0])] = network_slice(g, st.ops[0], chain, config);
  }
  return slices;
}

}  // namespace memory_rules

using namespace memory_rules;

std::vector<ConcatLevel> concat_chain(const ir::Graph& g, ir::NodeId value,
                                      const std::vector<std::vector<ir::NodeId>>& consumers) {
  return chain_through(g, value, [&](ir::NodeId v, const auto& visit) {
    for (ir::NodeId id : consumers[size_t(v)]) visit(id);
  });
}

bool reads_in_place(const ir::Graph& g, ir::NodeId op, const std::vector<Placement>& placement,
                    const ExecConfig& config) {
  const ir::Node& n = g.node(op);
  const std::optional<Placement> p = input_slice(n, placement);
  if (!p) return false;
  if (p->begin == 0 && n.input_shape.c == p->channels) return true;
  // Convolution engines read a slice in place only when it is aligned as they need (an unaligned
  // strided input gave wrong results with a tf32 engine at batch 3 on the H100).
  if (reads_with_conv(n)) return slice_aligned(config, p->channels, p->begin, n.input_shape);
  if (!reads_contiguous_only(n)) return true;
  // A channel slice of one sample is contiguous in NCHW, and in NHWC only when it has one pixel.
  return config.batch == 1 && (config.layout == Layout::kNCHW || n.input_shape.h * n.input_shape.w == 1);
}

bool slice_aligned(const ExecConfig& config, int buffer_channels, int begin, const ir::Shape& shape) {
  const SliceLayout s = slice_layout(config.layout, buffer_channels, begin, shape.h, shape.w);
  const int64_t eb = int64_t(config.element_bytes());
  auto ok = [&](int64_t elements) { return elements * eb % 16 == 0; };
  const bool strides_ok = config.layout == Layout::kNCHW ? true : ok(s.w);
  return ok(s.offset) && strides_ok && (config.batch == 1 || ok(s.n));
}

}  // namespace ios::sched
