// The DP policies' search over a whole graph: every part of every block, each optimised by the DP.
// Parts that are copies of an earlier one (the same ops, shapes and wiring, e.g. NasNet's repeated
// cells) take that part's solution instead of a search of their own: with the same stage costs the
// DP's answer is the same (the memory budget is checked on the original, whose earlier values may differ
// from the copy's). The other parts go to one worker thread per cost model, largest first (with no more
// parts than workers, one to each device, a GPU, before any device gets a second); which worker solves a part
// does not change its solution beyond measurement noise.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scheduler/dp.h"
#include "scheduler/idle_workers.h"

namespace ios::sched {

struct SearchProgress {
  size_t parts_done = 0, parts_total = 0;
  size_t ops_done = 0, ops_total = 0;  // DP work grows with a part's size; the ETA weighs parts by it
  size_t parts_reused = 0;             // solved as copies of an earlier part
  double ops_running = 0;              // the parts being searched, their ops weighed by the share of states solved
  DpStats stats;                       // summed over the parts done
};

struct PartSearchOptions {
  DpOptions dp;
  bool reuse_parts = true;  // copies take their original's solution (off: every part is searched, as IOS does)
  // After every part and as the parts being searched progress, from the calling thread.
  std::function<void(const SearchProgress&)> on_part;
  // The workers' measuring models wrapped in one pool, worker i's the i-th added (null: none). A worker
  // without parts left then times other workers' stages until every part is done.
  IdleWorkers* idle_workers = nullptr;
};

// When a searched part (not a copy) ran: which worker, seconds from the search's start.
struct PartTiming {
  size_t worker = 0;
  size_t ops = 0;
  double start_s = 0, end_s = 0;
};

// Where a search over several workers spends its time: each worker's busy seconds, the span, and the
// part that ended last (the others idle behind it).
struct WorkerLoad {
  double span_s = 0;
  std::vector<double> busy_s;  // per worker
  PartTiming last;             // the part that ended last
  double idle_s() const;       // summed over workers: span less busy
  std::string summary() const;
};
WorkerLoad worker_load(const std::vector<PartTiming>& timeline, size_t workers);

struct PartSearchResult {
  std::vector<BlockSchedule> blocks;
  DpStats stats;
  size_t parts = 0, parts_reused = 0;
  std::vector<PartTiming> timeline;  // by job order (search order)
};

// A key shared exactly by parts the DP cannot tell apart (see stage_signature).
std::string part_signature(const ir::Graph& g, const OpKeys& op_keys, const std::vector<ir::NodeId>& part);

// `models[i]` is used by worker i only; with one model the search runs on the calling thread.
Expected<PartSearchResult> search_parts(const ir::Graph& g, const PartSearchOptions& options,
                                        const std::vector<CostModel*>& models);

}  // namespace ios::sched
