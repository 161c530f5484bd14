#include <algorithm>
#include <cfloat>

#include "runtime/reductions.h"
#include "runtime/storage.cuh"

namespace ios::rt {

namespace {

// A block of 256 threads reduces a chunk of channels over a range of pixels: in channels-last layout 32
// channels (threadIdx.x, neighbouring addresses) by 8 pixel rows, else 8 channels (threadIdx.y) by 32
// pixels (threadIdx.x, neighbouring addresses).
constexpr int kPoolThreads = 256;
// Enough blocks to fill an H200 (132 SMs) several times over; fewer when each would get under
// kMinPixelsPerSplit pixels.
constexpr int kPoolTargetBlocks = 512;
constexpr int kMinPixelsPerSplit = 64;

struct PoolSplit {
  int channels_per_block, chunks, splits, per_split;
};

PoolSplit pool_split(const Extent& e) {
  PoolSplit s{};
  s.channels_per_block = e.channels_inner ? 32 : 8;
  s.chunks = (e.channels + s.channels_per_block - 1) / s.channels_per_block;
  const long long others = static_cast<long long>(s.chunks) * e.batch;
  const int most = std::max(1, (e.hw + kMinPixelsPerSplit - 1) / kMinPixelsPerSplit);
  const long long wanted = std::max<long long>(1, kPoolTargetBlocks / others);
  const int splits = static_cast<int>(std::min<long long>(most, wanted));
  s.per_split = (e.hw + splits - 1) / splits;
  s.splits = (e.hw + s.per_split - 1) / s.per_split;
  return s;
}

enum class Reduce { kSum, kMax, kSumOfSquares };

__device__ float combine(Reduce r, float acc, float v) {
  return r == Reduce::kMax ? fmaxf(acc, v) : acc + (r == Reduce::kSumOfSquares ? v * v : v);
}

// Each (sample, channel) reduced over the block's pixels: into partial[sample][split][channel] where given,
// else (one split) the mean or the maximum into `out`.
template <typename T>
__global__ void global_reduce_kernel(DevTensor in, DevTensor out, Extent e, PoolSplit s, Reduce r, float* partial) {
  __shared__ float part[kPoolThreads];
  const bool inner = e.channels_inner;
  const int lanes = inner ? 8 : 32;  // threads along the pixels
  const int channel_lane = inner ? threadIdx.x : threadIdx.y, pixel_lane = inner ? threadIdx.y : threadIdx.x;
  const int b = blockIdx.x / s.chunks, split = blockIdx.y;
  const int c = (blockIdx.x % s.chunks) * s.channels_per_block + channel_lane;
  const int begin = split * s.per_split, end = min(e.hw, begin + s.per_split);
  float acc = r == Reduce::kMax ? -FLT_MAX : 0.f;
  if (c < e.channels) {
    const T* src = static_cast<const T*>(in.data) + b * in.n + c * in.c_stride;
    for (int p = begin + pixel_lane; p < end; p += lanes)
      acc = combine(r, acc, to_float(src[static_cast<long long>(p) * in.p_stride]));
  }
  const int me = threadIdx.y * blockDim.x + threadIdx.x;
  part[me] = acc;
  __syncthreads();
  if (pixel_lane != 0 || c >= e.channels) return;
  for (int l = 1; l < lanes; ++l) {
    const float v = part[inner ? l * blockDim.x + threadIdx.x : threadIdx.y * blockDim.x + l];
    acc = r == Reduce::kMax ? fmaxf(acc, v) : acc + v;
  }
  if (partial) {
    partial[(static_cast<long long>(b) * s.splits + split) * e.channels + c] = acc;
  } else {
    static_cast<T*>(out.data)[b * out.n + c * out.c_stride] =
        from_float<T>(r == Reduce::kMax ? acc : acc / float(e.hw));
  }
}

// One thread per (sample, channel): the splits' partial results, combined.
template <typename T>
__global__ void global_pool_finish_kernel(const float* partial, DevTensor out, Extent e, int splits, bool is_max) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(e.batch) * e.channels) return;
  const int b = int(i / e.channels), c = int(i % e.channels);
  float acc = is_max ? -FLT_MAX : 0.f;
  for (int s = 0; s < splits; ++s) {
    const float v = partial[(static_cast<long long>(b) * splits + s) * e.channels + c];
    acc = is_max ? fmaxf(acc, v) : acc + v;
  }
  static_cast<T*>(out.data)[b * out.n + c * out.c_stride] = from_float<T>(is_max ? acc : acc / float(e.hw));
}

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kGainThreads = 256;

// One block per sample: each channel's L2 norm (its splits' sums of squares), their mean over the channels,
// and each channel's gain norm / (mean + eps) into gain[sample][channel].
__global__ void response_gain_kernel(const float* partial, float* gain, Extent e, int splits, float eps) {
  __shared__ float sums[kGainThreads / 32];
  const int b = blockIdx.x;
  float mine = 0.f;
  for (int c = threadIdx.x; c < e.channels; c += kGainThreads) {
    float sq = 0.f;
    for (int s = 0; s < splits; ++s) sq += partial[(static_cast<long long>(b) * splits + s) * e.channels + c];
    const float norm = sqrtf(sq);
    gain[static_cast<long long>(b) * e.channels + c] = norm;
    mine += norm;
  }
  mine = warp_sum(mine);
  if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = mine;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kGainThreads / 32; ++w) total += sums[w];
  const float inv = 1.f / (total / float(e.channels) + eps);
  for (int c = threadIdx.x; c < e.channels; c += kGainThreads) gain[static_cast<long long>(b) * e.channels + c] *= inv;
}

