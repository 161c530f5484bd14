#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <map>
#include <mutex>

#include "ir/activation.h"
#include "ir/ops/channel_shuffle.h"
#include "ir/ops/pad.h"
#include "ir/ops/resize.h"
#include "ir/ops/space_depth.h"
#include "runtime/kernels.h"
#include "runtime/storage.cuh"

namespace ios::rt {

namespace {

struct Coord {
  int b, c, p;
};

__device__ Coord coord(long long i, const Extent& e) {
  if (e.channels_inner)
    return Coord{int(i / (static_cast<long long>(e.hw) * e.channels)), int(i % e.channels),
                 int((i / e.channels) % e.hw)};
  return Coord{int(i / (static_cast<long long>(e.hw) * e.channels)), int((i / e.hw) % e.channels), int(i % e.hw)};
}

template <typename T>
__device__ T& at(const DevTensor& t, const Coord& k) {
  return static_cast<T*>(t.data)[k.b * t.n + k.c * t.c_stride + k.p * t.p_stride];
}

__host__ __device__ long long total(const Extent& e) { return static_cast<long long>(e.batch) * e.channels * e.hw; }

#define GRID_STRIDE_LOOP(i, n)                                                               \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

struct GatherArgs {
  DevTensor src[kMaxGatherSources];
  int num_sources;
};

template <typename T>
__global__ void gather_kernel(GatherArgs args, DevTensor dst, Extent e, bool accumulate) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    float acc = 0.f;
    for (int s = 0; s < args.num_sources; ++s) acc += to_float(at<T>(args.src[s], k));
    T& out = at<T>(dst, k);
    out = from_float<T>(accumulate ? to_float(out) + acc : acc);
  }
}

// dst = src for channel-innermost tensors whose channels are contiguous: each row (one pixel's channels)
// copied in 16-byte vectors. The general gather kernel divides 64-bit indexes per element and ran an
// Inception V3 tf32 slice copy in 3.2 us where cuDNN's own slice copy takes 2.0 (H100).
__global__ void copy_rows_kernel(const uint4* src, long long src_n, long long src_row, uint4* dst, long long dst_n,
                                 long long dst_row, int hw, int row_vectors, long long vectors) {
  GRID_STRIDE_LOOP(i, vectors) {
    const long long row = i / row_vectors;
    const int v = int(i - row * row_vectors);
    const long long b = row / hw, p = row - b * hw;
    dst[b * dst_n + p * dst_row + v] = src[b * src_n + p * src_row + v];
  }
}

// Whether a copy of `e` from `src` to `dst` can go by copy_rows_kernel: channels innermost and contiguous in
// both, and every row start 16-byte aligned.
bool copies_by_rows(const DevTensor& src, const DevTensor& dst, const Extent& e, size_t element_bytes) {
  auto aligned = [&](const DevTensor& t) {
    return reinterpret_cast<uintptr_t>(t.data) % 16 == 0 && t.c_stride == 1 && (t.p_stride * element_bytes) % 16 == 0 &&
           (e.batch == 1 || (t.n * element_bytes) % 16 == 0);
  };
  return e.channels_inner && (e.channels * element_bytes) % 16 == 0 && aligned(src) && aligned(dst);
}

// The packed NCHW index of `k`.
__device__ long long packed_index(const Coord& k, const Extent& e) {
  return (static_cast<long long>(k.b) * e.channels + k.c) * e.hw + k.p;
}

template <typename T>
__global__ void from_float_kernel(const float* src, DevTensor dst, Extent e) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    at<T>(dst, k) = from_float<T>(src[packed_index(k, e)]);
  }
}

template <typename T>
__global__ void to_float_kernel(DevTensor src, float* dst, Extent e) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    dst[packed_index(k, e)] = to_float(at<T>(src, k));
  }
}

template <typename T>
__global__ void multiply_kernel(DevTensor dst, DevTensor a, DevTensor b, Extent e) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    at<T>(dst, k) = from_float<T>(to_float(at<T>(a, k)) * to_float(at<T>(b, k)));
  }
}

