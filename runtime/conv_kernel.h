// A convolution (+ bias + activation + residual) as a kernel object built once and run many times.
// Three backends behind one interface:
//  - graph: a cudnn-frontend (v1 graph API) graph conv -> bias add -> activation -> residual add,
//    candidates from heuristics A, B and the fallback list, every candidate timed on the real buffers
//    (median of several batches after warm-up), the fastest kept; when no engine runs the fused graph,
//    the convolution alone is tuned and bias/activation/residual run as a separate kernel.
//    With graph-exhaustive, every engine of the operation graph with its default knobs and split-K
//    variants are timed too (recorded as backend "graph-knobs": engine + the knobs set, replayed as such);
//    with graph-rtc, the engines compiled at run time first where the convolution touches a strided slice;
//    on a strided output, the fastest precompiled engine also writing a packed tensor our kernel copies.
//  - legacy: cudnnFindConvolutionForwardAlgorithmEx over the legacy algorithm enums.
//  - ours (conv_own.cc): kernels we write where cuDNN is weak (depthwise; pointwise as a cuBLASLt product), timed on
//  the same
//    buffers against the cuDNN engine tuning chose and kept where faster (ConvBuildOptions::own_kernels).
// The choice is recorded in the context's persistent KernelCache under ConvSpec::key(), so a second
// process builds the same engine without tuning.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/exec_config.h"
#include "ir/graph.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "runtime/losing_engines.h"

namespace ios::rt {

// The activation code the bias/activation kernel takes (kernels.h: 0 none, 1 relu, 2 sigmoid, 3 tanh).
int act_code(ir::Act a);

// The backend of a 1x1 depthwise convolution run as one per-channel affine kernel: nothing is tuned, so
// the choice is neither counted as a tuned engine nor recorded in the kernel cache.
inline constexpr char kElementwiseBackend[] = "elementwise";

// graph: the heuristics' candidates; graph-exhaustive: also every other engine of the operation graph
// and split-K variants (kept in the kernel cache under their own key); graph-rtc: graph, led on strided
// slices by the engines cuDNN compiles at run time (timing_order in conv_kernel.cc); legacy: cudnnFind;
// auto: graph-exhaustive for strict fp32, graph-rtc otherwise (resolve_conv_engine).
enum class ConvEngine { kAuto, kGraph, kGraphExhaustive, kGraphRuntimeCompiled, kLegacy };
Expected<ConvEngine> parse_conv_engine(const std::string& s);
const char* conv_engine_name(ConvEngine e);
// What auto means for a data type and math mode. Strict fp32 has few engines, so trying them all costs
// 5-40 % more tuning and ran networks 1-11 % faster on the H100; with tensor cores the engines and
// their split-K variants number in the hundreds (fp16 DenseNet-121 took over 5 minutes to tune), so
// tensor cores get graph-rtc: the heuristics' candidates, led on strided slices by the few engines
// cuDNN compiles at run time (on the H100 at tf32, GoogLeNet 3.4 % and Inception V3 2.8 % faster end to
// end).
ConvEngine resolve_conv_engine(ConvEngine e, DataType dtype, MathMode math);

// Everything that decides which engine can run a convolution and how fast.
struct ConvSpec {
  ExecConfig config;               // data type, math, layout, batch
  ir::ConvAttrs attrs;             // kernel, stride, padding, dilation, groups, bias, activation
  ir::Shape in, out;               // per sample; out.c may exceed attrs.out_channels' producer (merged convs)
  SliceLayout x, y;                // element strides of input and output (channel slices of wider buffers)
  int x_align = 16, y_align = 16;  // byte alignment of the input / output pointers (at most 16)
  std::optional<SliceLayout> z;    // a residual added after the activation: y = act(conv + bias) + z
  int z_align = 16;
  std::string key() const;
};

// Hash and equality over exactly the fields key() writes (a field added to one goes into all three): a
// context finds its kernels without building the key, once per convolution of every stage executor.
struct ConvSpecHash {
  size_t operator()(const ConvSpec& s) const;
};
struct SameConvKey {
  bool operator()(const ConvSpec& a, const ConvSpec& b) const;
};

// Byte alignment of a device pointer, capped at 16.
int pointer_alignment(const void* p);

struct ConvBuffers {
  const void* x;
  const void* w;  // filter in the config's dtype and layout (KCRS or KRSC)
  const void* b;  // bias in the config's dtype, may be null when attrs.has_bias is false
  void* y;
  const void* z = nullptr;  // the residual, when spec.z is set
};

class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  // Runs on the handle's stream; `workspace` holds at least workspace_bytes().
  virtual Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const = 0;
  virtual size_t workspace_bytes() const = 0;
  virtual const KernelChoice& choice() const = 0;
  // An engine cuDNN compiled at run time: its built plan as cuDNN serializes it (KernelCache::put_plan).
  // Empty for any other engine, and for one loaded from such bytes.
  virtual Expected<std::vector<uint8_t>> compiled_plan() const { return std::vector<uint8_t>(); }
  virtual bool compiled_plan_loaded() const { return false; }  // loaded from such bytes
};

