#include "cli/search_setup.h"

#include <filesystem>

#include "engine/engine.h"

#ifdef IOS_WITH_RUNTIME
#include "runtime/executor.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#endif

namespace ios::cli {

int fail(const Status& s) {
  std::fprintf(stderr, "ios: error: %s\n", s.to_string().c_str());
  return 1;
}

#ifdef IOS_WITH_RUNTIME
Status start_compile_ahead_on_tuning(const Graph& g, const OptimizeArgs& args, const ios::ExecConfig& config,
                                     ios::rt::Context& context) {
  auto engine = ios::rt::parse_conv_engine(args.conv_engine);
  if (!engine) return engine.status();
  Expected<int> processes = args.compile_ahead_processes();
  if (!processes) return processes.status();
  if (*processes == 0 || !ios::rt::compiles_at_run_time(config, *engine)) return Status::ok();
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Status::ok();  // nowhere to start them from: tuning compiles as it always did
  const std::vector<std::string> config_args = {"--precision",     config.precision(),
                                                "--layout",        ios::layout_name(config.layout),
                                                "--concat-writes", ios::concat_writes_name(config.concat_writes),
                                                "--conv-engine",   args.conv_engine,
                                                "--own-kernels",   args.own_kernels,
                                                "--batch",         std::to_string(config.batch),
                                                "--kernel-cache",  args.kernel_cache};
  context.set_before_tuning([&g, self, config_args, n = *processes]() -> ios::rt::Context::TuningCompanions {
    auto started = ios::rt::CompileAheadProcesses::start(self, g, config_args, n);
    if (!started) {
      std::fprintf(stderr, "warning: %s\n", started.status().with_context("--compile-ahead").to_string().c_str());
      return {};
    }
    const int count = (*started)->processes();
    std::string plans_dir = (*started)->plans_dir();
    return {std::shared_ptr<ios::rt::CompileAheadProcesses>(std::move(*started)), count, std::move(plans_dir)};
  });
  return Status::ok();
}
#endif

Expected<SearchSetup> make_search_setup(const OptimizeArgs& a) {
  const std::string writes = a.concat_writes == "auto" ? "in-place" : a.concat_writes;
  auto config = ios::make_exec_config(a.precision, a.layout, a.options.batch, writes);
  if (!config) return config.status();
  SearchSetup s;
  s.config = *config;
  s.args = &a;
  return s;
}

std::string display_name(const OptimizeArgs& a, ios::sched::Policy p) {
  ios::sched::OptimizeOptions search = a.options;
  search.policy = p;
  return ios::engine::schedule_label(search);
}

// Opara orders launches by each op's shared memory: measured with CUPTI where there is a GPU (and
// the cost model is not forced to the analytic one), else estimated (noted in the schedule).
Status attach_opara_profile(const Graph& g, OptimizeArgs& a, SearchSetup& setup) {
  if (a.options.policy != ios::sched::Policy::kOpara || a.cost_model == "analytic") return Status::ok();
#ifdef IOS_WITH_RUNTIME
  if (!ios::rt::gpu_available()) return Status::ok();
  auto ctx = setup.context();
  if (!ctx) return ctx.status();
  ios::rt::ExecutorOptions eo;
  eo.config = setup.config;
  eo.context = *ctx;
  auto profile = ios::rt::measure_resource_profile(g, ios::ir::make_weights(g), eo);
  if (!profile) return profile.status().with_context("Opara's CUPTI profile");
  a.options.profile = *profile;
#endif
  return Status::ok();
}

int dataflow_segment(const OptimizeArgs& a, const ios::sched::CostModel& model) {
  return a.dataflow_segment >= 0 ? a.dataflow_segment : ios::sched::default_dataflow_segment(model.name());
}

}  // namespace ios::cli