// `act` is an ir::Act (act_code): the activation table's own expression, compiled here.
__device__ float activate(float v, int act) { return ios::ir::activate(static_cast<ios::ir::Act>(act), v); }

template <typename T>
__global__ void bias_act_kernel(DevTensor x, const T* bias, Extent e, int act) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    T& ref = at<T>(x, k);
    float v = to_float(ref);
    if (bias) v += to_float(bias[k.c]);
    ref = from_float<T>(activate(v, act));
  }
}

template <typename T>
__global__ void scale_bias_act_kernel(DevTensor x, DevTensor y, const T* scale, const T* bias, Extent e, int act) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    float v = to_float(at<T>(x, k)) * to_float(scale[k.c]);
    if (bias) v += to_float(bias[k.c]);
    at<T>(y, k) = from_float<T>(activate(v, act));
  }
}

template <typename T>
__global__ void pool_kernel(DevTensor in, DevTensor out, Extent e, PoolShape s, PoolParams p) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const int oy = k.p / s.out_w, ox = k.p % s.out_w;
    const T* src = static_cast<const T*>(in.data) + k.b * in.n + k.c * in.c_stride;
    int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    if (p.dh != 1 || p.dw != 1) {  // dilated: max only (ir::PoolAttrs), every tap inside the input
      float m = -FLT_MAX;
      for (int i = 0; i < p.kh; ++i)
        for (int j = 0; j < p.kw; ++j) {
          const int y = y0 + i * p.dh, x = x0 + j * p.dw;
          if (y >= 0 && y < s.in_h && x >= 0 && x < s.in_w)
            m = fmaxf(m, to_float(src[(static_cast<long long>(y) * s.in_w + x) * in.p_stride]));
        }
      at<T>(out, k) = from_float<T>(m);
      continue;
    }
    int y1 = min(y0 + p.kh, s.in_h + p.ph), x1 = min(x0 + p.kw, s.in_w + p.pw);
    const int padded_area = (y1 - y0) * (x1 - x0);
    y0 = max(y0, 0), x0 = max(x0, 0), y1 = min(y1, s.in_h), x1 = min(x1, s.in_w);
    const int divisor = p.count_include_pad ? padded_area : (y1 - y0) * (x1 - x0);
    float acc = p.is_max ? -FLT_MAX : 0.f;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const float v = to_float(src[(static_cast<long long>(y) * s.in_w + x) * in.p_stride]);
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
      }
    at<T>(out, k) = from_float<T>(p.is_max ? acc : acc / divisor);
  }
}

// `e.hw` is the output's pixel count; taps come from the op's own function (ir/ops/resize.h).
template <typename T>
__global__ void resize_kernel(DevTensor in, DevTensor out, Extent e, ResizeArgs r) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const int oy = k.p / r.out_w, ox = k.p % r.out_w;
    const ir::ResizeTap ty = ir::resize_tap(r.mode, r.coord, r.round, oy, r.in_h, r.out_h, r.inv_scale_h);
    const ir::ResizeTap tx = ir::resize_tap(r.mode, r.coord, r.round, ox, r.in_w, r.out_w, r.inv_scale_w);
    const T* src = static_cast<const T*>(in.data) + k.b * in.n + k.c * in.c_stride;
    auto px = [&](int y, int x) { return to_float(src[(static_cast<long long>(y) * r.in_w + x) * in.p_stride]); };
    const float top = px(ty.i0, tx.i0) * (1.f - tx.w1) + px(ty.i0, tx.i1) * tx.w1;
    const float bottom = px(ty.i1, tx.i0) * (1.f - tx.w1) + px(ty.i1, tx.i1) * tx.w1;
    at<T>(out, k) = from_float<T>(top * (1.f - ty.w1) + bottom * ty.w1);
  }
}

