// Engines of one network for several batch sizes, after TensorRT's optimization profiles. IOS specializes
// a schedule to its batch (its README §4.2.4: a schedule searched at batch 1 runs batch 16 slower than one
// searched there), and the kernels are tuned per batch, so each bucket is an engine of its own, searched,
// tuned and timed at its batch. A call of n samples runs on the smallest bucket of at least n, the rows
// past n padding. The buckets are saved in one file (plan_file.h: save_engine_plans).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace ios::engine {

class BatchBuckets {
 public:
  // One engine per batch size in `batches` (1 to kMaxPlansPerFile distinct sizes, any order), each built
  // with `options` at its batch.
  static Expected<BatchBuckets> build(const BuildOptions& options, const ir::Graph& g, const ir::Weights& w,
                                      std::vector<int> batches);
  // Checks that the plans are of one network, in strictly increasing batches.
  static Expected<BatchBuckets> load(const std::string& path, const Engine::LoadOptions& options);
  Status save(const std::string& path) const;

  const std::vector<std::shared_ptr<Engine>>& engines() const { return engines_; }  // by increasing batch
  std::vector<int> batches() const;
  int max_batch() const { return engines_.back()->config().batch; }
  // The smallest bucket that holds `n` samples; an error naming the buckets where none does.
  Expected<std::shared_ptr<Engine>> engine_for(int n) const;

 private:
  explicit BatchBuckets(std::vector<std::shared_ptr<Engine>> engines) : engines_(std::move(engines)) {}
  std::vector<std::shared_ptr<Engine>> engines_;
};

}  // namespace ios::engine
