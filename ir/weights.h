// Deterministic, seeded parameters. The CPU reference executor and the GPU runtime both take their
// weights from here, so their outputs can be compared bit-for-bit in the inputs.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "ir/graph.h"

namespace ios::ir {

struct ParamTensor {
  std::vector<float> weight;  // conv: [out][in/groups][kh][kw]; linear: [out][in]
  std::vector<float> bias;    // [out], empty when the op has no bias
};

class Weights {
 public:
  // One entry per node and per step (a non-sequential op has one step; ops without parameters have
  // empty tensors).
  std::vector<std::vector<ParamTensor>> per_node;
  uint64_t seed = 0;

  const ParamTensor& at(NodeId node, int step = 0) const {
    return per_node[static_cast<size_t>(node)][static_cast<size_t>(step)];
  }
  size_t parameter_count() const;
};

// He-uniform weights (bound sqrt(6 / fan_in)) and small biases, a pure function of (seed, node, step,
// element): any two processes that build the same graph get the same numbers.
Weights make_weights(const Graph& g);
Weights make_weights(const Graph& g, uint64_t seed);

// A deterministic input batch (uniform in [-1, 1]).
std::vector<float> make_input(const Shape& shape, int batch, uint64_t seed);

// Raw little-endian float32 file: magic, node count, then every tensor with its length.
Status save_weights(const Weights& w, const std::string& path);
// The same record appended to `out` (an engine plan file embeds it); `path` names the file in errors.
Status write_weights(const Weights& w, AtomicFile& out, const std::string& path);
// Checks the file against the graph's parameter shapes and names the first mismatch.
Expected<Weights> load_weights(const Graph& g, const std::string& path);
Expected<Weights> read_weights(const Graph& g, std::istream& in, const std::string& source_name);
// One record from `in`, leaving what follows it (a file of several engine plans holds several).
Expected<Weights> read_weights_record(const Graph& g, std::istream& in, const std::string& source_name);

}  // namespace ios::ir
