#include "common/exec_config.h"

namespace ios {

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::kF32:
      return "f32";
    case DataType::kF16:
      return "f16";
    case DataType::kBF16:
      return "bf16";
  }
  return "?";
}

const char* layout_name(Layout l) { return l == Layout::kNCHW ? "nchw" : "nhwc"; }

const char* concat_writes_name(ConcatWrites w) { return w == ConcatWrites::kInPlace ? "in-place" : "conv-copy"; }

Expected<ConcatWrites> parse_concat_writes(const std::string& name) {
  for (ConcatWrites w : {ConcatWrites::kInPlace, ConcatWrites::kConvCopy})
    if (name == concat_writes_name(w)) return w;
  return error(ErrorCode::kInvalidArgument, "--concat-writes must be in-place or conv-copy, got '" + name + "'");
}

size_t element_bytes(DataType t) { return t == DataType::kF32 ? 4 : 2; }

std::string ExecConfig::precision() const {
  switch (dtype) {
    case DataType::kF32:
      return math == MathMode::kTf32 ? "tf32" : "fp32";
    case DataType::kF16:
      return "fp16";
    case DataType::kBF16:
      return "bf16";
  }
  return "?";
}

double ExecConfig::tolerance() const {
  switch (dtype) {
    case DataType::kF32:
      return math == MathMode::kTf32 ? 5e-3 : 1e-4;
    case DataType::kF16:
      return 1e-2;
    case DataType::kBF16:
      return 3e-2;
  }
  return 0;
}

std::string ExecConfig::key() const { return precision() + "/" + layout_name(layout) + "/b" + std::to_string(batch); }

// The default adds nothing, so stage-cache files written before the choice existed keep their keys.
std::string ExecConfig::plan_key() const {
  return concat_writes == ConcatWrites::kInPlace ? key() : key() + "/" + concat_writes_name(concat_writes);
}

Expected<ExecConfig> make_exec_config(const std::string& precision, const std::string& layout, int batch,
                                      const std::string& concat_writes) {
  ExecConfig c;
  if (precision == "fp32") {
    c.dtype = DataType::kF32;
  } else if (precision == "tf32") {
    c.math = MathMode::kTf32;
  } else if (precision == "fp16") {
    c.dtype = DataType::kF16;
  } else if (precision == "bf16") {
    c.dtype = DataType::kBF16;
  } else {
    return error(ErrorCode::kInvalidArgument, "--precision must be fp32, tf32, fp16 or bf16, got '" + precision + "'");
  }
  if (layout == "nchw") {
    c.layout = Layout::kNCHW;
  } else if (layout == "nhwc") {
    c.layout = Layout::kNHWC;
  } else if (layout == "auto") {
    c.layout = c.tensor_cores() ? Layout::kNHWC : Layout::kNCHW;
  } else {
    return error(ErrorCode::kInvalidArgument, "--layout must be nchw, nhwc or auto, got '" + layout + "'");
  }
  RETURN_ERROR_IF(batch < 1 || batch > 65536, ErrorCode::kInvalidArgument,
                  "--batch must be between 1 and 65536, got " + std::to_string(batch));
  c.batch = batch;
  ASSIGN_OR_RETURN(c.concat_writes, parse_concat_writes(concat_writes));
  return c;
}

SliceLayout slice_layout(Layout layout, int buffer_channels, int begin, int h, int w) {
  const int64_t hw = int64_t{h} * w, channels = buffer_channels;
  SliceLayout s;
  s.n = channels * hw;
  if (layout == Layout::kNCHW) {
    s.offset = int64_t{begin} * hw;
    s.c = hw, s.h = w, s.w = 1;
  } else {
    s.offset = begin;
    s.c = 1, s.h = int64_t{w} * channels, s.w = channels;
  }
  return s;
}

}  // namespace ios
