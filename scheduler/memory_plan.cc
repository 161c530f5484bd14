// plan_memory as named passes over one plan: launches indexed, values a timed stage writes into a later
// concatenation placed, concatenations elided, concatenation prefixes shared, outputs and external values
// placed, fused sums recorded, scratch added, then offsets: buffers that are never live at once share memory.
#include "scheduler/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "common/limits.h"
#include "scheduler/memory_rules.h"

namespace ios::sched {

namespace {

using namespace memory_rules;

// One plan_memory call: the plan's facts and the memory plan its passes fill in, in the order run() calls them.
struct Planner {
  const ir::Graph& g;
  const ExecutionPlan& plan;
  const MemoryOptions& options;
  const ExecConfig& config;
  const size_t n_nodes;
  std::optional<HappensBefore> hb;  // made once the plan is validated (its streams and events index it)
  MemoryPlan mp;
  std::vector<int> step_of;               // per node: the plan step launching it, -1 for none
  std::vector<bool> single;               // per node: launched alone (not merged)
  std::vector<Placement> outside_slices;  // per node: its slice of a concatenation outside the plan
  struct Alias {                          // a value written in place into a concatenation's slice
    ir::NodeId concat = ir::kNoNode;
    int offset = 0;
  };
  std::vector<Alias> alias;
  std::vector<ir::Value> residual;  // per producer: the value it adds to its output (fused sum)

  Planner(const ir::Graph& graph, const ExecutionPlan& p, const MemoryOptions& o)
      : g(graph), plan(p), options(o), config(o.config), n_nodes(graph.nodes.size()) {}

  Expected<MemoryPlan> run() {
    RETURN_IF_ERROR(index_launches());
    place_outside_slices();
    elide_concats();
    share_concat_prefixes();
    place_outputs();
    place_external_values();
    record_fused_sums();
    add_scratch();
    assign_offsets();
    return std::move(mp);
  }

  int new_buffer(size_t bytes) {
    mp.buffer_bytes.push_back(bytes);
    mp.buffer_pinned.push_back(false);
    return int(mp.buffer_bytes.size()) - 1;
  }

  Status index_launches() {
    RETURN_ERROR_IF(config.batch < 1 || config.batch > limits::kMaxBatch, ErrorCode::kInvalidArgument,
                    "batch must be in [1, " + std::to_string(limits::kMaxBatch) + "]");
    RETURN_IF_ERROR(validate_plan(plan));
    hb.emplace(plan);
    for (const PlanStep& st : plan.steps)
      for (ir::NodeId id : st.ops)
        RETURN_ERROR_IF(id <= 0 || size_t(id) >= n_nodes, ErrorCode::kInvalidSchedule,
                        "plan launches node index " + std::to_string(id) + ", not an op of graph '" + g.name + "'");
    mp.placement.assign(n_nodes, Placement{});
    mp.launch.assign(plan.steps.size(), LaunchMemory{});
    step_of.assign(n_nodes, -1);
    single.assign(n_nodes, false);
    outside_slices.assign(n_nodes, Placement{});
    alias.assign(n_nodes, Alias{});
    residual.assign(n_nodes, ir::Value{});
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (plan.steps[i].kind == PlanStep::Kind::kLaunch)
        for (ir::NodeId id : plan.steps[i].ops) {
          RETURN_ERROR_IF(step_of[size_t(id)] >= 0, ErrorCode::kInvalidSchedule,
                          "operator '" + g.node(id).name + "' is launched twice by the plan");
          step_of[size_t(id)] = int(i);
          single[size_t(id)] = plan.steps[i].ops.size() == 1;
        }
    return Status::ok();
  }

  // A timed stage's outputs that the network writes into a later stage's concatenation go into a buffer
  // of that concatenation's shape, at their slice: in NHWC such a slice is strided, which the engines
  // write at another speed (and may be other engines) than a tensor of its own.
  void place_outside_slices() {
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
  }

  // A producer outside the plan (a timed stage's input) counts as launched alone: the concatenation a
  // stage times by itself is then elided as in the network, where a copy cost SqueezeNet's Greedy stages
  // of one concatenation 4-9 us each.
  bool may_write_in_place(const ir::Value& v) const {
    const ir::NodeId p = v.node;
    const bool alone = step_of[size_t(p)] < 0 || single[size_t(p)];
    return v.begin == 0 && v.end == g.node(p).output_shape.c && p != g.input() && p != g.output() && alone &&
           alias[size_t(p)].concat == ir::kNoNode && writes_strided(g.node(p));
  }

