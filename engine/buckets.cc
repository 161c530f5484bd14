#include "engine/buckets.h"

#include <algorithm>

namespace ios::engine {

namespace {

std::string batches_text(const std::vector<int>& batches) {
  std::string text;
  for (int b : batches) text += (text.empty() ? "" : ", ") + std::to_string(b);
  return text;
}

}  // namespace

Expected<BatchBuckets> BatchBuckets::build(const BuildOptions& options, const ir::Graph& g, const ir::Weights& w,
                                           std::vector<int> batches) {
  std::sort(batches.begin(), batches.end());
  RETURN_ERROR_IF(batches.empty() || batches.size() > size_t(kMaxPlansPerFile), ErrorCode::kInvalidArgument,
                  "batch buckets: give 1 to " + std::to_string(kMaxPlansPerFile) + " batch sizes");
  RETURN_ERROR_IF(std::adjacent_find(batches.begin(), batches.end()) != batches.end(), ErrorCode::kInvalidArgument,
                  "batch buckets: a batch size is given twice (" + batches_text(batches) + ")");
  RETURN_ERROR_IF(batches.front() < 1, ErrorCode::kInvalidArgument, "batch buckets: batch sizes start at 1");
  // One copy of the weights, on the host and on the device, for every bucket.
  const auto weights = std::make_shared<const ir::Weights>(w);
  std::vector<std::shared_ptr<Engine>> engines;
  for (int batch : batches) {
    BuildOptions o = options;
    o.search.batch = batch;
    ASSIGN_OR_RETURN(std::unique_ptr<Builder> builder, Builder::create(o));
    if (!engines.empty()) builder->share_device_weights(*engines.front());
    Expected<std::shared_ptr<Engine>> e = builder->build(g, weights);
    if (!e) return e.status().with_context("batch " + std::to_string(batch));
    engines.push_back(std::move(*e));
  }
  return BatchBuckets(std::move(engines));
}

Expected<BatchBuckets> BatchBuckets::load(const std::string& path, const Engine::LoadOptions& options) {
  ASSIGN_OR_RETURN(std::vector<EnginePlan> plans, load_engine_plans(path));
  std::vector<std::shared_ptr<Engine>> engines;
  for (EnginePlan& p : plans) {
    if (!engines.empty()) {
      const EnginePlan& first = engines.front()->plan();
      RETURN_ERROR_IF(p.graph.name != first.graph.name || !(p.graph.input_shape() == first.graph.input_shape()) ||
                          !(p.graph.output_shape() == first.graph.output_shape()),
                      ErrorCode::kInvalidArgument, path + ": its plans are of different networks");
      RETURN_ERROR_IF(p.config.batch <= engines.back()->config().batch, ErrorCode::kInvalidArgument,
                      path + ": its plans' batch sizes do not increase");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<Engine> e, Engine::from_plan(std::move(p), options, path));
    if (!engines.empty()) e->share_device_weights(*engines.front());  // where the file shares its weights
    engines.push_back(std::move(e));
  }
  return BatchBuckets(std::move(engines));
}

Status BatchBuckets::save(const std::string& path) const {
  std::vector<const EnginePlan*> plans;
  for (const auto& e : engines_) plans.push_back(&e->plan());
  return save_engine_plans(plans, path);
}

std::vector<int> BatchBuckets::batches() const {
  std::vector<int> out;
  for (const auto& e : engines_) out.push_back(e->config().batch);
  return out;
}

Expected<std::shared_ptr<Engine>> BatchBuckets::engine_for(int n) const {
  RETURN_ERROR_IF(n < 1, ErrorCode::kInvalidArgument, "a batch of " + std::to_string(n) + " samples");
  for (const auto& e : engines_)
    if (e->config().batch >= n) return e;
  return error(ErrorCode::kInvalidArgument, "a batch of " + std::to_string(n) +
                                                " samples: the largest of the engine's batch buckets (" +
                                                batches_text(batches()) + ") is " + std::to_string(max_batch()));
}

}  // namespace ios::engine
