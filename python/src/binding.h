// What the extension module's files share: engine errors as Python's `ios.Error`, and the conversions
// from Python objects (build options as a dict, arrays as DLPack tensors) to the engine API's types.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/engine.h"

namespace ios::python {

namespace nb = nanobind;

// Raised as `ios.Error` (a RuntimeError) with the engine's message.
class Error : public std::runtime_error {
 public:
  explicit Error(const Status& s) : std::runtime_error(s.message()) {}
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

inline void check(const Status& s) {
  if (!s.is_ok()) throw Error(s);
}
template <typename T>
T value_or_throw(Expected<T> e) {
  if (!e.has_value()) throw Error(e.status());
  return std::move(e).value();
}

// The keyword options of `ios.build` (python/ios/__init__.py names and documents each) as the engine's
// build options; an unknown key or a value of the wrong type raises, naming the option.
engine::BuildOptions build_options(const nb::dict& options);

// N x C x H x W of an engine's input or output, batch included.
std::vector<int64_t> input_dims(const engine::Engine& e);
std::vector<int64_t> output_dims(const engine::Engine& e);

using AnyArray = nb::ndarray<>;
// A float32, C-contiguous array of `dims` on the CUDA device `gpu` (the data pointer, not a copy); raises
// naming `what` (input, output) and what differs.
float* device_data(const AnyArray& a, const std::vector<int64_t>& dims, int gpu, const char* what);
// A host array's floats, checked against `dims` (any float type; converted to float32).
std::vector<float> host_floats(const nb::ndarray<float, nb::c_contig, nb::device::cpu>& a,
                               const std::vector<int64_t>& dims);
// A NumPy array owning `values`, shaped `dims`.
nb::ndarray<nb::numpy, float> numpy_array(std::vector<float> values, const std::vector<int64_t>& dims);

}  // namespace ios::python
