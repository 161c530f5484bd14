// A command's execution config and, on first use, its GPU context; the cost model a search prices stages
// with. Internal to cli/.
#pragma once

#include <functional>
#include <memory>

#include "cli/options.h"
#include "common/exec_config.h"
#include "scheduler/cost_model.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/context.h"
#endif

namespace ios::cli {

#ifdef IOS_WITH_RUNTIME
using ContextPtr = Expected<std::shared_ptr<ios::rt::Context>>;
#else
using ContextPtr = Expected<int>;  // no runtime: never asked for
#endif

#ifdef IOS_WITH_RUNTIME
// One context per process: streams, handles and the convolution kernels (tuned once, persisted).
Expected<std::shared_ptr<ios::rt::Context>> make_context(const ios::ExecConfig& config, const std::string& engine,
                                                         const std::string& kernel_cache, bool verbose);
#endif

// `auto` picks the measured model where a GPU runtime and a GPU exist, else the analytic one.
Expected<std::unique_ptr<ios::sched::CostModel>> make_cost_model(const Graph& g, std::string kind,
                                                                 const ios::ExecConfig& config,
                                                                 const ios::sched::StageTimingRule& rule,
                                                                 const std::function<ContextPtr()>& context);

// The run's configuration and, on first use, its GPU context (made once, shared by the measured
// cost model, Opara's profile and the executor).
struct Session {
  ios::ExecConfig config;
  const OptimizeArgs* args = nullptr;
  std::optional<ContextPtr> context_;
#ifdef IOS_WITH_RUNTIME

  // Has --compile-ahead's processes started on `g` when the context first tunes a convolution, where tuning
  // compiles cuDNN engines at run time; they stop once the network is built (the measured search's
  // calibration network, Context::stop_tuning_companions; ios run's executor). Not before: with every kernel
  // in the cache file they only cost (Inception V3 tf32 searched again in 2.8-3.0 s against 1.8-2.4 with 8
  // processes started at once, H100). A failure to start them is reported; tuning goes on.
  Status compile_ahead_on_tuning(const Graph& g) {
    auto engine = ios::rt::parse_conv_engine(args->conv_engine);
    if (!engine) return engine.status();
    Expected<int> processes = args->compile_ahead_processes();
    if (!processes) return processes.status();
    if (*processes == 0 || !ios::rt::compiles_at_run_time(config, *engine)) return Status::ok();
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) return Status::ok();  // nowhere to start them from: tuning compiles as it always did
    const std::vector<std::string> config_args = {"--precision",     config.precision(),
                                                  "--layout",        ios::layout_name(config.layout),
                                                  "--concat-writes", ios::concat_writes_name(config.concat_writes),
                                                  "--conv-engine",   args->conv_engine,
                                                  "--batch",         std::to_string(config.batch),
                                                  "--kernel-cache",  args->kernel_cache};
    ContextPtr ctx = context();
    if (!ctx) return ctx.status();
    (*ctx)->set_before_tuning([&g, self, config_args, n = *processes]() -> ios::rt::Context::TuningCompanions {
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

  ContextPtr context() {
#ifdef IOS_WITH_RUNTIME
    if (!context_) context_ = make_context(config, args->conv_engine, args->kernel_cache, args->verbose);
    return *context_;
#else
    return ios::error(ios::ErrorCode::kUnavailable, "this build has no GPU runtime");
#endif
  }
};

// `ios run --concat-writes auto` searches (where it searches) with the default and times both at the end.
Expected<Session> make_session(const OptimizeArgs& a);

// The policy's name as IOS prints it, with r and s where they are not IOS's.
std::string display_name(const OptimizeArgs& a, ios::sched::Policy p);

// Opara orders launches by each op's shared memory: measured with CUPTI where there is a GPU (and
// the cost model is not forced to the analytic one), else estimated (noted in the schedule).
Status attach_opara_profile(const Graph& g, OptimizeArgs& a, Session& session);

// --dataflow-segment, or its default for the run's cost model.
int dataflow_segment(const OptimizeArgs& a, const ios::sched::CostModel& model);

}  // namespace ios::cli
