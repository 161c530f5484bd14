// Processes that compile, ahead of a search or a run, the convolution plans cuDNN compiles at run time for a
// network (tf32, fp16 and bf16 engines on strided slices), so that the driver's JIT cache holds their kernels
// when the tuning process builds them. Compiling runs side by side only across processes: threads of one
// process compiled no faster, while two searches in two processes each
// compiled as fast as alone, and a machine's first tf32 search spent 8.6 of its 13.2 s compiling (Inception
// V3) and 25.9 of 41.4 s (NasNet) (H100).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/exec_config.h"
#include "ir/graph.h"
#include "runtime/context.h"

namespace ios::rt {

// One process's share: the convolutions of `g`'s sequential executor (as the measured cost model's
// calibration builds it first) that the kernel cache file (options.kernel_cache_path) has no choice for,
// every `shards`-th from the `shard`-th counted from the last, each built with compile_ahead, its plans
// written to `plans_dir` (none: empty). How many plans it compiled.
Expected<int> compile_shard(const ir::Graph& g, const ExecConfig& config, const ContextOptions& options, int shard,
                            int shards, const std::string& plans_dir = "");

// Whether compiling ahead can pay: a GPU, and an engine setting that has cuDNN compile at run time.
bool compiles_at_run_time(const ExecConfig& config, ConvEngine engine);

// `program compile-ahead --graph FILE --shard k/n --plans-dir DIR ARGS...` for each k < n, the graph written to
// a temporary file and DIR a temporary folder, made first. Each writes the plans it builds to DIR, where the
// tuning process loads them instead of compiling them itself: the driver's JIT cache they also fill keeps
// only the PTX's compilation, not cuDNN's (NVRTC): with it alone NasNet's first tf32 search took 41.5-42.7 s with 8
// of them (58.3 s without), with the plans loaded 31.5-37.2 s (H100). They end by themselves; the
// destructor stops any still running (they only fill caches), reaps them and removes the file and the folder.
class CompileAheadProcesses {
 public:
  static Expected<std::unique_ptr<CompileAheadProcesses>> start(const std::string& program, const ir::Graph& g,
                                                                const std::vector<std::string>& args, int processes);
  ~CompileAheadProcesses();
  CompileAheadProcesses(const CompileAheadProcesses&) = delete;
  CompileAheadProcesses& operator=(const CompileAheadProcesses&) = delete;
  int processes() const { return int(pids_.size()); }
  const std::string& plans_dir() const { return plans_dir_; }

 private:
  CompileAheadProcesses() = default;
  std::vector<pid_t> pids_;
  std::string graph_file_;
  std::string plans_dir_;
};

// `--compile-ahead auto`: half the host's cores, at most 8.
int default_compile_ahead_processes();

}  // namespace ios::rt
