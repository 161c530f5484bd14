// IOS README §4.2.4: schedules optimised for one batch size, executed at others. A schedule file
// from another device (--schedule-dir, files <model>_bs<B>.json) is used instead and reported.
#include <filesystem>

#include "experiments/harness.h"
#include "runtime/executor.h"
#include "scheduler/schedule.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_specialization: optimise for one batch size, run at others"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model = "inception_v3", batches = "1,32,128", schedule_dir;
  app.add_option("--model", model, "network");
  app.add_option("--batches", batches, "batch sizes to optimise for and to execute with");
  app.add_option("--schedule-dir", schedule_dir, "use <model>_bs<B>.json schedules from here (e.g. another GPU)");
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    ASSIGN_OR_RETURN(std::vector<int> bs, exp::parse_positive_list(batches, "--batches"));
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(model));
    exp::Table table({"model", "optimized_for_batch", "executed_batch", "latency_ms", "schedule_source"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    std::vector<sched::Schedule> schedules;
    std::vector<std::string> sources;
    for (int b : bs) {
      const std::string file = schedule_dir + "/" + model + "_bs" + std::to_string(b) + ".json";
      if (!schedule_dir.empty() && std::filesystem::exists(file)) {
        ASSIGN_OR_RETURN(sched::Schedule s, sched::load_schedule_for(*g, file));
        sources.push_back(file + (s.meta.device.empty() || s.meta.device == rt::device_description()
                                      ? ""
                                      : " (optimised on another device: " + s.meta.device + ")"));
        schedules.push_back(std::move(s));
      } else {
        ASSIGN_OR_RETURN(exp::Scheduled s, bench->optimize(*g, sched::Policy::kDpBoth, b));
        s.schedule.meta.device = rt::device_description();
        sources.push_back("optimised here (" + bench->cost_model_name() + " cost model)");
        RETURN_IF_ERROR(
            sched::save_schedule(*g, s.schedule, args.out_dir + "/" + model + "_bs" + std::to_string(b) + ".json"));
        schedules.push_back(std::move(s.schedule));
      }
    }
    for (int e : bs) {
      std::vector<const sched::Schedule*> ptrs;
      for (const auto& s : schedules) ptrs.push_back(&s);
      ASSIGN_OR_RETURN(std::vector<exp::Measured> m, bench->measure(*g, ptrs, e));
      for (size_t i = 0; i < bs.size(); ++i) {
        std::printf("Optimized for BS %d  Execute with BS %d  Latency: %.3f ms\n", bs[i], e, m[i].median_ms);
        table.add({model, bs[i], e, m[i].median_ms, sources[i]});
      }
      std::fflush(stdout);
    }
    return table.write(args.out_dir, "specialization", env);
  });
}
