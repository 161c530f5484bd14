// The CPU reference executor (Eigen): runs any graph at any batch size in float32 (double
// accumulation in reductions) and serves as the numerical oracle for the GPU runtime.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/weights.h"

namespace ios::reference {

// Batch-major NCHW float32.
struct Tensor {
  int batch = 0;
  ir::Shape shape;
  std::vector<float> data;

  Tensor() = default;
  Tensor(int n, ir::Shape s) : batch(n), shape(s), data(static_cast<size_t>(n) * static_cast<size_t>(s.numel()), 0.f) {}
  float* sample(int b) { return data.data() + static_cast<size_t>(b) * static_cast<size_t>(shape.numel()); }
  const float* sample(int b) const { return data.data() + static_cast<size_t>(b) * static_cast<size_t>(shape.numel()); }
};

struct RunOptions {
  bool keep_all = false;  // keep every node's output (tests); otherwise freed after the last use
};

// Outputs indexed by node id; with keep_all=false only the graph output is non-empty.
Expected<std::vector<Tensor>> run_all(const ir::Graph& g, const ir::Weights& w, const Tensor& input,
                                      RunOptions options = {});
Expected<Tensor> run(const ir::Graph& g, const ir::Weights& w, const Tensor& input);

// Relative L2 error ||a - b|| / ||b||.
double relative_l2_error(const std::vector<float>& a, const std::vector<float>& b);

// Building blocks, exposed for golden tests and for evaluating merged convolutions.
Tensor apply_step(const ir::SubOp& step, const ir::ParamTensor& params, const Tensor& in, const ir::Shape& out_shape);

}  // namespace ios::reference
