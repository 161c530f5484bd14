#include "ir/ops/pool.h"

#include "common/limits.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

const char* pool_kind_name(PoolKind kind) {
  switch (kind) {
    case PoolKind::kMax:
      return "max";
    case PoolKind::kAvg:
      return "avg";
    case PoolKind::kGlobalMax:
      return "global_max";
    case PoolKind::kGlobalAvg:
      return "global_avg";
  }
  return "?";
}

std::optional<PoolKind> parse_pool_kind(const std::string& s) {
  for (PoolKind k : {PoolKind::kMax, PoolKind::kAvg, PoolKind::kGlobalMax, PoolKind::kGlobalAvg})
    if (s == pool_kind_name(k)) return k;
  return std::nullopt;
}

Expected<Shape> PoolAttrs::infer(const Shape& in) const {
  if (is_global()) return Shape{in.c, 1, 1};
  RETURN_IF_ERROR(op_check::pair("kernel", kh, kw, 1, limits::kMaxWindow));
  RETURN_IF_ERROR(op_check::pair("stride", sh, sw, 1, limits::kMaxWindow));
  RETURN_IF_ERROR(op_check::pair("padding", ph, pw, 0, limits::kMaxPadding));
  RETURN_IF_ERROR(op_check::pair("dilation", dh, dw, 1, limits::kMaxWindow));
  // PyTorch has no dilated average: its divisor over spread taps is left undefined here rather than guessed.
  RETURN_ERROR_IF(dilated() && kind != PoolKind::kMax, ErrorCode::kInvalidGraph,
                  "field 'dilation' is supported for max pooling only");
  // Half the dilated window, as PyTorch requires: a window never lies wholly in the padding.
  RETURN_ERROR_IF(2 * ph > dh * (kh - 1) + 1 || 2 * pw > dw * (kw - 1) + 1, ErrorCode::kInvalidGraph,
                  "field 'padding' must be at most half the kernel");
  Shape out{in.c, op_check::window_output(in.h, kh, sh, ph, dh, ceil_mode),
            op_check::window_output(in.w, kw, sw, pw, dw, ceil_mode)};
  RETURN_ERROR_IF(out.h <= 0 || out.w <= 0, ErrorCode::kInvalidGraph,
                  "pool window larger than the padded input " + in.to_string());
  return out;
}

NodeCost PoolAttrs::cost(const Shape& in, const Shape& out) const {
  const double window = is_global() ? double(in.h) * in.w : double(kh) * kw;
  return op_check::pointwise(in, out, window);
}

void PoolAttrs::write(OpWriter& w) const {
  w.set("pool_type", pool_kind_name(kind))
      .set_pair("kernel", kh, kw)
      .set_pair("stride", sh, sw)
      .set_pair("padding", ph, pw)
      .set("ceil_mode", ceil_mode)
      .set("count_include_pad", count_include_pad);
  // Written only where it is not 1, so the attributes (signatures, cache keys) of other pools stay as they are.
  if (dilated()) w.set_pair("dilation", dh, dw);
}

Expected<PoolAttrs> PoolAttrs::read(const OpReader& r) {
  PoolAttrs p;
  ASSIGN_OR_RETURN(std::string kind, r.string("pool_type"));
  auto parsed = parse_pool_kind(kind);
  RETURN_ERROR_IF(!parsed, ErrorCode::kInvalidGraph,
                  r.where() + ": field 'pool_type' has unknown value '" + kind + "'");
  p.kind = *parsed;
  // IOS stores a global pool's resolved H x W as its kernel; we resolve at run time.
  const int64_t max_window = p.is_global() ? limits::kMaxSpatial : limits::kMaxWindow;
  ASSIGN_OR_RETURN(auto k, r.pair("kernel", {1, 1}, false, 1, max_window));
  ASSIGN_OR_RETURN(auto s, r.pair("stride", {1, 1}, false, 1, max_window));
  ASSIGN_OR_RETURN(auto pad, r.pair("padding", {0, 0}, false, 0, limits::kMaxPadding));
  ASSIGN_OR_RETURN(auto d, r.pair("dilation", {1, 1}, false, 1, limits::kMaxWindow));
  p.kernel(k.first, k.second).stride(s.first, s.second).pad(pad.first, pad.second).dilation(d.first, d.second);
  if (p.is_global()) p.kernel(1).stride(1).pad(0).dilation(1, 1);
  ASSIGN_OR_RETURN(p.ceil_mode, r.boolean("ceil_mode", false));
  ASSIGN_OR_RETURN(p.count_include_pad, r.boolean("count_include_pad", true));
  return p;
}

}  // namespace ios::ir
