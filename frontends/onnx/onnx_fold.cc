#include "frontends/onnx/onnx_fold.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

namespace ios::onnx_import {

namespace {

Status bad(const std::string& msg) { return error(ErrorCode::kInvalidArgument, msg); }

bool is_integer(const Constant& c) { return c.ints.size() == c.floats.size(); }

Constant make(std::vector<int64_t> dims, std::vector<int64_t> ints) {
  Constant c;
  c.dims = std::move(dims);
  for (int64_t v : ints) c.floats.push_back(float(v));
  c.ints = std::move(ints);
  return c;
}

Constant make_floats(std::vector<int64_t> dims, std::vector<float> floats) {
  Constant c;
  c.dims = std::move(dims);
  c.floats = std::move(floats);
  return c;
}

Expected<const Constant*> input(const std::vector<const Constant*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return bad("input " + std::to_string(i) + " is missing");
  return in[i];
}

Expected<std::vector<int64_t>> ints_of(const std::vector<const Constant*>& in, size_t i) {
  ASSIGN_OR_RETURN(const Constant* c, input(in, i));
  RETURN_ERROR_IF(!is_integer(*c), ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " must be integers");
  return c->ints;
}

int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

Status check_size(int64_t n) {
  RETURN_ERROR_IF(n < 0 || n > kMaxFoldedElements, ErrorCode::kInvalidArgument,
                  "a folded constant of " + std::to_string(n) + " values is over the limit of " +
                      std::to_string(kMaxFoldedElements));
  return Status::ok();
}

// NumPy broadcasting of two shapes (right-aligned; a dimension of 1 stretches).
Expected<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    RETURN_ERROR_IF(
        x != y && x != 1 && y != 1, ErrorCode::kInvalidArgument,
        "operands of shapes that do not broadcast (" + std::to_string(x) + " against " + std::to_string(y) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The flat index into a constant of `dims` (right-aligned against `out`) of output element `flat`.
size_t broadcast_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& out, size_t flat) {
  size_t index = 0, stride = 1;
  for (size_t k = out.size(); k-- > 0;) {
    const auto coord = int64_t(flat % size_t(out[k]));
    flat /= size_t(out[k]);
    const size_t d = k + dims.size();
    if (d < out.size()) continue;  // an axis the operand lacks
    const int64_t size = dims[d - out.size()];
    if (size != 1) index += size_t(coord) * stride;
    stride *= size_t(size);
  }
  return index;
}

// The dimensions a constant broadcasts with: a scalar may come without dimensions, and its one value
// then broadcasts as a 0-D tensor.
std::vector<int64_t> dims_of(const Constant& c) {
  return c.numel() == 1 && c.dims.empty() ? std::vector<int64_t>{} : c.dims;
}

// The dimensions NumPy broadcasts `operands` to, and the count of values: no more than the largest
// operand's or the folding limit, whichever is larger.
struct Broadcast {
  std::vector<int64_t> dims;
  int64_t count = 1;
};
Expected<Broadcast> broadcast_all(const std::vector<const Constant*>& operands) {
  Broadcast out;
  int64_t largest = kMaxFoldedElements;
  for (const Constant* c : operands) {
    ASSIGN_OR_RETURN(out.dims, broadcast_dims(out.dims, dims_of(*c)));
    largest = std::max(largest, c->numel());
  }
  for (int64_t d : out.dims)
    RETURN_ERROR_IF(__builtin_mul_overflow(out.count, d, &out.count), ErrorCode::kInvalidArgument,
                    "a shape past int64");
  RETURN_ERROR_IF(out.count > largest, ErrorCode::kInvalidArgument,
                  "broadcasting makes more than the limit of " + std::to_string(kMaxFoldedElements) + " values");
  return out;
}

// Add / Sub / Mul / Div / Pow / Max / Min of two constants, broadcast as NumPy does. Integers stay
// integers (checked for overflow) except under Pow.
Expected<Constant> arithmetic(const std::string& op, const Constant& a, const Constant& b) {
  ASSIGN_OR_RETURN(const Broadcast shape, broadcast_all({&a, &b}));
  const std::vector<int64_t> da = dims_of(a), db = dims_of(b);
  const std::vector<int64_t>& dims = shape.dims;
  if (is_integer(a) && is_integer(b) && op != "Pow") {
    std::vector<int64_t> out(static_cast<size_t>(shape.count));
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x = a.ints[broadcast_index(da, dims, i)], y = b.ints[broadcast_index(db, dims, i)];
      // The operands are untrusted: a result past int64 is an error, never undefined behaviour.
      bool overflow = false;
      if (op == "Add") overflow = __builtin_add_overflow(x, y, &out[i]);
      if (op == "Sub") overflow = __builtin_sub_overflow(x, y, &out[i]);
      if (op == "Mul") overflow = __builtin_mul_overflow(x, y, &out[i]);
      if (op == "Max") out[i] = std::max(x, y);
      if (op == "Min") out[i] = std::min(x, y);
      if (op == "Div") {
        RETURN_ERROR_IF(y == 0, ErrorCode::kInvalidArgument, "integer division by zero");
        overflow = x == std::numeric_limits<int64_t>::min() && y == -1;
        if (!overflow) out[i] = x / y;
      }
      RETURN_ERROR_IF(overflow, ErrorCode::kInvalidArgument, "integer " + op + " overflows int64");
    }
    return make(dims, std::move(out));
  }
  std::vector<float> out(static_cast<size_t>(shape.count));
  for (size_t i = 0; i < out.size(); ++i) {
    const float x = a.floats[broadcast_index(da, dims, i)], y = b.floats[broadcast_index(db, dims, i)];
    out[i] = op == "Add"   ? x + y
             : op == "Sub" ? x - y
             : op == "Mul" ? x * y
             : op == "Div" ? x / y
             : op == "Pow" ? std::pow(x, y)
             : op == "Max" ? std::max(x, y)
                           : std::min(x, y);
  }
  return make_floats(dims, std::move(out));
}

// Equal of two constants, broadcast: booleans, held as the integers 0 and 1 (exporters compare a shape
// with -1 to pick Expand's target, `Where(Equal(shape, -1), 1, shape)`).
Expected<Constant> equal(const Constant& a, const Constant& b) {
  ASSIGN_OR_RETURN(const Broadcast shape, broadcast_all({&a, &b}));
  const std::vector<int64_t> da = dims_of(a), db = dims_of(b);
  const bool ints = is_integer(a) && is_integer(b);
  std::vector<int64_t> out(static_cast<size_t>(shape.count));
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t ia = broadcast_index(da, shape.dims, i), ib = broadcast_index(db, shape.dims, i);
    out[i] = ints ? a.ints[ia] == b.ints[ib] : a.floats[ia] == b.floats[ib];
  }
  return make(shape.dims, std::move(out));
}

