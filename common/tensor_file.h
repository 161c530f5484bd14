// Input and output tensors on disk: NumPy .npy (float32, C order; what `numpy.save` writes) or raw
// little-endian float32 (any other file name). Readers check the shape (.npy) or the element count (raw)
// against what the network expects and say what the file holds instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ios {

// `expected_shape`: what the run needs (batch, C, H, W). A .npy file must have exactly this shape, a raw
// file exactly as many floats; a mismatch is an error naming both.
Expected<std::vector<float>> read_tensor_file(const std::string& path, const std::vector<int64_t>& expected_shape);
// `.npy` with `shape`, else raw float32; written atomically.
Status write_tensor_file(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape);

// The .npy encoding alone (version 1.0 header), for tests and tools.
std::string encode_npy(const std::vector<float>& data, const std::vector<int64_t>& shape);
// The header is parsed by hand, as the Python literal numpy writes ({'descr': '<f4', 'fortran_order':
// False, 'shape': (1, 3), }), at most kMaxNpyHeaderBytes long; anything else is an error naming the field.
inline constexpr size_t kMaxNpyHeaderBytes = 65536;
Expected<std::vector<float>> decode_npy(const std::string& bytes, std::vector<int64_t>* shape,
                                        const std::string& source);

// "(1, 3, 8, 8)"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace ios
