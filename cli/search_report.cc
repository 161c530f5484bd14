#include "cli/search_report.h"

#include <algorithm>

#ifdef IOS_WITH_RUNTIME
#include "runtime/stage_marginals.h"
#endif

namespace ios::cli {

// Where the search's time went: the policy (with several DP workers, their load), the measured cost model's
// calibration (inside the policy's time; the other workers wait for it), dataflow barriers, final estimate.
void print_search_time(OptimizeArgs& a, const ios::sched::OptimizeResult& r,
                       const ios::sched::CalibrationTime& calibration) {
  const size_t workers = a.options.extra_models.size() + 1;
  const ios::sched::WorkerLoad load = ios::sched::worker_load(r.timeline, workers);
  std::string parts;
  if (workers > 1 && !r.timeline.empty()) {
    parts = " (" + load.summary();
    if (a.options.idle_workers) {
      const ios::sched::IdleWorkers::Stats lent = a.options.idle_workers->stats();
      parts += "; workers out of parts timed " + std::to_string(lent.stages_lent) + " stages for the others in " +
               std::to_string(lent.chunks_lent) + " chunks";
      a.report.json["search_time"]["stages_lent"] = lent.stages_lent;
      a.report.json["search_time"]["chunks_lent"] = lent.chunks_lent;
    }
    parts += ")";
  }
  std::string calibrating;
  const std::vector<double>& slots = calibration.slot_seconds;
  if (calibration.seconds > 0) {
    char text[256];
    const ios::sched::BuildTimes& built = calibration.network_build.parts;
    std::snprintf(text, sizeof text,
                  ", of it %.2f s calibrating the cost model (%.2f s building the network: kernels %.2f, weights "
                  "%.2f, capture %.2f, instantiate %.2f",
                  calibration.seconds, calibration.network_build.seconds, built.kernels, built.weights, built.capture,
                  built.instantiate);
    calibrating = text;
    if (slots.size() > 1) {  // the network with some ops, then more ops, slots shared by the workers
      std::snprintf(text, sizeof text, "; it and its ops done after %.2f s, the last of %zu slots after %.2f s",
                    slots[0], slots.size(), *std::max_element(slots.begin(), slots.end()));
      calibrating += text;
    }
    calibrating += ")";
  }
  std::fprintf(a.report.text(), "Search time: %.2f s policy%s%s | %.2f s dataflow barriers | %.2f s final estimate\n",
               r.policy_seconds, parts.c_str(), calibrating.c_str(), r.barrier_seconds, r.estimate_seconds);
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& t : r.timeline)
    timeline.push_back({{"worker", t.worker}, {"ops", t.ops}, {"start_s", t.start_s}, {"end_s", t.end_s}});
  a.report.json["search_time"].update({{"policy_seconds", r.policy_seconds},
                                       {"calibration_seconds", calibration.seconds},
                                       {"calibration_slot_seconds", calibration.slot_seconds},
                                       {"calibration_network_build_seconds", calibration.network_build.seconds},
                                       {"calibration_network_build_parts",
                                        {{"setup", calibration.network_build.parts.setup},
                                         {"memory", calibration.network_build.parts.memory},
                                         {"kernels", calibration.network_build.parts.kernels},
                                         {"weights", calibration.network_build.parts.weights},
                                         {"capture", calibration.network_build.parts.capture},
                                         {"instantiate", calibration.network_build.parts.instantiate}}},
                                       {"barrier_seconds", r.barrier_seconds},
                                       {"estimate_seconds", r.estimate_seconds},
                                       {"worker_busy_seconds", load.busy_s},
                                       {"parts", timeline}});
}

