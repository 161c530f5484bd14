// Our depthwise convolution: one filter of k x k per channel (groups = channels, one output channel per
// input channel), with the epilogue fused: y = act(conv(x) + bias[c]) + z. cuDNN runs these as grouped
// convolutions, slowest in strict fp32 (MobileNet V2 fp32 ran at half PyTorch's speed on the H200 with
// cuDNN's engines alone), so this kernel competes with cuDNN's engines in tuning (conv_own.cc).
//
// Each thread computes `rows` outputs of one channel down one output column, reading each input row of
// their windows once; with `pairs`, two neighbouring channels at once through 2-element vector loads
// (channels innermost and contiguous, NHWC). Neighbouring threads take neighbouring channels (NHWC) or
// columns (NCHW), so their loads coalesce in either layout.
#pragma once

#include <cuda_runtime.h>

#include "common/element_types.h"

namespace ios::rt {

struct DepthwiseArgs {
  const void* x;
  const void* w;     // channels x k x k in the storage type
  const void* bias;  // channels values in the storage type, or null
  void* y;
  const void* z;  // a residual added after the activation, or null
  // Element strides (n, c, h, w) of x, y and z (slices of wider buffers allowed).
  long long xs[4], ys[4], zs[4];
  int batch, channels, in_h, in_w, out_h, out_w;
  int kernel, stride, pad_h, pad_w;
  int act;              // an ir::Act
  bool channels_inner;  // NHWC: neighbouring threads take neighbouring channels
};

// Outputs per thread down a column that the kernel is compiled for.
inline constexpr int kDepthwiseRows[] = {1, 2, 4};

// Whether the kernel is compiled for this filter: square k x k with k in {3, 5, 7}, stride 1 or 2 both ways
// (dilation 1; the caller checks the rest of the convolution).
bool depthwise_compiled_for(int kernel_h, int kernel_w, int stride_h, int stride_w);
// Whether `a` may run with channel pairs: channels innermost and contiguous in x, y and z, an even number of
// them, and every pointer and stride a whole number of pairs (pairs are read as one aligned vector).
bool depthwise_pairs_fit(const DepthwiseArgs& a, size_t element_bytes);

void launch_depthwise(DataType t, const DepthwiseArgs& a, int rows, bool pairs, cudaStream_t stream);

}  // namespace ios::rt
