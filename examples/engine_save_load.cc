// Builds an engine once and runs it in another process, as a deployment does:
//
//   engine_save_load build MODEL PLAN   MODEL: an ONNX file, or an IOS graph file (seeded weights). Searches
//                                       the schedule with the measured cost model (on the GPU; analytic
//                                       without one), tunes the kernels, saves PLAN, runs the seeded input
//                                       once and writes the output to PLAN.out.npy.
//   engine_save_load run PLAN           Loads PLAN (no search, no tuning), runs the same input from device
//                                       buffers on a stream of its own and compares with PLAN.out.npy bit
//                                       for bit.
//
// Options after the arguments: --precision fp32|tf32|fp16|bf16 (build; default fp16 on a GPU).
#include <cstdio>
#include <cstring>
#include <string>

#include "common/tensor_file.h"
#include "engine/components.h"
#include "engine/engine.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/json_io.h"
#ifdef IOS_WITH_RUNTIME
#include <cuda_runtime.h>
#endif

namespace {

int fail(const ios::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<int64_t> output_shape(const ios::engine::Engine& e) {
  const ios::ir::Shape s = e.graph().output_shape();
  return {e.config().batch, s.c, s.h, s.w};
}

// One inference of the seeded input: from device buffers on a stream of ours where the engine runs on the
// GPU, else on the CPU reference.
ios::Expected<std::vector<float>> infer(ios::engine::Engine& engine) {
  const std::vector<float> input = ios::ir::make_input(engine.graph().input_shape(), engine.config().batch, 1);
  ASSIGN_OR_RETURN(std::unique_ptr<ios::engine::ExecutionContext> context, engine.create_context());
  if (engine.device() == ios::engine::Device::kCpu) return context->run(input);
#ifdef IOS_WITH_RUNTIME
  std::vector<float> output(engine.output_size());
  float *d_in = nullptr, *d_out = nullptr;
  cudaStream_t stream = nullptr;
  const bool ok =
      cudaMalloc(&d_in, input.size() * sizeof(float)) == cudaSuccess &&
      cudaMalloc(&d_out, output.size() * sizeof(float)) == cudaSuccess &&
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
      cudaMemcpyAsync(d_in, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice, stream) == cudaSuccess;
  ios::Status queued = ok ? context->enqueue(d_in, d_out, stream)
                          : ios::error(ios::ErrorCode::kRuntimeError, "cannot allocate the device buffers");
  if (queued.is_ok() && (cudaMemcpyAsync(output.data(), d_out, output.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream) != cudaSuccess ||
                         cudaStreamSynchronize(stream) != cudaSuccess))
    queued = ios::error(ios::ErrorCode::kRuntimeError, "the inference failed on the GPU");
  cudaFree(d_in);
  cudaFree(d_out);
  if (stream) cudaStreamDestroy(stream);
  if (!queued.is_ok()) return queued;
  return output;
#else
  return ios::error(ios::ErrorCode::kUnavailable, "no GPU runtime");
#endif
}

int build(const std::string& model, const std::string& plan_path, const std::string& precision) {
  ios::ir::Graph g;
  ios::ir::Weights w;
  if (ends_with(model, ".onnx")) {
    auto imported = ios::onnx_import::import_file(model);
    if (!imported) return fail(imported.status());
    g = std::move(imported->graph);
    w = std::move(imported->weights);
  } else {
    auto loaded = ios::ir::load_graph(model);
    if (!loaded) return fail(loaded.status());
    g = std::move(*loaded);
    w = ios::ir::make_weights(g);
  }
  ios::engine::BuildOptions options;
  const bool gpu = ios::engine::gpu_present();
  options.device = gpu ? ios::engine::Device::kGpu : ios::engine::Device::kCpu;
  options.precision = precision.empty() ? (gpu ? "fp16" : "fp32") : precision;
  options.cost_model = "auto";  // measured on the GPU
  options.exec_modes = {ios::sched::ExecMode::kStaged, ios::sched::ExecMode::kDataflow};
  auto builder = ios::engine::Builder::create(options);
  if (!builder) return fail(builder.status());
  auto engine = (*builder)->build(std::move(g), std::move(w));
  if (!engine) return fail(engine.status());
  if (ios::Status s = (*engine)->save(plan_path); !s) return fail(s);
  auto output = infer(**engine);
  if (!output) return fail(output.status());
  if (ios::Status s = ios::write_tensor_file(plan_path + ".out.npy", *output, output_shape(**engine)); !s)
    return fail(s);
  const ios::engine::EnginePlan& p = (*engine)->plan();
  std::printf("built %s: %s, %d stages, %s %s, %zu kernel choices; wrote %s and %s.out.npy\n", p.graph.name.c_str(),
              p.info.schedule_label.c_str(), p.schedule.stage_count(), p.config.precision().c_str(),
              gpu ? "on the GPU" : "for the CPU", p.kernels.size(), plan_path.c_str(), plan_path.c_str());
  return 0;
}

int run(const std::string& plan_path) {
  const bool gpu = ios::engine::gpu_present();
  auto engine =
      ios::engine::Engine::load(plan_path, {gpu ? ios::engine::Device::kGpu : ios::engine::Device::kCpu, "", false});
  if (!engine) return fail(engine.status());
  auto output = infer(**engine);
  if (!output) return fail(output.status());
  auto expected = ios::read_tensor_file(plan_path + ".out.npy", output_shape(**engine));
  if (!expected) return fail(expected.status());
  const bool same = expected->size() == output->size() &&
                    std::memcmp(expected->data(), output->data(), output->size() * sizeof(float)) == 0;
  std::printf("ran %s %s: output %s the building process's bit for bit\n", plan_path.c_str(),
              gpu ? "on the GPU from device buffers" : "on the CPU", same ? "matches" : "DIFFERS from");
  return same ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  std::string precision;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--precision") == 0) precision = argv[i + 1];
  if (argc >= 4 && std::strcmp(argv[1], "build") == 0) return build(argv[2], argv[3], precision);
  if (argc >= 3 && std::strcmp(argv[1], "run") == 0) return run(argv[2]);
  std::fprintf(stderr, "usage: %s build MODEL.onnx|GRAPH.json PLAN [--precision P] | %s run PLAN\n", argv[0], argv[0]);
  return 2;
}