// IOS's summary line, the search's statistics (DP policies only) and the memory plan, as text and JSON.
void print_optimize(OptimizeArgs& a, const Graph& g, ios::sched::Policy policy, const ios::sched::OptimizeResult& r,
                    const ios::sched::StageCache& cache, const ios::sched::ExecutionPlan& plan,
                    const ios::sched::MemoryPlan& memory) {
  const auto& sched = r.schedule;
  FILE* out = a.report.text();
  // Opara's figure is its own contention-free estimate: say so rather than print it as a DP optimum.
  const bool opara = policy == ios::sched::Policy::kOpara;
  std::fprintf(out, "Model: %s | Optimization: %s | Batchsize: %d | Optimization cost: %.2f sec | Latency: %.2f ms%s\n",
               g.name.c_str(), display_name(a, policy).c_str(), a.options.batch, sched.meta.search_seconds,
               sched.meta.latency_ms, opara ? " (Opara's contention-free estimate, not comparable with the DP's)" : "");
  if (is_dp(policy)) {
    char budget[96] = "no memory budget";
    if (a.options.memory_budget > 0)
      std::snprintf(budget, sizeof budget, "%lld over the memory budget of %.2fx sequential",
                    static_cast<long long>(r.stats.memory_skipped), a.options.memory_budget);
    std::fprintf(out,
                 "Parts: %zu (%zu took an identical part's solution) | DP workers: %zu | States: %lld | "
                 "Transitions: %lld (%s) | Stages asked by the search: %lld in %lld requests (%lld screened, then "
                 "settled) | ",
                 r.parts, r.parts_reused, a.options.extra_models.size() + 1, static_cast<long long>(r.stats.states),
                 static_cast<long long>(r.stats.transitions), budget, static_cast<long long>(r.stats.stages_costed),
                 static_cast<long long>(r.stats.cost_requests), static_cast<long long>(r.stats.stages_settled));
  }
  if (sched.is_stream_level()) {  // Opara: no stages, launches on streams
    std::fprintf(out, "Launches: %zu on %d streams | ", sched.streams->launch_order.size(), plan.streams);
  } else {
    std::fprintf(out, "Stages: %d | ", sched.stage_count());
  }
  std::fprintf(out, "Cost model: %s, %zu stages costed, %zu answered by the stage cache (search and final estimate)\n",
               cache.name().c_str(), cache.misses(), cache.hits());
  std::fprintf(out,
               "Memory: peak activations %.1f MiB (%.1f MiB without reuse) | concats in place: %d whole, %d inputs "
               "(%d sums fused into convolutions, %d shared concat buffers)\n",
               memory.arena_bytes / 1048576.0, memory.no_reuse_bytes / 1048576.0, memory.elided_concats,
               memory.terms_in_place, memory.fused_sums, memory.shared_concat_buffers);
  for (const auto& note : sched.meta.notes) std::fprintf(out, "Note: %s\n", note.c_str());
  nlohmann::json& j = a.report.json;
  j["model"] = g.name;
  j["policy"] = ios::sched::policy_flag_name(policy);
  j["batch"] = a.options.batch;
  j["precision"] = sched.meta.precision;
  j["layout"] = sched.meta.layout;
  j["search_seconds"] = sched.meta.search_seconds;
  j["latency_ms"] = sched.meta.latency_ms;
  j["latency_kind"] = opara ? "opara_estimate" : "cost_model_sum";
  if (sched.is_stream_level()) {
    j["launches"] = sched.streams->launch_order.size();
    j["streams"] = plan.streams;
  } else {
    j["stages"] = sched.stage_count();
  }
  if (is_dp(policy))
    j["dp"] = {{"parts", r.parts},
               {"parts_reused", r.parts_reused},
               {"workers", a.options.extra_models.size() + 1},
               {"states", r.stats.states},
               {"transitions", r.stats.transitions},
               {"stages_asked", r.stats.stages_costed},
               {"cost_requests", r.stats.cost_requests},
               {"budget_splits", r.stats.budget_splits},
               {"memory_budget", a.options.memory_budget},
               {"stage_batch", a.options.stage_batch},
               {"states_together", a.options.states_together},
               {"screen_margin", a.options.screen_margin},
               {"stages_settled", r.stats.stages_settled},
               {"memory_skipped", r.stats.memory_skipped}};
  j["cost_model"] = {{"name", cache.name()}, {"stages_costed", cache.misses()}, {"stage_cache_hits", cache.hits()}};
  j["memory"] = {{"peak_activation_bytes", memory.arena_bytes},
                 {"no_reuse_bytes", memory.no_reuse_bytes},
                 {"elided_concats", memory.elided_concats},
                 {"concat_inputs_in_place", memory.terms_in_place},
                 {"fused_sums", memory.fused_sums},
                 {"shared_concat_buffers", memory.shared_concat_buffers}};
  j["notes"] = sched.meta.notes;
}

