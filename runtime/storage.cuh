// Device-side conversions between the storage types (float, half, bfloat16) and the float the kernels
// compute in; shared by the .cu files of the runtime.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "common/element_types.h"

namespace ios::rt {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// Calls f with a value of the storage type `t` (only its type matters).
template <typename F>
void dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::kF32:
      return f(float{});
    case DataType::kF16:
      return f(__half{});
    case DataType::kBF16:
      return f(__nv_bfloat16{});
  }
}

}  // namespace ios::rt
