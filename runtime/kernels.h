// The few kernels cuDNN does not provide: gathering op inputs (sums of channel slices, concats),
// pooling with ceil mode and PyTorch's divisor, resizing, padding, channel shuffles, bias + activation, per-channel
// affines, element-wise products. Each is templated on the storage type (float, half, bfloat16; math in float) and
// reads any layout: a tensor is a pointer to its first element and element strides (layout is just strides).
#pragma once

#include <cuda_runtime.h>

#include "common/element_types.h"
#include "ir/ops/pad.h"
#include "ir/ops/resize.h"
#include "ir/ops/space_depth.h"

namespace ios::rt {

// A batch of `channels` x `hw` pixels: element (b, c, p) at data[b * n + c * c_stride + p * p_stride].
// Rows of a pooled image are `w * p_stride` apart.
struct DevTensor {
  void* data;
  long long n, c_stride, p_stride;
};

// The extent one launch covers and the order threads walk it: channels innermost for NHWC, so
// neighbouring threads touch neighbouring addresses in either layout.
struct Extent {
  int batch, channels, hw;
  bool channels_inner;
};

constexpr int kMaxGatherSources = 8;

// dst = (accumulate ? dst : 0) + sum of sources.
void launch_gather(DataType t, const DevTensor* sources, int num_sources, const DevTensor& dst, const Extent& e,
                   bool accumulate, cudaStream_t stream);

// Between the caller's float32 tensors (packed NCHW, batch x channels x hw) and the storage type at any
// strides: an engine's inputs and outputs.
void launch_from_float(DataType t, const float* src, const DevTensor& dst, const Extent& e, cudaStream_t stream);
void launch_to_float(DataType t, const DevTensor& src, float* dst, const Extent& e, cudaStream_t stream);

// dst = a * b elementwise; dst may be a (in place). A tensor with p_stride 0 repeats one value per channel.
void launch_multiply(DataType t, const DevTensor& dst, const DevTensor& a, const DevTensor& b, const Extent& e,
                     cudaStream_t stream);

// x = act(x + bias[c]); act: 0 none, 1 relu, 2 sigmoid, 3 tanh, 4 relu6; bias (storage type) may be null.
void launch_bias_act(DataType t, const DevTensor& x, const void* bias, const Extent& e, int act, cudaStream_t stream);

// y = act(x * scale[c] + bias[c]) (a per-channel affine: BatchNorm without a convolution to fold into);
// scale and bias in the storage type, bias may be null.
void launch_scale_bias_act(DataType t, const DevTensor& x, const DevTensor& y, const void* scale, const void* bias,
                           const Extent& e, int act, cudaStream_t stream);

struct PoolParams {
  int kh, kw, sh, sw, ph, pw;
  int dh, dw;  // max pooling's dilation (1: adjacent taps)
  bool is_max;
  bool count_include_pad;
};
struct PoolShape {
  int in_h, in_w, out_h, out_w;
};
// `e.hw` is the output's pixel count.
void launch_pool(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const PoolShape& s,
                 const PoolParams& p, cudaStream_t stream);

// Resize (ir/ops/resize.h); `e.hw` is the output's pixel count.
struct ResizeArgs {
  ir::ResizeMode mode;
  ir::ResizeCoord coord;
  ir::ResizeRound round;
  int in_h, in_w, out_h, out_w;
  float inv_scale_h, inv_scale_w;
};
void launch_resize(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const ResizeArgs& r,
                   cudaStream_t stream);

// Padding (ir/ops/pad.h); `e.hw` is the output's pixel count.
struct PadArgs {
  ir::PadMode mode;
  int top, left, in_h, in_w, out_w;
  float value;
};
void launch_pad(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const PadArgs& a,
                cudaStream_t stream);

// Channel shuffle (ir/ops/channel_shuffle.h): out channel c = in channel shuffle_source(c); `in` and
// `out` are distinct buffers.
void launch_channel_shuffle(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups,
                            cudaStream_t stream);

// Block moves between space and channels (ir/ops/space_depth.h); `e` is the output's extent, `shallow_c`
// the channels of the spatial side; `in` and `out` are distinct buffers.
void launch_space_depth(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e,
                        const ir::SpaceDepthAttrs& a, int shallow_c, int out_w, int in_w, cudaStream_t stream);

// Layer normalization over each pixel's channels (ir/ops/channel_norm.h); scale and shift hold
// e.channels values in the storage type.
void launch_channel_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                         const void* shift, float eps, cudaStream_t stream);

// The 1-D convolution along channels of ir/ops/channel_conv.h; `taps` holds `kernel` values and `bias` one
// (or is null), in the storage type.
void launch_channel_conv(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* taps,
                         int kernel, int pad, const void* bias, cudaStream_t stream);

// The softmax across `groups` groups of channels of ir/ops/channel_softmax.h.
void launch_channel_softmax(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups,
                            cudaStream_t stream);

// y = x >= 0 ? x : slope[c] * x (ir/ops/prelu.h); `slope` holds e.channels values in the storage type.
void launch_prelu(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* slope,
                  cudaStream_t stream);

// Group normalization (ir/ops/group_norm.h): each sample's `groups` groups of e.channels / groups channels
// normalized over their channels and pixels (their mean subtracted when `center`), then scaled and shifted
// per channel (storage type).
void launch_group_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups, bool center,
                       const void* scale, const void* shift, float eps, cudaStream_t stream);

// Keeps every SM busy for about `ms` milliseconds, so that clocks have ramped before timing.
void launch_spin(double ms, cudaStream_t stream);
// One thread that returns at once: the lead node of a timed stage's graph (ExecutorOptions::lead_kernel)
// and the kernel of the graph it is measured against (TimingStream::stage_boundary).
void launch_empty(cudaStream_t stream);
// One thread that spins for *cycles clock cycles, read when it runs: a CUDA graph replays it with
// whatever the host wrote there last (chaos mode's random delays).
void launch_delay(const long long* cycles, cudaStream_t stream);
// Reads the first bytes / 16 * 16 bytes at `data` (16-byte aligned) into the L2, writing nothing.
void launch_l2_touch(const void* data, size_t bytes, cudaStream_t stream);
// Byte ranges (16-byte aligned; a last partial 16 bytes is left out) one prefetch node asks the L2 to
// fetch, returning without waiting for them: bulk prefetches from 8 blocks on sm_90, prefetch
// instructions elsewhere. Nothing is written. Unlike launch_l2_touch, which loads every word with a
// grid of blocks and so holds SMs until the data has arrived, the node occupies 8 blocks briefly and
// leaves the SMs to the stage it runs beside.
constexpr int kMaxPrefetchRanges = 16;
struct PrefetchRanges {
  const char* data[kMaxPrefetchRanges];
  unsigned long long bytes[kMaxPrefetchRanges];
  int count;
};
// The prefetch as a kernel node of `graph` after `deps`.
cudaError_t add_l2_prefetch_node(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t num_deps,
                                 const PrefetchRanges& ranges);
// Clock cycles per microsecond of the current device.
double device_cycles_per_us();

}  // namespace ios::rt
