// IOS README §4.2.1: every network under every policy at batch 1, plus the critical-path bound
// (longest path of isolated per-op latencies) and how close each schedule comes to it.
#include <algorithm>

#include "experiments/harness.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_latency: latency of every policy on every network"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model_list = "inception_v3,randwire,nasnet,squeezenet,googlenet";
  std::string opt_list = "sequential,greedy,dp_merge,dp_parallel,ios-both,opara";
  int batch = 1;
  app.add_option("--model", model_list, "comma-separated networks");
  app.add_option("--opt", opt_list, "comma-separated policies");
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto session, exp::Session::create(args));
    exp::Table table({"model", "policy", "batch", "search_s", "stages_costed", "latency_ms", "min_ms", "p90_ms",
                      "speedup_vs_sequential", "critical_path_ms", "latency_over_bound", "peak_activation_mib",
                      "no_reuse_mib", "rel_l2_error", "cost_model"});
    table.add_constant_columns(exp::Session::config_column_names(), session->config_columns());
    for (const std::string& name : exp::split_list(model_list)) {
      ASSIGN_OR_RETURN(const ir::Graph* g, session->model(name));
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
        ASSIGN_OR_RETURN(scheduled[i], session->optimize(*g, policies[i], batch));
        names[i] = sched::policy_display_name(policies[i]);
        std::fprintf(stderr, "[%s] %s searched in %.1f s (%lld stages costed)\n", name.c_str(), names[i].c_str(),
                     scheduled[i].search_s, scheduled[i].stages_costed);
      }
      ASSIGN_OR_RETURN(double bound, session->critical_path_ms(*g, batch));
      std::vector<const sched::Schedule*> schedules;
      for (const auto& s : scheduled) schedules.push_back(&s.schedule);
      ASSIGN_OR_RETURN(std::vector<exp::Measured> m, session->measure(*g, schedules, batch));
      double sequential = 0;
      for (size_t i = 0; i < m.size(); ++i)
        if (names[i] == "Sequential") sequential = m[i].median_ms;
      for (size_t i = 0; i < m.size(); ++i) {
        std::printf("%s\n", exp::ios_log_line(name, names[i], batch, scheduled[i].search_s, m[i].median_ms).c_str());
        table.add({name, names[i], batch, scheduled[i].search_s, scheduled[i].stages_costed, m[i].median_ms,
                   m[i].min_ms, m[i].p90_ms, sequential > 0 ? sequential / m[i].median_ms : 0.0, bound,
                   m[i].median_ms / bound, m[i].peak_mib, m[i].no_reuse_mib, m[i].error, session->cost_model_name()});
      }
      std::printf("Critical-path bound (%s, per-op latencies alone): %.3f ms\n", name.c_str(), bound);
      std::fflush(stdout);
      RETURN_IF_ERROR(table.write(args.out_dir, "latency", env));  // after every network: partial runs keep results
    }
    return Status::ok();
  });
}
