// What the GPU test files share: the networks' CPU references (computed once per binary), one runtime context
// per precision, the analytic plans every policy makes. Skip macros for machines without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "activation_cases.h"
#include "common/tensor_pack.h"
#include "models/models.h"
#include "op_cases.h"
#include "reference/reference_executor.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/kernels.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#include "runtime/stage_marginals.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"
#include "test_graphs.h"

namespace ios::rt {

#define SKIP_WITHOUT_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

inline const std::vector<std::string> kPrecisions = {"fp32", "tf32", "fp16", "bf16"};
inline const std::vector<sched::Policy> kPolicies = {sched::Policy::kSequential, sched::Policy::kGreedy,
                                                     sched::Policy::kDpMerge,    sched::Policy::kDpParallel,
                                                     sched::Policy::kDpBoth,     sched::Policy::kOpara};

// The plan of `policy`'s schedule from the analytic cost model (deterministic: the same plan on any machine);
// with `barriers`, dataflow execution keeps a barrier before every other stage.
inline Expected<sched::ExecutionPlan> analytic_plan(const ir::Graph& g, sched::Policy policy, sched::ExecMode mode,
                                                    int max_part_size = sched::OptimizeOptions{}.max_part_size,
                                                    bool barriers = false) {
  sched::AnalyticCostModel model;
  sched::OptimizeOptions o;
  o.policy = policy;
  o.max_part_size = max_part_size;
  ASSIGN_OR_RETURN(sched::OptimizeResult r, sched::optimize(g, o, model));
  if (barriers)
    for (int k = 1; k < r.schedule.stage_count(); k += 2) r.schedule.dataflow_barriers.push_back(k);
  return sched::compile_plan(g, r.schedule, mode);
}

inline ExecConfig config_of(const std::string& precision, const std::string& layout, int batch) {
  return *make_exec_config(precision, layout, batch);
}

// One context per data type and math mode for the whole test binary, as in a real process.
inline std::shared_ptr<Context> context_for(const ExecConfig& c) {
  static std::map<std::string, std::shared_ptr<Context>> contexts;
  auto& ctx = contexts[c.precision()];
  if (!ctx) {
    ContextOptions o;
    o.dtype = c.dtype;
    o.math = c.math;
    ctx = *Context::create(o);
  }
  return ctx;
}

struct Reference {
  ir::Graph graph;
  ir::Weights weights;
  std::map<int, std::vector<float>> input, output;  // by batch
  double max_abs = 0;  // over every activation: beyond fp16's range the network cannot run in fp16
};

inline constexpr double kHalfMax = 65504;

inline Reference& reference_for(const std::string& model) {
  static std::map<std::string, Reference> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  Reference r;
  r.graph = *models::build_model(model);
  r.weights = ir::make_weights(r.graph);
  for (int batch : {1, 4}) {
    r.input[batch] = ir::make_input(r.graph.input_shape(), batch, 7);
    reference::Tensor in(batch, r.graph.input_shape());
    in.data = r.input[batch];
    auto all = reference::run_all(r.graph, r.weights, in, {true});
    for (const reference::Tensor& t : *all)
      for (float v : t.data) r.max_abs = std::max(r.max_abs, double(std::fabs(v)));
    r.output[batch] = std::move(all->at(size_t(r.graph.output())).data);
  }
  return cache.emplace(model, std::move(r)).first->second;
}

}  // namespace ios::rt
