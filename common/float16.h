// IEEE binary16 and bfloat16 conversions on the host, round to nearest even, so weights and inputs
// are converted once at load without CUDA headers (and are tested on the CPU).
#pragma once

#include <cstdint>
#include <cstring>

namespace ios {

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity (or is one)
  if (abs < 0x38800000u) {                                  // subnormal half (or zero)
    if (abs < 0x33000000u) return uint16_t(sign);           // below half the smallest subnormal
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - int(abs >> 23);  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ffu);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
  return uint16_t(sign | h);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | uint32_t(112 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else {
    x = sign | (exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace ios
