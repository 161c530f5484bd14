// `ios optimize`: a schedule searched with a policy and a cost model, its report, the schedule file.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/search_report.h"
#include "engine/search.h"

namespace ios::cli {
namespace {

// The search's progress on stderr, once a second after the first: parts done (and reused), stages
// costed, and an ETA from the share of ops in finished parts and, in the parts being searched, the share
// of their states solved.
class ProgressLine {
 public:
  ProgressLine(const ios::sched::StageCache& cache, bool quiet) : cache_(cache) {
    if (!quiet) ticker_ = std::thread([this] { tick(); });
  }
  ~ProgressLine() { stop(); }
  void update(const ios::sched::SearchProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    progress_ = p;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

 private:
  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool printed = false;
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopped_; })) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      const auto& p = progress_;
      const double done = double(p.ops_done) + p.ops_running;  // parts in flight by their states solved
      std::string eta = "ETA once states are solved";
      if (done > 0 && double(p.ops_total) > done)
        eta = "ETA " + std::to_string(int(t / done * (double(p.ops_total) - done))) + " s";
      std::fprintf(stderr, "\r[search %.0f s] parts %zu/%zu (%zu reused) | states %lld | stages costed %zu | %s   ", t,
                   p.parts_done, p.parts_total, p.parts_reused, static_cast<long long>(p.stats.states), cache_.misses(),
                   eta.c_str());
      printed = true;
    }
    if (printed) std::fprintf(stderr, "\n");
  }

  const ios::sched::StageCache& cache_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  ios::sched::SearchProgress progress_;
  bool stopped_ = false;
  std::thread ticker_;
};

// The search's resources as the flags name them; a further GPU's first worker gets a context like the
// first's.
ios::engine::SearchSetupOptions search_options(const OptimizeArgs& a, const SearchSetup& setup, bool dp) {
  ios::engine::SearchSetupOptions o;
  o.config = setup.config;
  o.rule = a.timing_rule();
  o.resources = a.resources;
  o.dp = dp;
  o.new_context = [&a, config = setup.config] {
    return ios::engine::make_gpu_context(config, a.conv_engine, a.own_kernels_on(), a.kernel_cache, a.verbose);
  };
  return o;
}

}  // namespace

int cmd_optimize(OptimizeArgs& a) {
  Expected<Graph> g = a.src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Policy> policy = ios::sched::parse_policy(a.policy);
  if (!policy) return fail(policy.status().with_context("--opt"));
  if (Status st = a.check_prefetch_weights(); !st) return fail(st);
  if (Expected<int> ahead = a.compile_ahead_processes(); !ahead) return fail(ahead.status());
  if (a.concat_writes == "auto")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--concat-writes auto times both ways of writing concatenations as a schedule is run: "
                           "ios run only; ios optimize takes in-place or conv-copy"));
  a.options.policy = *policy;
  auto setup = make_search_setup(a);
  if (!setup) return fail(setup.status());
#ifdef IOS_WITH_RUNTIME
  if (a.cost_model == "measured" || (a.cost_model == "auto" && ios::rt::gpu_available()))
    if (Status s = setup->compile_ahead_on_tuning(*g); !s) return fail(s);
#endif
  auto model =
      ios::engine::make_cost_model(*g, a.cost_model, setup->config, a.timing_rule(), [&] { return setup->context(); });
  if (!model) return fail(model.status());
  if (a.stage_marginals && *policy == ios::sched::Policy::kOpara)
    return fail(ios::error(
        ios::ErrorCode::kInvalidArgument,
        "--stage-marginals times a schedule's stages: " + display_name(a, *policy) + " schedules streams, not stages"));
  if (a.stage_marginals && (*model)->name() != "measured")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--stage-marginals times stages in the network on the GPU: it needs --cost-model measured "
                           "(this run: " +
                               (*model)->name() + ")"));
  if (Status s = attach_opara_profile(*g, a, *setup); !s) return fail(s);
  auto search = ios::engine::Search::create(std::move(*model), search_options(a, *setup, is_dp(*policy)));
  if (!search) return fail(search.status().with_context(display_name(a, *policy)));
  ios::sched::StageCache& cache = (*search)->cache();
  a.options.dataflow_segment = dataflow_segment(a, (*search)->first_model());
  ProgressLine progress(cache, a.quiet);
  a.options.on_part = [&progress](const ios::sched::SearchProgress& p) { progress.update(p); };
  auto result = (*search)->run(*g, a.options);
  progress.stop();
  if (!result) return fail(result.status());
  auto& sched = result->schedule;
  sched.meta.precision = setup->config.precision();
  sched.meta.layout = ios::layout_name(setup->config.layout);
#ifdef IOS_WITH_RUNTIME
  if (cache.name() == "measured") {
    sched.meta.device = ios::rt::device_description();
    sched.meta.library_versions = ios::rt::library_versions();
  }
#endif
  auto plan = ios::sched::compile_plan(*g, sched);
  if (!plan) return fail(plan.status());
  ios::sched::MemoryOptions memory_options;
  memory_options.config = setup->config;
  auto memory = ios::sched::plan_memory(*g, *plan, memory_options);
  if (!memory) return fail(memory.status());
  ios::sched::CalibrationTime calibration;
#ifdef IOS_WITH_RUNTIME
  const auto* measured = dynamic_cast<const ios::rt::MeasuredCostModel*>(&(*search)->first_model());
  if (measured) calibration = measured->calibration_time();
#endif
  print_optimize(a, *g, *policy, *result, cache, *plan, *memory);
  print_search_time(a, *result, calibration);
#ifdef IOS_WITH_RUNTIME
  report_stage_timing((*search)->first_model(), (*search)->further_models(), a.options.batch, a.report);
  if (measured && a.measure_schedule && !sched.is_stream_level())
    if (Status s = report_fidelity(*g, *measured->weights(), sched, *plan, *setup, a, a.report); !s) return fail(s);
  if (a.stage_marginals) {
    if (Status s =
            report_stage_marginals(*g, *measured->weights(), sched, cache, *setup, a.options.batch, a.quiet, a.report);
        !s)
      return fail(s);
  }
#endif
  if (Status s = (*search)->save_cache(); !s) return fail(s);
  if (!a.out.empty()) {
    if (Status s = ios::sched::save_schedule(*g, sched, a.out); !s) return fail(s);
    std::fprintf(a.report.text(), "wrote %s\n", a.out.c_str());
    a.report.json["schedule_file"] = a.out;
  }
  return a.report.finish();
}

}  // namespace ios::cli