// Where(condition, x, y) of constants, broadcast; x and y both integers or both floats.
Expected<Constant> where(const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* c, input(in, 0));
  ASSIGN_OR_RETURN(const Constant* x, input(in, 1));
  ASSIGN_OR_RETURN(const Constant* y, input(in, 2));
  RETURN_ERROR_IF(!is_integer(*c), ErrorCode::kInvalidArgument, "input 0 (condition) must be booleans");
  ASSIGN_OR_RETURN(const Broadcast shape, broadcast_all({c, x, y}));
  const std::vector<int64_t> dc = dims_of(*c), dx = dims_of(*x), dy = dims_of(*y);
  // The operand element i comes from, and where in it.
  auto pick = [&](size_t i) {
    return c->ints[broadcast_index(dc, shape.dims, i)] != 0 ? std::make_pair(x, broadcast_index(dx, shape.dims, i))
                                                            : std::make_pair(y, broadcast_index(dy, shape.dims, i));
  };
  if (is_integer(*x) && is_integer(*y)) {
    std::vector<int64_t> out(static_cast<size_t>(shape.count));
    for (size_t i = 0; i < out.size(); ++i) {
      const auto [from, at] = pick(i);
      out[i] = from->ints[at];
    }
    return make(shape.dims, std::move(out));
  }
  std::vector<float> out(static_cast<size_t>(shape.count));
  for (size_t i = 0; i < out.size(); ++i) {
    const auto [from, at] = pick(i);
    out[i] = from->floats[at];
  }
  return make_floats(shape.dims, std::move(out));
}

