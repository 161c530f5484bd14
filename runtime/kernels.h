// The few kernels cuDNN does not provide: gathering op inputs (sums of channel slices, concats),
// pooling with ceil mode and PyTorch's divisor, bias + activation, element-wise products.
#pragma once

#include <cuda_runtime.h>

namespace ios::rt {

// A channel slice of a batch-major NCHW buffer with `channels` channels.
struct SliceRef {
  const float* base;
  int channels;  // channels of the buffer (batch stride = channels * hw)
  int begin;     // first channel of the slice
};

constexpr int kMaxGatherSources = 8;

// dst[:, dst_begin : dst_begin + count] (dst has dst_channels) = (accumulate ? dst : 0) + sum of sources.
void launch_gather(const SliceRef* sources, int num_sources, float* dst, int dst_channels, int dst_begin, int count,
                   int hw, int batch, bool accumulate, cudaStream_t stream);

// dst *= src elementwise over n elements.
void launch_multiply(float* dst, const float* src, long long n, cudaStream_t stream);

// x = act(x + bias[c]) over `channels` channels per sample, samples `batch_stride` floats apart;
// act: 0 none, 1 relu, 2 sigmoid, 3 tanh; bias may be null.
void launch_bias_act(float* x, const float* bias, int channels, int hw, int batch, long long batch_stride, int act,
                     cudaStream_t stream);

struct PoolParams {
  int kh, kw, sh, sw, ph, pw;
  bool is_max;
};
// Input and output are channel slices: samples in_batch_stride / out_batch_stride floats apart.
void launch_pool(const float* in, long long in_batch_stride, float* out, long long out_batch_stride, int batch,
                 int channels, int in_h, int in_w, int out_h, int out_w, const PoolParams& p, cudaStream_t stream);

// Keeps every SM busy for about `ms` milliseconds, so that clocks have ramped before timing.
void launch_spin(double ms, cudaStream_t stream);

}  // namespace ios::rt
