// The storage type, math mode and layout enums on their own (C++17, so CUDA sources include them).
#pragma once

#include <cstdint>

namespace ios {

enum class DataType : uint8_t { kF32, kF16, kBF16 };  // storage of activations and weights
enum class MathMode : uint8_t { kStrict, kTf32 };     // kTf32 only changes f32 storage
enum class Layout : uint8_t { kNCHW, kNHWC };
// Where a convolution writes its part of a concatenation: its channel slice of the concatenation's buffer
// (every writer that can), or, where that slice is strided, a tensor of its own that the concatenation
// copies. On the H100 cuDNN's tensor-core engines wrap a strided NHWC output in two nhwcSliceC copy
// kernels (~2.4 us each at tf32); the concatenation's own copy is one launch for all its terms.
enum class ConcatWrites : uint8_t { kInPlace, kConvCopy };

}  // namespace ios