// Ceil, Floor, Neg, Abs, Sqrt, Reciprocal of a constant; Ceil and Floor of integers are the integers.
Expected<Constant> unary(const std::string& op, const Constant& a) {
  if (is_integer(a) && (op == "Ceil" || op == "Floor" || op == "Neg" || op == "Abs")) {
    std::vector<int64_t> out = a.ints;
    for (int64_t& v : out) {
      RETURN_ERROR_IF((op == "Neg" || op == "Abs") && v == std::numeric_limits<int64_t>::min(),
                      ErrorCode::kInvalidArgument, "integer " + op + " overflows int64");
      if (op == "Neg") v = -v;
      if (op == "Abs") v = v < 0 ? -v : v;
    }
    return make(a.dims, std::move(out));
  }
  std::vector<float> out = a.floats;
  for (float& v : out)
    v = op == "Ceil"    ? std::ceil(v)
        : op == "Floor" ? std::floor(v)
        : op == "Neg"   ? -v
        : op == "Abs"   ? std::fabs(v)
        : op == "Sqrt"  ? std::sqrt(v)
                        : 1.f / v;
  return make_floats(a.dims, std::move(out));
}

// Clip of a constant between constant bounds (inputs 1 and 2, opset 11+; absent: unbounded).
Expected<Constant> clip(const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* x, input(in, 0));
  Constant out = *x;
  for (size_t k = 1; k <= 2; ++k) {
    if (k >= in.size() || !in[k]) continue;
    RETURN_ERROR_IF(in[k]->numel() != 1, ErrorCode::kInvalidArgument, "Clip bounds must be single values");
    ASSIGN_OR_RETURN(out, arithmetic(k == 1 ? "Max" : "Min", out, *in[k]));
  }
  return out;
}

// ReduceMean / ReduceSum / ReduceProd of a constant over axes (attribute, or input 1 from opset 18), keepdims.
Expected<Constant> reduce(const onnx::NodeProto& n, const std::vector<const Constant*>& in, int opset) {
  ASSIGN_OR_RETURN(const Constant* x, input(in, 0));
  const auto rank = int64_t(x->dims.size());
  std::vector<int64_t> axes;
  if ((opset >= 18 || n.op_type() == "ReduceSum") && in.size() > 1 && in[1]) {
    ASSIGN_OR_RETURN(axes, ints_of(in, 1));
  } else {
    ASSIGN_OR_RETURN(axes, Attributes(n).get_ints("axes", {}));
  }
  ASSIGN_OR_RETURN(int64_t keepdims, Attributes(n).get_int("keepdims", 1));
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t ax : axes) {
    const int64_t a = normalize_axis(ax, rank);
    RETURN_ERROR_IF(a < 0 || a >= rank, ErrorCode::kInvalidArgument, "axis " + std::to_string(ax) + " out of range");
    reduced[size_t(a)] = true;
  }
  std::vector<int64_t> kept_dims, out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    kept_dims.push_back(reduced[size_t(d)] ? 1 : x->dims[size_t(d)]);
    if (!reduced[size_t(d)] || keepdims) out_dims.push_back(kept_dims.back());
  }
  int64_t n_out = 1;
  for (int64_t d : kept_dims) n_out *= d;
  const bool prod = n.op_type() == "ReduceProd";
  // Integers (a shape's element count, ReduceProd of Shape) stay exact integers except under ReduceMean.
  const bool ints = is_integer(*x) && n.op_type() != "ReduceMean";
  std::vector<double> acc(size_t(n_out), prod ? 1.0 : 0.0);
  std::vector<int64_t> iacc(size_t(n_out), prod ? 1 : 0);
  for (size_t i = 0; i < x->floats.size(); ++i) {
    size_t flat = i, index = 0, stride = 1;
    for (int64_t d = rank; d-- > 0;) {
      const size_t coord = flat % size_t(x->dims[size_t(d)]);
      flat /= size_t(x->dims[size_t(d)]);
      if (!reduced[size_t(d)]) index += coord * stride;
      stride *= size_t(kept_dims[size_t(d)]);
    }
    if (ints) {
      const bool overflow = prod ? __builtin_mul_overflow(iacc[index], x->ints[i], &iacc[index])
                                 : __builtin_add_overflow(iacc[index], x->ints[i], &iacc[index]);
      RETURN_ERROR_IF(overflow, ErrorCode::kInvalidArgument, "integer " + n.op_type() + " overflows int64");
    } else {
      acc[index] = prod ? acc[index] * x->floats[i] : acc[index] + x->floats[i];
    }
  }
  if (ints) return make(out_dims, std::move(iacc));
  const double count = double(x->numel()) / double(std::max<int64_t>(n_out, 1));
  std::vector<float> out;
  for (double v : acc) out.push_back(float(n.op_type() == "ReduceMean" ? v / count : v));
  return make_floats(out_dims, std::move(out));
}

