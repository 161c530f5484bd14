// ONNX handlers of tensor plumbing: channel slices and splits, concatenation, sums, products and differences,
// casts, flattening, and the constant folding every node is tried against first.
#include <algorithm>

#include "frontends/onnx/importer.h"

namespace ios::onnx_import::detail {

// Channels [lo, hi) of an activation: the IR's values are channel slices already, so a slice is a view
// (each summed value narrowed, terms outside the range left out) and costs no copy.
Activation channel_slice(const Activation& a, int lo, int hi) {
  Activation out;
  int offset = 0;
  for (const ir::Term& term : a.terms) {
    const int c = term[0].channels(), b = std::max(lo, offset), e = std::min(hi, offset + c);
    if (b < e) {
      ir::Term t;
      for (const ir::Value& v : term) t.push_back(v.slice(b - offset, e - offset));
      out.terms.push_back(std::move(t));
    }
    offset += c;
  }
  return out;
}

// ONNX's clamping of a slice bound on an axis of `dim` elements (step 1).
int64_t clamp_bound(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return std::clamp<int64_t>(v, 0, dim);
}

// Slice of channels (axis 1), step 1, as a view; the other axes only whole.
Status Importer::slice(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "slices a flattened tensor; only channel slices are supported");
  const ir::Shape shape = shape_of(x->terms);
  const std::array<int64_t, 4> dims{int64_t(limits::kMaxBatch), shape.c, shape.h, shape.w};
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    for (auto [i, out] : {std::pair{1, &starts}, {2, &ends}, {3, &axes}, {4, &steps}}) {
      if (!has_input(n, i)) continue;
      ASSIGN_OR_RETURN(const Constant* c, const_input(n, i));
      RETURN_ERROR_IF(c->ints.size() != size_t(c->numel()), ErrorCode::kInvalidArgument,
                      "input " + std::to_string(i) + " must hold integers");
      *out = c->ints;
    }
  } else {
    const Attributes at(n);
    ASSIGN_OR_RETURN(starts, at.get_ints("starts", {}));
    ASSIGN_OR_RETURN(ends, at.get_ints("ends", {}));
    ASSIGN_OR_RETURN(axes, at.get_ints("axes", {}));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  RETURN_ERROR_IF(starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size(),
                  ErrorCode::kInvalidArgument, "starts, ends, axes and steps must have one value per sliced axis");
  int64_t lo = 0, hi = shape.c;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + 4 : axes[i];
    RETURN_ERROR_IF(axis < 0 || axis > 3, ErrorCode::kInvalidArgument,
                    "axis " + std::to_string(axes[i]) + " of a 4-D tensor");
    RETURN_ERROR_IF(steps[i] != 1, ErrorCode::kInvalidArgument, "only step 1 is supported");
    const int64_t b = clamp_bound(starts[i], dims[size_t(axis)]), e = clamp_bound(ends[i], dims[size_t(axis)]);
    if (axis == 1) {
      lo = b, hi = e;
      continue;
    }
    RETURN_ERROR_IF(b != 0 || e != dims[size_t(axis)], ErrorCode::kInvalidArgument,
                    "slicing axis " + std::to_string(axis) + " is not supported; only channels (axis 1)");
  }
  RETURN_ERROR_IF(lo >= hi, ErrorCode::kInvalidArgument,
                  "the channel slice [" + std::to_string(lo) + ", " + std::to_string(hi) + ") is empty");
  consume(*x);
  define(n.output(0), channel_slice(*x, int(lo), int(hi)));
  ++counts_["Slice of channels read as a view"];
  return Status::ok();
}

