#include "runtime/compile_ahead.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "ir/json_io.h"
#include "ir/weights.h"
#include "runtime/conv_kernel.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/kernel_cache.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"

extern char** environ;

namespace ios::rt {

Expected<int> compile_shard(const ir::Graph& g, const ExecConfig& config, const ContextOptions& options, int shard,
                            int shards, const std::string& plans_dir) {
  RETURN_ERROR_IF(shards < 1 || shard < 0 || shard >= shards, ErrorCode::kInvalidArgument,
                  "--shard must be k/n with 0 <= k < n, got " + std::to_string(shard) + "/" + std::to_string(shards));
  ContextOptions co = options;
  co.dtype = config.dtype;
  co.math = config.math;
  const std::string cache_path = co.kernel_cache_path;
  co.kernel_cache_path.clear();  // read below, never written
  ASSIGN_OR_RETURN(std::shared_ptr<Context> ctx, Context::create(co));
  KernelCache cache(kernel_environment());
  if (!cache_path.empty()) (void)cache.load(cache_path);  // an unreadable file: everything is compiled
  ExecutorOptions eo;
  eo.config = config;
  eo.context = ctx;
  eo.zero_arena = false;  // nothing runs
  ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(g, sched::sequential_schedule(g)));
  ASSIGN_OR_RETURN(std::vector<ConvSpec> specs, Executor::conv_specs(g, ir::make_weights(g), plan, eo));
  ConvBuildOptions bo;
  bo.engine = ctx->options().conv_engine;
  bo.own_kernels = ctx->options().own_kernels;
  bo.workspace_limit = ctx->options().workspace_limit;
  bo.ahead_plans_dir = plans_dir;
  // Each spec the file has no choice for, once. The tuning process builds them first to last; these
  // processes take them last to first, so that they compile what it reaches late rather than race it. Taken
  // first to last, each every n-th, NasNet tf32's first search took 37.5-38.2 s against 32.1-32.4 s and
  // Inception V3's 8.8-9.9 s against 6.9-8.1 s, though last to first leaves the tuning process 28 of NasNet's
  // plans to compile itself, 10.0 of its 16.1 s of compiling (H100).
  std::set<std::string> keys;
  std::vector<const ConvSpec*> todo;
  for (const ConvSpec& spec : specs) {
    const std::string key = kernel_cache_key(spec, bo.engine, bo.own_kernels);
    if (!cache.find(key) && keys.insert(key).second) todo.push_back(&spec);
  }
  int compiled = 0;
  for (int i = int(todo.size()) - 1 - shard; i >= 0; i -= shards) {
    ASSIGN_OR_RETURN(const int built, compile_ahead(ctx->cudnn(0), *todo[size_t(i)], bo));
    compiled += built;
  }
  return compiled;
}

bool compiles_at_run_time(const ExecConfig& config, ConvEngine engine) {
  return resolve_conv_engine(engine, config.dtype, config.math) == ConvEngine::kGraphRuntimeCompiled && gpu_available();
}

Expected<std::unique_ptr<CompileAheadProcesses>> CompileAheadProcesses::start(const std::string& program,
                                                                              const ir::Graph& g,
                                                                              const std::vector<std::string>& args,
                                                                              int processes) {
  std::unique_ptr<CompileAheadProcesses> p(new CompileAheadProcesses());
  if (processes <= 0) return p;
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  const std::string stem = "ios_compile_ahead_" + std::to_string(::getpid());
  p->graph_file_ = (tmp / (stem + ".json")).string();
  RETURN_IF_ERROR(ir::save_graph(g, p->graph_file_));
  std::string dir = (tmp / (stem + "_plans_XXXXXX")).string();
  RETURN_ERROR_IF(!::mkdtemp(dir.data()), ErrorCode::kIoError,
                  "cannot make a folder for the compiled plans in '" + tmp.string() + "': " + strerror(errno));
  p->plans_dir_ = dir;
  for (int k = 0; k < processes; ++k) {
    std::vector<std::string> words = {program,       "compile-ahead",
                                      "--graph",     p->graph_file_,
                                      "--shard",     std::to_string(k) + "/" + std::to_string(processes),
                                      "--plans-dir", p->plans_dir_};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t quiet;  // their output is not the user's: each says nothing it needs
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int failed = posix_spawn(&pid, program.c_str(), &quiet, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&quiet);
    RETURN_ERROR_IF(failed != 0, ErrorCode::kUnavailable,
                    "cannot start '" + program + " compile-ahead': " + std::string(strerror(failed)));
    p->pids_.push_back(pid);
  }
  return p;
}

CompileAheadProcesses::~CompileAheadProcesses() {
  for (pid_t pid : pids_) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {  // still compiling what the search no longer needs
      kill(pid, SIGTERM);
      waitpid(pid, &status, 0);
    }
  }
  std::error_code ec;
  if (!graph_file_.empty()) std::filesystem::remove(graph_file_, ec);
  if (!plans_dir_.empty()) std::filesystem::remove_all(plans_dir_, ec);
}

int default_compile_ahead_processes() {
  const int cores = int(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1, 8);
}

}  // namespace ios::rt