template <typename T>
__global__ void pad_kernel(DevTensor in, DevTensor out, Extent e, PadArgs a) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const int y = ir::pad_source(a.mode, k.p / a.out_w, a.top, a.in_h);
    const int x = ir::pad_source(a.mode, k.p % a.out_w, a.left, a.in_w);
    at<T>(out, k) = y < 0 || x < 0 ? from_float<T>(a.value) : at<T>(in, Coord{k.b, k.c, y * a.in_w + x});
  }
}

template <typename T>
__global__ void shuffle_kernel(DevTensor in, DevTensor out, Extent e, int groups) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const Coord src{k.b, ir::shuffle_source(k.c, e.channels, groups), k.p};
    at<T>(out, k) = at<T>(in, src);
  }
}

template <typename T>
__global__ void space_depth_kernel(DevTensor in, DevTensor out, Extent e, ir::SpaceDepthAttrs a, int shallow_c,
                                   int out_w, int in_w) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const ir::BlockSource src = ir::space_depth_source(a, shallow_c, k.c, k.p / out_w, k.p % out_w);
    at<T>(out, k) = at<T>(in, Coord{k.b, src.c, src.y * in_w + src.x});
  }
}

template <typename T>
__global__ void prelu_kernel(DevTensor in, DevTensor out, Extent e, const T* slope) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    const float x = to_float(at<T>(in, k));
    at<T>(out, k) = from_float<T>(x >= 0.f ? x : x * to_float(slope[k.c]));
  }
}

template <typename T>
__global__ void channel_conv_kernel(DevTensor in, DevTensor out, Extent e, const T* taps, int kernel, int pad,
                                    const T* bias) {
  GRID_STRIDE_LOOP(i, total(e)) {
    const Coord k = coord(i, e);
    float acc = bias ? to_float(*bias) : 0.f;
    for (int t = 0; t < kernel; ++t) {
      const int c = k.c + t - pad;
      if (c >= 0 && c < e.channels) acc += to_float(taps[t]) * to_float(at<T>(in, Coord{k.b, c, k.p}));
    }
    at<T>(out, k) = from_float<T>(acc);
  }
}

// One thread per position within a group (channel within the group, pixel): the softmax across the groups.
template <typename T>
__global__ void channel_softmax_kernel(DevTensor in, DevTensor out, Extent group, int groups) {
  GRID_STRIDE_LOOP(i, total(group)) {
    const Coord k = coord(i, group);
    float top = -INFINITY, sum = 0.f;
    for (int g = 0; g < groups; ++g) top = fmaxf(top, to_float(at<T>(in, Coord{k.b, k.c + g * group.channels, k.p})));
    for (int g = 0; g < groups; ++g) sum += expf(to_float(at<T>(in, Coord{k.b, k.c + g * group.channels, k.p})) - top);
    for (int g = 0; g < groups; ++g) {
      const Coord o{k.b, k.c + g * group.channels, k.p};
      at<T>(out, o) = from_float<T>(expf(to_float(at<T>(in, o)) - top) / sum);
    }
  }
}

// A block normalizes kNormPixels pixels: threadIdx.x picks the pixel (neighbouring pixels are neighbouring
// addresses in NCHW), threadIdx.y a slice of the channels; the mean, then the variance of the deviations,
// are reduced over the slices in shared memory. Three passes over the channels, the later ones from cache.
constexpr int kNormPixels = 32, kNormSlices = 8;

