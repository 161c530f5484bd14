// Input and output tensors on disk: NumPy .npy (float32, C order; what `numpy.save` writes) or raw
// little-endian float32 (any other file name). Readers check the element count against what the
// network expects and say what the file holds instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ios {

// `expected_count`: the elements the run needs (batch x C x H x W); a mismatch is an error naming both.
Expected<std::vector<float>> read_tensor_file(const std::string& path, int64_t expected_count);
// `.npy` with `shape`, else raw float32.
Status write_tensor_file(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape);

// The .npy encoding alone (version 1.0 header), for tests and tools.
std::string encode_npy(const std::vector<float>& data, const std::vector<int64_t>& shape);
Expected<std::vector<float>> decode_npy(const std::string& bytes, std::vector<int64_t>* shape,
                                        const std::string& source);

}  // namespace ios
