// Host-side conversion between the CPU reference's float NCHW tensors and a run's storage (data
// type and layout): weights are converted once at load, inputs and outputs at the copy.
#pragma once

#include <cstdint>
#include <vector>

#include "common/exec_config.h"

namespace ios {

// src holds [n][c][h][w] floats; returns the same tensor as `dtype` elements in `layout` order
// (NHWC: [n][h][w][c]). Convolution filters are KCRS tensors (n = K, c = C / groups).
std::vector<uint8_t> pack_tensor(const float* src, int n, int c, int h, int w, DataType dtype, Layout layout);

// The inverse: `src` in `dtype` / `layout`, written as float NCHW into dst.
void unpack_tensor(const uint8_t* src, int n, int c, int h, int w, DataType dtype, Layout layout, float* dst);

float load_element(const uint8_t* p, DataType dtype);
void store_element(uint8_t* p, DataType dtype, float v);

}  // namespace ios
