#include "scheduler/policies.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/wall_clock.h"
#include "scheduler/timing_devices.h"

namespace ios::sched {

Expected<Policy> parse_policy(const std::string& name) {
  if (name == "sequential") return Policy::kSequential;
  if (name == "greedy") return Policy::kGreedy;
  if (name == "dp_merge" || name == "ios-merge" || name == "IOS-Merge") return Policy::kDpMerge;
  if (name == "dp_parallel" || name == "ios-parallel" || name == "IOS-Parallel") return Policy::kDpParallel;
  if (name == "dp_parallel_merge" || name == "ios-both" || name == "IOS-Both") return Policy::kDpBoth;
  if (name == "opara") return Policy::kOpara;
  return error(ErrorCode::kInvalidArgument, "unknown policy '" + name +
                                                "' (use sequential, greedy, dp_merge, dp_parallel, "
                                                "dp_parallel_merge (ios-both) or opara)");
}

std::string policy_flag_name(Policy p) {
  switch (p) {
    case Policy::kSequential:
      return "sequential";
    case Policy::kGreedy:
      return "greedy";
    case Policy::kDpMerge:
      return "dp_merge";
    case Policy::kDpParallel:
      return "dp_parallel";
    case Policy::kDpBoth:
      return "dp_parallel_merge";
    case Policy::kOpara:
      return "opara";
  }
  return "?";
}

std::string policy_display_name(Policy p) {
  switch (p) {
    case Policy::kSequential:
      return "Sequential";
    case Policy::kGreedy:
      return "Greedy";
    case Policy::kDpMerge:
      return "IOS-Merge";
    case Policy::kDpParallel:
      return "IOS-Parallel";
    case Policy::kDpBoth:
      return "IOS-Both";
    case Policy::kOpara:
      return "Opara";
  }
  return "?";
}

Schedule sequential_schedule(const ir::Graph& g) {
  Schedule s;
  for (const ir::Block& b : g.blocks) {
    BlockSchedule bs;
    for (ir::NodeId id : b.members()) bs.stages.push_back(Stage{StageKind::kConcurrent, {{id}}});
    s.blocks.push_back(std::move(bs));
  }
  return s;
}

Schedule greedy_schedule(const ir::Graph& g, int max_streams) {
  // IOS's greedy: each stage runs every ready op (one per group), in creation order; beyond the cap
  // they wait. Ready ops are kept in a set and in-block producer counts are decremented, so a block
  // costs O((ops + edges) log ops) rather than a scan of the block per stage.
  Schedule s;
  const auto consumers = g.consumers();
  for (const ir::Block& b : g.blocks) {
    const auto members = b.members();
    std::vector<int> waiting(g.nodes.size(), 0);  // unscheduled in-block producers
    std::vector<bool> member(g.nodes.size(), false);
    for (ir::NodeId m : members) member[size_t(m)] = true;
    std::set<ir::NodeId> ready;  // node ids ascend in creation order
    for (ir::NodeId m : members) {
      for (ir::NodeId p : g.producers(m)) waiting[size_t(m)] += member[size_t(p)];
      if (waiting[size_t(m)] == 0) ready.insert(m);
    }
    BlockSchedule bs;
    while (!ready.empty()) {
      Stage st;
      while (!ready.empty() && static_cast<int>(st.groups.size()) < max_streams) {
        st.groups.push_back({*ready.begin()});
        ready.erase(ready.begin());
      }
      for (const auto& grp : st.groups)
        for (ir::NodeId c : consumers[size_t(grp[0])])
          if (member[size_t(c)] && --waiting[size_t(c)] == 0) ready.insert(c);
      bs.stages.push_back(std::move(st));
    }
    s.blocks.push_back(std::move(bs));
  }
  return s;
}

Expected<double> estimate_latency_ms(const ir::Graph& g, const Schedule& s, CostModel& model, int batch) {
  double total = 0;
  if (!s.is_stream_level()) {
    for (const auto& b : s.blocks)
      for (const auto& st : b.stages) {
        ASSIGN_OR_RETURN(double ms, model.stage_latency_ms(g, st, batch));
        total += ms;
      }
    return total;
  }
  std::vector<double> finish(g.nodes.size(), 0.0), stream_free;
  for (ir::NodeId v : s.streams->launch_order) {
    const auto stream = static_cast<size_t>(s.streams->stream_of[size_t(v)]);
    if (stream_free.size() <= stream) stream_free.resize(stream + 1, 0.0);
    double start = stream_free[stream];
    for (ir::NodeId p : g.producers(v)) start = std::max(start, finish[size_t(p)]);
    ASSIGN_OR_RETURN(double ms, model.stage_latency_ms(g, Stage{StageKind::kConcurrent, {{v}}}, batch));
    finish[size_t(v)] = stream_free[stream] = start + ms;
    total = std::max(total, finish[size_t(v)]);
  }
  return total;
}

namespace {

// The segments and barrier sets are timed on every GPU of the search (its workers are done).
Status add_barriers(const ir::Graph& g, const OptimizeOptions& options, CostModel& model, Schedule& s) {
  std::vector<CostModel*> models = {&model};
  models.insert(models.end(), options.extra_models.begin(), options.extra_models.end());
  ASSIGN_OR_RETURN(
      BarrierPlacement placed,
      place_barriers(g, s, models, BarrierOptions{options.dataflow_segment, options.batch, options.dataflow_margin}));
  char text[300];
  std::snprintf(text, sizeof text,
                "dataflow barriers: %zu of %d kept (segments of up to %d stages, margin %.2f): %.3f ms predicted, "
                "%.3f ms with every barrier",
                placed.barriers.size(), std::max(s.stage_count() - 1, 0), options.dataflow_segment,
                options.dataflow_margin, placed.dataflow_ms, placed.barriers_ms);
  s.meta.notes.push_back(text);
  RefineOptions refine;
  refine.passes = options.dataflow_refine;
  refine.batch = options.batch;
  ASSIGN_OR_RETURN(BarrierRefinement refined, refine_barriers(g, s, models, placed, refine));
  s.dataflow_barriers = refined.barriers;
  // Predicted as the DP predicts: the sum of the final set's segments (those longer than the DP's are
  // priced now).
  ASSIGN_OR_RETURN(std::vector<double> ms,
                   spread_segment_latencies(g, one_per_device(models),
                                            segments_between(all_stages(s), refined.barriers), options.batch));
  s.meta.dataflow_latency_ms = 0;
  for (double x : ms) s.meta.dataflow_latency_ms += x;
  if (refined.passes > 0) {
    std::snprintf(text, sizeof text,
                  "dataflow barriers refined on the whole network: %zu kept after %d passes (%lld sets timed in "
                  "%.1f s): %.3f ms, the search's set %.3f ms, every barrier %.3f ms",
                  refined.barriers.size(), refined.passes, static_cast<long long>(refined.sets_timed), refined.seconds,
                  refined.measured_ms, refined.placed_ms, refined.every_barrier_ms);
    s.meta.notes.push_back(text);
  }
  return Status::ok();
}

}  // namespace

Expected<OptimizeResult> optimize(const ir::Graph& g, const OptimizeOptions& options, CostModel& model) {
  RETURN_ERROR_IF(options.batch < 1, ErrorCode::kInvalidArgument, "--batch must be at least 1");
  RETURN_ERROR_IF(options.r < 1 || options.s < 1, ErrorCode::kInvalidArgument, "--r and --s must be at least 1");
  RETURN_ERROR_IF(options.max_part_size < 1, ErrorCode::kInvalidArgument, "--max-part-size must be at least 1");
  RETURN_ERROR_IF(options.max_transitions < 1, ErrorCode::kInvalidArgument, "--search-budget must be at least 1");
  RETURN_ERROR_IF(options.memory_budget != 0 && !(options.memory_budget >= 1), ErrorCode::kInvalidArgument,
                  "--memory-budget must be 0 (no limit) or at least 1 (the sequential schedule's peak)");
  RETURN_ERROR_IF(options.stage_batch < 1, ErrorCode::kInvalidArgument, "--stage-batch must be at least 1");
  RETURN_ERROR_IF(options.states_together < 0, ErrorCode::kInvalidArgument,
                  "--states-together must be 0 (every state of a size) or more");
  RETURN_ERROR_IF(!(options.screen_margin >= 0 && options.screen_margin < 1), ErrorCode::kInvalidArgument,
                  "--screen-margin must be in [0, 1)");
  RETURN_ERROR_IF(options.dataflow_segment < 0, ErrorCode::kInvalidArgument,
                  "--dataflow-segment must be 0 (no dataflow barriers) or more");
  RETURN_ERROR_IF(!(options.dataflow_margin >= 0 && options.dataflow_margin < 1), ErrorCode::kInvalidArgument,
                  "--dataflow-margin must be in [0, 1)");
  RETURN_ERROR_IF(options.dataflow_refine < 0, ErrorCode::kInvalidArgument, "--dataflow-refine must be 0 or more");
  RETURN_ERROR_IF(options.greedy_max_streams < 1, ErrorCode::kInvalidArgument,
                  "the greedy stream cap must be at least 1");
  const auto start = WallClock::now();
  OptimizeResult result;
  Schedule& s = result.schedule;
  switch (options.policy) {
    case Policy::kSequential:
      s = sequential_schedule(g);
      break;
    case Policy::kGreedy:
      s = greedy_schedule(g, options.greedy_max_streams);
      break;
    case Policy::kOpara: {
      const ResourceProfile profile = options.profile ? *options.profile : estimate_resource_profile(g);
      s.streams = opara_schedule(g, profile);
      s.meta.notes.push_back("shared-memory profile: " + profile.source);
      break;
    }
    case Policy::kDpMerge:
    case Policy::kDpParallel:
    case Policy::kDpBoth: {
      PartSearchOptions search;
      DpOptions& dp = search.dp;
      dp.mode = options.policy == Policy::kDpMerge      ? DpMode::kMerge
                : options.policy == Policy::kDpParallel ? DpMode::kParallel
                                                        : DpMode::kBoth;
      dp.r = options.r, dp.s = options.s, dp.max_part_size = options.max_part_size, dp.batch = options.batch;
      dp.bound_pruning = options.bound_pruning;
      dp.measured_floors = options.measured_floors;
      dp.limited_timing = options.limited_timing;
      dp.max_transitions = options.max_transitions;
      dp.memory_budget = options.memory_budget;
      dp.stage_batch = options.stage_batch;
      dp.states_together = options.states_together;
      dp.screen_margin = options.screen_margin;
      search.on_part = options.on_part;
      search.reuse_parts = options.reuse_parts;
      search.idle_workers = options.idle_workers;
      std::vector<CostModel*> models = {&model};
      models.insert(models.end(), options.extra_models.begin(), options.extra_models.end());
      ASSIGN_OR_RETURN(PartSearchResult found, search_parts(g, search, models));
      s.blocks = std::move(found.blocks);
      result.stats = found.stats;
      result.parts = found.parts, result.parts_reused = found.parts_reused;
      result.timeline = std::move(found.timeline);
      s.meta.r = options.r, s.meta.s = options.s, s.meta.max_part_size = options.max_part_size;
      if (result.stats.budget_splits > 0)
        s.meta.notes.push_back("DP budget: " + std::to_string(result.stats.budget_splits) + " part(s) went past " +
                               std::to_string(dp.max_transitions) +
                               " transitions (the search budget) and were split in halves (the schedule may be "
                               "slower than the unbounded optimum; raise --search-budget or set explicit parts)");
      break;
    }
  }
  RETURN_IF_ERROR(validate(g, s));
  result.policy_seconds = seconds_since(start);
  if (options.dataflow_segment > 0 && !s.is_stream_level()) RETURN_IF_ERROR(add_barriers(g, options, model, s));
  result.barrier_seconds = seconds_since(start) - result.policy_seconds;
  s.meta.policy = policy_flag_name(options.policy);
  s.meta.batch = options.batch;
  s.meta.cost_model = model.name();
  ASSIGN_OR_RETURN(s.meta.latency_ms, estimate_latency_ms(g, s, model, options.batch));
  s.meta.search_seconds = seconds_since(start);
  result.estimate_seconds = s.meta.search_seconds - result.policy_seconds - result.barrier_seconds;
  return result;
}

}  // namespace ios::sched
