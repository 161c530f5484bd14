// How much of a difference between execution modes is the mode, and how much the executor instance:
// one schedule built --copies times each as staged, dataflow with a barrier before every stage (the
// staged order in a dataflow graph; also captured from the schedule's streams, dataflow-ordered) and
// dataflow with the schedule's own barriers, every executor with its own memory, all timed in one
// process in interleaved rounds.
#include "experiments/harness.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_instances: one schedule, several executors per execution mode, interleaved"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model_name, schedule_file;
  int copies = 3;
  app.add_option("--model", model_name, "network name")->required();
  app.add_option("--schedule", schedule_file, "staged schedule file (`ios optimize --out`)")->required();
  app.add_option("--copies", copies, "executors per mode")->check(CLI::Range(1, 16));
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(model_name));
    ASSIGN_OR_RETURN(sched::Schedule own, sched::load_schedule_for(*g, schedule_file));
    RETURN_ERROR_IF(own.is_stream_level(), ErrorCode::kInvalidArgument,
                    "--schedule: a staged schedule is needed (stream-level schedules have no stages)");
    sched::Schedule every = own;
    every.dataflow_barriers.clear();
    for (int c = 1; c < own.stage_count(); ++c) every.dataflow_barriers.push_back(c);
    const std::vector<std::pair<std::string, std::pair<const sched::Schedule*, sched::ExecMode>>> variants{
        {"staged", {&own, sched::ExecMode::kStaged}},
        {"dataflow-every-barrier", {&every, sched::ExecMode::kDataflow}},
        {"dataflow-ordered-every-barrier", {&every, sched::ExecMode::kDataflowOrdered}},
        {"dataflow", {&own, sched::ExecMode::kDataflow}}};
    std::vector<const sched::Schedule*> schedules;
    std::vector<sched::ExecMode> modes;
    std::vector<std::string> names;
    for (int copy = 0; copy < copies; ++copy)
      for (const auto& [name, variant] : variants) {
        schedules.push_back(variant.first);
        modes.push_back(variant.second);
        names.push_back(name);
      }
    ASSIGN_OR_RETURN(std::vector<exp::Measured> m, bench->measure(*g, schedules, 1, modes));
    exp::Table table({"model", "variant", "copy", "latency_ms", "min_ms", "p90_ms", "rel_l2_error"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    for (size_t i = 0; i < m.size(); ++i) {
      std::printf("%-24s copy %zu: %.4f ms (min %.4f, p90 %.4f)\n", names[i].c_str(), i / variants.size(),
                  m[i].median_ms, m[i].min_ms, m[i].p90_ms);
      table.add({model_name, names[i], int(i / variants.size()), m[i].median_ms, m[i].min_ms, m[i].p90_ms, m[i].error});
    }
    return table.write(args.out_dir, "instances", env);
  });
}