Expected<Constant> gather(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, ints_of(in, 1));
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 0));
  RETURN_ERROR_IF(data->dims.size() != 1 || normalize_axis(axis, 1) != 0, ErrorCode::kInvalidArgument,
                  "folds only a gather from a 1-D constant");
  const int64_t size = data->dims[0];
  Constant out;
  out.dims = in[1]->dims;
  for (int64_t k : idx) {
    const int64_t i = k < 0 ? k + size : k;
    RETURN_ERROR_IF(i < 0 || i >= size, ErrorCode::kInvalidArgument, "index " + std::to_string(k) + " out of range");
    out.floats.push_back(data->floats[size_t(i)]);
    if (is_integer(*data)) out.ints.push_back(data->ints[size_t(i)]);
  }
  return out;
}

// Unsqueeze / Squeeze change only the dimensions; axes from the input (opset 13+) or the attribute.
Expected<Constant> reshape_dims(const onnx::NodeProto& n, const std::vector<const Constant*>& in, int opset) {
  ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
  std::vector<int64_t> axes;
  if (opset >= 13 && in.size() > 1 && in[1]) {
    ASSIGN_OR_RETURN(axes, ints_of(in, 1));
  } else {
    ASSIGN_OR_RETURN(axes, Attributes(n).get_ints("axes", {}));
  }
  Constant out = *data;
  if (n.op_type() == "Unsqueeze") {
    const int64_t rank = int64_t(data->dims.size() + axes.size());
    for (int64_t& a : axes) a = normalize_axis(a, rank);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) {
      RETURN_ERROR_IF(a < 0 || a > int64_t(out.dims.size()), ErrorCode::kInvalidArgument, "axis out of range");
      out.dims.insert(out.dims.begin() + a, 1);
    }
    return out;
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < int64_t(data->dims.size()); ++i) {
    const bool listed = std::any_of(axes.begin(), axes.end(),
                                    [&](int64_t a) { return normalize_axis(a, int64_t(data->dims.size())) == i; });
    if ((axes.empty() && data->dims[size_t(i)] == 1) || listed) {
      RETURN_ERROR_IF(data->dims[size_t(i)] != 1, ErrorCode::kInvalidArgument, "squeezes an axis that is not 1");
      continue;
    }
    dims.push_back(data->dims[size_t(i)]);
  }
  out.dims = dims;
  return out;
}

