// `ios optimize`: a schedule searched with a policy and a cost model, its report, the schedule file.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/search_report.h"

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

#ifdef IOS_WITH_RUNTIME
// Further DP workers: --workers-per-gpu on every GPU of --devices, the setup's model being the first
// device's first worker. Each has a measured cost model behind its own view of the shared stage cache,
// on a context of its own: a new one per further GPU, a sibling of that GPU's first (shared kernel
// choices and timing stream) for further workers on one GPU.
struct ExtraWorkers {
  std::vector<std::shared_ptr<ios::rt::Context>> contexts;
  std::vector<std::unique_ptr<ios::sched::CostModel>> models, views;

  Status add(OptimizeArgs& a, const ios::rt::MeasuredCostModel& first_model, SearchSetup& setup,
             ios::sched::StageCache& cache, ios::sched::IdleWorkers& idle) {
    auto devices = ios::rt::select_devices(a.devices);
    if (!devices) return devices.status();
    auto first = setup.context();
    if (!first) return first.status();
    RETURN_ERROR_IF((*first)->device() != (*devices)[0], ios::ErrorCode::kInvalidArgument,
                    "--devices must list the current device (" + std::to_string((*first)->device()) + ") first");
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<ios::rt::Context>> others, other_devices(a, setup, *devices));
    for (size_t i = 0; i < devices->size(); ++i) {
      std::shared_ptr<ios::rt::Context> device_first = i == 0 ? *first : others[i - 1];
      if (i > 0) add_worker(device_first, first_model, a, setup, cache, idle);
      for (int w = 1; w < a.workers_per_gpu.value_or(OptimizeArgs::kDefaultWorkersPerGpu); ++w) {
        auto sibling = device_first->sibling();
        if (!sibling) return sibling.status().with_context("device " + std::to_string((*devices)[i]));
        add_worker(*sibling, first_model, a, setup, cache, idle);
      }
    }
    CHECK_CUDA(cudaSetDevice((*devices)[0]));
    if (!models.empty()) a.options.idle_workers = &idle;
    return Status::ok();
  }

 private:
  // A context on each device after the first, made side by side: made one after another, three of them
  // added 0.3-0.4 s more to a search's wall time (4 x H200).
  static Expected<std::vector<std::shared_ptr<ios::rt::Context>>> other_devices(const OptimizeArgs& a,
                                                                                const SearchSetup& setup,
                                                                                const std::vector<int>& devices) {
    std::vector<std::optional<Expected<std::shared_ptr<ios::rt::Context>>>> made(devices.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < devices.size(); ++i)
      threads.emplace_back([&, i] {
        const cudaError_t set = cudaSetDevice(devices[i]);
        made[i].emplace(set != cudaSuccess
                            ? ios::rt::cuda_error(set, "cudaSetDevice", __FILE__, __LINE__)
                            : ios::engine::make_gpu_context(setup.config, a.conv_engine, a.own_kernels_on(),
                                                            a.kernel_cache, a.verbose));
      });
    for (std::thread& t : threads) t.join();
    CHECK_CUDA(cudaSetDevice(devices[0]));
    std::vector<std::shared_ptr<ios::rt::Context>> out;
    for (size_t i = 1; i < devices.size(); ++i) {
      if (!*made[i]) return made[i]->status().with_context("device " + std::to_string(devices[i]));
      out.push_back(**made[i]);
    }
    return out;
  }

  void add_worker(std::shared_ptr<ios::rt::Context> ctx, const ios::rt::MeasuredCostModel& first_model, OptimizeArgs& a,
                  SearchSetup& setup, ios::sched::StageCache& cache, ios::sched::IdleWorkers& idle) {
    ios::rt::MeasuredCostModel::Params params;
    params.config = setup.config;
    params.rule = a.timing_rule();
    contexts.push_back(ctx);
    models.push_back(std::make_unique<ios::rt::MeasuredCostModel>(first_model, params, std::move(ctx)));
    views.push_back(cache.worker(idle.add(*models.back())));
    a.options.extra_models.push_back(views.back().get());
  }
};
#endif

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
  if ((a.devices != "0" || a.workers_per_gpu.value_or(1) != 1) && !((*model)->name() == "measured" && is_dp(*policy)))
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           std::string(a.devices != "0" ? "--devices" : "--workers-per-gpu") +
                               " spreads a measured DP search over GPU workers; this run uses the " + (*model)->name() +
                               " cost model with " + display_name(a, *policy)));
  if (a.stage_marginals && *policy == ios::sched::Policy::kOpara)
    return fail(ios::error(
        ios::ErrorCode::kInvalidArgument,
        "--stage-marginals times a schedule's stages: " + display_name(a, *policy) + " schedules streams, not stages"));
  if (a.stage_marginals && (*model)->name() != "measured")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--stage-marginals times stages in the network on the GPU: it needs --cost-model measured "
                           "(this run: " +
                               (*model)->name() + ")"));
  std::string cache_key = (*model)->name() + "|" + setup->config.plan_key() + "|" + ios::sched::StageCache::kKeyFormat;