#ifdef IOS_WITH_RUNTIME
// The corrections every figure got (MeasuredCostModel): the stage boundary taken off, and the cold share
// with the sums it was calibrated on.
std::string calibration_text(const ios::rt::MeasuredCostModel& m, int batch) {
  std::string out;
  char text[320];
  if (std::optional<ios::rt::TimingStream::Boundary> boundary = m.stage_boundary()) {
    std::snprintf(text, sizeof text, "; figures less the stage boundary, %.2f us a replay and %.2f us a span",
                  boundary->graph_ms * 1e3, boundary->event_ms * 1e3);
    out += text;
  }
  std::optional<ios::rt::MeasuredCostModel::ShareCalibration> c = m.cold_share(batch);
  if (c && m.rule().l2 == ios::sched::L2Timing::kColdShare) {
    std::snprintf(text, sizeof text,
                  "; cold share %.0f %%: the ops alone add up to %.3f ms warm and %.3f ms cold, the sequential "
                  "schedule runs %.3f ms end to end",
                  c->share * 100, c->ops_warm_ms, c->ops_cold_ms, c->network_ms);
    out += text;
    if (c->prefetched_network_ms > 0) {
      if (c->prefetched_network_ms <= c->network_ms) {
        out += " (with weights prefetched, which ran faster than without)";
      } else {
        std::snprintf(text, sizeof text, " (without prefetching; with weights prefetched it runs %.3f ms)",
                      c->prefetched_network_ms);
        out += text;
      }
    }
  }
  return out;
}

// "109 engines tuned in 8.0 s (3.4 s timing 895 candidates, 662 cut short; 0.9 s listing, 3.5 s building
// plans (3.4 s compiling at run time), 0.2 s first runs), clocks brought up in 0.01 s".
std::string tuning_text(const ios::rt::KernelStats& k) {
  const ios::rt::TuningStats& t = k.tuning;
  char text[320];
  std::snprintf(text, sizeof text,
                "%d engines tuned in %.1f s (%.1f s timing %d candidates, %d cut short; %.1f s listing, %.1f s "
                "building plans (%.1f s compiling at run time), %.1f s first runs), clocks brought up in %.2f s",
                k.tuned, t.seconds, t.timing_seconds, t.candidates, t.cut_short, t.list_seconds, t.build_seconds,
                t.compile_seconds, t.first_run_seconds, k.clock_warm_up_seconds);
  std::string out = text;
  if (t.skipped_losing > 0)
    out += ", " + std::to_string(t.skipped_losing) + " runtime-compiled candidates not compiled (they keep losing)";
  if (k.compile_ahead_processes > 0)
    out += ", " + std::to_string(k.compile_ahead_processes) + " processes compiling ahead (" +
           std::to_string(t.taken_ahead) + " of their plans loaded instead of compiled)";
  return out;
}

nlohmann::json tuning_json(const ios::rt::KernelStats& k) {
  return {{"engines_tuned", k.tuned},
          {"compile_ahead_processes", k.compile_ahead_processes},
          {"seconds", k.tuning.seconds},
          {"timing_seconds", k.tuning.timing_seconds},
          {"candidates", k.tuning.candidates},
          {"cut_short", k.tuning.cut_short},
          {"list_seconds", k.tuning.list_seconds},
          {"build_seconds", k.tuning.build_seconds},
          {"compile_seconds", k.tuning.compile_seconds},
          {"first_run_seconds", k.tuning.first_run_seconds},
          {"skipped_losing", k.tuning.skipped_losing},
          {"taken_ahead", k.tuning.taken_ahead},
          {"clock_warm_up_seconds", k.clock_warm_up_seconds}};
}