Expected<Constant> concat(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 0));
  Constant out;
  bool integer = true;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSIGN_OR_RETURN(const Constant* c, input(in, i));
    RETURN_ERROR_IF(c->dims.size() != 1 || normalize_axis(axis, 1) != 0, ErrorCode::kInvalidArgument,
                    "folds only a concatenation of 1-D constants");
    integer = integer && is_integer(*c);
    out.floats.insert(out.floats.end(), c->floats.begin(), c->floats.end());
    out.ints.insert(out.ints.end(), c->ints.begin(), c->ints.end());
  }
  if (!integer) out.ints.clear();
  out.dims = {int64_t(out.floats.size())};
  return out;
}

// Slice of a constant along any of its axes (starts, ends, axes, steps as ONNX gives them).
Expected<Constant> slice(const onnx::NodeProto& n, const std::vector<const Constant*>& in, int opset) {
  ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
  const auto rank = int64_t(data->dims.size());
  RETURN_ERROR_IF(rank == 0, ErrorCode::kInvalidArgument, "folds no slice of a scalar");
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset >= 10) {
    ASSIGN_OR_RETURN(starts, ints_of(in, 1));
    ASSIGN_OR_RETURN(ends, ints_of(in, 2));
    if (in.size() > 3 && in[3]) {
      ASSIGN_OR_RETURN(axes, ints_of(in, 3));
    }
    if (in.size() > 4 && in[4]) {
      ASSIGN_OR_RETURN(steps, ints_of(in, 4));
    }
  } else {
    ASSIGN_OR_RETURN(starts, Attributes(n).get_ints("starts", {}));
    ASSIGN_OR_RETURN(ends, Attributes(n).get_ints("ends", {}));
    ASSIGN_OR_RETURN(axes, Attributes(n).get_ints("axes", {}));
  }
  if (axes.empty())
    for (int64_t a = 0; a < int64_t(starts.size()); ++a) axes.push_back(a);
  if (steps.empty()) steps.assign(starts.size(), 1);
  RETURN_ERROR_IF(ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size(),
                  ErrorCode::kInvalidArgument, "starts, ends, axes and steps differ in length");
  // Per axis: first index, step and count (whole axes where not sliced).
  std::vector<int64_t> first(size_t(rank), 0), step(size_t(rank), 1), count = data->dims;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = normalize_axis(axes[k], rank);
    RETURN_ERROR_IF(a < 0 || a >= rank || seen[size_t(a)], ErrorCode::kInvalidArgument,
                    "axis " + std::to_string(axes[k]) + " is out of range or repeated");
    RETURN_ERROR_IF(steps[k] == 0, ErrorCode::kInvalidArgument, "a step of 0");
    seen[size_t(a)] = true;
    const int64_t size = data->dims[size_t(a)], st = steps[k];
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -size ? lo : v + size;  // ends like INT64_MIN mean "before the start"
      return std::clamp(v, lo, hi);
    };
    const int64_t b = st > 0 ? clamp(starts[k], 0, size) : clamp(starts[k], -1, size - 1);
    const int64_t e = st > 0 ? clamp(ends[k], 0, size) : clamp(ends[k], -1, size - 1);
    first[size_t(a)] = b, step[size_t(a)] = st;
    count[size_t(a)] = st > 0 ? (e > b ? (e - b + st - 1) / st : 0) : (b > e ? (b - e - st - 1) / -st : 0);
  }
  int64_t total = 1;
  for (int64_t c : count) total *= c;  // at most the input's element count
  Constant out;
  out.dims = count;
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, index = 0, stride = 1;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t coord = rest % count[size_t(d)];
      rest /= count[size_t(d)];
      index += (first[size_t(d)] + coord * step[size_t(d)]) * stride;
      stride *= data->dims[size_t(d)];
    }
    out.floats.push_back(data->floats[size_t(index)]);
    if (is_integer(*data)) out.ints.push_back(data->ints[size_t(index)]);
  }
  return out;
}