// Split along channels into views; sizes from the 'split' input (opset 13+) or attribute, else equal
// parts (num_outputs, opset 18, or the number of outputs).
Status Importer::split(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  RETURN_ERROR_IF(x->flat, ErrorCode::kInvalidArgument, "splits a flattened tensor; only channel splits are supported");
  const Attributes at(n);
  ASSIGN_OR_RETURN(int64_t axis, at.get_int("axis", 0));
  RETURN_ERROR_IF(axis != 1 && axis != -3, ErrorCode::kInvalidArgument,
                  "axis " + std::to_string(axis) + ": only splits along channels (axis 1) are supported");
  const int channels = shape_of(x->terms).c;
  std::vector<int64_t> sizes;
  if (opset_ >= 13 && has_input(n, 1)) {
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1));
    sizes = c->ints;
  } else if (opset_ < 13) {
    ASSIGN_OR_RETURN(sizes, at.get_ints("split", {}));
  }
  const int64_t parts = n.output_size();
  if (sizes.empty()) {  // equal parts, the last one smaller where they do not divide (opset 18)
    const int64_t each = (channels + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::min<int64_t>(each, channels - k * each));
  }
  RETURN_ERROR_IF(int64_t(sizes.size()) != parts, ErrorCode::kInvalidArgument,
                  std::to_string(sizes.size()) + " split sizes for " + std::to_string(parts) + " outputs");
  int64_t total = 0;
  for (int64_t v : sizes) {
    RETURN_ERROR_IF(v <= 0 || v > channels, ErrorCode::kInvalidArgument,
                    "split size " + std::to_string(v) + " is not in [1, " + std::to_string(channels) + "]");
    total += v;
  }
  RETURN_ERROR_IF(
      total != channels, ErrorCode::kInvalidArgument,
      "split sizes add up to " + std::to_string(total) + ", the input has " + std::to_string(channels) + " channels");
  consume(*x);
  int64_t offset = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    if (!n.output(k).empty()) define(n.output(k), channel_slice(*x, int(offset), int(offset + sizes[size_t(k)])));
    offset += sizes[size_t(k)];
  }
  ++counts_["Split along channels read as views"];
  return Status::ok();
}

// Shape arithmetic (onnx_fold.h): Shape of an activation from its static shape, and any foldable node whose
// inputs are all constants, evaluated into a constant.
Expected<bool> Importer::try_fold(const onnx::NodeProto& n) {
  if (n.op_type() == "Shape" && has_input(n, 0) && acts_.count(n.input(0))) {
    const Activation& x = acts_.at(n.input(0));
    const ir::Shape s = shape_of(x.terms);
    std::vector<int64_t> dims =
        x.flat ? std::vector<int64_t>{batch_, s.numel()} : std::vector<int64_t>{batch_, s.c, s.h, s.w};
    const Attributes at(n);
    ASSIGN_OR_RETURN(int64_t start, at.get_int("start", 0));
    ASSIGN_OR_RETURN(int64_t end, at.get_int("end", int64_t(dims.size())));
    const auto rank = int64_t(dims.size());
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    dims = std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end));
    Constant c;
    c.dims = {int64_t(dims.size())};
    c.ints = dims;
    for (int64_t d : dims) c.floats.push_back(float(d));
    consume(x);
    consts_[n.output(0)] = std::move(c);
    ++counts_["nodes of shape arithmetic evaluated at import"];
    return true;
  }
  if (!is_foldable_op(n.op_type())) return false;
  std::vector<const Constant*> inputs;
  bool all_constant = n.input_size() > 0;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = consts_.find(n.input(i));
    all_constant = all_constant && it != consts_.end();
    inputs.push_back(it == consts_.end() ? nullptr : &it->second);
  }
  if (!all_constant) return false;
  RETURN_IF_ERROR(only_first_output_used(n));
  ASSIGN_OR_RETURN(Constant c, fold_node(n, inputs, opset_));
  consts_[n.output(0)] = std::move(c);
  ++counts_["nodes of shape arithmetic evaluated at import"];
  return true;
}

Status Importer::constant_only(const onnx::NodeProto& n) {
  for (int i = 0; i < n.input_size(); ++i)
    RETURN_ERROR_IF(has_input(n, i) && !consts_.count(n.input(i)), ErrorCode::kInvalidArgument,
                    "input " + std::to_string(i) + " ('" + n.input(i) + "') is computed; " + n.op_type() +
                        " is supported only on constants (shape arithmetic, evaluated at import)");
  return bad("has no inputs");
}

