// Arrays between Python and the engine: device tensors are checked and passed by pointer (zero copy);
// host arrays are copied.
#include <sstream>

#include "binding.h"

namespace ios::python {

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << (dims.size() == 1 ? ",)" : ")");
  return s.str();
}

template <typename Array>
std::vector<int64_t> array_dims(const Array& a) {
  std::vector<int64_t> d(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) d[i] = int64_t(a.shape(i));
  return d;
}

void check_dims(const std::vector<int64_t>& got, const std::vector<int64_t>& want, const char* what) {
  if (got != want)
    throw Error(std::string(what) + " has shape " + dims_text(got) + ", the engine takes " + dims_text(want) +
                " (batch, channels, height, width)");
}

}  // namespace

std::vector<int64_t> input_dims(const engine::Engine& e) {
  const ir::Shape s = e.graph().input_shape();
  return {e.config().batch, s.c, s.h, s.w};
}

std::vector<int64_t> output_dims(const engine::Engine& e) {
  const ir::Shape s = e.graph().output_shape();
  return {e.config().batch, s.c, s.h, s.w};
}

float* device_data(const AnyArray& a, const std::vector<int64_t>& dims, int gpu, const char* what) {
  if (a.device_type() != nb::device::cuda::value)
    throw Error(std::string(what) + " is not on a CUDA device: enqueue takes GPU tensors (use run for host arrays)");
  if (a.device_id() != gpu)
    throw Error(std::string(what) + " is on cuda:" + std::to_string(a.device_id()) +
                ", the engine runs on cuda:" + std::to_string(gpu));
  if (a.dtype() != nb::dtype<float>()) throw Error(std::string(what) + " must be float32");
  check_dims(array_dims(a), dims, what);
  int64_t expected_stride = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected_stride)
      throw Error(std::string(what) + " must be contiguous (NCHW, row-major): make it so with .contiguous()");
    expected_stride *= int64_t(a.shape(i));
  }
  return static_cast<float*>(a.data());
}

std::vector<float> host_floats(const nb::ndarray<float, nb::c_contig, nb::device::cpu>& a,
                               const std::vector<int64_t>& dims) {
  check_dims(array_dims(a), dims, "input");
  return std::vector<float>(a.data(), a.data() + a.size());
}

nb::ndarray<nb::numpy, float> numpy_array(std::vector<float> values, const std::vector<int64_t>& dims) {
  auto* owned = new std::vector<float>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  std::vector<size_t> shape(dims.begin(), dims.end());
  return nb::ndarray<nb::numpy, float>(owned->data(), shape.size(), shape.data(), owner);
}

}  // namespace ios::python
