// IOS README §4.2.5: the pruning parameters r (ops per group) and s (groups per stage) trade search
// time for latency. Every search starts from an empty stage cache, so its time is honest.
#include "experiments/harness.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_prune: search time vs latency over r and s"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model_list = "inception_v3,nasnet", rs = "1,2,3", ss = "3,8";
  app.add_option("--model", model_list, "comma-separated networks");
  app.add_option("--r", rs, "values of r");
  app.add_option("--s", ss, "values of s");
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    ASSIGN_OR_RETURN(std::vector<int> r_values, exp::parse_positive_list(rs, "--r"));
    ASSIGN_OR_RETURN(std::vector<int> s_values, exp::parse_positive_list(ss, "--s"));
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    exp::Table table({"model", "r", "s", "search_s", "stages_costed", "latency_ms", "cost_model"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    for (const std::string& name : exp::split_list(model_list)) {
      ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(name));
      std::vector<exp::Scheduled> scheduled;
      std::vector<std::pair<int, int>> params;
      for (const int r : r_values)
        for (const int s : s_values) {
          params.emplace_back(r, s);
          ASSIGN_OR_RETURN(exp::Scheduled x,
                           bench->optimize(*g, sched::Policy::kDpBoth, 1, params.back().first, params.back().second,
                                           /*fresh=*/true));
          scheduled.push_back(std::move(x));
        }
      std::vector<const sched::Schedule*> ptrs;
      for (const auto& s : scheduled) ptrs.push_back(&s.schedule);
      ASSIGN_OR_RETURN(std::vector<exp::Measured> m, bench->measure(*g, ptrs, 1));
      for (size_t i = 0; i < m.size(); ++i) {
        const std::string opt =
            "IOS-Both(r=" + std::to_string(params[i].first) + ", s=" + std::to_string(params[i].second) + ")";
        std::printf("%s\n", exp::ios_log_line(name, opt, 1, scheduled[i].search_s, m[i].median_ms).c_str());
        table.add({name, params[i].first, params[i].second, scheduled[i].search_s, scheduled[i].stages_costed,
                   m[i].median_ms, bench->cost_model_name()});
      }
      std::fflush(stdout);
      RETURN_IF_ERROR(table.write(args.out_dir, "prune", env));
    }
    return Status::ok();
  });
}
