// The storage type, math mode and layout enums on their own (C++17, so CUDA sources include them).
#pragma once

#include <cstdint>

namespace ios {

enum class DataType : uint8_t { kF32, kF16, kBF16 };  // storage of activations and weights
enum class MathMode : uint8_t { kStrict, kTf32 };     // kTf32 only changes f32 storage
enum class Layout : uint8_t { kNCHW, kNHWC };

}  // namespace ios
