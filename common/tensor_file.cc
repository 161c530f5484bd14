#include "common/tensor_file.h"

#include <cctype>
#include <cstring>

#include "common/file_io.h"
#include "common/limits.h"

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

namespace {

// The .npy header's dictionary: a Python literal with string keys and string, bool or int-tuple values.
class NpyHeaderParser {
 public:
  NpyHeaderParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Expected<Header> parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_space();
    RETURN_IF_ERROR(expect('{'));
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      ASSIGN_OR_RETURN(std::string key, string());
      skip_space();
      RETURN_IF_ERROR(expect(':'));
      skip_space();
      if (key == "descr") {
        RETURN_IF_ERROR(once(seen_descr, key));
        ASSIGN_OR_RETURN(h.descr, string());
      } else if (key == "fortran_order") {
        RETURN_IF_ERROR(once(seen_order, key));
        ASSIGN_OR_RETURN(h.fortran_order, boolean());
      } else if (key == "shape") {
        RETURN_IF_ERROR(once(seen_shape, key));
        ASSIGN_OR_RETURN(h.shape, tuple());
      } else {
        return fail("unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',')
        ++pos_;
      else if (peek() != '}')
        return fail("expected ',' or '}' at byte " + std::to_string(pos_));
    }
    ++pos_;
    skip_space();
    RETURN_ERROR_IF(pos_ != text_.size(), ErrorCode::kInvalidArgument,
                    source_ + ": .npy header has text after its dictionary");
    RETURN_ERROR_IF(!seen_descr || !seen_order || !seen_shape, ErrorCode::kInvalidArgument,
                    source_ + ": .npy header lacks " +
                        (!seen_descr   ? "'descr'"
                         : !seen_order ? "'fortran_order'"
                                       : "'shape'"));
    return h;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  Status fail(const std::string& msg) const {
    return error(ErrorCode::kInvalidArgument, source_ + ": malformed .npy header: " + msg);
  }
  Status expect(char c) {
    if (peek() != c) return fail(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
    return Status::ok();
  }
  Status once(bool& seen, const std::string& key) const {
    if (seen) return fail("key '" + key + "' appears twice");
    seen = true;
    return Status::ok();
  }
  // 'text' or "text"; no escapes (numpy writes none in these fields).
  Expected<std::string> string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return fail("expected a quoted string at byte " + std::to_string(pos_));
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos) return fail("unterminated string");
    std::string s = text_.substr(pos_ + 1, end - pos_ - 1);
    if (s.find('\\') != std::string::npos || s.size() > 64) return fail("unsupported string '" + s.substr(0, 64) + "'");
    pos_ = end + 1;
    return s;
  }
  Expected<bool> boolean() {
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}})
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return value;
      }
    return fail("'fortran_order' must be True or False");
  }
  // (d0, d1, ...) of non-negative integers of at most 12 digits.
  Expected<std::vector<int64_t>> tuple() {
    RETURN_IF_ERROR(expect('('));
    std::vector<int64_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (peek() == '-') return fail("a negative dimension in 'shape'");
      size_t digits = 0;
      int64_t d = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (++digits > 12) return fail("a dimension in 'shape' has more than 12 digits");
        d = d * 10 + (text_[pos_++] - '0');
      }
      if (digits == 0) return fail("expected a dimension in 'shape' at byte " + std::to_string(pos_));
      if (dims.size() >= 32) return fail("'shape' has more than 32 dimensions");
      dims.push_back(d);
      skip_space();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        return fail("expected ',' or ')' in 'shape' at byte " + std::to_string(pos_));
    }
    ++pos_;
    return dims;
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
};

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
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
  RETURN_ERROR_IF(header_len > kMaxNpyHeaderBytes, ErrorCode::kInvalidArgument,
                  source + ": .npy header of " + std::to_string(header_len) + " bytes is over the limit of " +
                      std::to_string(kMaxNpyHeaderBytes));
  RETURN_ERROR_IF(offset + header_len > bytes.size(), ErrorCode::kInvalidArgument, source + ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  ASSIGN_OR_RETURN(auto h, NpyHeaderParser(header, source).parse());
  RETURN_ERROR_IF(h.descr != "<f4", ErrorCode::kInvalidArgument,
                  source + ": holds '" + h.descr +
                      "'; only little-endian float32 ('<f4') is supported (numpy: .astype(np.float32))");
  RETURN_ERROR_IF(h.fortran_order, ErrorCode::kInvalidArgument,
                  source + ": Fortran-order arrays are not supported (numpy: np.ascontiguousarray)");
  int64_t count = 1;
  for (int64_t d : h.shape) {  // checked before multiplying: the product never wraps
    RETURN_ERROR_IF(d != 0 && count > limits::kMaxTensorElements / d, ErrorCode::kInvalidArgument,
                    source + ": shape " + shape_text(h.shape) + " has more than " +
                        std::to_string(limits::kMaxTensorElements) + " elements");
    count *= d;
  }
  const size_t data_offset = offset + header_len;
  RETURN_ERROR_IF(bytes.size() - data_offset != size_t(count) * sizeof(float), ErrorCode::kInvalidArgument,
                  source + ": holds " + std::to_string(bytes.size() - data_offset) + " data bytes, its shape " +
                      shape_text(h.shape) + " needs " + std::to_string(size_t(count) * sizeof(float)));
  std::vector<float> data(static_cast<size_t>(count));
  if (!data.empty())
    std::memcpy(data.data(), bytes.data() + data_offset, data.size() * sizeof(float));  // (0, 3): no data
  if (shape) *shape = std::move(h.shape);
  return data;
}

Expected<std::vector<float>> read_tensor_file(const std::string& path, const std::vector<int64_t>& expected_shape) {
  int64_t expected_count = 1;
  for (int64_t d : expected_shape) expected_count *= d;
  ASSIGN_OR_RETURN(std::string bytes, read_file(path, size_t{2} << 30));
  std::vector<float> data;
  if (ends_with(path, ".npy")) {
    std::vector<int64_t> shape;
    ASSIGN_OR_RETURN(data, decode_npy(bytes, &shape, path));
    RETURN_ERROR_IF(shape != expected_shape, ErrorCode::kInvalidArgument,
                    path + ": has shape " + shape_text(shape) + "; the network needs " + shape_text(expected_shape) +
                        " (batch, C, H, W)");
    return data;
  }
  RETURN_ERROR_IF(bytes.size() % sizeof(float) != 0, ErrorCode::kInvalidArgument,
                  path + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of float32 values");
  data.resize(bytes.size() / sizeof(float));
  if (!data.empty()) std::memcpy(data.data(), bytes.data(), bytes.size());
  RETURN_ERROR_IF(int64_t(data.size()) != expected_count, ErrorCode::kInvalidArgument,
                  path + ": holds " + std::to_string(data.size()) + " float32 values; the network needs " +
                      std::to_string(expected_count) + " (batch x C x H x W)");
  return data;
}

Status write_tensor_file(const std::string& path, const std::vector<float>& data, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  RETURN_ERROR_IF(
      count != int64_t(data.size()), ErrorCode::kInvalidArgument,
      "cannot write '" + path + "': " + std::to_string(data.size()) + " values for shape " + shape_text(shape));
  if (ends_with(path, ".npy")) return write_text_file(path, encode_npy(data, shape));
  return write_text_file(path, std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
}

}  // namespace ios
