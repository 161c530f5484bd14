// Activations: one table. Each row is the activation's IOS name and its value as an expression of the
// float `x`, compiled for the CPU reference and, by nvcc, into every GPU kernel that applies an activation
// (runtime/kernels.cu) from this one definition. Adding an activation is one row here plus its case in
// the activation tests (tests/activation_cases.h, which fail on a row without one); the importer maps
// ONNX ops to rows, and runtime/conv_kernel.cc names the cuDNN pointwise mode that fuses it into a
// convolution where cuDNN has one (elsewhere our epilogue kernel applies it).
#pragma once

#include <math.h>

#include <cstdint>

#ifdef __CUDACC__
#define IOS_HOST_DEVICE __host__ __device__
#else
#define IOS_HOST_DEVICE
#endif

namespace ios::ir {

// Numerically safe pieces the rows share.
IOS_HOST_DEVICE inline float act_softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
IOS_HOST_DEVICE inline float act_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
IOS_HOST_DEVICE inline float act_clamp(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }

// X(enumerator, IOS name, value of x)
// clang-format off
#define IOS_ACTIVATIONS(X)                                                                        \
  X(kNone,        "identity",    x)                                                               \
  X(kRelu,        "relu",        x > 0.f ? x : 0.f)                                               \
  X(kSigmoid,     "sigmoid",     act_sigmoid(x))                                                  \
  X(kTanh,        "tanh",        tanhf(x))                                                        \
  X(kRelu6,       "relu6",       act_clamp(x, 0.f, 6.f))                                          \
  X(kHardSigmoid, "hardsigmoid", act_clamp(x / 6.f + 0.5f, 0.f, 1.f))                             \
  X(kHardSwish,   "hardswish",   x * act_clamp(x + 3.f, 0.f, 6.f) / 6.f)                          \
  X(kSilu,        "silu",        x * act_sigmoid(x))                                              \
  X(kGelu,        "gelu",        0.5f * x * (1.f + erff(x * 0.70710678118654752f)))               \
  X(kGeluTanh,    "gelu_tanh",   0.5f * x * (1.f + tanhf(0.79788456080286536f *                   \
                                                         (x + 0.044715f * x * x * x))))           \
  X(kElu,         "elu",         x > 0.f ? x : expm1f(x))                                         \
  X(kSoftplus,    "softplus",    act_softplus(x))                                                 \
  X(kMish,        "mish",        x * tanhf(act_softplus(x)))                                      \
  X(kSoftsign,    "softsign",    x / (1.f + fabsf(x)))                                            \
  X(kLeakyRelu,   "leaky_relu",  x > 0.f ? x : 0.01f * x)                                         \
  X(kSqrt,        "sqrt",        sqrtf(x))                                                        \
  X(kReciprocal,  "reciprocal",  1.f / x)
// clang-format on

#define IOS_ACT_ENUMERATOR(e, name, value) e,
enum class Act : uint8_t { IOS_ACTIVATIONS(IOS_ACT_ENUMERATOR) };
#undef IOS_ACT_ENUMERATOR

#define IOS_ACT_COUNT(e, name, value) +1
inline constexpr int kActCount = 0 IOS_ACTIVATIONS(IOS_ACT_COUNT);
#undef IOS_ACT_COUNT
// A new row changes this count: check that the activation tests cover it (they fail without a case).
static_assert(kActCount == 17, "activation table changed: add the row's case to tests/activation_cases.h");

IOS_HOST_DEVICE inline float activate(Act act, float x) {
  switch (act) {
#define IOS_ACT_CASE(e, name, value) \
  case Act::e:                       \
    return value;
    IOS_ACTIVATIONS(IOS_ACT_CASE)
#undef IOS_ACT_CASE
  }
  return x;
}

}  // namespace ios::ir
