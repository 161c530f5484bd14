#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ir/activation.h"
#include "runtime/depthwise.h"

namespace ios::rt {

namespace {

// V neighbouring elements of storage type T read and written as floats: V = 2 as one aligned vector.
template <typename T, int V>
struct Lanes;

template <typename T>
struct Lanes<T, 1> {
  static __device__ void load(const T* p, float* out) {
    if constexpr (sizeof(T) == 4) {
      out[0] = __ldg(reinterpret_cast<const float*>(p));
    } else if constexpr (std::is_same_v<T, __half>) {
      out[0] = __half2float(__ldg(p));
    } else {
      out[0] = __bfloat162float(__ldg(p));
    }
  }
  static __device__ void store(T* p, const float* v) {
    if constexpr (sizeof(T) == 4) {
      *p = v[0];
    } else if constexpr (std::is_same_v<T, __half>) {
      *p = __float2half_rn(v[0]);
    } else {
      *p = __float2bfloat16_rn(v[0]);
    }
  }
};

template <typename T>
struct Lanes<T, 2> {
  static __device__ void load(const T* p, float* out) {
    if constexpr (sizeof(T) == 4) {
      const float2 v = __ldg(reinterpret_cast<const float2*>(p));
      out[0] = v.x, out[1] = v.y;
    } else if constexpr (std::is_same_v<T, __half>) {
      const float2 v = __half22float2(__ldg(reinterpret_cast<const __half2*>(p)));
      out[0] = v.x, out[1] = v.y;
    } else {
      const float2 v = __bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(p)));
      out[0] = v.x, out[1] = v.y;
    }
  }
  static __device__ void store(T* p, const float* v) {
    if constexpr (sizeof(T) == 4) {
      *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
    } else if constexpr (std::is_same_v<T, __half>) {
      *reinterpret_cast<__half2*>(p) = __floats2half2_rn(v[0], v[1]);
    } else {
      *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v[0], v[1]);
    }
  }
};

template <typename T>
__device__ float scalar(const T* p, long long i) {
  float v;
  Lanes<T, 1>::load(p + i, &v);
  return v;
}

// One thread: R outputs down output column `ow` of channels [c, c + V) of sample n, rows [oh0, oh0 + R).
// The input rows their windows span ((R - 1) * S + K of them) are each read once, K columns of each.
template <typename T, int K, int S, int R, int V>
__global__ void __launch_bounds__(256) depthwise_kernel(DepthwiseArgs a) {
  const int channel_groups = a.channels / V;
  const int strips = (a.out_h + R - 1) / R;
  const long long total = static_cast<long long>(a.batch) * channel_groups * strips * a.out_w;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  int cg, ow, strip, n;
  if (a.channels_inner) {
    cg = int(i % channel_groups);
    long long rest = i / channel_groups;
    ow = int(rest % a.out_w), rest /= a.out_w;
    strip = int(rest % strips), n = int(rest / strips);
  } else {
    ow = int(i % a.out_w);
    long long rest = i / a.out_w;
    strip = int(rest % strips), rest /= strips;
    cg = int(rest % channel_groups), n = int(rest / channel_groups);
  }
  const int c = cg * V;
  const int oh0 = strip * R;
  const int ih0 = oh0 * S - a.pad_h, iw0 = ow * S - a.pad_w;

  float w[V][K * K];
  const T* wp = static_cast<const T*>(a.w) + static_cast<long long>(c) * K * K;
#pragma unroll
  for (int v = 0; v < V; ++v)
#pragma unroll
    for (int k = 0; k < K * K; ++k) w[v][k] = scalar(wp, v * K * K + k);

  float acc[R][V] = {};
  const T* xp = static_cast<const T*>(a.x) + n * a.xs[0] + c * a.xs[1];
#pragma unroll
  for (int r = 0; r < (R - 1) * S + K; ++r) {
    const int ih = ih0 + r;
    if (ih < 0 || ih >= a.in_h) continue;
    const T* row = xp + ih * a.xs[2];
#pragma unroll
    for (int kw = 0; kw < K; ++kw) {
      const int iw = iw0 + kw;
      float x[V] = {};
      if (iw >= 0 && iw < a.in_w) Lanes<T, V>::load(row + iw * a.xs[3], x);
#pragma unroll
      for (int p = 0; p < R; ++p) {
        const int kh = r - p * S;  // known when compiled: the loops are unrolled
        if (kh >= 0 && kh < K)
#pragma unroll
          for (int v = 0; v < V; ++v) acc[p][v] = fmaf(x[v], w[v][kh * K + kw], acc[p][v]);
      }
    }
  }

  float bias[V] = {};
  if (a.bias)
#pragma unroll
    for (int v = 0; v < V; ++v) bias[v] = scalar(static_cast<const T*>(a.bias), c + v);
  const auto act = static_cast<ir::Act>(a.act);
#pragma unroll
  for (int p = 0; p < R; ++p) {
    const int oh = oh0 + p;
    if (oh >= a.out_h) break;
    float out[V];
#pragma unroll
    for (int v = 0; v < V; ++v) out[v] = ir::activate(act, acc[p][v] + bias[v]);
    if (a.z) {
      float z[V];
      Lanes<T, V>::load(static_cast<const T*>(a.z) + n * a.zs[0] + c * a.zs[1] + oh * a.zs[2] + ow * a.zs[3], z);
#pragma unroll
      for (int v = 0; v < V; ++v) out[v] += z[v];
    }
    Lanes<T, V>::store(static_cast<T*>(a.y) + n * a.ys[0] + c * a.ys[1] + oh * a.ys[2] + ow * a.ys[3], out);
  }
}