  // Which value of a two-value sum term can be written in place with the other added as it is
  // produced: one ending in a convolution (the add joins its cuDNN graph), read by nothing else,
  // launched after the other value is complete. -1: none.
  int fused_sum_index(const ir::Term& term, ir::NodeId concat) const {
    // keep_all promises every op's own output, which a fused sum overwrites.
    if (options.keep_all || !options.fuse_sums || term.size() != 2 || term[0].node == term[1].node) return -1;
    for (int k = 0; k < 2; ++k) {
      const ir::NodeId x = term[size_t(k)].node, z = term[size_t(1 - k)].node;
      const int z_step = step_of[size_t(z)];
      if (step_of[size_t(x)] >= 0 && may_write_in_place(term[size_t(k)]) && ends_with_conv(g.node(x)) &&
          read_only_by(g, x, concat) && (z_step < 0 || hb->before(z_step, step_of[size_t(x)])))
        return k;
    }
    return -1;
  }

  // How many terms of `concat`, from term k on, are the outputs of one merged launch, whole and in its
  // order, each read once by the concat: that launch writes them as one slice (SqueezeNet's merged
  // expand convolutions are their fire module's concatenation). 0: none.
  size_t merged_run(const ir::Node& concat, size_t k, const std::vector<ir::NodeId>& seen) const {
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
  }

  // Per term of `concat`: written by a merged launch as part of its one slice, at `root_begin` onwards
  // of a buffer of `root_channels`.
  std::vector<bool> merged_terms(const ir::Node& concat, const std::vector<ir::NodeId>& seen, int root_channels,
                                 int root_begin) const {
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
  }

  // Concat elision: in reverse plan order, so a concat knows its own place before its producers do.
  void elide_concats() {
    for (size_t i = plan.steps.size(); i-- > 0;) {
      const PlanStep& st = plan.steps[i];
      if (st.kind != PlanStep::Kind::kLaunch || st.ops.size() != 1) continue;
      const ir::Node& node = g.node(st.ops[0]);
      if (!node.is<ir::IdentityAttrs>() || (node.inputs.size() < 2 && node.inputs[0].size() != 2)) continue;
      elide_concat(i);
    }
  }