// Transpose of a constant (perm attribute; absent: the axes reversed).
Expected<Constant> transpose(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* x, input(in, 0));
  const auto rank = int64_t(x->dims.size());
  std::vector<int64_t> reversed;
  for (int64_t d = rank; d-- > 0;) reversed.push_back(d);
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, Attributes(n).get_ints("perm", reversed));
  RETURN_ERROR_IF(int64_t(perm.size()) != rank, ErrorCode::kInvalidArgument,
                  "attribute 'perm' does not match the rank");
  std::vector<bool> used(size_t(rank), false);
  for (int64_t p : perm) {
    RETURN_ERROR_IF(p < 0 || p >= rank || used[size_t(p)], ErrorCode::kInvalidArgument,
                    "attribute 'perm' is not a permutation");
    used[size_t(p)] = true;
  }
  Constant out;
  for (int64_t p : perm) out.dims.push_back(x->dims[size_t(p)]);
  std::vector<int64_t> in_stride(size_t(rank), 1);
  for (int64_t d = rank - 1; d-- > 0;) in_stride[size_t(d)] = in_stride[size_t(d + 1)] * x->dims[size_t(d + 1)];
  const int64_t total = x->numel();
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, index = 0;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t coord = rest % out.dims[size_t(d)];
      rest /= out.dims[size_t(d)];
      index += coord * in_stride[size_t(perm[size_t(d)])];
    }
    out.floats.push_back(x->floats[size_t(index)]);
    if (is_integer(*x)) out.ints.push_back(x->ints[size_t(index)]);
  }
  return out;
}

// BatchNormalization of a constant (weight standardization written as batch_norm in training mode: the
// statistics over every axis but 1; otherwise the given mean and variance).
Expected<Constant> batch_norm(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* x, input(in, 0));
  ASSIGN_OR_RETURN(const Constant* scale, input(in, 1));
  ASSIGN_OR_RETURN(const Constant* shift, input(in, 2));
  ASSIGN_OR_RETURN(int64_t training, Attributes(n).get_int("training_mode", 0));
  ASSIGN_OR_RETURN(float eps, Attributes(n).get_float("epsilon", 1e-5f));
  RETURN_ERROR_IF(x->dims.size() < 2, ErrorCode::kInvalidArgument, "input 0 has no channel axis");
  const int64_t channels = x->dims[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x->dims.size(); ++d) inner *= x->dims[d];
  const int64_t outer = channels > 0 ? x->numel() / (channels * std::max<int64_t>(inner, 1)) : 0;
  auto per_channel = [&](const Constant* c) { return c->numel() == channels || c->numel() == 1; };
  RETURN_ERROR_IF(!per_channel(scale) || !per_channel(shift), ErrorCode::kInvalidArgument,
                  "scale and bias must hold one value per channel");
  std::vector<double> mean(size_t(channels), 0.0), var(size_t(channels), 0.0);
  auto at = [&](int64_t o, int64_t c, int64_t i) { return double(x->floats[size_t((o * channels + c) * inner + i)]); };
  if (training) {
    const double count = double(outer * inner);
    RETURN_ERROR_IF(count == 0, ErrorCode::kInvalidArgument, "normalizes an empty tensor");
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) mean[size_t(c)] += at(o, c, i) / count;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) var[size_t(c)] += std::pow(at(o, c, i) - mean[size_t(c)], 2) / count;
    }
  } else {
    ASSIGN_OR_RETURN(const Constant* m, input(in, 3));
    ASSIGN_OR_RETURN(const Constant* v, input(in, 4));
    RETURN_ERROR_IF(!per_channel(m) || !per_channel(v), ErrorCode::kInvalidArgument,
                    "mean and variance must hold one value per channel");
    for (int64_t c = 0; c < channels; ++c) {
      mean[size_t(c)] = m->floats[m->numel() == 1 ? 0 : size_t(c)];
      var[size_t(c)] = v->floats[v->numel() == 1 ? 0 : size_t(c)];
    }
  }
  Constant out;
  out.dims = x->dims;
  out.floats.resize(x->floats.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const double a = scale->floats[scale->numel() == 1 ? 0 : size_t(c)] / std::sqrt(var[size_t(c)] + eps);
      const double b = shift->floats[shift->numel() == 1 ? 0 : size_t(c)];
      for (int64_t i = 0; i < inner; ++i)
        out.floats[size_t((o * channels + c) * inner + i)] = float((at(o, c, i) - mean[size_t(c)]) * a + b);
    }
  return out;
}

