// Text that reaches JSON must be valid UTF-8 (nlohmann::json refuses to write anything else). Names read
// from binary formats (ONNX node and tensor names, file names) are made valid here, once, where they
// enter the project.
#pragma once

#include <string>

namespace ios {

bool is_valid_utf8(const std::string& s);

// `s` with every byte that is not part of a well-formed UTF-8 sequence written as the four characters
// "\xNN", so distinct names stay distinct and the bytes stay visible.
std::string to_valid_utf8(const std::string& s);

}  // namespace ios