#ifdef IOS_WITH_RUNTIME
  if ((*model)->name() == "measured")
    cache_key += "|" + ios::rt::device_description() + "|" + ios::rt::library_versions() + a.timing_rule().cache_tag() +
                 "|" + ios::rt::MeasuredCostModel::kFigureFormat;
#endif
  if (Status s = attach_opara_profile(*g, a, *setup); !s) return fail(s);
  // Every worker's measuring model, pooled so that workers out of parts time stages for the others; it
  // outlives the cache and the views that measure through it.
  ios::sched::IdleWorkers idle_workers;
  ios::sched::StageCache cache(idle_workers.add(**model), cache_key);
#ifdef IOS_WITH_RUNTIME
  const auto* measured = dynamic_cast<const ios::rt::MeasuredCostModel*>(model->get());
  ExtraWorkers extra;
  if (measured && is_dp(*policy))
    if (Status s = extra.add(a, *measured, *setup, cache, idle_workers); !s) return fail(s);
#endif
  if (!a.stage_cache.empty())
    if (Status s = cache.load(a.stage_cache); !s) return fail(s);

  a.options.dataflow_segment = dataflow_segment(a, **model);
  ProgressLine progress(cache, a.quiet);
  a.options.on_part = [&progress](const ios::sched::SearchProgress& p) { progress.update(p); };
  auto result = ios::sched::optimize(*g, a.options, cache);
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
  if (measured) calibration = measured->calibration_time();
#endif
  print_optimize(a, *g, *policy, *result, cache, *plan, *memory);
  print_search_time(a, *result, calibration);
#ifdef IOS_WITH_RUNTIME
  std::vector<const ios::sched::CostModel*> more_models;
  for (const auto& m : extra.models) more_models.push_back(m.get());
  report_stage_timing(**model, more_models, a.options.batch, a.report);
  if (measured && a.measure_schedule && !sched.is_stream_level())
    if (Status s = report_fidelity(*g, *measured->weights(), sched, *plan, *setup, a, a.report); !s) return fail(s);
  if (a.stage_marginals) {
    if (Status s =
            report_stage_marginals(*g, *measured->weights(), sched, cache, *setup, a.options.batch, a.quiet, a.report);
        !s)
      return fail(s);
  }
#endif
  if (!a.stage_cache.empty())
    if (Status s = cache.save(a.stage_cache); !s) return fail(s);
  if (!a.out.empty()) {
    if (Status s = ios::sched::save_schedule(*g, sched, a.out); !s) return fail(s);
    std::fprintf(a.report.text(), "wrote %s\n", a.out.c_str());
    a.report.json["schedule_file"] = a.out;
  }
  return a.report.finish();
}

}  // namespace ios::cli