// What tuning convolutions cost, summed over those a context tuned.
struct TuningStats {
  int candidates = 0;            // engine configurations timed
  int cut_short = 0;             // of candidates, timing stopped once they could no longer win
  double seconds = 0;            // wall time tuning: plans built, outputs checked, candidates timed
  double timing_seconds = 0;     // of seconds, timing candidates
  double list_seconds = 0;       // of seconds, making the graph and listing its candidates
  double build_seconds = 0;      // of seconds, building candidate plans
  double compile_seconds = 0;    // of build_seconds, plans cuDNN compiles at run time (NVRTC)
  double first_run_seconds = 0;  // of seconds, each candidate's first (untimed) run
  int skipped_losing = 0;        // runtime-compiled candidates not built: they keep losing (LosingEngines)
  int taken_ahead = 0;           // runtime-compiled candidates loaded as a compile-ahead process built them
  TuningStats& operator+=(const TuningStats& o);
};

// How many of a convolution's engine candidates the graph engine times, in the heuristics' order: at
// most 16, and no more once 6 in a row did not beat the best so far. On the H100 (tf32 and fp16,
// Inception V3 and GoogLeNet searches, 488 convolutions) the best was the first candidate in 62 % of
// them; it came after 6 losing ones in 6, which lose 1.4 us of the 4.25 ms their best engines sum to
// (0.03 %), and the rule times 49 % of the candidates. Exhaustive
// tuning times every candidate it has.
class TuningBudget {
 public:
  static TuningBudget for_engine(ConvEngine engine, int candidates);
  bool wants_more() const { return timed_ < max_timed_ && losing_in_a_row_ < max_losing_in_a_row_; }
  void timed(bool new_best) {
    ++timed_;
    losing_in_a_row_ = new_best ? 0 : losing_in_a_row_ + 1;
  }
  int timed_count() const { return timed_; }

 private:
  TuningBudget(int max_timed, int max_losing_in_a_row)
      : max_timed_(max_timed), max_losing_in_a_row_(max_losing_in_a_row) {}
  int max_timed_, max_losing_in_a_row_;
  int timed_ = 0, losing_in_a_row_ = 0;
};

// Whether the convolution reads or writes a channel slice of a wider buffer through strides a packed
// tensor would not have (NHWC concatenations and merged outputs; NCHW ones only beyond batch 1):
// graph-rtc tuning then times the engines cuDNN compiles at run time first.
bool touches_strided_slice(const ConvSpec& spec);
// Whether the output is such a slice: graph tuning then also times the fastest precompiled engine writing a
// packed tensor that our kernel copies into the slice (the choice's output_copied).
bool writes_strided_slice(const ConvSpec& spec);

struct ConvBuildOptions {
  ConvEngine engine = ConvEngine::kGraph;
  // Our kernels compete with cuDNN's in tuning. A choice of ours recorded in the kernel cache is built either
  // way (the cache keys of the two settings differ: kernel_cache_key).
  bool own_kernels = true;
  size_t workspace_limit = size_t{256} << 20;
  bool verbose = false;          // say on stderr which engine was chosen, and every fallback
  TuningStats* stats = nullptr;  // when given, tuning adds what it cost
  // When given, tuning skips the runtime-compiled engines it says keep losing, and tells it what it timed.
  LosingEngines* losing = nullptr;
  // Where compile-ahead processes leave the runtime-compiled plans they build (compile_ahead writes them,
  // tuning loads a candidate found there instead of compiling it). Empty: none.
  std::string ahead_plans_dir;
};

// Builds the kernel for `spec`: from `cached` when given (no tuning; loaded from `cached_plan` when that
// holds its compiled plan, else built again), else by autotuning on `b` (which it may overwrite).
// `workspace` must hold options.workspace_limit bytes.
Expected<std::shared_ptr<ConvKernel>> build_conv_kernel(cudnnHandle_t handle, const ConvSpec& spec,
                                                        const ConvBuffers& b, void* workspace,
                                                        const std::optional<KernelChoice>& cached,
                                                        const std::vector<uint8_t>& cached_plan,
                                                        const ConvBuildOptions& options);

// The kernel cache's key for `spec` tuned under `engine`, with or without our kernels competing
// (KernelCache::find / put / plan).
std::string kernel_cache_key(const ConvSpec& spec, ConvEngine engine, bool own_kernels);

// Our own kernels (backend kOwnBackend, conv_own.cc): the names of those that run `spec`, in the order tuning
// times them (none: cuDNN only), and one built by its choice (recorded) or name.
std::vector<std::string> own_conv_kernels(const ConvSpec& spec);
Expected<std::shared_ptr<ConvKernel>> make_own_conv_kernel(const ConvSpec& spec, const KernelChoice& choice);
Expected<std::shared_ptr<ConvKernel>> make_own_conv_kernel(const ConvSpec& spec, const std::string& name);

// Builds, without running or timing them, the plans cuDNN compiles at run time among those tune_graph may
// time for `spec` (its fused graph), so that the driver's JIT cache holds their kernels when a tuning
// process builds them (rt::compile_shard), and, with options.ahead_plans_dir, writes each there as cuDNN
// serializes it, for the tuning process to load instead of compiling it again. Returns how many were built.
Expected<int> compile_ahead(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuildOptions& options);

}  // namespace ios::rt
