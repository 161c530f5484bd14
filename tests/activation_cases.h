// One case per row of the activation table (ir/activation.h): the activation's definition written
// independently in double precision, and points where its value is known by hand. The CPU test checks the
// table against these and fails on a row without a case; the GPU test runs every case fused into a
// convolution, after a linear op and on its own. A case marked positive_only is tested on positive inputs only
// (sqrt's domain, reciprocal's pole at 0).
#pragma once

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "ir/activation.h"
#include "ir/builder.h"

namespace ios::testing {

struct ActivationCase {
  ir::Act act;
  std::function<double(double)> definition;
  std::vector<std::pair<double, double>> known;  // (x, value) by hand
  bool positive_only = false;
};

inline const std::vector<ActivationCase>& activation_cases() {
  static const std::vector<ActivationCase> cases = {
      {ir::Act::kNone, [](double x) { return x; }, {{-2, -2}}},
      {ir::Act::kRelu, [](double x) { return std::max(x, 0.0); }, {{-1, 0}, {3, 3}}},
      {ir::Act::kSigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, {{0, 0.5}}},
      {ir::Act::kTanh, [](double x) { return std::tanh(x); }, {{0, 0}}},
      {ir::Act::kRelu6, [](double x) { return std::min(std::max(x, 0.0), 6.0); }, {{-1, 0}, {7, 6}, {2, 2}}},
      {ir::Act::kHardSigmoid,
       [](double x) { return std::min(std::max(x / 6 + 0.5, 0.0), 1.0); },
       {{-4, 0}, {1, 2.0 / 3}, {4, 1}}},
      {ir::Act::kHardSwish,
       [](double x) { return x <= -3  ? 0
                             : x >= 3 ? x
                                      : x * (x + 3) / 6; },
       {{-1, -1.0 / 3}, {1, 2.0 / 3}, {5, 5}}},
      {ir::Act::kSilu, [](double x) { return x / (1 + std::exp(-x)); }, {{1, 0.7310585786}, {0, 0}}},
      {ir::Act::kGelu, [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }, {{1, 0.8413447461}}},
      {ir::Act::kGeluTanh,
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); },
       {{1, 0.8411919906}}},
      {ir::Act::kElu, [](double x) { return x > 0 ? x : std::exp(x) - 1; }, {{-1, -0.6321205588}, {2, 2}}},
      {ir::Act::kSoftplus, [](double x) { return std::log(1 + std::exp(x)); }, {{0, 0.6931471806}}},
      {ir::Act::kMish, [](double x) { return x * std::tanh(std::log(1 + std::exp(x))); }, {{1, 0.8650983883}}},
      {ir::Act::kSoftsign, [](double x) { return x / (1 + std::fabs(x)); }, {{-3, -0.75}, {1, 0.5}}},
      {ir::Act::kLeakyRelu, [](double x) { return x > 0 ? x : 0.01 * x; }, {{-2, -0.02}, {3, 3}}},
      {ir::Act::kSqrt, [](double x) { return std::sqrt(x); }, {{4, 2}, {0.25, 0.5}}, true},
      {ir::Act::kReciprocal, [](double x) { return 1 / x; }, {{4, 0.25}, {0.5, 2}}, true},
  };
  return cases;
}

// The points of `xs` in the case's domain.
inline std::vector<float> in_domain(const ActivationCase& c, const std::vector<float>& xs) {
  std::vector<float> out;
  for (float x : xs)
    if (!c.positive_only || x > 0.f) out.push_back(x);
  return out;
}

// `x` moved into the case's domain where it has one: softplus(softplus(x)) is at least softplus(0) = 0.69, so
// a reciprocal stays bounded in fp16 too.
inline ir::Value in_domain(const ActivationCase& c, ir::GraphBuilder& b, ir::Value x) {
  return c.positive_only ? b.activation(b.activation(x, ir::Act::kSoftplus), ir::Act::kSoftplus) : x;
}

}  // namespace ios::testing