template <typename T, int K, int S, int R, int V>
void launch(const DepthwiseArgs& a, cudaStream_t stream) {
  const long long total = static_cast<long long>(a.batch) * (a.channels / V) * ((a.out_h + R - 1) / R) * a.out_w;
  const int threads = 128;
  depthwise_kernel<T, K, S, R, V><<<unsigned((total + threads - 1) / threads), threads, 0, stream>>>(a);
}

// The compiled kernels, chosen by value: kernel size, stride, rows per thread, channel pairs.
template <typename T, int K, int S>
void launch_rows(const DepthwiseArgs& a, int rows, bool pairs, cudaStream_t stream) {
  switch (rows) {
    case 1:
      return pairs ? launch<T, K, S, 1, 2>(a, stream) : launch<T, K, S, 1, 1>(a, stream);
    case 2:
      return pairs ? launch<T, K, S, 2, 2>(a, stream) : launch<T, K, S, 2, 1>(a, stream);
    default:
      return pairs ? launch<T, K, S, 4, 2>(a, stream) : launch<T, K, S, 4, 1>(a, stream);
  }
}

template <typename T, int K>
void launch_stride(const DepthwiseArgs& a, int rows, bool pairs, cudaStream_t stream) {
  if (a.stride == 1) return launch_rows<T, K, 1>(a, rows, pairs, stream);
  launch_rows<T, K, 2>(a, rows, pairs, stream);
}

template <typename T>
void launch_typed(const DepthwiseArgs& a, int rows, bool pairs, cudaStream_t stream) {
  switch (a.kernel) {
    case 3:
      return launch_stride<T, 3>(a, rows, pairs, stream);
    case 5:
      return launch_stride<T, 5>(a, rows, pairs, stream);
    default:
      return launch_stride<T, 7>(a, rows, pairs, stream);
  }
}

bool whole_pairs(const void* p, const long long* strides, size_t element_bytes) {
  if (reinterpret_cast<uintptr_t>(p) % (2 * element_bytes) != 0) return false;
  for (int i = 0; i < 4; ++i)
    if (i != 1 && strides[i] % 2 != 0) return false;
  return strides[1] == 1;
}

}  // namespace

bool depthwise_compiled_for(int kernel_h, int kernel_w, int stride_h, int stride_w) {
  return kernel_h == kernel_w && (kernel_h == 3 || kernel_h == 5 || kernel_h == 7) && stride_h == stride_w &&
         (stride_h == 1 || stride_h == 2);
}

bool depthwise_pairs_fit(const DepthwiseArgs& a, size_t element_bytes) {
  return a.channels_inner && a.channels % 2 == 0 && whole_pairs(a.x, a.xs, element_bytes) &&
         whole_pairs(a.y, a.ys, element_bytes) && (!a.z || whole_pairs(a.z, a.zs, element_bytes));
}

void launch_depthwise(DataType t, const DepthwiseArgs& a, int rows, bool pairs, cudaStream_t stream) {
  switch (t) {
    case DataType::kF32:
      return launch_typed<float>(a, rows, pairs, stream);
    case DataType::kF16:
      return launch_typed<__half>(a, rows, pairs, stream);
    case DataType::kBF16:
      return launch_typed<__nv_bfloat16>(a, rows, pairs, stream);
  }
}

}  // namespace ios::rt
