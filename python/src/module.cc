// The extension module `ios._ios`: the engine API (engine/engine.h) for Python. The package `ios`
// (python/ios/__init__.py) wraps it with keyword options, PyTorch conveniences and ios.compile.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "binding.h"
#include "engine/buckets.h"
#include "engine/components.h"
#include "engine/network.h"
#include "scheduler/schedule.h"

#ifdef IOS_WITH_RUNTIME
#include <cuda_runtime.h>
#endif

namespace ios::python {

namespace {

using engine::Engine;
using engine::ExecutionContext;

const char* device_name(engine::Device d) { return d == engine::Device::kGpu ? "gpu" : "cpu"; }

engine::Device device_or_default(const std::string& name) {
  if (name.empty()) return engine::gpu_present() ? engine::Device::kGpu : engine::Device::kCpu;
  return value_or_throw(engine::parse_device(name));
}

engine::Network open_network(const std::string& model, const std::string& weights) {
  engine::NetworkSource source = engine::network_source(model);
  source.weights_file = weights;
  return value_or_throw(engine::open_network(source));
}

std::shared_ptr<Engine> build(const std::string& model, const nb::dict& options, const std::string& weights,
                              const std::string& schedule_file) {
  engine::BuildOptions o = build_options(options);
  nb::gil_scoped_release released;
  engine::Network network = open_network(model, weights);
  std::unique_ptr<engine::Builder> builder = value_or_throw(engine::Builder::create(o));
  std::optional<sched::Schedule> schedule;
  if (!schedule_file.empty()) schedule = value_or_throw(sched::load_schedule_for(network.graph, schedule_file));
  auto built = builder->build(std::move(network.graph), network.take_weights(), std::move(schedule));
  return value_or_throw(std::move(built));
}

engine::BatchBuckets build_buckets(const std::string& model, const nb::dict& options, std::vector<int> batches,
                                   const std::string& weights) {
  engine::BuildOptions o = build_options(options);
  nb::gil_scoped_release released;
  engine::Network network = open_network(model, weights);
  return value_or_throw(engine::BatchBuckets::build(o, network.graph, network.take_weights(), std::move(batches)));
}

engine::Engine::LoadOptions load_options(const std::string& device, const std::string& kernel_cache, bool verbose) {
  engine::Engine::LoadOptions o;
  o.device = device_or_default(device);
  o.kernel_cache = kernel_cache.empty() ? engine::default_kernel_cache() : kernel_cache;
  o.verbose = verbose;
  return o;
}

std::shared_ptr<Engine> load(const std::string& path, const std::string& device, const std::string& kernel_cache,
                             bool verbose) {
  const engine::Engine::LoadOptions o = load_options(device, kernel_cache, verbose);
  nb::gil_scoped_release released;
  return value_or_throw(Engine::load(path, o));
}

engine::BatchBuckets load_buckets(const std::string& path, const std::string& device, const std::string& kernel_cache,
                                  bool verbose) {
  const engine::Engine::LoadOptions o = load_options(device, kernel_cache, verbose);
  nb::gil_scoped_release released;
  return value_or_throw(engine::BatchBuckets::load(path, o));
}

std::string plan_file_kind(const std::string& path) {
  return value_or_throw(engine::plan_file_kind(path)) == engine::PlanFileKind::kEngine ? "engine" : "buckets";
}

nb::ndarray<nb::numpy, float> run(ExecutionContext& c, const nb::ndarray<float, nb::c_contig, nb::device::cpu>& x) {
  std::vector<float> input = host_floats(x, input_dims(c.engine()));
  std::vector<float> output;
  {
    nb::gil_scoped_release released;
    output = value_or_throw(c.run(input));
  }
  return numpy_array(std::move(output), output_dims(c.engine()));
}

void enqueue(ExecutionContext& c, const AnyArray& input, const AnyArray& output, uintptr_t stream) {
  if (c.device() != engine::Device::kGpu)
    throw Error("enqueue takes GPU tensors and this context runs on the CPU reference: use run");
  const float* in = device_data(input, input_dims(c.engine()), c.gpu_index(), "input");
  float* out = device_data(output, output_dims(c.engine()), c.gpu_index(), "output");
  nb::gil_scoped_release released;
  check(c.enqueue(in, out, reinterpret_cast<cudaStream_t>(stream)));
}

// Raw device addresses (a __cuda_array_interface__'s), checked to be GPU memory of the context's device.
void enqueue_addresses(ExecutionContext& c, uintptr_t input, uintptr_t output, uintptr_t stream) {
  if (c.device() != engine::Device::kGpu)
    throw Error("enqueue takes GPU tensors and this context runs on the CPU reference: use run");
#ifdef IOS_WITH_RUNTIME
  for (auto [address, what] : {std::pair{input, "input"}, std::pair{output, "output"}}) {
    cudaPointerAttributes at{};
    const bool known = cudaPointerGetAttributes(&at, reinterpret_cast<const void*>(address)) == cudaSuccess;
    cudaGetLastError();  // an unknown address leaves an error behind
    if (!known || (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged))
      throw Error(std::string(what) +
                  " is not CUDA device memory: enqueue takes GPU tensors (use run for host arrays)");
    if (at.device != c.gpu_index())
      throw Error(std::string(what) + " is on cuda:" + std::to_string(at.device) +
                  ", the engine runs on cuda:" + std::to_string(c.gpu_index()));
  }
#endif
  nb::gil_scoped_release released;
  check(c.enqueue(reinterpret_cast<const float*>(input), reinterpret_cast<float*>(output),
                  reinterpret_cast<cudaStream_t>(stream)));
}

nb::tuple dims_tuple(const std::vector<int64_t>& d) { return nb::make_tuple(d[0], d[1], d[2], d[3]); }

void bind_engine(nb::module_& m) {
  nb::class_<Engine>(m, "Engine", "A built engine: graph, weights, schedule, execution and tuned kernels.")
      .def_prop_ro("name", [](const Engine& e) { return e.graph().name; })
      .def_prop_ro(
          "input_shape", [](const Engine& e) { return dims_tuple(input_dims(e)); },
          "(batch, channels, height, width) of the input")
      .def_prop_ro(
          "output_shape", [](const Engine& e) { return dims_tuple(output_dims(e)); },
          "(batch, channels, height, width) of the output")
      .def_prop_ro("batch", [](const Engine& e) { return e.config().batch; })
      .def_prop_ro("precision", [](const Engine& e) { return e.config().precision(); })
      .def_prop_ro("layout", [](const Engine& e) { return std::string(layout_name(e.config().layout)); })
      .def_prop_ro("device", [](const Engine& e) { return std::string(device_name(e.device())); })
      .def_prop_ro(
          "schedule", [](const Engine& e) { return e.plan().info.schedule_label; },
          "the policy that made the schedule: IOS-Both, Sequential, ...")
      .def_prop_ro("stages", [](const Engine& e) { return e.plan().schedule.stage_count(); })
      .def_prop_ro(
          "execution",
          [](const Engine& e) { return engine::variant_name(e.plan().execution, e.config().concat_writes); },
          "how the schedule executes: staged, dataflow, ... (the fastest variant the build timed)")
      .def_prop_ro("kernel_choices", [](const Engine& e) { return e.plan().kernels.size(); })
      .def_prop_ro(
          "built_for", [](const Engine& e) { return e.plan().info.device; },
          "the GPU the kernels were tuned on; empty when built without one")
      .def(
          "save", [](const Engine& e, const std::string& path) { check(e.save(path)); }, nb::arg("path"),
          "Writes the plan file (atomically: a failed write leaves an existing file as it was).")
      .def(
          "create_context",
          [](Engine& e) {
            nb::gil_scoped_release released;
            return value_or_throw(e.create_context());
          },
          "A context with buffers (and on the GPU streams and a CUDA graph) of its own.");
}

void bind_buckets(nb::module_& m) {
  nb::class_<engine::BatchBuckets>(m, "BatchBuckets", "Engines of one network for several batch sizes.")
      .def_prop_ro("batches", &engine::BatchBuckets::batches, "the buckets' batch sizes, increasing")
      .def_prop_ro("engines", &engine::BatchBuckets::engines, "one engine per bucket, by increasing batch")
      .def(
          "save", [](const engine::BatchBuckets& b, const std::string& path) { check(b.save(path)); }, nb::arg("path"),
          "Writes every bucket's plan into one file (atomically).");
}

void bind_context(nb::module_& m) {
  nb::class_<ExecutionContext>(m, "ExecutionContext", "Runs an engine; inferences of one context share its buffers.")
      .def_prop_ro("device", [](const ExecutionContext& c) { return std::string(device_name(c.device())); })
      .def_prop_ro("gpu_index", &ExecutionContext::gpu_index, "the CUDA device it runs on; -1 on the CPU")
      .def("run", &run, nb::arg("input"),
           "One inference from a host array (copied; float32 NCHW of the engine's input shape), waited for. "
           "Returns a NumPy array.")
      .def("enqueue", &enqueue, nb::arg("input"), nb::arg("output"), nb::arg("stream"),
           "One inference queued on `stream` (a cudaStream_t as an int; 0: the default stream), not waited for. "
           "`input` and `output` are float32 contiguous NCHW tensors on the context's GPU, passed by pointer "
           "through DLPack (no copy).")
      .def("_enqueue_addresses", &enqueue_addresses, nb::arg("input"), nb::arg("output"), nb::arg("stream"),
           "enqueue with device addresses whose shape and type the caller has checked (a "
           "__cuda_array_interface__'s); each must be device memory of the context's GPU")
      .def(
          "_enqueue_pointers",
          [](ExecutionContext& c, uintptr_t input, uintptr_t output, uintptr_t stream) {
            nb::gil_scoped_release released;
            check(c.enqueue(reinterpret_cast<const float*>(input), reinterpret_cast<float*>(output),
                            reinterpret_cast<cudaStream_t>(stream)));
          },
          nb::arg("input"), nb::arg("output"), nb::arg("stream"),
          "enqueue with device addresses the caller has checked (the PyTorch path of ios.ExecutionContext: "
          "its checks cost less than DLPack's)");
}

}  // namespace

NB_MODULE(_ios, m) {
  m.doc() = "The IOS engine API: build, save, load and run engines.";
  m.attr("__version__") = IOS_VERSION;
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  bind_engine(m);
  bind_context(m);
  bind_buckets(m);
  m.def("build", &build, nb::arg("model"), nb::arg("options"), nb::arg("weights") = "", nb::arg("schedule") = "",
        "An engine of `model` (an ONNX file, an IOS graph file or a built-in model name), built with `options` "
        "(see ios.build).");
  m.def("build_buckets", &build_buckets, nb::arg("model"), nb::arg("options"), nb::arg("batches"),
        nb::arg("weights") = "", "One engine of `model` per batch size in `batches` (see ios.build).");
  m.def("load_buckets", &load_buckets, nb::arg("path"), nb::arg("device") = "", nb::arg("kernel_cache") = "",
        nb::arg("verbose") = false, "Batch buckets from their file.");
  m.def("plan_file_kind", &plan_file_kind, nb::arg("path"),
        "'engine' (one plan) or 'buckets' (several batch sizes); raises for anything else.");
  m.def("load", &load, nb::arg("path"), nb::arg("device") = "", nb::arg("kernel_cache") = "",
        nb::arg("verbose") = false, "An engine from a plan file; device '' picks the GPU where there is one.");
  m.def(
      "_data_pointer", [](const AnyArray& a) { return reinterpret_cast<uintptr_t>(a.data()); }, nb::arg("array"),
      "The address DLPack hands the engine for `array`: the tests check that no copy is made.");
  m.def("gpu_present", &engine::gpu_present, "Whether this build has the GPU runtime and the machine a GPU.");
  m.def(
      "has_gpu_runtime",
      [] {
#ifdef IOS_WITH_RUNTIME
        return true;
#else
        return false;
#endif
      },
      "Whether this build was compiled with the cuDNN runtime.");
  m.def(
      "models",
      [] {
        std::vector<std::pair<std::string, std::string>> names;
        for (const models::ModelInfo& info : models::model_list()) names.emplace_back(info.name, info.description);
        return names;
      },
      "The built-in networks: (name, description) pairs.");
}

}  // namespace ios::python
