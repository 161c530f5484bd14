#include "common/tensor_pack.h"

#include <cstring>

#include "common/float16.h"

namespace ios {

float load_element(const uint8_t* p, DataType dtype) {
  if (dtype == DataType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == DataType::kF16 ? half_to_float(h) : bf16_to_float(h);
}

void store_element(uint8_t* p, DataType dtype, float v) {
  if (dtype == DataType::kF32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const uint16_t h = dtype == DataType::kF16 ? float_to_half(v) : float_to_bf16(v);
  std::memcpy(p, &h, 2);
}

namespace {
// Element index of (b, ch, y, x) in a packed tensor of the given layout.
int64_t packed_index(Layout layout, int c, int h, int w, int b, int ch, int y, int x) {
  const SliceLayout s = slice_layout(layout, c, 0, h, w);
  return b * s.n + ch * s.c + y * s.h + x * s.w;
}
}  // namespace

std::vector<uint8_t> pack_tensor(const float* src, int n, int c, int h, int w, DataType dtype, Layout layout) {
  const size_t eb = element_bytes(dtype);
  std::vector<uint8_t> out(size_t(n) * c * h * w * eb);
  size_t i = 0;
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          store_element(out.data() + size_t(packed_index(layout, c, h, w, b, ch, y, x)) * eb, dtype, src[i++]);
  return out;
}

void unpack_tensor(const uint8_t* src, int n, int c, int h, int w, DataType dtype, Layout layout, float* dst) {
  const size_t eb = element_bytes(dtype);
  size_t i = 0;
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          dst[i++] = load_element(src + size_t(packed_index(layout, c, h, w, b, ch, y, x)) * eb, dtype);
}

}  // namespace ios