// How the stages were timed (measured cost model, summed over every device): counts, rounds, spread,
// host time.
void report_stage_timing(const ios::sched::CostModel& model, const std::vector<const ios::sched::CostModel*>& more,
                         int batch, Report& report) {
  const auto* measured = dynamic_cast<const ios::rt::MeasuredCostModel*>(&model);
  if (!measured) return;
  ios::sched::StageTimingStats t = measured->stats();
  for (const ios::sched::CostModel* m : more)
    if (const auto* other = dynamic_cast<const ios::rt::MeasuredCostModel*>(m)) t.merge(other->stats());
  std::string rule = measured->rule().describe() + calibration_text(*measured, batch);
  std::fprintf(report.text(), "Stage timing (%s): %s\n", rule.c_str(), t.summary().c_str());
  ios::rt::KernelStats kernels = measured->context().kernel_stats();
  for (const ios::sched::CostModel* m : more)
    if (const auto* other = dynamic_cast<const ios::rt::MeasuredCostModel*>(m)) {
      kernels.tuned += other->context().kernel_stats().tuned;
      kernels.tuning += other->context().kernel_stats().tuning;
      kernels.clock_warm_up_seconds += other->context().kernel_stats().clock_warm_up_seconds;
      kernels.compile_ahead_processes += other->context().kernel_stats().compile_ahead_processes;
    }
  std::fprintf(report.text(), "Kernels: %s\n", tuning_text(kernels).c_str());
  report.json["stage_timing"] = {{"rule", measured->rule().describe()},
                                 {"stages", t.stages},
                                 {"rounds", t.rounds},
                                 {"replays", t.replays},
                                 {"above_tolerance", t.unsettled},
                                 {"stopped_past_limit", t.stopped_past_limit},
                                 {"stopped_early", t.stopped_early},
                                 {"requeued", t.requeued},
                                 {"unproven", t.unproven},
                                 {"max_head_start_ms", t.max_head_start_ms},
                                 {"spread_median", t.spread_percentile(0.5)},
                                 {"spread_p90", t.spread_percentile(0.9)},
                                 {"passes", t.passes},
                                 {"gpu_seconds", t.gpu_seconds},
                                 {"gpu_span_seconds", t.gpu_span_seconds},
                                 {"first_over_second_median", t.first_over_second_median()},
                                 {"build_seconds", t.build_seconds},
                                 {"wait_seconds", t.wait_seconds},
                                 {"calibration", measured->calibration()}};
  report.json["kernel_tuning"] = tuning_json(kernels);
}

// Executors of the whole network on the setup's context, whose kernels the search tuned.
Expected<ios::rt::ExecutorOptions> network_options(SearchSetup& setup) {
  auto context = setup.context();
  if (!context) return context.status();
  ios::rt::ExecutorOptions options;
  options.config = setup.config;
  options.context = *context;
  return options;
}

// The plan end to end as `ios run` runs it under the flags' --prefetch-weights: without prefetching,
// with it, or (auto) the faster of the two.
Expected<ios::rt::Timing> end_to_end(const Graph& g, const ios::ir::Weights& weights,
                                     const ios::sched::ExecutionPlan& plan, ios::rt::ExecutorOptions options,
                                     const OptimizeArgs& a) {
  std::optional<ios::rt::Timing> best;
  for (int v : a.prefetch_aheads()) {
    options.prefetch_ahead = v;
    ASSIGN_OR_RETURN(auto exec, ios::rt::Executor::create(g, weights, plan, options));
    ASSIGN_OR_RETURN(ios::rt::Timing t, exec->time(ios::rt::TimingOptions{}));
    if (!best || t.median_ms < best->median_ms) best = t;
  }
  return *best;
}

