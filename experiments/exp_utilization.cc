// IOS README §4.2.3: how busy the GPU is and how many kernels run at once, Sequential vs IOS-Both,
// from CUPTI kernel records of CUDA-graph replays. Writes a Chrome trace per run (plot_results.py
// draws the timelines).
#include "common/file_io.h"
#include "experiments/harness.h"
#include "ir/json_io.h"
#include "runtime/profiler.h"
#include "scheduler/plan.h"

int main(int argc, char** argv) {
  using namespace ios;
  CLI::App app{"exp_utilization: GPU busy fraction and kernel concurrency"};
  exp::CommonArgs args;
  args.add_to(app);
  std::string model_list = "ios_sample,inception_v3", opt_list = "sequential,ios-both";
  int inferences = 20;
  app.add_option("--model", model_list, "comma-separated networks");
  app.add_option("--opt", opt_list, "comma-separated policies");
  app.add_option("--inferences", inferences, "profiled inferences per run")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return exp::run_main([&]() -> Status {
    const auto env = exp::environment(argc, argv);
    ASSIGN_OR_RETURN(auto bench, exp::Bench::create(args));
    ASSIGN_OR_RETURN(auto profiler, rt::KernelProfiler::create());
    exp::Table table({"model", "policy", "latency_ms", "span_us", "busy_us", "busy_fraction", "kernel_us",
                      "mean_concurrency", "max_concurrency", "kernels", "attributed", "trace"});
    table.add_constant_columns(exp::Bench::config_column_names(), bench->config_columns());
    for (const std::string& name : exp::split_list(model_list)) {
      ASSIGN_OR_RETURN(const ir::Graph* g, bench->model(name));
      for (const std::string& opt : exp::split_list(opt_list)) {
        ASSIGN_OR_RETURN(sched::Policy policy, sched::parse_policy(opt));
        ASSIGN_OR_RETURN(exp::Scheduled s, bench->optimize(*g, policy, 1));
        ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(*g, s.schedule));
        rt::ExecutorOptions eo;
        eo.config = bench->config(1);
        eo.context = bench->context();
        eo.observer = profiler.get();
        ASSIGN_OR_RETURN(auto exec, rt::Executor::create(*g, bench->weights(*g), plan, eo));
        RETURN_IF_ERROR(exec->set_input(ir::make_input(g->input_shape(), 1, 1)));
        ASSIGN_OR_RETURN(rt::Timing t, exec->time(args.warmup, args.iters));
        ASSIGN_OR_RETURN(std::vector<rt::KernelRecord> records, rt::profile_runs(*exec, *profiler, inferences));
        const rt::Utilization u = rt::summarize_utilization(records);
        std::vector<rt::KernelRecord> last;
        int attributed = 0;
        for (const auto& k : records)
          if (k.replay == inferences - 1) {
            last.push_back(k);
            attributed += k.plan_step >= 0;
          }
        const std::string display = sched::policy_display_name(policy);
        const std::string trace = name + "_" + sched::policy_flag_name(policy) + ".trace.json";
        RETURN_IF_ERROR(write_text_file(args.out_dir + "/" + trace, rt::chrome_trace_json(*g, plan, last)));
        std::printf(
            "Model: %s | Optimization: %s | Latency: %.3f ms | GPU busy %.1f%% of %.1f us | mean concurrency "
            "%.2f (max %d) | %d kernels\n",
            name.c_str(), display.c_str(), t.median_ms, 100 * u.busy_fraction, u.span_us, u.mean_concurrency,
            u.max_concurrency, u.kernels);
        table.add({name, display, t.median_ms, u.span_us, u.busy_us, u.busy_fraction, u.kernel_us, u.mean_concurrency,
                   u.max_concurrency, u.kernels, attributed, trace});
        std::fflush(stdout);
      }
    }
    return table.write(args.out_dir, "utilization", env);
  });
}