// An activation minus or divided by a per-channel constant (input normalization, (x - mean) / std): a
// per-channel shift or scale. Shape arithmetic on constants folds before this.
Status Importer::sub_div(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument, "needs two inputs");
  if (n.op_type() == "Sub" && !consts_.count(n.input(0)) && !consts_.count(n.input(1))) return subtract(n);
  if (n.op_type() == "Div" && consts_.count(n.input(0)) && !consts_.count(n.input(1))) return divide_constant(n);
  RETURN_ERROR_IF(!consts_.count(n.input(1)), ErrorCode::kInvalidArgument,
                  n.op_type() + " is supported with an activation first and a per-channel or scalar constant second");
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1));
  ASSIGN_OR_RETURN(std::vector<float> v, per_channel(*c, *x, channels_of(*x)));
  if (n.op_type() == "Sub") {
    for (float& f : v) f = -f;
    return channel_affine(n, *x, nullptr, &v);
  }
  for (float& f : v) {
    RETURN_ERROR_IF(f == 0.f, ErrorCode::kInvalidArgument, "divides by zero");
    f = 1.f / f;
  }
  return channel_affine(n, *x, &v, nullptr);
}

namespace {

onnx::NodeProto step(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                     const std::string& output) {
  onnx::NodeProto s;
  s.set_op_type(op);
  s.set_name(name);
  for (const std::string& in : inputs) s.add_input(in);
  s.add_output(output);
  return s;
}

}  // namespace

std::string Importer::fresh_tensor(const std::string& base) {
  std::string name = base;
  for (int k = 2; consts_.count(name) || acts_.count(name) || uses_.count(name) || readers_.count(name); ++k)
    name = base + "_" + std::to_string(k);
  return name;
}

Status Importer::import_as(std::vector<onnx::NodeProto> steps) {
  for (size_t i = 0; i + 1 < steps.size(); ++i) uses_[steps[i].output(0)] = 1;
  for (const onnx::NodeProto& s : steps) RETURN_IF_ERROR((this->*handlers().at(s.op_type()))(s));
  return Status::ok();
}

// c / x of a constant and an activation (FRN's 1 / sqrt(mean(x^2) + eps)): Reciprocal(x), times c where c is
// not 1 (a per-channel or scalar scale).
Status Importer::divide_constant(const onnx::NodeProto& n) {
  const Constant& c = consts_.at(n.input(0));
  if (c.numel() == 1 && c.floats[0] == 1.f) return import_as({step("Reciprocal", n.name(), {n.input(1)}, n.output(0))});
  const std::string inverse = fresh_tensor(n.output(0) + "/reciprocal");
  return import_as({step("Reciprocal", n.name() + "/reciprocal", {n.input(1)}, inverse),
                    step("Mul", n.name(), {inverse, n.input(0)}, n.output(0))});
}

// Max of an activation and a per-channel or scalar constant c (FRN's TLU, max(x, tau)): relu where c is 0,
// else c + relu(x - c). Max of constants only folds before this.
Status Importer::max(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument,
                  "has " + std::to_string(n.input_size()) + " inputs; Max of an activation is supported with two");
  RETURN_ERROR_IF(!consts_.count(n.input(0)) && !consts_.count(n.input(1)), ErrorCode::kInvalidArgument,
                  "Max of two computed tensors is not supported (Max of an activation and a constant is)");
  const int xi = consts_.count(n.input(0)) ? 1 : 0;
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, xi));
  const Constant& c = consts_.at(n.input(1 - xi));
  ASSIGN_OR_RETURN(std::vector<float> floor, per_channel(c, *x, channels_of(*x)));
  if (std::all_of(floor.begin(), floor.end(), [](float f) { return f == 0.f; }))
    return import_as({step("Relu", n.name(), {n.input(xi)}, n.output(0))});
  Constant negated = c;
  negated.ints.clear();  // a float constant, whatever c's type
  for (float& f : negated.floats) f = -f;
  const std::string minus = fresh_tensor(n.output(0) + "/minus_floor");
  consts_[minus] = std::move(negated);
  const std::string below = fresh_tensor(n.output(0) + "/below"), above = fresh_tensor(n.output(0) + "/above");
  ++counts_["Max of an activation and a constant c imported as c + relu(x - c)"];
  return import_as({step("Add", n.name() + "/shift", {n.input(xi), minus}, below),
                    step("Relu", n.name() + "/relu", {below}, above),
                    step("Add", n.name(), {above, n.input(1 - xi)}, n.output(0))});
}