template <typename T>
__global__ void channel_norm_kernel(DevTensor in, DevTensor out, int batch, int channels, int hw, const T* scale,
                                    const T* shift, float eps) {
  __shared__ float partial[kNormSlices][kNormPixels];
  const long long i = static_cast<long long>(blockIdx.x) * kNormPixels + threadIdx.x;
  const bool live = i < static_cast<long long>(batch) * hw;
  const int b = live ? int(i / hw) : 0, p = live ? int(i % hw) : 0;
  auto reduce = [&](float v) {  // the sum over the slices, for this thread's pixel
    partial[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    float total = 0.f;
    for (int s = 0; s < kNormSlices; ++s) total += partial[s][threadIdx.x];
    __syncthreads();
    return total;
  };
  float sum = 0.f;
  if (live)
    for (int c = threadIdx.y; c < channels; c += kNormSlices) sum += to_float(at<T>(in, Coord{b, c, p}));
  const float mean = reduce(sum) / float(channels);
  float dev = 0.f;
  if (live)
    for (int c = threadIdx.y; c < channels; c += kNormSlices) {
      const float d = to_float(at<T>(in, Coord{b, c, p})) - mean;
      dev += d * d;
    }
  const float inv = rsqrtf(reduce(dev) / float(channels) + eps);
  if (!live) return;
  for (int c = threadIdx.y; c < channels; c += kNormSlices) {
    const float v = (to_float(at<T>(in, Coord{b, c, p})) - mean) * inv;
    at<T>(out, Coord{b, c, p}) = from_float<T>(v * to_float(scale[c]) + to_float(shift[c]));
  }
}

// One block normalizes one (sample, group): the group's channels and pixels are walked as one range of
// `count` elements (channels inner for NHWC, so neighbouring threads read neighbouring addresses), the mean,
// then the variance of the deviations, reduced over the block in shared memory; a third pass writes.
constexpr int kGroupNormThreads = 512;

template <typename T>
__global__ void group_norm_kernel(DevTensor in, DevTensor out, int groups, int per_group, int hw, bool channels_inner,
                                  bool center, const T* scale, const T* shift, float eps) {
  __shared__ float partial[kGroupNormThreads];
  const int b = blockIdx.x / groups, first = (blockIdx.x % groups) * per_group;
  const long long count = static_cast<long long>(per_group) * hw;
  auto element = [&](long long i) {
    return channels_inner ? Coord{b, first + int(i % per_group), int(i / per_group)}
                          : Coord{b, first + int(i / hw), int(i % hw)};
  };
  auto reduce = [&](float v) {  // the block's sum
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int s = kGroupNormThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    const float total = partial[0];
    __syncthreads();
    return total;
  };
  float sum = 0.f;
  for (long long i = threadIdx.x; i < count; i += kGroupNormThreads) sum += to_float(at<T>(in, element(i)));
  const float mean = reduce(sum) / float(count);
  float dev = 0.f;
  for (long long i = threadIdx.x; i < count; i += kGroupNormThreads) {
    const float d = to_float(at<T>(in, element(i))) - mean;
    dev += d * d;
  }
  const float inv = rsqrtf(reduce(dev) / float(count) + eps);
  const float offset = center ? mean : 0.f;
  for (long long i = threadIdx.x; i < count; i += kGroupNormThreads) {
    const Coord k = element(i);
    const float v = (to_float(at<T>(in, k)) - offset) * inv;
    at<T>(out, k) = from_float<T>(v * to_float(scale[k.c]) + to_float(shift[k.c]));
  }
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void delay_kernel(const long long* cycles) {
  const long long start = clock64();
  const long long wait = *cycles;
  while (clock64() - start < wait) {
  }
}

__device__ unsigned l2_touch_sink;

// Reads `words` 16-byte words so that they are in the L2 afterwards (loads cached in the L2 only). The
// XOR of the words is stored only when it equals a constant no caller relies on, so the compiler keeps
// the loads and nothing is written in practice.
__global__ void l2_touch_kernel(const uint4* data, long long words) {
  unsigned acc = 0;
  GRID_STRIDE_LOOP(i, words) {
    const uint4 v = __ldcg(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) l2_touch_sink = acc;
}

int blocks_for(long long n) {
  const long long b = (n + 255) / 256;
  return static_cast<int>(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

}  // namespace

void launch_gather(DataType t, const DevTensor* sources, int num_sources, const DevTensor& dst, const Extent& e,
                   bool accumulate, cudaStream_t stream) {
  size_t eb = 0;
  dispatch(t, [&](auto v) { eb = sizeof(v); });
  if (num_sources == 1 && !accumulate && copies_by_rows(sources[0], dst, e, eb)) {
    const long long per_vector = 16 / eb, row_vectors = e.channels / per_vector;
    const long long vectors = static_cast<long long>(e.batch) * e.hw * row_vectors;
    copy_rows_kernel<<<blocks_for(vectors), 256, 0, stream>>>(
        static_cast<const uint4*>(sources[0].data), sources[0].n / per_vector, sources[0].p_stride / per_vector,
        static_cast<uint4*>(dst.data), dst.n / per_vector, dst.p_stride / per_vector, e.hw, int(row_vectors), vectors);
    return;
  }
  GatherArgs args{};
  args.num_sources = num_sources;
  for (int s = 0; s < num_sources; ++s) args.src[s] = sources[s];
  dispatch(t, [&](auto v) {
    gather_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(args, dst, e, accumulate);
  });
}

void launch_from_float(DataType t, const float* src, const DevTensor& dst, const Extent& e, cudaStream_t stream) {
  dispatch(t, [&](auto v) { from_float_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(src, dst, e); });
}

void launch_to_float(DataType t, const DevTensor& src, float* dst, const Extent& e, cudaStream_t stream) {
  dispatch(t, [&](auto v) { to_float_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(src, dst, e); });
}

void launch_multiply(DataType t, const DevTensor& dst, const DevTensor& a, const DevTensor& b, const Extent& e,
                     cudaStream_t stream) {
  dispatch(t, [&](auto v) { multiply_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(dst, a, b, e); });
}

void launch_bias_act(DataType t, const DevTensor& x, const void* bias, const Extent& e, int act, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    bias_act_kernel<T><<<blocks_for(total(e)), 256, 0, stream>>>(x, static_cast<const T*>(bias), e, act);
  });
}

void launch_scale_bias_act(DataType t, const DevTensor& x, const DevTensor& y, const void* scale, const void* bias,
                           const Extent& e, int act, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    scale_bias_act_kernel<T><<<blocks_for(total(e)), 256, 0, stream>>>(x, y, static_cast<const T*>(scale),
                                                                       static_cast<const T*>(bias), e, act);
  });
}