Expected<Constant> cast(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
  ASSIGN_OR_RETURN(int64_t to, Attributes(n).get_int("to", 0));
  Constant out = *data;
  const bool to_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 ||
                      to == onnx::TensorProto::INT8 || to == onnx::TensorProto::UINT8 || to == onnx::TensorProto::BOOL;
  if (to_int && !is_integer(out)) {
    out.ints.clear();
    for (float& f : out.floats) {
      RETURN_ERROR_IF(!std::isfinite(f) || std::fabs(f) > 9e15f, ErrorCode::kInvalidArgument,
                      "casts " + std::to_string(f) + " to an integer");
      out.ints.push_back(to == onnx::TensorProto::BOOL ? f != 0.f : int64_t(f));
      f = float(out.ints.back());
    }
  } else if (!to_int) {
    out.ints.clear();
  }
  return out;
}

Expected<Constant> range(const std::vector<const Constant*>& in) {
  std::array<const Constant*, 3> s{};
  for (size_t i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(s[i], input(in, i));
    RETURN_ERROR_IF(s[i]->numel() != 1, ErrorCode::kInvalidArgument, "Range takes scalars");
  }
  RETURN_ERROR_IF(!is_integer(*s[0]) || !is_integer(*s[1]) || !is_integer(*s[2]) || s[2]->ints[0] == 0,
                  ErrorCode::kInvalidArgument, "folds only an integer Range with a non-zero delta");
  const int64_t start = s[0]->ints[0], limit = s[1]->ints[0], delta = s[2]->ints[0];
  // In 128 bits: limit - start of untrusted int64 bounds may not fit in 64.
  const __int128 span = __int128(limit) - start + delta + (delta > 0 ? -1 : 1);
  const __int128 steps = std::max<__int128>(0, span / delta);
  RETURN_ERROR_IF(steps > kMaxFoldedElements, ErrorCode::kInvalidArgument,
                  "a folded Range of more than " + std::to_string(kMaxFoldedElements) + " values");
  const auto count = int64_t(steps);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(start + i * delta);
  return make({count}, std::move(out));
}

Expected<Constant> constant_of_shape(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ints_of(in, 0));
  int64_t count = 1;
  for (int64_t d : dims) {
    RETURN_ERROR_IF(d < 0 || (d > 0 && count > kMaxFoldedElements / d), ErrorCode::kInvalidArgument,
                    "ConstantOfShape of a negative or too large shape");
    count *= d;
  }
  Constant value = make({}, {0});
  value.ints.clear();  // the default: float 0
  if (const onnx::TensorProto* t = Attributes(n).get_tensor("value")) {
    ASSIGN_OR_RETURN(value, read_tensor(*t, ""));
    RETURN_ERROR_IF(value.numel() != 1, ErrorCode::kInvalidArgument, "attribute 'value' must hold one value");
  }
  Constant out;
  out.dims = dims;
  out.floats.assign(size_t(count), value.floats[0]);
  if (is_integer(value)) out.ints.assign(size_t(count), value.ints[0]);
  return out;
}

Expected<Constant> reshape(const std::vector<const Constant*>& in) {
  ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ints_of(in, 1));
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && i < data->dims.size()) shape[i] = data->dims[i];
    if (shape[i] == -1) {
      RETURN_ERROR_IF(infer >= 0, ErrorCode::kInvalidArgument, "two -1 dimensions");
      infer = int64_t(i);
    } else {
      RETURN_ERROR_IF(shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known), ErrorCode::kInvalidArgument,
                      "a negative dimension or a shape past int64");
    }
  }
  if (infer >= 0) shape[size_t(infer)] = known > 0 ? data->numel() / known : 0;
  int64_t total = 1;
  for (int64_t d : shape)
    RETURN_ERROR_IF(__builtin_mul_overflow(total, d, &total), ErrorCode::kInvalidArgument, "a shape past int64");
  RETURN_ERROR_IF(total != data->numel(), ErrorCode::kInvalidArgument, "the new shape has another element count");
  Constant out = *data;
  out.dims = shape;
  return out;
}

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {"Ceil", "Floor", "Neg", "Abs", "Sqrt", "Reciprocal"};
  return ops;
}