// An activation to a constant power the IR's ops express: 2 (x * x, FRN's mean square as the dynamo exporter
// writes it), 0.5 (Sqrt), -1 (Reciprocal), -0.5 (both) and 1. Pow of constants folds before this.
Status Importer::pow(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument, "needs two inputs");
  RETURN_ERROR_IF(!consts_.count(n.input(1)), ErrorCode::kInvalidArgument,
                  "input 1 (the exponent) is computed; Pow of an activation is supported with a constant exponent");
  const Constant& e = consts_.at(n.input(1));
  RETURN_ERROR_IF(e.numel() != 1, ErrorCode::kInvalidArgument, "input 1 (the exponent) must be a scalar");
  const float p = e.floats[0];
  const std::string& x = n.input(0);
  if (p == 1.f) return import_as({step("Identity", n.name(), {x}, n.output(0))});
  if (p == 2.f) {
    // The product reads x twice where Pow read it once: one read more for x's values.
    ASSIGN_OR_RETURN(const Activation* a, act_input(n, 0));
    for (const ir::Term& t : a->terms)
      for (const ir::Value& v : t) ++pending_[size_t(v.node)];
    ++uses_[x];
    return import_as({step("Mul", n.name(), {x, x}, n.output(0))});
  }
  if (p == 0.5f) return import_as({step("Sqrt", n.name(), {x}, n.output(0))});
  if (p == -1.f) return import_as({step("Reciprocal", n.name(), {x}, n.output(0))});
  if (p == -0.5f) {
    const std::string root = fresh_tensor(n.output(0) + "/sqrt");
    return import_as({step("Sqrt", n.name() + "/sqrt", {x}, root), step("Reciprocal", n.name(), {root}, n.output(0))});
  }
  return bad("an activation to the power " + std::to_string(p) + "; the supported exponents are 2, 1, 0.5, -0.5, -1");
}

// a - b of two activations of one shape (PoolFormer's pool(x) - x): b negated by a per-channel affine of -1,
// then summed with a as the IR sums terms.
Status Importer::subtract(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* a, act_input(n, 0));
  ASSIGN_OR_RETURN(const Activation* b, act_input(n, 1));
  const ir::Shape sa = shape_of(a->terms), sb = shape_of(b->terms);
  RETURN_ERROR_IF(a->flat || b->flat || !(sa == sb), ErrorCode::kInvalidArgument,
                  "subtracts tensors of shapes " + sa.to_string() + " and " + sb.to_string() +
                      "; between activations only 4-D tensors of one shape are supported");
  ASSIGN_OR_RETURN(ir::Term ta, one_term(*a, n.name() + "/in0"));
  ASSIGN_OR_RETURN(ir::Term tb, one_term(*b, n.name() + "/in1"));
  consume(*a);
  consume(*b);
  ir::ParamTensor negate{std::vector<float>(size_t(sb.c), -1.f), {}};
  ASSIGN_OR_RETURN(ir::Value neg,
                   emit(n.name() + "/negate", ir::Conv(sb.c).grouped(sb.c).bias(false).act(ir::Act::kNone), {tb},
                        std::move(negate)));
  ta.push_back(neg);
  ++counts_["Sub of two activations run as a sum with the second negated"];
  if (uses(n.output(0)) > 1) {
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::IdentityAttrs{}, {ta}));
    define(n.output(0), Activation{{{v}}});
    return Status::ok();
  }
  define(n.output(0), Activation{{ta}});
  return Status::ok();
}

// Cast of an activation to float is the activation itself (the IR computes in float); other casts of
// activations are not supported (casts of constants fold).
Status Importer::cast(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(int64_t to, Attributes(n).get_int("to", 0));
  RETURN_ERROR_IF(to != onnx::TensorProto::FLOAT, ErrorCode::kInvalidArgument,
                  "casts an activation to type " + std::to_string(to) + "; only a cast to float is supported");
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  consume(*x);
  define(n.output(0), *x);
  ++counts_["Cast to float dropped"];
  return Status::ok();
}

