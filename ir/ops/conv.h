// Convolution (grouped, dilated) with an optional bias and a fused activation.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

// Attributes are plain data with fluent setters, so networks read like IOS's builder:
//   Conv(64).kernel(3).stride(2).pad(1).act(Act::kNone)
struct ConvAttrs {
  static constexpr const char* kType = "conv";
  static constexpr OpTraits kTraits{/*memory_bound=*/false, /*writes_strided=*/true};

  int out_channels = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int groups = 1;
  bool has_bias = true;
  Act activation = Act::kRelu;  // IOS's builder default

  // clang-format off
  ConvAttrs& kernel(int h, int w) { kh = h, kw = w; return *this; }
  ConvAttrs& kernel(int k) { return kernel(k, k); }
  ConvAttrs& stride(int h, int w) { sh = h, sw = w; return *this; }
  ConvAttrs& stride(int s) { return stride(s, s); }
  ConvAttrs& pad(int h, int w) { ph = h, pw = w; return *this; }
  ConvAttrs& pad(int p) { return pad(p, p); }
  ConvAttrs& dilation(int h, int w) { dh = h, dw = w; return *this; }
  ConvAttrs& grouped(int g) { groups = g; return *this; }
  ConvAttrs& bias(bool b) { has_bias = b; return *this; }
  ConvAttrs& act(Act a) { activation = a; return *this; }
  // clang-format on
  IOS_MEMBERWISE_EQUAL(ConvAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape& in) const;
  void write(OpWriter& w) const;
  static Expected<ConvAttrs> read(const OpReader& r);
};
inline ConvAttrs Conv(int out_channels) {
  ConvAttrs a;
  a.out_channels = out_channels;
  return a;
}

}  // namespace ios::ir
