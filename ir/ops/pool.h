// Max and average pooling over windows, and their global forms (one window of the whole image).
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

enum class PoolKind : uint8_t { kMax, kAvg, kGlobalMax, kGlobalAvg };
const char* pool_kind_name(PoolKind kind);
std::optional<PoolKind> parse_pool_kind(const std::string& s);

struct PoolAttrs {
  static constexpr const char* kType = "pool";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  PoolKind kind = PoolKind::kMax;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int dh = 1, dw = 1;             // max pooling: taps this many pixels apart (PyTorch's and ONNX's dilation)
  bool ceil_mode = false;         // PyTorch's ceil_mode (GoogLeNet); IOS always floors
  bool count_include_pad = true;  // average: padded cells count in the divisor (PyTorch's default, ONNX's not)

  // clang-format off
  PoolAttrs& kernel(int h, int w) { kh = h, kw = w; return *this; }
  PoolAttrs& kernel(int k) { return kernel(k, k); }
  PoolAttrs& stride(int h, int w) { sh = h, sw = w; return *this; }
  PoolAttrs& stride(int s) { return stride(s, s); }
  PoolAttrs& pad(int h, int w) { ph = h, pw = w; return *this; }
  PoolAttrs& pad(int p) { return pad(p, p); }
  PoolAttrs& dilation(int h, int w) { dh = h, dw = w; return *this; }
  PoolAttrs& ceil(bool c = true) { ceil_mode = c; return *this; }
  PoolAttrs& include_pad(bool i) { count_include_pad = i; return *this; }
  // clang-format on
  bool is_global() const { return kind == PoolKind::kGlobalMax || kind == PoolKind::kGlobalAvg; }
  bool dilated() const { return dh != 1 || dw != 1; }
  IOS_MEMBERWISE_EQUAL(PoolAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<PoolAttrs> read(const OpReader& r);
};
inline PoolAttrs MaxPool(int k) {
  PoolAttrs a;
  a.kind = PoolKind::kMax;
  return a.kernel(k);
}
inline PoolAttrs AvgPool(int k) {
  PoolAttrs a;
  a.kind = PoolKind::kAvg;
  return a.kernel(k);
}
inline PoolAttrs GlobalAvgPool() {
  PoolAttrs a;
  a.kind = PoolKind::kGlobalAvg;
  return a;
}
inline PoolAttrs GlobalMaxPool() {
  PoolAttrs a;
  a.kind = PoolKind::kGlobalMax;
  return a;
}

}  // namespace ios::ir