Status Importer::concat(const onnx::NodeProto& n) {
  if (n.input_size() > 0 && acts_.count(n.input(0)) && group_view(acts_.at(n.input(0)))) return concat_groups(n);
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 1));
  Activation out;
  for (int i = 0; i < n.input_size(); ++i) {
    ASSIGN_OR_RETURN(const Activation* x, act_input(n, i));
    const bool channel_axis = x->flat ? (axis == 1 || axis == -1) : (axis == 1 || axis == -3);
    RETURN_ERROR_IF(
        !channel_axis, ErrorCode::kInvalidArgument,
        "axis " + std::to_string(axis) + " is not the channel axis; only channel concatenation is supported");
    RETURN_ERROR_IF(i > 0 && x->flat != out.flat, ErrorCode::kInvalidArgument,
                    "concatenates flattened and unflattened tensors");
    out.flat = x->flat;
    out.terms.insert(out.terms.end(), x->terms.begin(), x->terms.end());
  }
  RETURN_ERROR_IF(out.terms.empty(), ErrorCode::kInvalidArgument, "has no inputs");
  for (int i = 0; i < n.input_size(); ++i) consume(acts_.at(n.input(i)));
  ++counts_["Concat read in place by its consumers"];
  define(n.output(0), std::move(out));
  return Status::ok();
}

// Add / Sum of activations of one shape: one summed term, read by the consumer (a node of its own
// only when several ops read it, so it is summed once). A constant operand is a per-channel shift.
Status Importer::add(const onnx::NodeProto& n) {
  if (n.op_type() == "Add" && n.input_size() == 2 && (consts_.count(n.input(0)) || consts_.count(n.input(1)))) {
    const int a = consts_.count(n.input(0)) ? 1 : 0;
    ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, a));
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1 - a));
    ASSIGN_OR_RETURN(auto shift, per_channel(*c, *x, channels_of(*x)));
    return channel_affine(n, *x, nullptr, &shift);
  }
  ir::Term sum;
  std::optional<ir::Shape> shape;
  bool flat = false, channels_last = false;
  for (int i = 0; i < n.input_size(); ++i) {
    ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, i));
    const ir::Shape s = shape_of(x->terms);
    RETURN_ERROR_IF(shape && !(s == *shape), ErrorCode::kInvalidArgument,
                    "adds tensors of shapes " + shape->to_string() + " and " + s.to_string() +
                        "; broadcasting between activations is not supported");
    RETURN_ERROR_IF(shape && x->flat != flat, ErrorCode::kInvalidArgument,
                    "adds a flattened (batch, features) tensor and a 4-D one");
    RETURN_ERROR_IF(shape && x->channels_last != channels_last, ErrorCode::kInvalidArgument,
                    "adds a channels-last tensor and an NCHW one");
    shape = s;
    flat = x->flat;
    channels_last = x->channels_last;
    ASSIGN_OR_RETURN(ir::Term t, one_term(*x, n.name() + "/in" + std::to_string(i)));
    sum.insert(sum.end(), t.begin(), t.end());
  }
  RETURN_ERROR_IF(sum.empty(), ErrorCode::kInvalidArgument, "has no inputs");
  for (int i = 0; i < n.input_size(); ++i) consume(acts_.at(n.input(i)));
  Activation out{{sum}, flat};
  out.channels_last = channels_last;
  if (uses(n.output(0)) > 1) {
    ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::IdentityAttrs{}, {sum}));
    out.terms = {{v}};
  }
  define(n.output(0), std::move(out));
  return Status::ok();
}

