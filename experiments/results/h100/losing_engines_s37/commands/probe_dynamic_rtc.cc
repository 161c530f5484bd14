// Probe (issue #10): do cuDNN's dynamic-shape graphs with a shared kernel cache let the runtime-compiled
// convolution engines reuse one compiled kernel across Inception V3's shapes, and what do those kernels cost?
// For each convolution (conv + bias + ReLU, tf32, NHWC, batch 1, the output a concatenation's channel slice)
// and each mode (static shapes; dynamic shapes with one kernel cache for the whole process), every engine
// compiled at run time is built (wall time) and run (median of 5 batches of 50, CUDA events).
//   probe_dynamic_rtc [static|dynamic|both]
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudnn_frontend.h"

namespace fe = cudnn_frontend;

namespace {

#define CUDA_OK(x)                                                                   \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

struct Conv {
  const char* name;
  int cin, cout, h, w, kh, kw, ph, pw, stride, y_channels;  // y_channels: the concatenation's width
  int oh() const { return (h + 2 * ph - kh) / stride + 1; }
  int ow() const { return (w + 2 * pw - kw) / stride + 1; }
};

// Inception V3's branches that write a concatenation's slice, at 35x35, 17x17 and 8x8.
const std::vector<Conv> kConvs = {
    {"5b_1x1_192_64", 192, 64, 35, 35, 1, 1, 0, 0, 1, 256},   {"5b_5x5_48_64", 48, 64, 35, 35, 5, 5, 2, 2, 1, 256},
    {"5b_3x3_96_96", 96, 96, 35, 35, 3, 3, 1, 1, 1, 256},     {"5d_1x1_288_64", 288, 64, 35, 35, 1, 1, 0, 0, 1, 288},
    {"6a_3x3s2_288_384", 288, 384, 35, 35, 3, 3, 0, 0, 2, 768}, {"6b_1x1_768_192", 768, 192, 17, 17, 1, 1, 0, 0, 1, 768},
    {"6b_7x1_128_192", 128, 192, 17, 17, 7, 1, 3, 0, 1, 768}, {"6c_1x7_160_192", 160, 192, 17, 17, 1, 7, 0, 3, 1, 768},
    {"6e_7x1_192_192", 192, 192, 17, 17, 7, 1, 3, 0, 1, 768}, {"7b_1x1_1280_320", 1280, 320, 8, 8, 1, 1, 0, 0, 1, 1280},
    {"7b_1x3_384_384", 384, 384, 8, 8, 1, 3, 0, 1, 1, 2048},  {"7c_3x1_384_384", 384, 384, 8, 8, 3, 1, 1, 0, 1, 2048},
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::shared_ptr<fe::graph::Graph> make_graph(cudnnHandle_t handle, const Conv& c, bool dynamic,
                                             const std::shared_ptr<fe::KernelCache>& cache, std::string& error) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::FLOAT)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  if (dynamic) g->set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  auto x = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("x")
                         .set_uid(1)
                         .set_dim({1, c.cin, c.h, c.w})
                         .set_stride({int64_t(c.h) * c.w * c.cin, 1, int64_t(c.w) * c.cin, c.cin}));
  auto w = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("w")
                         .set_uid(2)
                         .set_dim({c.cout, c.cin, c.kh, c.kw})
                         .set_stride({int64_t(c.kh) * c.kw * c.cin, 1, int64_t(c.kw) * c.cin, c.cin}));
  auto y = g->conv_fprop(x, w,
                         fe::graph::Conv_fprop_attributes()
                             .set_name("conv")
                             .set_padding({c.ph, c.pw})
                             .set_stride({c.stride, c.stride})
                             .set_dilation({1, 1}));
  auto b = g->tensor(fe::graph::Tensor_attributes()
                         .set_name("bias")
                         .set_uid(3)
                         .set_dim({1, c.cout, 1, 1})
                         .set_stride({c.cout, 1, c.cout, c.cout}));
  y = g->pointwise(y, b, fe::graph::Pointwise_attributes().set_name("bias").set_mode(fe::PointwiseMode_t::ADD));
  y = g->pointwise(y, fe::graph::Pointwise_attributes().set_name("act").set_mode(fe::PointwiseMode_t::RELU_FWD));
  const int64_t ys = c.y_channels;
  y->set_output(true).set_uid(4).set_dim({1, c.cout, c.oh(), c.ow()}).set_stride({c.oh() * c.ow() * ys, 1, c.ow() * ys, ys});
  if (auto s = g->validate(); s.is_bad()) return error = "validate: " + s.get_message(), nullptr;
  if (auto s = g->build_operation_graph(handle); s.is_bad()) return error = "op graph: " + s.get_message(), nullptr;
  if (auto s = g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}); s.is_bad())
    return error = "heuristics: " + s.get_message(), nullptr;
  return g;
}

