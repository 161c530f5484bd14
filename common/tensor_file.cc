#include "common/tensor_file.h"

#include <cstring>
#include <regex>

#include "common/file_io.h"

namespace ios {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status bad(const std::string& source, const std::string& msg) {
  return error(ErrorCode::kInvalidArgument, source + ": " + msg);
}

}  // namespace

std::string encode_npy(const std::vector<float>& data, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(3,)" for one dimension, "(1, 3)" otherwise
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // magic + version + length + header + \n: 64-aligned
  header += '\n';
  std::string out(kNpyMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return out;
}

Expected<std::vector<float>> decode_npy(const std::string& bytes, std::vector<int64_t>* shape,
                                        const std::string& source) {
  RETURN_ERROR_IF(bytes.size() < 10 || bytes.compare(0, 6, kNpyMagic, 6) != 0, ErrorCode::kInvalidArgument,
                  source + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | size_t(static_cast<unsigned char>(bytes[9])) << 8;
    offset = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int i = 0; i < 4; ++i) header_len |= size_t(static_cast<unsigned char>(bytes[size_t(8 + i)])) << (8 * i);
    offset = 12;
  } else {
    return bad(source, ".npy version " + std::to_string(major) + " is not supported");
  }
  RETURN_ERROR_IF(offset + header_len > bytes.size(), ErrorCode::kInvalidArgument, source + ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  std::smatch m;
  RETURN_ERROR_IF(!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")) || m[1] != "<f4",
                  ErrorCode::kInvalidArgument,
                  source + ": holds " + (m.empty() ? std::string("an unknown type") : m[1].str()) +
                      "; only little-endian float32 ('<f4') is supported (numpy: .astype(np.float32))");
  RETURN_ERROR_IF(header.find("'fortran_order': False") == std::string::npos, ErrorCode::kInvalidArgument,
                  source + ": Fortran-order arrays are not supported (numpy: np.ascontiguousarray)");
  RETURN_ERROR_IF(!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")),
                  ErrorCode::kInvalidArgument, source + ": .npy header has no shape");
  const std::string dims = m[1];
  int64_t count = 1;
  if (shape) shape->clear();
  const std::regex number("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const int64_t d = std::stoll(it->str());
    RETURN_ERROR_IF(d > (int64_t{1} << 40) || count > (int64_t{1} << 40), ErrorCode::kInvalidArgument,
                    source + ": shape too large");
    count *= d;
    if (shape) shape->push_back(d);
  }
  const size_t data_offset = offset + header_len;
  RETURN_ERROR_IF(bytes.size() - data_offset != size_t(count) * sizeof(float), ErrorCode::kInvalidArgument,
                  source + ": holds " + std::to_string((bytes.size() - data_offset) / sizeof(float)) +
                      " floats, its shape says " + std::to_string(count));
  std::vector<float> data(static_cast<size_t>(count));
  std::memcpy(data.data(), bytes.data() + data_offset, data.size() * sizeof(float));
  return data;
}

Expected<std::vector<float>> read_tensor_file(const std::string& path, int64_t expected_count) {
  ASSIGN_OR_RETURN(std::string bytes, read_file(path, size_t{2} << 30));
  std::vector<float> data;
  if (ends_with(path, ".npy")) {
    ASSIGN_OR_RETURN(data, decode_npy(bytes, nullptr, path));
  } else {
    RETURN_ERROR_IF(bytes.size() % sizeof(float) != 0, ErrorCode::kInvalidArgument,
                    path + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of float32 values");
    data.resize(bytes.size() / sizeof(float));
    std::memcpy(data.data(), bytes.data(), bytes.size());
  }
  RETURN_ERROR_IF(int64_t(data.size()) != expected_count, ErrorCode::kInvalidArgument,
                  path + ": holds " + std::to_string(data.size()) + " float32 values; the network needs " +
                      std::to_string(expected_count) + " (batch x C x H x W)");
  return data;
}

Status write_tensor_file(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape) {
  if (ends_with(path, ".npy")) return write_text_file(path, encode_npy(data, shape));
  return write_text_file(path, std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
}

}  // namespace ios
