// What `ios optimize` reports: IOS's summary line, the search's statistics and time, the memory plan, and with
// the measured cost model how stages and kernels were timed, fidelity and stage marginals. Text and JSON.
// Internal to cli/.
#pragma once

#include "cli/search_setup.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#ifdef IOS_WITH_RUNTIME
#include "runtime/executor.h"
#include "runtime/measured_cost_model.h"
#endif

namespace ios::cli {

void print_search_time(OptimizeArgs& a, const ios::sched::OptimizeResult& r,
                       const ios::sched::CalibrationTime& calibration);
void print_optimize(OptimizeArgs& a, const Graph& g, ios::sched::Policy policy, const ios::sched::OptimizeResult& r,
                    const ios::sched::StageCache& cache, const ios::sched::ExecutionPlan& plan,
                    const ios::sched::MemoryPlan& memory);

#ifdef IOS_WITH_RUNTIME
std::string tuning_text(const ios::rt::KernelStats& k);
nlohmann::json tuning_json(const ios::rt::KernelStats& k);
void report_stage_timing(const ios::sched::CostModel& model, const std::vector<const ios::sched::CostModel*>& more,
                         int batch, Report& report);
Status report_fidelity(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                       const ios::sched::ExecutionPlan& plan, SearchSetup& setup, const OptimizeArgs& a,
                       Report& report);
Status report_stage_marginals(const Graph& g, const ios::ir::Weights& weights, const ios::sched::Schedule& sched,
                              ios::sched::CostModel& figures, SearchSetup& setup, int batch, bool quiet,
                              Report& report);
#endif

}  // namespace ios::cli