// Fidelity: the chosen schedule run end to end beside the cost model's prediction (the sum of its stages).
// `weights` are the measured cost model's (seeded: timing does not depend on values).
Status report_fidelity(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                       const ios::sched::ExecutionPlan& plan, SearchSetup& setup, const OptimizeArgs& a,
                       Report& report) {
  ASSIGN_OR_RETURN(const ios::rt::ExecutorOptions options, network_options(setup));
  ASSIGN_OR_RETURN(ios::rt::Timing t, end_to_end(g, weights, plan, options, a));
  const std::string prefetching = a.prefetch_weights == "off" ? "" : ", prefetching weights " + a.prefetch_weights;
  const double predicted = sched.meta.latency_ms, ratio = t.median_ms / predicted;
  std::fprintf(report.text(),
               "Fidelity: predicted %.3f ms (sum of its stages) | measured end to end %.3f ms (CUDA graph%s, median "
               "of %d) | measured / predicted %.3f\n",
               predicted, t.median_ms, prefetching.c_str(), t.iterations, ratio);
  report.json["fidelity"] = {{"predicted_ms", predicted},
                             {"measured_ms", t.median_ms},
                             {"ratio", ratio},
                             {"prefetch_weights", a.prefetch_weights}};
  if (sched.meta.dataflow_latency_ms <= 0) return Status::ok();
  // Dataflow execution with the barriers the search kept, predicted by the sum of its segments.
  ASSIGN_OR_RETURN(ios::sched::ExecutionPlan dataflow_plan,
                   ios::sched::compile_plan(g, sched, ios::sched::ExecMode::kDataflow));
  ASSIGN_OR_RETURN(ios::rt::Timing d, end_to_end(g, weights, dataflow_plan, options, a));
  const double dataflow_predicted = sched.meta.dataflow_latency_ms, dataflow_ratio = d.median_ms / dataflow_predicted;
  std::fprintf(report.text(),
               "Fidelity, dataflow with %zu barriers: predicted %.3f ms (sum of its segments) | measured end to end "
               "%.3f ms | measured / predicted %.3f | dataflow / staged measured %.3f\n",
               sched.dataflow_barriers.size(), dataflow_predicted, d.median_ms, dataflow_ratio,
               d.median_ms / t.median_ms);
  report.json["fidelity"]["dataflow"] = {
      {"predicted_ms", dataflow_predicted}, {"measured_ms", d.median_ms}, {"ratio", dataflow_ratio}};
  return Status::ok();
}

// --stage-marginals: what each stage adds to the staged network it runs in, beside its figure (the stage timed
// alone), and the sums: where the prediction and the network part, stage by stage, without a tracer's
// overhead (CUPTI added 7-18 % at fp32 and tf32).
Status report_stage_marginals(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                              ios::sched::CostModel& figures, SearchSetup& setup, int batch, bool quiet,
                              Report& report) {
  ASSIGN_OR_RETURN(const ios::rt::ExecutorOptions options, network_options(setup));
  const std::vector<ios::sched::Stage> stages = ios::sched::all_stages(sched);
  ios::rt::MarginalOptions marginal;
  if (!quiet)
    marginal.on_round = [&](int done, double seconds) {
      if (done == 0)
        std::fprintf(stderr, "[stage marginals] %zu networks built; timing them in %d rounds\n", stages.size() + 1,
                     marginal.rounds);
      else
        std::fprintf(stderr, "[stage marginals] round %d/%d, %.1f s | ETA %.0f s\n", done, marginal.rounds, seconds,
                     seconds / done * (marginal.rounds - done));
    };
  ASSIGN_OR_RETURN(ios::rt::StageMarginals m, ios::rt::time_stage_marginals(g, weights, stages, options, marginal));
  FILE* out = report.text();
  std::fprintf(out, "Stage marginals (the staged network %.3f ms less the network without the stage; %d rounds):\n",
               m.network_ms, marginal.rounds);
  std::fprintf(out, "  stage  kind        groups  ops  figure us  in network us  difference us  spread us\n");
  double figures_sum = 0, marginals_sum = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < stages.size(); ++k) {
    ASSIGN_OR_RETURN(const double figure, figures.stage_latency_ms(g, stages[k], batch));
    const ios::rt::StageMarginal& s = m.stages[k];
    const size_t ops = stages[k].ops().size();
    const char* kind = stages[k].kind == ios::sched::StageKind::kMerge ? "merge" : "concurrent";
    std::fprintf(out, "  %5zu  %-10s  %6zu  %3zu  %9.2f  %13.2f  %13.2f  %9.2f\n", k, kind, stages[k].groups.size(),
                 ops, figure * 1e3, s.in_network_ms * 1e3, (s.in_network_ms - figure) * 1e3, s.spread_ms * 1e3);
    rows.push_back({{"kind", kind},
                    {"groups", stages[k].groups.size()},
                    {"ops", ops},
                    {"figure_ms", figure},
                    {"in_network_ms", s.in_network_ms},
                    {"spread_ms", s.spread_ms}});
    figures_sum += figure;
    marginals_sum += s.in_network_ms;
  }
  std::fprintf(out, "  sums: figures %.3f ms, in network %.3f ms, the network %.3f ms\n", figures_sum, marginals_sum,
               m.network_ms);
  report.json["stage_marginals"] = {{"network_ms", m.network_ms}, {"stages", rows}};
  return Status::ok();
}
#endif

}  // namespace ios::cli