void launch_pool(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const PoolShape& s,
                 const PoolParams& p, cudaStream_t stream) {
  dispatch(t, [&](auto v) { pool_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, s, p); });
}

void launch_resize(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const ResizeArgs& r,
                   cudaStream_t stream) {
  dispatch(t, [&](auto v) { resize_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, r); });
}

void launch_pad(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const PadArgs& a,
                cudaStream_t stream) {
  dispatch(t, [&](auto v) { pad_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, a); });
}

void launch_channel_shuffle(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups,
                            cudaStream_t stream) {
  dispatch(t,
           [&](auto v) { shuffle_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, groups); });
}

void launch_space_depth(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e,
                        const ir::SpaceDepthAttrs& a, int shallow_c, int out_w, int in_w, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    space_depth_kernel<decltype(v)><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, a, shallow_c, out_w, in_w);
  });
}

void launch_channel_conv(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* taps,
                         int kernel, int pad, const void* bias, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    channel_conv_kernel<T><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, static_cast<const T*>(taps), kernel,
                                                                     pad, static_cast<const T*>(bias));
  });
}

void launch_channel_softmax(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups,
                            cudaStream_t stream) {
  Extent group = e;  // the threads walk one group; each covers its position in every group
  group.channels = e.channels / groups;
  dispatch(t, [&](auto v) {
    channel_softmax_kernel<decltype(v)><<<blocks_for(total(group)), 256, 0, stream>>>(in, out, group, groups);
  });
}

void launch_prelu(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* slope,
                  cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    prelu_kernel<T><<<blocks_for(total(e)), 256, 0, stream>>>(in, out, e, static_cast<const T*>(slope));
  });
}

void launch_channel_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                         const void* shift, float eps, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    const long long pixels = static_cast<long long>(e.batch) * e.hw;
    const auto blocks = static_cast<unsigned>((pixels + kNormPixels - 1) / kNormPixels);
    channel_norm_kernel<T><<<blocks, dim3(kNormPixels, kNormSlices), 0, stream>>>(
        in, out, e.batch, e.channels, e.hw, static_cast<const T*>(scale), static_cast<const T*>(shift), eps);
  });
}