Status Importer::mul(const onnx::NodeProto& n) {
  RETURN_ERROR_IF(n.input_size() != 2, ErrorCode::kInvalidArgument, "needs two inputs");
  if (consts_.count(n.input(0)) || consts_.count(n.input(1))) {
    const int a = consts_.count(n.input(0)) ? 1 : 0;
    ASSIGN_OR_RETURN(const Activation* x, layout_act_input(n, a));
    ASSIGN_OR_RETURN(const Constant* c, const_input(n, 1 - a));
    ASSIGN_OR_RETURN(auto scale, per_channel(*c, *x, channels_of(*x)));
    return channel_affine(n, *x, &scale, nullptr);
  }
  ASSIGN_OR_RETURN(const Activation* a, expanded_or_act_input(n, 0));
  ASSIGN_OR_RETURN(const Activation* b, expanded_or_act_input(n, 1));
  RETURN_ERROR_IF(a->flat != b->flat, ErrorCode::kInvalidArgument,
                  "multiplies a flattened (batch, features) tensor and a 4-D one");
  RETURN_ERROR_IF(a->shuffle_groups != b->shuffle_groups, ErrorCode::kInvalidArgument,
                  "multiplies a 5-D (N, g, C/g, H, W) view and a tensor that is not one of the same groups");
  if (a->expand_h != 0) std::swap(a, b);
  if (b->expand_h != 0) {
    const ir::Shape full = shape_of(a->terms);
    RETURN_ERROR_IF(a->expand_h != 0 || full.h != b->expand_h || full.w != b->expand_w, ErrorCode::kInvalidArgument,
                    "multiplies a factor expanded to " + std::to_string(b->expand_h) + "x" +
                        std::to_string(b->expand_w) + " by a tensor of shape " + full.to_string());
  }
  // A C x 1 x 1 gate (squeeze-excite) multiplies the full tensor per channel; the IR takes it second.
  if (!a->flat && ir::broadcasts(shape_of(a->terms), shape_of(b->terms))) std::swap(a, b);
  const ir::Shape sa = shape_of(a->terms), sb = shape_of(b->terms);
  RETURN_ERROR_IF(!(sa == sb) && (a->flat || !ir::broadcasts(sb, sa)), ErrorCode::kInvalidArgument,
                  "multiplies tensors of shapes " + sa.to_string() + " and " + sb.to_string() +
                      "; between activations only equal shapes and a C x 1 x 1 factor are supported");
  ASSIGN_OR_RETURN(ir::Term ta, one_term(*a, n.name() + "/in0"));
  ASSIGN_OR_RETURN(ir::Term tb, one_term(*b, n.name() + "/in1"));
  consume(*a);
  consume(*b);
  ASSIGN_OR_RETURN(ir::Value v, emit(n.name(), ir::ElementAttrs{ir::ElementOp::kMul}, {ta, tb}));
  Activation out{{{v}}, a->flat};
  out.shuffle_groups = a->shuffle_groups;  // a product of two views of the same groups is one too
  define(n.output(0), std::move(out));
  return Status::ok();
}

Status Importer::flatten(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  ASSIGN_OR_RETURN(int64_t axis, Attributes(n).get_int("axis", 1));
  RETURN_ERROR_IF(axis != 1 && !(axis == -3 && !x->flat), ErrorCode::kInvalidArgument,
                  "axis " + std::to_string(axis) + ": only flattening to (batch, features) is supported");
  consume(*x);
  define(n.output(0), Activation{x->terms, true});
  return Status::ok();
}

// The reshape that flattens to (batch, features), as models write before a classifier, and the two of a
// channel shuffle.
Status Importer::reshape(const onnx::NodeProto& n) {
  ASSIGN_OR_RETURN(const Activation* any, any_act_input(n, 0));
  ASSIGN_OR_RETURN(const Constant* shape, const_input(n, 1));
  ASSIGN_OR_RETURN(bool shuffled, shuffle_reshape(n, *any, *shape));
  if (shuffled) return Status::ok();
  ASSIGN_OR_RETURN(bool viewed, view_reshape(n, *any, *shape));
  if (viewed) return Status::ok();
  ASSIGN_OR_RETURN(bool grouped, group_view_reshape(n, *any, *shape));
  if (grouped) return Status::ok();
  ASSIGN_OR_RETURN(const Activation* x, act_input(n, 0));
  const int64_t features = shape_of(x->terms).numel();
  const auto& v = shape->ints;
  // The batch is kept as 0 or -1, or written out as the input's declared batch (the torch.export-based
  // exporter writes the example's).
  const bool keeps_batch = v.size() == 2 && (v[0] == 0 || v[0] == -1 || v[0] == batch_ || (v[0] == 1 && batch_ == 1));
  const bool flattens = keeps_batch && (v[1] == -1 || v[1] == features) && !(v[0] == -1 && v[1] == -1);
  RETURN_ERROR_IF(!flattens, ErrorCode::kInvalidArgument,
                  "only a reshape to (batch, " + std::to_string(features) + ") is supported");
  consume(*x);
  define(n.output(0), Activation{x->terms, true});
  return Status::ok();
}

}  // namespace ios::onnx_import::detail
