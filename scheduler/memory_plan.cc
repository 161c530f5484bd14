#include "scheduler/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "common/limits.h"

namespace ios::sched {

namespace {

constexpr size_t kAlignment = 256;
size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Vector clocks over streams: step a happens before step b iff b's stream has seen a's position on
// a's stream, by stream order or by waiting on an event recorded after a.
class HappensBefore {
 public:
  explicit HappensBefore(const ExecutionPlan& p)
      : stream_(p.steps.size()), seq_(p.steps.size()), clock_(p.steps.size()) {
    std::vector<std::vector<int>> current(size_t(p.streams), std::vector<int>(size_t(p.streams), 0));
    std::vector<std::vector<int>> recorded(size_t(p.events), std::vector<int>(size_t(p.streams), 0));
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const PlanStep& st = p.steps[i];
      auto& clock = current[size_t(st.stream)];
      seq_[i] = ++clock[size_t(st.stream)];
      stream_[i] = st.stream;
      if (st.kind == PlanStep::Kind::kRecord) recorded[size_t(st.event)] = clock;
      if (st.kind == PlanStep::Kind::kWait)
        for (size_t s = 0; s < clock.size(); ++s) clock[s] = std::max(clock[s], recorded[size_t(st.event)][s]);
      clock_[i] = clock;
    }
  }
  bool before(int a, int b) const { return a != b && clock_[size_t(b)][size_t(stream_[size_t(a)])] >= seq_[size_t(a)]; }

 private:
  std::vector<int> stream_, seq_;
  std::vector<std::vector<int>> clock_;
};

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

}  // namespace

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

