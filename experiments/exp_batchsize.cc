// IOS README §4.2.6: Inception V3 at growing batch sizes, Sequential vs IOS-Both vs Opara.
#include "experiments/harness.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_batchsize: policies across batch sizes"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model = "inception_v3", batches = "1,16,32,64,128", opt_list = "sequential,ios-both,opara";
  app.add_option("--model", model, "network");
  app.add_option("--batches", batches, "comma-separated batch sizes");
  app.add_option("--opt", opt_list, "comma-separated policies");
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    ASSIGN_OR_RETURN(std::vector<int> batch_sizes, exp::parse_positive_list(batches, "--batches"));
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(model));
    exp::Table table({"model", "policy", "batch", "search_s", "latency_ms", "throughput_img_s", "speedup_vs_sequential",
                      "peak_activation_mib", "rel_l2_error", "cost_model"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    for (const int batch : batch_sizes) {
      std::vector<exp::Scheduled> scheduled;
      std::vector<std::string> names;
      for (const std::string& opt : exp::split_list(opt_list)) {
        ASSIGN_OR_RETURN(sched::Policy policy, sched::parse_policy(opt));
        ASSIGN_OR_RETURN(exp::Scheduled s, bench->optimize(*g, policy, batch));
        scheduled.push_back(std::move(s));
        names.push_back(sched::policy_display_name(policy));
      }
      std::vector<const sched::Schedule*> schedules;
      for (const auto& s : scheduled) schedules.push_back(&s.schedule);
      ASSIGN_OR_RETURN(std::vector<exp::Measured> m, bench->measure(*g, schedules, batch));
      for (size_t i = 0; i < m.size(); ++i) {
        std::printf("%s\n", exp::ios_log_line(model, names[i], batch, scheduled[i].search_s, m[i].median_ms).c_str());
        table.add({model, names[i], batch, scheduled[i].search_s, m[i].median_ms, 1000.0 * batch / m[i].median_ms,
                   m[0].median_ms / m[i].median_ms, m[i].peak_mib, m[i].error, bench->cost_model_name()});
      }
      std::fflush(stdout);
      RETURN_IF_ERROR(table.write(args.out_dir, "batchsize", env));
    }
    return Status::ok();
  });
}