bool runtime_compiled(fe::graph::Graph& g, int64_t i) {
  std::vector<fe::BehaviorNote_t> notes;
  return g.get_behavior_notes_for_plan_at_index(i, notes).is_good() &&
         std::find(notes.begin(), notes.end(), fe::BehaviorNote_t::RUNTIME_COMPILATION) != notes.end();
}

double time_plan(cudnnHandle_t handle, fe::graph::Graph& g, int64_t i, std::unordered_map<int64_t, void*>& pack,
                 void* ws, cudaStream_t s) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int k = 0; k < 3; ++k)
    if (g.execute_plan_at_index(handle, pack, ws, i).is_bad()) return -1;
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) {
    CUDA_OK(cudaEventRecord(a, s));
    for (int k = 0; k < 50; ++k) (void)g.execute_plan_at_index(handle, pack, ws, i);
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1e3 * ms / 50);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(us.begin(), us.end());
  return us[2];
}

void probe(cudnnHandle_t handle, cudaStream_t s, const Conv& c, bool dynamic, const std::shared_ptr<fe::KernelCache>& cache,
           void* bufs[4], void* ws, size_t ws_bytes) {
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  auto g = make_graph(handle, c, dynamic, cache, error);
  if (!g) {
    std::printf("%-18s %-7s ERROR %s\n", c.name, dynamic ? "dynamic" : "static", error.c_str());
    return;
  }
  const int64_t offered = g->get_execution_plan_count();
  int64_t engines = 0;
  (void)g->get_engine_count(engines);
  for (int64_t e = 0; e < engines; ++e) {
    std::vector<fe::Knob> knobs;
    if (g->get_knobs_for_engine(e, knobs).is_bad()) continue;
    (void)g->create_execution_plan(e, {});
  }
  const double list_ms = ms_since(t0);
  std::unordered_map<int64_t, void*> pack = {{1, bufs[0]}, {2, bufs[1]}, {3, bufs[2]}, {4, bufs[3]}};
  std::printf("%-18s %-7s heuristics %lld plans, %lld engines, listed in %.1f ms\n", c.name,
              dynamic ? "dynamic" : "static", (long long)offered, (long long)engines, list_ms);
  // The heuristics' first plan that builds (precompiled or not), then every runtime-compiled plan added by hand.
  std::vector<int64_t> todo;
  for (int64_t i = 0; i < offered && todo.empty(); ++i) todo.push_back(i);
  for (int64_t i = offered; i < g->get_execution_plan_count(); ++i)
    if (runtime_compiled(*g, i)) todo.push_back(i);
  for (int64_t i : todo) {
    std::string name;
    (void)g->get_plan_name_at_index(i, name);
    int64_t need = 0;
    (void)g->get_workspace_size_plan_at_index(i, need);
    const auto b0 = std::chrono::steady_clock::now();
    auto built = g->build_plan_at_index(handle, i);
    const double build_ms = ms_since(b0);
    if (built.is_bad() || size_t(need) > ws_bytes) {
      std::printf("  %-40s build FAILED (%s) %.1f ms\n", name.c_str(), built.get_message().c_str(), build_ms);
      continue;
    }
    const double us = time_plan(handle, *g, i, pack, ws, s);
    std::printf("  %-40s %s build %8.1f ms  run %7.2f us\n", name.c_str(), runtime_compiled(*g, i) ? "rtc" : "pre",
                build_ms, us);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "both";
  cudnnHandle_t handle;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) return std::fprintf(stderr, "cudnnCreate failed\n"), 1;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudnnSetStream(handle, s);
  std::printf("cuDNN %zu\n", cudnnGetVersion());
  void* bufs[4];
  const size_t bytes = 64 << 20;
  for (void*& b : bufs) {
    CUDA_OK(cudaMalloc(&b, bytes));
    CUDA_OK(cudaMemset(b, 0, bytes));
  }
  void* ws;
  const size_t ws_bytes = 256 << 20;
  CUDA_OK(cudaMalloc(&ws, ws_bytes));
  auto cache = std::make_shared<fe::KernelCache>();
  for (const char* m : {"static", "dynamic"}) {
    if (mode != "both" && mode != m) continue;
    const auto t = std::chrono::steady_clock::now();
    for (const Conv& c : kConvs) probe(handle, s, c, std::strcmp(m, "dynamic") == 0, cache, bufs, ws, ws_bytes);
    std::printf("== %s: %.2f s for %zu convolutions\n", m, ms_since(t) / 1e3, kConvs.size());
  }
  return 0;
}
