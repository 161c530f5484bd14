// How a network is executed: storage type, math mode, memory layout and batch, in one value that
// the cost models, stage-cache keys, memory plan, executor, schedule metadata and experiment CSVs
// all take. Adding a precision or layout is a value here, not an edit in every file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/element_types.h"
#include "common/status.h"

namespace ios {

const char* dtype_name(DataType t);                                   // f32 | f16 | bf16
const char* layout_name(Layout l);                                    // nchw | nhwc
const char* concat_writes_name(ConcatWrites w);                       // in-place | conv-copy
Expected<ConcatWrites> parse_concat_writes(const std::string& name);  // the inverse of concat_writes_name
size_t element_bytes(DataType t);

struct ExecConfig {
  DataType dtype = DataType::kF32;
  MathMode math = MathMode::kStrict;
  Layout layout = Layout::kNCHW;
  int batch = 1;
  ConcatWrites concat_writes = ConcatWrites::kInPlace;

  std::string precision() const;  // fp32 | tf32 | fp16 | bf16: the user's name for dtype + math
  size_t element_bytes() const { return ios::element_bytes(dtype); }
  bool tensor_cores() const { return dtype != DataType::kF32 || math == MathMode::kTf32; }
  // Relative L2 error allowed against the fp32 CPU reference.
  double tolerance() const;
  // "fp16/nhwc/b4": feeds kernel-cache keys and file names (what a kernel computes and reads).
  std::string key() const;
  // key() and how concatenations are written ("fp16/nhwc/b4/conv-copy"): feeds stage-cache keys, whose
  // figures depend on the memory plan.
  std::string plan_key() const;
  bool operator==(const ExecConfig&) const = default;
};

// `precision`: fp32 | tf32 | fp16 | bf16; `layout`: nchw | nhwc | auto (NHWC where tensor cores run,
// which is what their kernels read without transposing; NCHW for strict fp32).
// `concat_writes`: in-place | conv-copy (ConcatWrites).
Expected<ExecConfig> make_exec_config(const std::string& precision, const std::string& layout, int batch,
                                      const std::string& concat_writes = "in-place");

// Element strides of a channel slice [begin, begin + c) of a buffer with `buffer_channels` channels
// and h x w pixels: a slice is an offset and strides in either layout.
struct SliceLayout {
  int64_t offset = 0;                  // elements from the buffer's start to the slice's first element
  int64_t n = 0, c = 0, h = 0, w = 0;  // strides
};
SliceLayout slice_layout(Layout layout, int buffer_channels, int begin, int h, int w);

}  // namespace ios