// y = x * gain[sample][c] * scale[c] + shift[c], one thread per element.
template <typename T>
__global__ void response_apply_kernel(DevTensor in, DevTensor out, Extent e, const float* gain, const T* scale,
                                      const T* shift) {
  const long long count = static_cast<long long>(e.batch) * e.channels * e.hw;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int b = int(i / (static_cast<long long>(e.channels) * e.hw));
    const long long j = i % (static_cast<long long>(e.channels) * e.hw);
    const int c = e.channels_inner ? int(j % e.channels) : int(j / e.hw);
    const int p = e.channels_inner ? int(j / e.channels) : int(j % e.hw);
    const float v = to_float(static_cast<const T*>(in.data)[b * in.n + c * in.c_stride + p * in.p_stride]);
    static_cast<T*>(out.data)[b * out.n + c * out.c_stride + p * out.p_stride] =
        from_float<T>(v * gain[static_cast<long long>(b) * e.channels + c] * to_float(scale[c]) + to_float(shift[c]));
  }
}

constexpr int kRowsPerBlock = 8;  // warps per block, a pixel each

// A warp normalizes one pixel: its lanes read along the channels (contiguous in channels-last layout) for
// the mean, again (from L1) for the variance of the deviations, and a third time to write.
template <typename T>
__global__ void channel_norm_rows_kernel(DevTensor in, DevTensor out, Extent e, const T* scale, const T* shift,
                                         float eps) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= static_cast<long long>(e.batch) * e.hw) return;
  const int b = int(row / e.hw), p = int(row % e.hw);
  const T* x = static_cast<const T*>(in.data) + b * in.n + p * in.p_stride;
  T* y = static_cast<T*>(out.data) + b * out.n + p * out.p_stride;
  float sum = 0.f;
  for (int c = threadIdx.x; c < e.channels; c += 32) sum += to_float(x[c * in.c_stride]);
  const float mean = warp_sum(sum) / float(e.channels);
  float dev = 0.f;
  for (int c = threadIdx.x; c < e.channels; c += 32) {
    const float d = to_float(x[c * in.c_stride]) - mean;
    dev += d * d;
  }
  const float inv = rsqrtf(warp_sum(dev) / float(e.channels) + eps);
  for (int c = threadIdx.x; c < e.channels; c += 32) {
    const float v = (to_float(x[c * in.c_stride]) - mean) * inv;
    y[c * out.c_stride] = from_float<T>(v * to_float(scale[c]) + to_float(shift[c]));
  }
}

}  // namespace

size_t global_pool_scratch_bytes(const Extent& e) {
  const PoolSplit s = pool_split(e);
  return s.splits > 1 ? sizeof(float) * size_t(e.batch) * size_t(s.splits) * size_t(e.channels) : 0;
}

void launch_global_pool(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, bool is_max,
                        void* scratch, cudaStream_t stream) {
  const PoolSplit s = pool_split(e);
  float* partial = s.splits > 1 ? static_cast<float*>(scratch) : nullptr;
  const dim3 grid(unsigned(s.chunks * e.batch), unsigned(s.splits)), block(32, 8);
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    global_reduce_kernel<T><<<grid, block, 0, stream>>>(in, out, e, s, is_max ? Reduce::kMax : Reduce::kSum, partial);
    if (!partial) return;
    const long long outputs = static_cast<long long>(e.batch) * e.channels;
    global_pool_finish_kernel<T>
        <<<unsigned((outputs + 255) / 256), 256, 0, stream>>>(partial, out, e, s.splits, is_max);
  });
}

size_t response_norm_scratch_bytes(const Extent& e) {
  const PoolSplit s = pool_split(e);
  return sizeof(float) * size_t(e.batch) * size_t(e.channels) * (size_t(s.splits) + 1);
}

void launch_response_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                          const void* shift, float eps, void* scratch, cudaStream_t stream) {
  const PoolSplit s = pool_split(e);
  float* partial = static_cast<float*>(scratch);
  float* gain = partial + size_t(e.batch) * size_t(s.splits) * size_t(e.channels);
  const dim3 grid(unsigned(s.chunks * e.batch), unsigned(s.splits)), block(32, 8);
  const long long count = static_cast<long long>(e.batch) * e.channels * e.hw;
  const auto blocks = static_cast<unsigned>(std::min<long long>((count + 255) / 256, 65535));
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    global_reduce_kernel<T><<<grid, block, 0, stream>>>(in, DevTensor{}, e, s, Reduce::kSumOfSquares, partial);
    response_gain_kernel<<<unsigned(e.batch), kGainThreads, 0, stream>>>(partial, gain, e, s.splits, eps);
    response_apply_kernel<T>
        <<<blocks, 256, 0, stream>>>(in, out, e, gain, static_cast<const T*>(scale), static_cast<const T*>(shift));
  });
}

void launch_channel_norm_rows(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                              const void* shift, float eps, cudaStream_t stream) {
  const long long rows = static_cast<long long>(e.batch) * e.hw;
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    channel_norm_rows_kernel<T><<<blocks, dim3(32, kRowsPerBlock), 0, stream>>>(
        in, out, e, static_cast<const T*>(scale), static_cast<const T*>(shift), eps);
  });
}

}  // namespace ios::rt
