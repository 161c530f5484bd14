#include "engine/search.h"

#include <optional>
#include <thread>

#ifdef IOS_WITH_RUNTIME
#include "runtime/context.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/measured_cost_model.h"
#endif

namespace ios::engine {

std::string stage_cache_key(const sched::CostModel& model, const ExecConfig& config,
                            const sched::StageTimingRule& rule) {
  std::string key = model.name() + "|" + config.plan_key() + "|" + sched::StageCache::kKeyFormat;
#ifdef IOS_WITH_RUNTIME
  if (model.name() == "measured")
    key += "|" + rt::device_description() + "|" + rt::library_versions() + rule.cache_tag() + "|" +
           rt::MeasuredCostModel::kFigureFormat;
#else
  (void)rule;
#endif
  return key;
}

// The further DP workers: workers_per_gpu on every GPU of `devices`, the first model being the first
// device's first worker. Each has a measured cost model behind its own view of the shared stage cache, on a
// context of its own: a new one per further GPU, a sibling of that GPU's first (shared kernel choices and
// timing stream) for further workers on one GPU.
struct Search::Workers {
#ifdef IOS_WITH_RUNTIME
  std::vector<std::shared_ptr<rt::Context>> contexts;
  std::vector<std::unique_ptr<sched::CostModel>> models, views;

  Status add(const rt::MeasuredCostModel& first, const SearchSetupOptions& o, sched::StageCache& cache,
             sched::IdleWorkers& idle) {
    ASSIGN_OR_RETURN(std::vector<int> devices, rt::select_devices(o.resources.devices));
    RETURN_ERROR_IF(first.context().device() != devices[0], ErrorCode::kInvalidArgument,
                    "--devices must list the current device (" + std::to_string(first.context().device()) + ") first");
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<rt::Context>> others, other_devices(o, devices));
    const int per_gpu = o.resources.workers_per_gpu.value_or(SearchResources::kDefaultWorkersPerGpu);
    for (size_t i = 0; i < devices.size(); ++i) {
      const rt::Context& device_first = i == 0 ? first.context() : *others[i - 1];
      if (i > 0) add_worker(others[i - 1], first, o, cache, idle);
      for (int w = 1; w < per_gpu; ++w) {
        Expected<std::shared_ptr<rt::Context>> sibling = device_first.sibling();
        if (!sibling) return sibling.status().with_context("device " + std::to_string(devices[i]));
        add_worker(*sibling, first, o, cache, idle);
      }
    }
    CHECK_CUDA(cudaSetDevice(devices[0]));
    return Status::ok();
  }

 private:
  // A context on each device after the first, made side by side: made one after another, three of them
  // added 0.3-0.4 s more to a search's wall time (4 x H200).
  static Expected<std::vector<std::shared_ptr<rt::Context>>> other_devices(const SearchSetupOptions& o,
                                                                           const std::vector<int>& devices) {
    std::vector<std::optional<GpuContext>> made(devices.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < devices.size(); ++i)
      threads.emplace_back([&, i] {
        const cudaError_t set = cudaSetDevice(devices[i]);
        made[i].emplace(set != cudaSuccess ? rt::cuda_error(set, "cudaSetDevice", __FILE__, __LINE__)
                                           : o.new_context());
      });
    for (std::thread& t : threads) t.join();
    CHECK_CUDA(cudaSetDevice(devices[0]));
    std::vector<std::shared_ptr<rt::Context>> out;
    for (size_t i = 1; i < devices.size(); ++i) {
      if (!*made[i]) return made[i]->status().with_context("device " + std::to_string(devices[i]));
      out.push_back(**made[i]);
    }
    return out;
  }

  void add_worker(std::shared_ptr<rt::Context> context, const rt::MeasuredCostModel& first, const SearchSetupOptions& o,
                  sched::StageCache& cache, sched::IdleWorkers& idle) {
    rt::MeasuredCostModel::Params params;
    params.config = o.config;
    params.rule = o.rule;
    contexts.push_back(context);
    models.push_back(std::make_unique<rt::MeasuredCostModel>(first, params, std::move(context)));
    views.push_back(cache.worker(idle.add(*models.back())));
  }
#endif
};

Search::Search(std::unique_ptr<sched::CostModel> model, SearchSetupOptions options)
    : model_(std::move(model)), options_(std::move(options)), workers_(std::make_unique<Workers>()) {}
Search::~Search() = default;

Expected<std::unique_ptr<Search>> Search::create(std::unique_ptr<sched::CostModel> model, const SearchSetupOptions& o) {
  const bool measured = model->name() == "measured";
  const bool spread = o.resources.devices != "0" || o.resources.workers_per_gpu.value_or(1) != 1;
  RETURN_ERROR_IF(spread && !(measured && o.dp), ErrorCode::kInvalidArgument,
                  std::string(o.resources.devices != "0" ? "--devices" : "--workers-per-gpu") +
                      " spreads a measured DP search over GPU workers; this search uses the " + model->name() +
                      " cost model" + (o.dp ? "" : " and a policy that is not a DP"));
  std::unique_ptr<Search> search(new Search(std::move(model), o));
  const std::string key = stage_cache_key(*search->model_, o.config, o.rule);
  search->cache_ = std::make_unique<sched::StageCache>(search->idle_.add(*search->model_), key);
#ifdef IOS_WITH_RUNTIME
  if (measured && o.dp) {
    const auto* first = dynamic_cast<const rt::MeasuredCostModel*>(search->model_.get());
    RETURN_ERROR_IF(!first, ErrorCode::kRuntimeError, "a model named measured is not rt::MeasuredCostModel");
    RETURN_IF_ERROR(search->workers_->add(*first, o, *search->cache_, search->idle_));
  }
#endif
  if (!o.resources.stage_cache.empty()) RETURN_IF_ERROR(search->cache_->load(o.resources.stage_cache));
  return search;
}

std::vector<const sched::CostModel*> Search::further_models() const {
  std::vector<const sched::CostModel*> out;
#ifdef IOS_WITH_RUNTIME
  for (const auto& m : workers_->models) out.push_back(m.get());
#endif
  return out;
}

Expected<sched::OptimizeResult> Search::run(const ir::Graph& g, sched::OptimizeOptions& options) {
#ifdef IOS_WITH_RUNTIME
  for (const auto& view : workers_->views) options.extra_models.push_back(view.get());
  if (!workers_->views.empty()) options.idle_workers = &idle_;
#endif
  return sched::optimize(g, options, *cache_);
}

Status Search::save_cache() const {
  if (options_.resources.stage_cache.empty()) return Status::ok();
  return cache_->save(options_.resources.stage_cache);
}

}  // namespace ios::engine
