// Resize (ONNX Resize / Upsample, PyTorch interpolate): nearest or bilinear over H and W to a given size.
// The mapping from an output pixel to its source pixels is one host/device function, so the CPU
// reference and the GPU kernel compute the same taps.
#pragma once

#include "ir/ops/op_common.h"

namespace ios::ir {

enum class ResizeMode : uint8_t { kNearest, kLinear };
// ONNX's coordinate_transformation_mode.
enum class ResizeCoord : uint8_t { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric };
// ONNX's nearest_mode.
enum class ResizeRound : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  static constexpr const char* kType = "resize";
  static constexpr OpTraits kTraits{/*memory_bound=*/true, /*writes_strided=*/true};

  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeRound round = ResizeRound::kRoundPreferFloor;
  int out_h = 0, out_w = 0;
  // Output over input as the model states it, where it states scales; 0: out / in. With a scale that
  // is not out / in (7 * 1.5 gives 10 pixels) the coordinates follow the stated scale, as in ONNX.
  double scale_h = 0, scale_w = 0;
  IOS_MEMBERWISE_EQUAL(ResizeAttrs)

  Expected<Shape> infer(const Shape& in) const;
  NodeCost cost(const Shape& in, const Shape& out) const;
  ParamSizes params(const Shape&) const { return {}; }
  void write(OpWriter& w) const;
  static Expected<ResizeAttrs> read(const OpReader& r);
};

// An output pixel along one axis reads in[i0] * (1 - w1) + in[i1] * w1.
struct ResizeTap {
  int i0, i1;
  float w1;
};

// The tap of output index `o` along an axis of `in` -> `out` pixels; `inv_scale` is 1 / scale (in / out
// when the model gives sizes).
IOS_HOST_DEVICE inline ResizeTap resize_tap(ResizeMode mode, ResizeCoord coord, ResizeRound round, int o, int in,
                                            int out, float inv_scale) {
  float x = 0.f;
  switch (coord) {
    case ResizeCoord::kHalfPixel:
      x = (float(o) + 0.5f) * inv_scale - 0.5f;
      break;
    case ResizeCoord::kPytorchHalfPixel:
      x = out > 1 ? (float(o) + 0.5f) * inv_scale - 0.5f : 0.f;
      break;
    case ResizeCoord::kAlignCorners:
      x = out > 1 ? float(o) * float(in - 1) / float(out - 1) : 0.f;
      break;
    case ResizeCoord::kAsymmetric:
      x = float(o) * inv_scale;
      break;
  }
  if (mode == ResizeMode::kNearest) {
    float r = x;
    switch (round) {
      case ResizeRound::kRoundPreferFloor:
        r = ceilf(x - 0.5f);
        break;
      case ResizeRound::kRoundPreferCeil:
        r = floorf(x + 0.5f);
        break;
      case ResizeRound::kFloor:
        r = floorf(x);
        break;
      case ResizeRound::kCeil:
        r = ceilf(x);
        break;
    }
    const int i = r < 0.f ? 0 : (r > float(in - 1) ? in - 1 : int(r));
    return ResizeTap{i, i, 0.f};
  }
  x = x < 0.f ? 0.f : (x > float(in - 1) ? float(in - 1) : x);
  const int i0 = int(floorf(x));
  const int i1 = i0 + 1 < in ? i0 + 1 : in - 1;
  return ResizeTap{i0, i1, x - float(i0)};
}

// 1 / scale of one axis: the stated scale's, else in / out.
inline float resize_inv_scale(double scale, int in, int out) {
  return scale > 0 ? float(1.0 / scale) : float(in) / float(out);
}

}  // namespace ios::ir
