// IOS README §4.2.1: every network under every policy at batch 1, plus the critical-path bound
// (longest path of isolated per-op latencies) and how close each schedule comes to it. With
// `--exec staged,dataflow` every schedule runs in both execution modes, timed interleaved.
#include <algorithm>
#include <deque>

#include "experiments/harness.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_latency: latency of every policy on every network"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model_list = "inception_v3,randwire,nasnet,squeezenet,googlenet";
  std::string opt_list = "sequential,greedy,dp_merge,dp_parallel,ios-both,opara";
  std::string exec_list = "staged";
  int batch = 1;
  int search_prefetch_ahead = -1;
  app.add_option("--exec", exec_list,
                 "comma-separated execution modes: staged, dataflow (with the barriers the search placed), "
                 "dataflow-free (without them), dataflow-ordered; each optionally followed by +prefetch (the CUDA "
                 "graph prefetches each stage's weights into the L2 beside the stage before it) or +prefetchN "
                 "(beside the stage N before it)");
  app.add_option("--search-prefetch-ahead", search_prefetch_ahead,
                 "measured search: calibrate the cold share for weights prefetched this many stages ahead (0: not "
                 "prefetched; default: the farthest --exec names)")
      ->check(CLI::Range(0, 99));
  app.add_option("--model", model_list, "comma-separated networks");
  app.add_option("--opt", opt_list, "comma-separated policies");
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    const auto env = exp::environment(argc, argv);
    // "dataflow-free": dataflow execution of the schedule with its dataflow barriers dropped; "+prefetch"
    // after a mode: its CUDA graph prefetches each stage's weights (rt::ExecutorOptions::prefetch_ahead).
    struct ExecVariant {
      sched::ExecMode mode;
      bool free;
      int prefetch_ahead;
      std::string name;
    };
    std::vector<ExecVariant> exec_modes;
    for (const std::string& m : exp::split_list(exec_list)) {
      Expected<sched::PrefetchVariant> split = sched::split_prefetch_suffix(m);
      if (!split) return split.status().with_context("--exec");
      const bool free = split->base == "dataflow-free";
      Expected<sched::ExecMode> mode = sched::parse_exec_mode(free ? "dataflow" : split->base);
      if (!mode) return mode.status().with_context("--exec '" + m + "'");
      exec_modes.push_back(ExecVariant{*mode, free, split->ahead, m});
    }
    // The measured search calibrates its cold share for prefetching when a mode prefetches (as far
    // ahead as the farthest), unless told otherwise.
    if (search_prefetch_ahead < 0)
      for (const ExecVariant& v : exec_modes) search_prefetch_ahead = std::max(search_prefetch_ahead, v.prefetch_ahead);
    args.stage_timing.prefetch_ahead = std::max(search_prefetch_ahead, 0);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    exp::Table table({"model",
                      "policy",
                      "exec",
                      "graph_edges",
                      "batch",
                      "search_s",
                      "stages_costed",
                      "latency_ms",
                      "min_ms",
                      "p90_ms",
                      "predicted_ms",
                      "latency_over_predicted",
                      "speedup_vs_sequential",
                      "critical_path_ms",
                      "latency_over_bound",
                      "critical_path_search_ms",
                      "latency_over_search_path",
                      "peak_activation_mib",
                      "no_reuse_mib",
                      "rel_l2_error",
                      "cost_model"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    for (const std::string& name : exp::split_list(model_list)) {
      ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(name));
      // IOS-Both searches first, from an empty stage cache, so its search time is the full cost; the
      // other DP policies then reuse the stages it timed (their stages_costed column says how many
      // they added).
      std::vector<sched::Policy> policies;
      for (const std::string& opt : exp::split_list(opt_list)) {
        ASSIGN_OR_RETURN(sched::Policy policy, sched::parse_policy(opt));
        policies.push_back(policy);
      }
      std::vector<size_t> order(policies.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_partition(order.begin(), order.end(),
                            [&](size_t i) { return policies[i] == sched::Policy::kDpBoth; });
      std::vector<exp::Scheduled> scheduled(policies.size());
      std::vector<std::string> names(policies.size());
      for (size_t i : order) {
        ASSIGN_OR_RETURN(scheduled[i], bench->optimize(*g, policies[i], batch));
        names[i] = sched::policy_display_name(policies[i]);
        std::fprintf(stderr, "[%s] %s searched in %.1f s (%lld stages costed)\n", name.c_str(), names[i].c_str(),
                     scheduled[i].search_s, scheduled[i].stages_costed);
        for (const std::string& note : scheduled[i].schedule.meta.notes)
          std::fprintf(stderr, "[%s] %s: %s\n", name.c_str(), names[i].c_str(), note.c_str());
      }
      ASSIGN_OR_RETURN(double bound, bench->critical_path_ms(*g, batch));
      ASSIGN_OR_RETURN(double search_path, bench->critical_path_ms(*g, batch, true));
      // Every schedule in every mode, one executor each, timed interleaved.
      std::vector<const sched::Schedule*> schedules;
      std::vector<sched::ExecMode> modes;
      std::vector<int> prefetch_ahead;
      std::vector<std::string> mode_names;
      std::vector<size_t> policy_of;
      std::deque<sched::Schedule> without_barriers;
      for (size_t i = 0; i < scheduled.size(); ++i)
        for (const ExecVariant& v : exec_modes) {
          if (v.free) {
            without_barriers.push_back(scheduled[i].schedule);
            without_barriers.back().dataflow_barriers.clear();
          }
          schedules.push_back(v.free ? &without_barriers.back() : &scheduled[i].schedule);
          modes.push_back(v.mode);
          prefetch_ahead.push_back(v.prefetch_ahead);
          mode_names.push_back(v.name);
          policy_of.push_back(i);
        }
      ASSIGN_OR_RETURN(std::vector<exp::Measured> m, bench->measure(*g, schedules, batch, modes, prefetch_ahead));
      double sequential = 0;  // staged sequential when measured (the IOS baseline), else the first mode's
      for (size_t v = m.size(); v-- > 0;)
        if (names[policy_of[v]] == "Sequential" && (sequential == 0 || modes[v] == sched::ExecMode::kStaged))
          sequential = m[v].median_ms;
      for (size_t v = 0; v < m.size(); ++v) {
        const size_t i = policy_of[v];
        const std::string label = names[i] + (exec_modes.size() > 1 ? " [" + mode_names[v] + "]" : "");
        std::printf("%s\n", exp::ios_log_line(name, label, batch, scheduled[i].search_s, m[v].median_ms).c_str());
        // The search's prediction, the sum of its stages, in every mode: the dataflow figure the search
        // keeps may be a whole-network measurement (its barriers refined on the network).
        const double predicted = scheduled[i].schedule.meta.latency_ms;
        table.add({name,
                   names[i],
                   mode_names[v],
                   m[v].graph_edges,
                   batch,
                   scheduled[i].search_s,
                   scheduled[i].stages_costed,
                   m[v].median_ms,
                   m[v].min_ms,
                   m[v].p90_ms,
                   predicted,
                   predicted > 0 ? m[v].median_ms / predicted : 0.0,
                   sequential > 0 ? sequential / m[v].median_ms : 0.0,
                   bound,
                   m[v].median_ms / bound,
                   search_path,
                   m[v].median_ms / search_path,
                   m[v].peak_mib,
                   m[v].no_reuse_mib,
                   m[v].error,
                   bench->cost_model_name()});
      }
      std::printf(
          "Critical-path bound (%s, per-op latencies alone, warm): %.3f ms; the same path of the search's per-op "
          "figures (the L2 as inside the network; an estimate, not a bound): %.3f ms\n",
          name.c_str(), bound, search_path);
      std::fflush(stdout);
      RETURN_IF_ERROR(table.write(args.out_dir, "latency", env));  // after every network: partial runs keep results
    }
    return Status::ok();
  });
}
