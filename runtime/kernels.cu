#include <cfloat>

#include "runtime/kernels.h"

namespace ios::rt {

namespace {

struct GatherArgs {
  SliceRef src[kMaxGatherSources];
  int num_sources;
};

__global__ void gather_kernel(GatherArgs args, float* dst, int dst_channels, int dst_begin, int count, int hw,
                              long long total, bool accumulate) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(i % hw);
    const int c = static_cast<int>((i / hw) % count);
    const int b = static_cast<int>(i / (static_cast<long long>(hw) * count));
    float acc = 0.f;
    for (int s = 0; s < args.num_sources; ++s) {
      const SliceRef& r = args.src[s];
      acc += r.base[(static_cast<long long>(b) * r.channels + r.begin + c) * hw + p];
    }
    float* out = dst + (static_cast<long long>(b) * dst_channels + dst_begin + c) * hw + p;
    *out = accumulate ? *out + acc : acc;
  }
}

__global__ void multiply_kernel(float* dst, const float* src, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    dst[i] *= src[i];
}

__global__ void bias_act_kernel(float* x, const float* bias, int channels, int hw, long long batch_stride,
                                long long total, int act) {
  const long long per_sample = static_cast<long long>(channels) * hw;
  for (long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; j < total;
       j += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = (j / per_sample) * batch_stride + j % per_sample;
    float v = x[i];
    if (bias) v += bias[(j % per_sample) / hw];
    if (act == 1) v = v > 0.f ? v : 0.f;
    else if (act == 2) v = 1.f / (1.f + __expf(-v));
    else if (act == 3) v = tanhf(v);
    x[i] = v;
  }
}

__global__ void pool_kernel(const float* in, long long in_batch_stride, float* out, long long out_batch_stride,
                            int channels, int in_h, int in_w, int out_h, int out_w, PoolParams p, long long total) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int ox = static_cast<int>(i % out_w);
    const int oy = static_cast<int>((i / out_w) % out_h);
    const long long plane = i / (static_cast<long long>(out_w) * out_h);  // b * channels + c
    const long long b = plane / channels, c = plane % channels;
    const float* src = in + b * in_batch_stride + c * in_h * in_w;
    int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    int y1 = min(y0 + p.kh, in_h + p.ph), x1 = min(x0 + p.kw, in_w + p.pw);
    const int divisor = (y1 - y0) * (x1 - x0);
    y0 = max(y0, 0), x0 = max(x0, 0), y1 = min(y1, in_h), x1 = min(x1, in_w);
    float acc = p.is_max ? -FLT_MAX : 0.f;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const float v = src[y * in_w + x];
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
      }
    out[b * out_batch_stride + (c * out_h + oy) * out_w + ox] = p.is_max ? acc : acc / divisor;
  }
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

int blocks_for(long long n) {
  const long long b = (n + 255) / 256;
  return static_cast<int>(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

}  // namespace

void launch_gather(const SliceRef* sources, int num_sources, float* dst, int dst_channels, int dst_begin, int count,
                   int hw, int batch, bool accumulate, cudaStream_t stream) {
  GatherArgs args{};
  args.num_sources = num_sources;
  for (int s = 0; s < num_sources; ++s) args.src[s] = sources[s];
  const long long total = static_cast<long long>(batch) * count * hw;
  gather_kernel<<<blocks_for(total), 256, 0, stream>>>(args, dst, dst_channels, dst_begin, count, hw, total, accumulate);
}

void launch_multiply(float* dst, const float* src, long long n, cudaStream_t stream) {
  multiply_kernel<<<blocks_for(n), 256, 0, stream>>>(dst, src, n);
}

void launch_bias_act(float* x, const float* bias, int channels, int hw, int batch, long long batch_stride, int act,
                     cudaStream_t stream) {
  const long long total = static_cast<long long>(batch) * channels * hw;
  bias_act_kernel<<<blocks_for(total), 256, 0, stream>>>(x, bias, channels, hw, batch_stride, total, act);
}

void launch_pool(const float* in, long long in_batch_stride, float* out, long long out_batch_stride, int batch,
                 int channels, int in_h, int in_w, int out_h, int out_w, const PoolParams& p, cudaStream_t stream) {
  const long long total = static_cast<long long>(batch) * channels * out_h * out_w;
  pool_kernel<<<blocks_for(total), 256, 0, stream>>>(in, in_batch_stride, out, out_batch_stride, channels, in_h, in_w,
                                                     out_h, out_w, p, total);
}

void launch_spin(double ms, cudaStream_t stream) {
  int device = 0, khz = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  spin_kernel<<<sms * 4, 128, 0, stream>>>(static_cast<long long>(ms * khz));
}

}  // namespace ios::rt