const std::set<std::string>& constant_only() {
  static const std::set<std::string> ops = {"Shape", "Gather",          "Unsqueeze", "Squeeze",
                                            "Range", "ConstantOfShape", "Equal",     "Where"};
  return ops;
}

}  // namespace

bool is_constant_only_op(const std::string& op_type) { return constant_only().count(op_type) > 0; }

bool is_foldable_op(const std::string& op_type) {
  static const std::set<std::string> also = {"Add",        "Sub",
                                             "Mul",        "Div",
                                             "Concat",     "Slice",
                                             "Cast",       "Reshape",
                                             "Pow",        "Max",
                                             "Min",        "Clip",
                                             "ReduceMean", "ReduceSum",
                                             "ReduceProd", "Ceil",
                                             "Floor",      "Neg",
                                             "Abs",        "Sqrt",
                                             "Reciprocal", "BatchNormalization",
                                             "Transpose"};
  return is_constant_only_op(op_type) || also.count(op_type) > 0;
}

Expected<Constant> fold_node(const onnx::NodeProto& n, const std::vector<const Constant*>& in, int opset) {
  const std::string& op = n.op_type();
  Expected<Constant> out = bad("op type " + op + " is not folded");
  if (op == "Shape") {  // of a constant
    ASSIGN_OR_RETURN(const Constant* data, input(in, 0));
    out = make({int64_t(data->dims.size())}, data->dims);
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
    ASSIGN_OR_RETURN(const Constant* a, input(in, 0));
    ASSIGN_OR_RETURN(const Constant* b, input(in, 1));
    out = arithmetic(op, *a, *b);
  } else if (op == "Max" || op == "Min") {  // variadic
    ASSIGN_OR_RETURN(const Constant* first, input(in, 0));
    Constant acc = *first;
    for (size_t k = 1; k < in.size(); ++k) {
      ASSIGN_OR_RETURN(const Constant* next, input(in, k));
      ASSIGN_OR_RETURN(acc, arithmetic(op, acc, *next));
    }
    out = std::move(acc);
  } else if (unary_ops().count(op)) {
    ASSIGN_OR_RETURN(const Constant* a, input(in, 0));
    out = unary(op, *a);
  } else if (op == "Clip") {
    out = clip(in);
  } else if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceProd") {
    out = reduce(n, in, opset);
  } else if (op == "BatchNormalization") {
    out = batch_norm(n, in);
  } else if (op == "Transpose") {
    out = transpose(n, in);
  } else if (op == "Gather") {
    out = gather(n, in);
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    out = reshape_dims(n, in, opset);
  } else if (op == "Concat") {
    out = concat(n, in);
  } else if (op == "Slice") {
    out = slice(n, in, opset);
  } else if (op == "Cast") {
    out = cast(n, in);
  } else if (op == "Range") {
    out = range(in);
  } else if (op == "ConstantOfShape") {
    out = constant_of_shape(n, in);
  } else if (op == "Reshape") {
    out = reshape(in);
  } else if (op == "Equal") {
    ASSIGN_OR_RETURN(const Constant* a, input(in, 0));
    ASSIGN_OR_RETURN(const Constant* b, input(in, 1));
    out = equal(*a, *b);
  } else if (op == "Where") {
    out = where(in);
  }
  // A result no larger than an input the file already holds is allowed past the limit (arithmetic on a
  // large weight); only folds that would grow past both are refused.
  int64_t largest_input = 0;
  for (const Constant* c : in)
    if (c) largest_input = std::max(largest_input, c->numel());
  if (out && out->numel() > largest_input) RETURN_IF_ERROR(check_size(out->numel()));
  return out;
}

}  // namespace ios::onnx_import
