// What a convolution spec is, apart from how it is built: its cache key and hash, which engine setting
// applies, whether it touches a strided slice.
#include <algorithm>
#include <sstream>
#include <string>

#include "runtime/conv_kernel.h"

namespace ios::rt {

int act_code(ir::Act a) { return static_cast<int>(a); }

namespace {
bool is_strided(const ConvSpec& spec, const SliceLayout& l, const ir::Shape& s) {
  const SliceLayout packed = slice_layout(spec.config.layout, s.c, 0, s.h, s.w);
  return l.c != packed.c || l.h != packed.h || l.w != packed.w || (spec.config.batch > 1 && l.n != packed.n);
}
}  // namespace

bool touches_strided_slice(const ConvSpec& spec) {
  return is_strided(spec, spec.x, spec.in) || writes_strided_slice(spec) ||
         (spec.z && is_strided(spec, *spec.z, spec.out));
}

bool writes_strided_slice(const ConvSpec& spec) { return is_strided(spec, spec.y, spec.out); }

Expected<ConvEngine> parse_conv_engine(const std::string& s) {
  for (ConvEngine e : {ConvEngine::kAuto, ConvEngine::kGraph, ConvEngine::kGraphExhaustive,
                       ConvEngine::kGraphRuntimeCompiled, ConvEngine::kLegacy})
    if (s == conv_engine_name(e)) return e;
  return error(ErrorCode::kInvalidArgument,
               "--conv-engine must be auto, graph, graph-exhaustive, graph-rtc or legacy, got '" + s + "'");
}

ConvEngine resolve_conv_engine(ConvEngine e, DataType dtype, MathMode math) {
  if (e != ConvEngine::kAuto) return e;
  return dtype == DataType::kF32 && math == MathMode::kStrict ? ConvEngine::kGraphExhaustive
                                                              : ConvEngine::kGraphRuntimeCompiled;
}

const char* conv_engine_name(ConvEngine e) {
  switch (e) {
    case ConvEngine::kAuto:
      return "auto";
    case ConvEngine::kGraph:
      return "graph";
    case ConvEngine::kGraphExhaustive:
      return "graph-exhaustive";
    case ConvEngine::kGraphRuntimeCompiled:
      return "graph-rtc";
    case ConvEngine::kLegacy:
      return "legacy";
  }
  return "graph";
}

int pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int align = 16;
  while (align > 1 && a % uintptr_t(align) != 0) align /= 2;
  return align;
}

std::string ConvSpec::key() const {
  std::ostringstream os;
  os << config.key() << "|in" << in.to_string() << "|out" << out.to_string() << "|" << ir::attrs_key(attrs) << "|xs"
     << x.n << "," << x.c << "," << x.h << "," << x.w << "|ys" << y.n << "," << y.c << "," << y.h << "," << y.w << "|al"
     << x_align << "," << y_align;
  if (z) os << "|z" << z->n << "," << z->c << "," << z->h << "," << z->w << "|zal" << z_align;
  return os.str();
}

namespace {

bool same_strides(const SliceLayout& a, const SliceLayout& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

void mix(size_t& h, int64_t v) { h = (h ^ static_cast<size_t>(v)) * 1099511628211ull; }

}  // namespace

size_t ConvSpecHash::operator()(const ConvSpec& s) const {
  size_t h = 1469598103934665603ull;
  for (int64_t v : {int64_t(s.config.dtype), int64_t(s.config.math), int64_t(s.config.layout), int64_t(s.config.batch)})
    mix(h, v);
  const ir::ConvAttrs& a = s.attrs;
  for (int v : {a.out_channels,
                a.kh,
                a.kw,
                a.sh,
                a.sw,
                a.ph,
                a.pw,
                a.dh,
                a.dw,
                a.groups,
                int(a.has_bias),
                int(a.activation),
                s.in.c,
                s.in.h,
                s.in.w,
                s.out.c,
                s.out.h,
                s.out.w,
                s.x_align,
                s.y_align})
    mix(h, v);
  for (int64_t v : {s.x.n, s.x.c, s.x.h, s.x.w, s.y.n, s.y.c, s.y.h, s.y.w}) mix(h, v);
  if (s.z)
    for (int64_t v : {s.z->n, s.z->c, s.z->h, s.z->w, int64_t(s.z_align)}) mix(h, v);
  return h;
}

bool SameConvKey::operator()(const ConvSpec& a, const ConvSpec& b) const {
  return a.config == b.config && a.attrs == b.attrs && a.in == b.in && a.out == b.out && same_strides(a.x, b.x) &&
         same_strides(a.y, b.y) && a.x_align == b.x_align && a.y_align == b.y_align &&
         a.z.has_value() == b.z.has_value() && (!a.z || (same_strides(*a.z, *b.z) && a.z_align == b.z_align));
}

std::string kernel_cache_key(const ConvSpec& spec, ConvEngine engine, bool own_kernels) {
  return spec.key() + "|" + conv_engine_name(engine) + (own_kernels ? "+ios" : "");
}

}  // namespace ios::rt