  // Each producer of the concat launched at step `i` that can write a strided slice does (adding the other
  // value of a fused sum); the concat copies only the rest.
  void elide_concat(size_t i) {
    const ir::NodeId t = plan.steps[i].ops[0];
    const ir::Node& node = g.node(t);
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

  bool outside(ir::NodeId p) const { return step_of[size_t(p)] < 0 && p != g.input(); }
  bool writable(ir::NodeId p) const {
    const ir::Node& n = g.node(p);
    if (n.is<ir::IdentityAttrs>() || outside_slices[size_t(p)].placed()) return false;
    return outside(p) ? writes_strided(n) : may_write_in_place(ir::Value{p, 0, n.output_shape.c});
  }

  // Concatenations read directly: the producers of a prefix group write their slices of one buffer
  // side by side, so every list of the group is a channel prefix its reader reads in place. The group
  // keeps its longest prefix whose producers can all write aligned slices.
  // A producer outside the plan (a timed stage's input) takes its slice as the whole network's plan would
  // have it written: gathering what the network reads in place made DenseNet-121's stage figures grow with
  // each layer's inputs, up to 36 us over the same stage inside the network (H100, fp32).
  void share_concat_prefixes() {
    if (!options.share_concats) return;
    for (std::vector<ir::NodeId> list : prefix_groups(g, plan)) {
      list.resize(
          size_t(std::find_if_not(list.begin(), list.end(), [&](ir::NodeId p) { return writable(p); }) - list.begin()));
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
      if (std::any_of(list.begin(), list.end(), [&](ir::NodeId p) { return outside(p); }))
        mp.buffer_pinned[size_t(buffer)] = true;
      ++mp.shared_concat_buffers;
    }
  }

  // Outputs: one buffer per launch (merged convolutions side by side), or a slice of the concat's.
  void place_outputs() {
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
  }

  // A value the plan reads but does not produce (the graph input; a timed stage's outside inputs).
  void place_external(ir::NodeId id) {
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
  }

  // External values placed; the output's buffer (and with keep_all every op's) pinned.
  void place_external_values() {
    place_external(g.input());
    for (const PlanStep& st : plan.steps)
      if (st.kind == PlanStep::Kind::kLaunch)
        for (ir::NodeId id : st.ops)
          for (ir::NodeId p : g.producers(id)) place_external(p);
    for (size_t id = 0; id < n_nodes; ++id)
      if (mp.placement[id].placed() && (options.keep_all || ir::NodeId(id) == g.output()))
        mp.buffer_pinned[size_t(mp.placement[id].buffer)] = true;
  }

  void record_fused_sums() {
    for (size_t id = 0; id < n_nodes; ++id)
      if (residual[id].node != ir::kNoNode) {
        mp.launch[size_t(step_of[id])].residual = residual[id];
        ++mp.fused_sums;
      }
  }

  // Scratch: gathered inputs, products' second operands, intermediate steps of sequential ops.
  void add_scratch() {
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
  }

  // Per buffer, the plan steps that touch it, in order.
  std::vector<std::vector<int>> accesses() const {
    std::vector<std::vector<int>> access(mp.buffer_bytes.size());
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
    return access;
  }

  // Two buffers may share memory when every access of one happens before every access of the other.
  // Happens-before follows the plan's step order (a step waits only on events recorded before it), so
  // a buffer last touched at or after another's first touch cannot be done before it: most pairs end
  // at that comparison.
  std::vector<std::vector<bool>> sharing(const std::vector<std::vector<int>>& access) const {
    const size_t n = access.size();
    auto done_before = [&](size_t earlier, size_t later) {
      if (!access[earlier].empty() && !access[later].empty() && access[earlier].back() >= access[later].front())
        return false;
      for (int a : access[earlier])
        for (int b : access[later])
          if (!hb->before(a, b)) return false;
      return true;
    };
    std::vector<std::vector<bool>> may_share(n, std::vector<bool>(n, false));
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b)
        may_share[a][b] = may_share[b][a] =
            options.reuse && !mp.buffer_pinned[a] && !mp.buffer_pinned[b] && (done_before(a, b) || done_before(b, a));
    return may_share;
  }

  // First fit in `order`: each buffer at the lowest offset clear of every placed buffer it may not share
  // with. Returns the arena's size.
  size_t first_fit(const std::vector<size_t>& order, const std::vector<std::vector<bool>>& may_share,
                   std::vector<size_t>& offsets) const {
    offsets.assign(mp.buffer_bytes.size(), 0);
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
  }

  // Offsets by first fit in two orders (first access, then largest first); the smaller arena is kept.
  void assign_offsets() {
    const size_t n_buffers = mp.buffer_bytes.size();
    const std::vector<std::vector<int>> access = accesses();
    for (size_t b = 0; b < n_buffers; ++b) mp.no_reuse_bytes += aligned(mp.buffer_bytes[b]);
    const std::vector<std::vector<bool>> may_share = sharing(access);
    std::vector<size_t> by_time(n_buffers), by_size(n_buffers);
    std::iota(by_time.begin(), by_time.end(), size_t{0});
    auto first_access = [&](size_t b) { return access[b].empty() ? -1 : access[b].front(); };
    std::stable_sort(by_time.begin(), by_time.end(),
                     [&](size_t a, size_t b) { return first_access(a) < first_access(b); });
    by_size = by_time;
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](size_t a, size_t b) { return mp.buffer_bytes[a] > mp.buffer_bytes[b]; });
    std::vector<size_t> size_offsets;
    mp.arena_bytes = first_fit(by_time, may_share, mp.buffer_offset);
    if (const size_t arena = first_fit(by_size, may_share, size_offsets); arena < mp.arena_bytes) {
      mp.arena_bytes = arena;
      mp.buffer_offset = std::move(size_offsets);
    }
  }
};

}  // namespace

Expected<MemoryPlan> plan_memory(const ir::Graph& g, const ExecutionPlan& plan, const MemoryOptions& options) {
  return Planner(g, plan, options).run();
}

}  // namespace ios::sched