void launch_group_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, int groups, bool center,
                       const void* scale, const void* shift, float eps, cudaStream_t stream) {
  dispatch(t, [&](auto v) {
    using T = decltype(v);
    const auto blocks = static_cast<unsigned>(e.batch * groups);
    group_norm_kernel<T>
        <<<blocks, kGroupNormThreads, 0, stream>>>(in, out, groups, e.channels / groups, e.hw, e.channels_inner, center,
                                                   static_cast<const T*>(scale), static_cast<const T*>(shift), eps);
  });
}

namespace {

struct SpinShape {
  int khz = 0, sms = 0;
};

// Per device, asked once: the timers spin ahead of the candidates and stages they time, thousands of
// times a search, and asking the clock rate each time cost the host ~0.5 ms a spin (H100, CUDA 13.0,
// driver 580): Inception V3 tf32 timed its 920 tuning candidates in 3.5 s, 1.3 s with the shape kept.
SpinShape spin_shape() {
  static std::mutex mutex;
  static std::map<int, SpinShape> shapes;
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, added] = shapes.try_emplace(device);
  if (added) {
    cudaDeviceGetAttribute(&it->second.khz, cudaDevAttrClockRate, device);
    cudaDeviceGetAttribute(&it->second.sms, cudaDevAttrMultiProcessorCount, device);
  }
  return it->second;
}

}  // namespace

void launch_spin(double ms, cudaStream_t stream) {
  const SpinShape shape = spin_shape();
  spin_kernel<<<shape.sms * 4, 128, 0, stream>>>(static_cast<long long>(ms * shape.khz));
}

void launch_empty(cudaStream_t stream) { spin_kernel<<<1, 1, 0, stream>>>(0); }

void launch_delay(const long long* cycles, cudaStream_t stream) { delay_kernel<<<1, 1, 0, stream>>>(cycles); }

// 8 blocks asking for 4 KiB each: spread over SMs, the prefetches reach the L2 sooner than from one
// block in 16 KiB pieces (H100, IOS-Both dataflow: Inception V3 1.410 against 1.424 ms, GoogLeNet 0.533
// against 0.545; 32 or 132 blocks gained no more).
constexpr int kPrefetchBlocks = 8;
constexpr unsigned long long kPrefetchChunk = 4096;

__global__ void l2_prefetch_kernel(PrefetchRanges r) {
  constexpr unsigned long long kChunk = kPrefetchChunk;
  for (int i = 0; i < r.count; ++i)
    for (unsigned long long off = (blockIdx.x * blockDim.x + threadIdx.x) * kChunk; off < r.bytes[i];
         off += gridDim.x * blockDim.x * kChunk) {
      const unsigned n = static_cast<unsigned>(r.bytes[i] - off < kChunk ? r.bytes[i] - off : kChunk) & ~15u;
#if __CUDA_ARCH__ >= 900
      if (n) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(r.data[i] + off), "r"(n) : "memory");
#else
      for (unsigned o = 0; o < n; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(r.data[i] + off + o));
#endif
    }
}

cudaError_t add_l2_prefetch_node(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t num_deps,
                                 const PrefetchRanges& ranges) {
  PrefetchRanges r = ranges;
  void* args[] = {&r};
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(l2_prefetch_kernel);
  params.gridDim = dim3(kPrefetchBlocks);
  params.blockDim = dim3(128);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  return cudaGraphAddKernelNode(&node, graph, deps, num_deps, &params);
}

void launch_l2_touch(const void* data, size_t bytes, cudaStream_t stream) {
  const long long words = static_cast<long long>(bytes / sizeof(uint4));
  if (words == 0) return;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const long long blocks = std::min<long long>(sms * 4LL, (words + 255) / 256);
  l2_touch_kernel<<<static_cast<int>(blocks), 256, 0, stream>>>(static_cast<const uint4*>(data), words);
}

double device_cycles_per_us() {
  int device = 0, khz = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  return khz / 1000.0;
}

}  // namespace ios::rt