Expected<MemoryPlan> plan_memory(const ir::Graph& g, const ExecutionPlan& plan, const MemoryOptions& options) {
  const ExecConfig& config = options.config;
  RETURN_ERROR_IF(config.batch < 1 || config.batch > limits::kMaxBatch, ErrorCode::kInvalidArgument,
                  "batch must be in [1, " + std::to_string(limits::kMaxBatch) + "]");
  RETURN_IF_ERROR(validate_plan(plan));
  const size_t n_nodes = g.nodes.size();
  for (const PlanStep& st : plan.steps)
    for (ir::NodeId id : st.ops)
      RETURN_ERROR_IF(id <= 0 || size_t(id) >= n_nodes, ErrorCode::kInvalidSchedule,
                      "plan launches node index " + std::to_string(id) + ", not an op of graph '" + g.name + "'");
  MemoryPlan mp;
  mp.placement.assign(n_nodes, Placement{});
  mp.launch.assign(plan.steps.size(), LaunchMemory{});
  std::vector<int> step_of(n_nodes, -1);
  std::vector<bool> single(n_nodes, false);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == PlanStep::Kind::kLaunch)
      for (ir::NodeId id : plan.steps[i].ops) {
        RETURN_ERROR_IF(step_of[size_t(id)] >= 0, ErrorCode::kInvalidSchedule,
                        "operator '" + g.node(id).name + "' is launched twice by the plan");
        step_of[size_t(id)] = int(i);
        single[size_t(id)] = plan.steps[i].ops.size() == 1;
      }
  auto new_buffer = [&](size_t bytes) {
    mp.buffer_bytes.push_back(bytes);
    mp.buffer_pinned.push_back(false);
    return int(mp.buffer_bytes.size()) - 1;
  };

  // A timed stage's outputs that the network writes into a later stage's concatenation go into a buffer
  // of that concatenation's shape, at their slice: in NHWC such a slice is strided, which the engines
  // write at another speed (and may be other engines) than a tensor of its own.
  std::vector<Placement> outside_slices(n_nodes);
  std::map<ir::NodeId, int> outside_buffer;  // per outermost concatenation
  const std::vector<std::optional<ConcatLevel>> slices = outside_concat_slices(g, plan, step_of, config);
  for (size_t id = 0; id < n_nodes; ++id) {
    if (!slices[id]) continue;
    const ir::Node& root = g.node(slices[id]->concat);
    auto [it, added] = outside_buffer.emplace(slices[id]->concat, -1);
    if (added) {
      it->second = new_buffer(tensor_bytes(root.output_shape, config));
      mp.buffer_pinned[size_t(it->second)] = true;  // the network's concatenation outlives the stage
    }
    mp.placement[id] = outside_slices[id] = Placement{it->second, root.output_shape.c, slices[id]->begin};
  }

  // Concat elision: in reverse plan order, so a concat knows its own place before its producers do.
  struct Alias {
    ir::NodeId concat = ir::kNoNode;
    int offset = 0;
  };
  std::vector<Alias> alias(n_nodes);
  std::vector<ir::Value> residual(n_nodes);  // per producer: the value it adds to its output (fused sum)
  const HappensBefore hb(plan);
  // A producer outside the plan (a timed stage's input) counts as launched alone: the concatenation a
  // stage times by itself is then elided as in the network, where a copy cost SqueezeNet's Greedy stages
  // of one concatenation 4-9 us each.
  auto may_write_in_place = [&](const ir::Value& v) {
    const ir::NodeId p = v.node;
    const bool alone = step_of[size_t(p)] < 0 || single[size_t(p)];
    return v.begin == 0 && v.end == g.node(p).output_shape.c && p != g.input() && p != g.output() && alone &&
           alias[size_t(p)].concat == ir::kNoNode && writes_strided(g.node(p));
  };
  // Which value of a two-value sum term can be written in place with the other added as it is
  // produced: one ending in a convolution (the add joins its cuDNN graph), read by nothing else,
  // launched after the other value is complete. -1: none.
  auto fused_sum_index = [&](const ir::Term& term, ir::NodeId concat) {
    // keep_all promises every op's own output, which a fused sum overwrites.
    if (options.keep_all || !options.fuse_sums || term.size() != 2 || term[0].node == term[1].node) return -1;
    for (int k = 0; k < 2; ++k) {
      const ir::NodeId x = term[size_t(k)].node, z = term[size_t(1 - k)].node;
      const int z_step = step_of[size_t(z)];
      if (step_of[size_t(x)] >= 0 && may_write_in_place(term[size_t(k)]) && ends_with_conv(g.node(x)) &&
          read_only_by(g, x, concat) && (z_step < 0 || hb.before(z_step, step_of[size_t(x)])))
        return k;
    }
    return -1;
  };
  // How many terms of `concat`, from term k on, are the outputs of one merged launch, whole and in its
  // order, each read once by the concat: that launch writes them as one slice (SqueezeNet's merged
  // expand convolutions are their fire module's concatenation). 0: none.
  auto merged_run = [&](const ir::Node& concat, size_t k, const std::vector<ir::NodeId>& seen) -> size_t {
    const ir::NodeId p = concat.inputs[k][0].node;
    const int s = step_of[size_t(p)];
    if (concat.inputs[k].size() != 1 || s < 0 || single[size_t(p)] || plan.steps[size_t(s)].ops[0] != p) return 0;
    const std::vector<ir::NodeId>& ops = plan.steps[size_t(s)].ops;
    if (k + ops.size() > concat.inputs.size()) return 0;
    for (size_t j = 0; j < ops.size(); ++j) {
      const ir::Term& term = concat.inputs[k + j];
      const ir::NodeId x = ops[j];
      if (term.size() != 1 || term[0].node != x || term[0].begin != 0 || term[0].end != g.node(x).output_shape.c ||
          x == g.output() || alias[size_t(x)].concat != ir::kNoNode || std::count(seen.begin(), seen.end(), x) != 1)
        return 0;
    }
    return ops.size();
  };
  // Per term of `concat`: written by a merged launch as part of its one slice, at `root_begin` onwards
  // of a buffer of `root_channels`.
  auto merged_terms = [&](const ir::Node& concat, const std::vector<ir::NodeId>& seen, int root_channels,
                          int root_begin) {
    std::vector<bool> merged(concat.inputs.size(), false);
    int offset = 0;
    for (size_t k = 0; k < concat.inputs.size();) {
      const size_t run = std::max<size_t>(merged_run(concat, k, seen), 1);
      int channels = 0;
      for (size_t j = k; j < k + run; ++j) channels += concat.inputs[j][0].channels();
      if (run > 1 &&
          may_write_channels(true, channels, config, root_channels, root_begin + offset, concat.output_shape))
        std::fill(merged.begin() + long(k), merged.begin() + long(k + run), true);
      offset += channels;
      k += run;
    }
    return merged;
  };
  for (size_t i = plan.steps.size(); i-- > 0;) {
    const PlanStep& st = plan.steps[i];
    if (st.kind != PlanStep::Kind::kLaunch || st.ops.size() != 1) continue;
    const ir::NodeId t = st.ops[0];
    const ir::Node& node = g.node(t);
    if (!node.is<ir::IdentityAttrs>() || (node.inputs.size() < 2 && node.inputs[0].size() != 2)) continue;
    // Each producer that can write a strided slice does (adding the other value of a fused sum); the
    // concat copies only the rest.
    std::vector<ir::NodeId> seen;
    std::vector<int> writer;  // per term: the index of the value written in place, or -1
    for (const ir::Term& term : node.inputs) {
      writer.push_back(term.size() == 1 ? (may_write_in_place(term[0]) ? 0 : -1) : fused_sum_index(term, t));
      for (const ir::Value& x : term) seen.push_back(x.node);
    }
    std::vector<bool> in_place(writer.size());
    for (size_t k = 0; k < in_place.size(); ++k)  // a producer read twice by the concat is copied
      in_place[k] = writer[k] >= 0 && std::count(seen.begin(), seen.end(), node.inputs[k][size_t(writer[k])].node) == 1;
    // The concat's own slice of the buffer it finally lives in (it may be written in place too).
    int root_begin = 0;
    ir::NodeId root = t;
    for (; alias[size_t(root)].concat != ir::kNoNode; root = alias[size_t(root)].concat)
      root_begin += alias[size_t(root)].offset;
    int root_channels = g.node(root).output_shape.c;
    if (const Placement& outside = outside_slices[size_t(root)]; outside.placed()) {
      root_channels = outside.channels;
      root_begin += outside.begin;
    }
    const std::vector<bool> merged = merged_terms(node, seen, root_channels, root_begin);
    int offset = 0, elided_terms = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ir::Term& term = node.inputs[k];
      if (merged[k]) {
        alias[size_t(term[0].node)] = Alias{t, offset};
        ++elided_terms;
        offset += term[0].channels();
        continue;
      }
      in_place[k] = in_place[k] && may_write_slice(g.node(term[size_t(writer[k])].node), config, root_channels,
                                                   root_begin + offset, node.output_shape);
      if (in_place[k]) {
        const ir::NodeId x = term[size_t(writer[k])].node;
        alias[size_t(x)] = Alias{t, offset};
        if (term.size() == 2) residual[size_t(x)] = term[size_t(1 - writer[k])];
        ++elided_terms;
      }
      offset += node.inputs[k][0].channels();
    }
    if (elided_terms == int(node.inputs.size())) {
      mp.launch[i].elided = true;
      ++mp.elided_concats;
    }
    mp.terms_in_place += elided_terms;
    mp.concat_terms += int(node.inputs.size());
  }

  // Concatenations read directly: the producers of a prefix group write their slices of one buffer
  // side by side, so every list of the group is a channel prefix its reader reads in place. The group
  // keeps its longest prefix whose producers can all write aligned slices.
  // A producer outside the plan (a timed stage's input) takes its slice as the whole network's plan would
  // have it written: gathering what the network reads in place made DenseNet-121's stage figures grow with
  // each layer's inputs, up to 36 us over the same stage inside the network (H100, fp32).
  auto outside = [&](ir::NodeId p) { return step_of[size_t(p)] < 0 && p != g.input(); };
  auto writable = [&](ir::NodeId p) {
    const ir::Node& n = g.node(p);
    if (n.is<ir::IdentityAttrs>() || outside_slices[size_t(p)].placed()) return false;
    return outside(p) ? writes_strided(n) : may_write_in_place(ir::Value{p, 0, n.output_shape.c});
  };
  const auto groups = options.share_concats ? prefix_groups(g, plan) : std::vector<std::vector<ir::NodeId>>{};
  for (std::vector<ir::NodeId> list : groups) {
    list.resize(size_t(std::find_if_not(list.begin(), list.end(), writable) - list.begin()));
    list.resize(aligned_prefix(g, list, config));
    if (list.size() < 2) continue;
    const int channels = channels_of(g, list);
    const ir::Shape& shape = g.node(list[0]).output_shape;
    const int buffer = new_buffer(tensor_bytes(ir::Shape{channels, shape.h, shape.w}, config));
    for (int begin = 0; ir::NodeId p : list) {
      mp.placement[size_t(p)] = Placement{buffer, channels, begin};
      begin += g.node(p).output_shape.c;
    }
    // Outside values are read, never written, by the plan: their buffer is an input's, never shared.
    if (std::any_of(list.begin(), list.end(), outside)) mp.buffer_pinned[size_t(buffer)] = true;
    ++mp.shared_concat_buffers;
  }

  // Outputs: one buffer per launch (merged convolutions side by side), or a slice of the concat's.
  for (size_t i = plan.steps.size(); i-- > 0;) {
    const PlanStep& st = plan.steps[i];
    if (st.kind != PlanStep::Kind::kLaunch) continue;
    const ir::NodeId first = st.ops[0];
    if (mp.placement[size_t(first)].placed()) continue;  // a slice of a prefix group's buffer
    if (alias[size_t(first)].concat != ir::kNoNode) {    // every op of the launch: its slice of the concat
      for (ir::NodeId id : st.ops) {
        Placement p = mp.placement[size_t(alias[size_t(id)].concat)];
        p.begin += alias[size_t(id)].offset;
        mp.placement[size_t(id)] = p;
      }
      continue;
    }
    int channels = 0;
    for (ir::NodeId id : st.ops) channels += g.node(id).output_shape.c;
    ir::Shape shape = g.node(first).output_shape;
    shape.c = channels;
    const int buffer = new_buffer(tensor_bytes(shape, config));
    int begin = 0;
    for (ir::NodeId id : st.ops) {
      mp.placement[size_t(id)] = Placement{buffer, channels, begin};
      begin += g.node(id).output_shape.c;
    }
  }
  // Values the plan reads but does not produce (the graph input; a timed stage's outside inputs).
  auto place_external = [&](ir::NodeId id) {
    if (mp.placement[size_t(id)].placed()) return;
    if (const Alias& a = alias[size_t(id)]; a.concat != ir::kNoNode) {  // its slice of an elided concat
      Placement p = mp.placement[size_t(a.concat)];
      p.begin += a.offset;
      mp.placement[size_t(id)] = p;
      mp.buffer_pinned[size_t(p.buffer)] = true;
      return;
    }
    const int buffer = new_buffer(tensor_bytes(g.node(id).output_shape, config));
    mp.buffer_pinned[size_t(buffer)] = true;
    mp.placement[size_t(id)] = Placement{buffer, g.node(id).output_shape.c, 0};
  };
  place_external(g.input());
  for (const PlanStep& st : plan.steps)
    if (st.kind == PlanStep::Kind::kLaunch)
      for (ir::NodeId id : st.ops)
        for (ir::NodeId p : g.producers(id)) place_external(p);
  for (size_t id = 0; id < n_nodes; ++id)
    if (mp.placement[id].placed() && (options.keep_all || ir::NodeId(id) == g.output()))
      mp.buffer_pinned[size_t(mp.placement[id].buffer)] = true;

  for (size_t id = 0; id < n_nodes; ++id)
    if (residual[id].node != ir::kNoNode) {
      mp.launch[size_t(step_of[id])].residual = residual[id];
      ++mp.fused_sums;
    }

  // Scratch: gathered inputs, products' second operands, intermediate steps of sequential ops.
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& st = plan.steps[i];
    if (st.kind != PlanStep::Kind::kLaunch || mp.launch[i].elided) continue;
    const ir::Node& n = g.node(st.ops[0]);
    LaunchMemory& lm = mp.launch[i];
    if (const auto* e = std::get_if<ir::ElementAttrs>(&n.op)) {
      if (e->op == ir::ElementOp::kMul && n.inputs.size() > 1)
        lm.input_scratch = new_buffer(tensor_bytes(n.output_shape, config));
    } else if (!n.is<ir::IdentityAttrs>()) {
      const bool in_place = reads_in_place(g, st.ops[0], mp.placement, config);
      if (!in_place) lm.input_scratch = new_buffer(tensor_bytes(n.input_shape, config));
      if (concat_read(g, n)) {
        mp.concat_terms += int(n.inputs.size());
        if (in_place) mp.terms_in_place += int(n.inputs.size());
      }
    }
    for (size_t s = 0; s + 1 < n.step_shapes.size(); ++s)
      lm.step_buffers.push_back(new_buffer(tensor_bytes(n.step_shapes[s], config)));
  }

  // Accesses per buffer, then first-fit offsets against every buffer the new one may overlap in time.
  const size_t n_buffers = mp.buffer_bytes.size();
  std::vector<std::vector<int>> access(n_buffers);
  auto touch = [&](int buffer, int step) {
    if (buffer >= 0 && (access[size_t(buffer)].empty() || access[size_t(buffer)].back() != step))
      access[size_t(buffer)].push_back(step);
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& st = plan.steps[i];
    if (st.kind != PlanStep::Kind::kLaunch) continue;
    for (ir::NodeId id : st.ops) {
      touch(mp.placement[size_t(id)].buffer, int(i));
      for (ir::NodeId p : g.producers(id)) touch(mp.placement[size_t(p)].buffer, int(i));
    }
    touch(mp.launch[i].input_scratch, int(i));
    if (const ir::Value& r = mp.launch[i].residual; r.node != ir::kNoNode)
      touch(mp.placement[size_t(r.node)].buffer, int(i));
    for (int b : mp.launch[i].step_buffers) touch(b, int(i));
  }
  // Happens-before follows the plan's step order (a step waits only on events recorded before it), so
  // a buffer last touched at or after another's first touch cannot be done before it: most pairs end
  // at this comparison.
  auto done_before = [&](size_t earlier, size_t later) {
    if (!access[earlier].empty() && !access[later].empty() && access[earlier].back() >= access[later].front())
      return false;
    for (int a : access[earlier])
      for (int b : access[later])
        if (!hb.before(a, b)) return false;
    return true;
  };
  for (size_t b = 0; b < n_buffers; ++b) mp.no_reuse_bytes += aligned(mp.buffer_bytes[b]);
  // Two buffers may share memory when every access of one happens before every access of the other.
  std::vector<std::vector<bool>> may_share(n_buffers, std::vector<bool>(n_buffers, false));
  for (size_t a = 0; a < n_buffers; ++a)
    for (size_t b = a + 1; b < n_buffers; ++b)
      may_share[a][b] = may_share[b][a] =
          options.reuse && !mp.buffer_pinned[a] && !mp.buffer_pinned[b] && (done_before(a, b) || done_before(b, a));
  // First fit in a given order; two orders are tried (first access, then largest first) and the
  // smaller arena is kept.
  auto first_fit = [&](const std::vector<size_t>& order, std::vector<size_t>& offsets) {
    offsets.assign(n_buffers, 0);
    size_t arena = 0;
    std::vector<size_t> placed;
    for (size_t b : order) {
      const size_t bytes = aligned(mp.buffer_bytes[b]);
      std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of regions b must not overlap
      for (size_t other : placed)
        if (!may_share[b][other]) busy.emplace_back(offsets[other], offsets[other] + aligned(mp.buffer_bytes[other]));
      std::sort(busy.begin(), busy.end());
      size_t offset = 0;
      for (const auto& [begin, end] : busy) {
        if (begin >= offset + bytes) break;
        offset = std::max(offset, end);
      }
      offsets[b] = offset;
      arena = std::max(arena, offset + bytes);
      placed.push_back(b);
    }
    return arena;
  };
  std::vector<size_t> by_time(n_buffers), by_size(n_buffers);
  std::iota(by_time.begin(), by_time.end(), size_t{0});
  auto first_access = [&](size_t b) { return access[b].empty() ? -1 : access[b].front(); };
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](size_t a, size_t b) { return first_access(a) < first_access(b); });
  by_size = by_time;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return mp.buffer_bytes[a] > mp.buffer_bytes[b]; });
  std::vector<size_t> size_offsets;
  mp.arena_bytes = first_fit(by_time, mp.buffer_offset);
  if (const size_t arena = first_fit(by_size, size_offsets); arena < mp.arena_bytes) {
    mp.arena_bytes = arena;
    mp.buffer_offset = std::move(size_offsets);
  }
  return mp;
}

}  // namespace ios::sched
