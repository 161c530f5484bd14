#include "frontends/onnx/onnx_patterns.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "frontends/onnx/onnx_tensors.h"

namespace ios::onnx_import {

namespace {

class Rewriter {
 public:
  Rewriter(const onnx::GraphProto& g, const ScalarLookup& scalar, const IntsLookup& ints)
      : scalar_(scalar), ints_(ints) {
    nodes_.assign(g.node().begin(), g.node().end());
    removed_.assign(nodes_.size(), false);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const auto& in : nodes_[i].input()) ++readers_[in];
      for (const auto& out : nodes_[i].output()) valid_ = producer_.emplace(out, i).second && valid_;
    }
    for (const auto& out : g.output()) ++readers_[out.name()];
  }

  std::vector<onnx::NodeProto> run(std::map<std::string, int>& counts) {
    // A tensor written twice is an error the importer names; nothing is rewritten around it.
    for (size_t i = 0; valid_ && i < nodes_.size(); ++i) {
      if (removed_[i] || !default_domain(nodes_[i])) continue;
      if (nodes_[i].op_type() == "Reshape" && block_move(i))
        ++counts["Reshape to 6-D, Transpose, Reshape imported as one move of pixel blocks"];
      if (nodes_[i].op_type() == "Div" && group_std_divide(i))
        ++counts["divisions by a group standard deviation (EvoNorm-S0) imported as an uncentered group norm"];
      if (nodes_[i].op_type() != "Mul") continue;
      if (silu(i))
        ++counts["x * Sigmoid(x) imported as one SiLU activation"];
      else if (gelu(i))
        ++counts["GELU's erf form (Div, Erf, Add, Mul, Mul) imported as one GELU activation"];
      else if (response_norm(i))
        ++counts["global response normalizations (ReduceL2, ReduceMean, Add, Div, Mul) imported as one op"];
    }
    std::vector<onnx::NodeProto> kept;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!removed_[i]) kept.push_back(std::move(nodes_[i]));
    return kept;
  }

 private:
  // The node producing `tensor` when it is an op of this type whose every output only this pattern reads.
  std::optional<size_t> sole(const std::string& tensor, const char* op) const {
    auto it = producer_.find(tensor);
    if (it == producer_.end() || removed_[it->second]) return std::nullopt;
    const onnx::NodeProto& n = nodes_[it->second];
    if (!default_domain(n) || n.op_type() != op || n.output_size() != 1 || readers(tensor) != 1) return std::nullopt;
    return it->second;
  }
  int readers(const std::string& tensor) const {
    auto it = readers_.find(tensor);
    return it == readers_.end() ? 0 : it->second;
  }
  bool is_scalar(const std::string& tensor, float value, float tolerance) const {
    const std::optional<float> v = scalar_(tensor);
    return v && std::fabs(*v - value) <= tolerance;
  }
  // The binary node's operands as (this one, the other), trying both orders.
  template <typename Match>
  bool either(const onnx::NodeProto& n, Match match) const {
    if (n.input_size() != 2) return false;
    return match(n.input(0), n.input(1)) || match(n.input(1), n.input(0));
  }
  // Node i becomes `op` of x, keeping its name and outputs.
  void replace(size_t i, const char* op, std::string x) {  // x by value: it may be one of the node's own inputs
    onnx::NodeProto& n = nodes_[i];
    n.set_op_type(op);
    n.clear_domain();
    n.clear_attribute();
    n.clear_input();
    n.add_input(x);
  }

  // Mul(x, Sigmoid(x)) -> Swish(x).
  bool silu(size_t i) {
    return either(nodes_[i], [&](const std::string& x, const std::string& s) {
      const auto sig = sole(s, "Sigmoid");
      if (!sig || nodes_[*sig].input_size() != 1 || nodes_[*sig].input(0) != x) return false;
      removed_[*sig] = true;
      replace(i, "Swish", x);
      return true;
    });
  }

  // The node computing x / sqrt 2 from x: Div(x, sqrt 2) or Mul(x, 1 / sqrt 2).
  std::optional<size_t> scaled_by_inverse_sqrt2(const std::string& tensor, const std::string& x) const {
    if (const auto div = sole(tensor, "Div"))
      if (nodes_[*div].input_size() == 2 && nodes_[*div].input(0) == x &&
          is_scalar(nodes_[*div].input(1), 1.41421356f, 1e-5f))
        return div;
    if (const auto mul = sole(tensor, "Mul"))
      if (either(nodes_[*mul], [&](const std::string& a, const std::string& k) {
            return a == x && is_scalar(k, 0.70710678f, 1e-6f);
          }))
        return mul;
    return std::nullopt;
  }

  // Add(Erf(x / sqrt 2), 1) in either order: the nodes it takes (add, erf, scale), else nothing.
  std::optional<std::array<size_t, 3>> one_plus_erf(const std::string& tensor, const std::string& x) const {
    const auto add = sole(tensor, "Add");
    if (!add) return std::nullopt;
    std::optional<std::array<size_t, 3>> found;
    either(nodes_[*add], [&](const std::string& e, const std::string& one) {
      const auto erf = sole(e, "Erf");
      if (!erf || !is_scalar(one, 1.f, 1e-6f) || nodes_[*erf].input_size() != 1) return false;
      const auto scale = scaled_by_inverse_sqrt2(nodes_[*erf].input(0), x);
      if (scale) found = std::array<size_t, 3>{*add, *erf, *scale};
      return scale.has_value();
    });
    return found;
  }

  // GELU's erf form -> Gelu(x), every binary op in either operand order, as the exporters write it:
  //   TorchScript:           Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
  //   dynamo (F.gelu):       Mul(Mul(x, 0.5), Add(Erf(Mul(x, 1 / sqrt 2)), 1))
  //   dynamo (nn.GELU, 2.9+): Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt 2)), 1)))
  bool gelu(size_t i) {
    return either(nodes_[i], [&](const std::string& m, const std::string& other) {
      const auto inner = sole(m, "Mul");
      if (!inner) return false;
      return either(nodes_[*inner], [&](const std::string& a, const std::string& b) {
        std::optional<std::array<size_t, 3>> taken;
        std::string x = a;
        if (is_scalar(other, 0.5f, 1e-6f)) {
          taken = one_plus_erf(b, x);
        } else if (is_scalar(b, 0.5f, 1e-6f)) {
          taken = one_plus_erf(other, x);
        } else if (is_scalar(a, 0.5f, 1e-6f)) {
          x = other;
          taken = one_plus_erf(b, x);
        }
        if (!taken) return false;
        removed_[*inner] = true;
        for (size_t k : *taken) removed_[k] = true;
        replace(i, "Gelu", x);
        return true;
      });
    });
  }

  // ConvNeXt V2's GRN -> kResponseNormOp(x): Mul(x, Div(L2, Add(ReduceMean(L2), eps))), L2 = ReduceL2(x), read
  // by the Div and the ReduceMean only; both reductions keep their dimensions.
  bool response_norm(size_t i) {
    return either(nodes_[i], [&](const std::string& x_ref, const std::string& q) {
      const std::string x = x_ref;  // a reference into node i's inputs, which are rewritten below
      const auto div = sole(q, "Div");
      if (!div || nodes_[*div].input_size() != 2) return false;
      const std::string l2 = nodes_[*div].input(0);
      const auto l2_node = producer_.find(l2);
      if (l2_node == producer_.end() || removed_[l2_node->second] || readers(l2) != 2) return false;
      const onnx::NodeProto& norm = nodes_[l2_node->second];
      if (!default_domain(norm) || norm.op_type() != "ReduceL2" || norm.output_size() != 1 || norm.input_size() < 1 ||
          norm.input(0) != x || !keeps_dims(norm))
        return false;
      const auto add = sole(nodes_[*div].input(1), "Add");
      if (!add) return false;
      std::optional<size_t> mean;
      float eps = 0.f;
      either(nodes_[*add], [&](const std::string& m, const std::string& e) {
        const auto value = scalar_(e);
        const auto reduce = sole(m, "ReduceMean");
        if (!value || !reduce || nodes_[*reduce].input_size() < 1 || nodes_[*reduce].input(0) != l2 ||
            !keeps_dims(nodes_[*reduce]))
          return false;
        mean = reduce;
        eps = *value;
        return true;
      });
      if (!mean) return false;
      onnx::NodeProto grn;
      grn.set_op_type(kResponseNormOp);
      grn.set_name(nodes_[i].name());
      grn.add_output(nodes_[i].output(0));
      grn.add_input(x);
      for (const onnx::NodeProto* r : std::initializer_list<const onnx::NodeProto*>{&norm, &nodes_[*mean]}) {
        grn.add_input(r->input_size() > 1 ? r->input(1) : "");
        for (const auto& a : r->attribute())
          if (a.name() == "axes") {
            onnx::AttributeProto* copy = grn.add_attribute();
            *copy = a;
            copy->set_name(r == &norm ? "spatial_axes" : "channel_axes");
          }
      }
      onnx::AttributeProto* e = grn.add_attribute();
      e->set_name("epsilon");
      e->set_type(onnx::AttributeProto::FLOAT);
      e->set_f(eps);
      for (size_t k : {l2_node->second, *mean, *add, *div}) removed_[k] = true;
      nodes_[i] = std::move(grn);
      return true;
    });
  }
  // Reshape(Transpose(Reshape(x, s6), perm), s4) with a 6-D perm -> kBlockMoveOp(x, s6, s4), attribute perm, and
  // allowzero where either Reshape sets it.
  bool block_move(size_t i) {
    const onnx::NodeProto& back = nodes_[i];
    if (back.input_size() != 2) return false;
    const auto t = sole(back.input(0), "Transpose");
    if (!t || nodes_[*t].input_size() != 1) return false;
    const onnx::AttributeProto* perm = nullptr;
    for (const auto& a : nodes_[*t].attribute())
      if (a.name() == "perm") perm = &a;
    if (perm == nullptr || perm->ints_size() != 6) return false;
    const auto r = sole(nodes_[*t].input(0), "Reshape");
    if (!r || nodes_[*r].input_size() != 2) return false;
    onnx::NodeProto move;
    move.set_op_type(kBlockMoveOp);
    move.set_name(back.name());
    move.add_output(back.output(0));
    move.add_input(nodes_[*r].input(0));
    move.add_input(nodes_[*r].input(1));
    move.add_input(back.input(1));
    *move.add_attribute() = *perm;
    if (allows_zero(back) || allows_zero(nodes_[*r])) {
      onnx::AttributeProto* zero = move.add_attribute();
      zero->set_name("allowzero");
      zero->set_type(onnx::AttributeProto::INT);
      zero->set_i(1);
    }
    removed_[*t] = removed_[*r] = true;
    nodes_[i] = std::move(move);
    return true;
  }
  // A Cast to float (the exporters' .float() and .to(dtype)), which the pattern may drop: the IR computes in float.
  static bool float_cast(const onnx::NodeProto& n) {
    if (n.op_type() != "Cast" || n.input_size() != 1) return false;
    for (const auto& a : n.attribute())
      if (a.name() == "to") return a.i() == onnx::TensorProto::FLOAT;
    return false;
  }
  // `tensor` before an optional Cast to float that only the pattern reads.
  std::string before_cast(const std::string& tensor, std::vector<size_t>& taken) const {
    const auto cast = sole(tensor, "Cast");
    if (!cast || !float_cast(nodes_[*cast])) return tensor;
    taken.push_back(*cast);
    return nodes_[*cast].input(0);
  }
  // Whether a ReduceMean reduces axes 2, 3 and 4 of a 5-D tensor (attribute, or input 1 from opset 18).
  bool over_groups(const onnx::NodeProto& mean) const {
    std::optional<std::vector<int64_t>> axes;
    for (const auto& a : mean.attribute())
      if (a.name() == "axes") axes = std::vector<int64_t>(a.ints().begin(), a.ints().end());
    if (!axes && mean.input_size() > 1 && !mean.input(1).empty()) axes = ints_(mean.input(1));
    if (!axes || axes->size() != 3) return false;
    std::vector<int64_t> sorted;
    for (int64_t a : *axes) sorted.push_back(a < 0 ? a + 5 : a);
    std::sort(sorted.begin(), sorted.end());
    return sorted == std::vector<int64_t>{2, 3, 4};
  }
  // The ReduceMean over the groups of `tensor` whose only reader is the pattern.
  std::optional<size_t> group_mean(const std::string& tensor) const {
    const auto mean = sole(tensor, "ReduceMean");
    return mean && nodes_[*mean].input_size() >= 1 && over_groups(nodes_[*mean]) ? mean : std::nullopt;
  }

  // EvoNorm-S0's division by the group standard deviation, -> kGroupStdDivideOp(x), as both exporters write it:
  //   Div(num, Reshape(Expand(Cast?(Sqrt(Add(Reshape?(ReduceMean(Mul(s, s))), eps))), _), _)),
  //   s = Sub(c, ReduceMean(c)), c = Cast?(Reshape(x, (N, G, C/G, H, W))), each mean over axes 2, 3, 4,
  // num x itself or Mul(x, g) in either order (then x / std times g).
  bool group_std_divide(size_t i) {
    const onnx::NodeProto& div = nodes_[i];
    if (div.input_size() != 2) return false;
    std::vector<size_t> taken;
    const auto back = sole(div.input(1), "Reshape");
    if (!back) return false;
    taken.push_back(*back);
    const auto expand = sole(nodes_[*back].input(0), "Expand");
    if (!expand) return false;
    taken.push_back(*expand);
    const auto sqrt = sole(before_cast(nodes_[*expand].input(0), taken), "Sqrt");
    if (!sqrt || nodes_[*sqrt].input_size() != 1) return false;
    taken.push_back(*sqrt);
    const auto add = sole(nodes_[*sqrt].input(0), "Add");
    if (!add) return false;
    taken.push_back(*add);
    std::string variance;
    float eps = 0.f;
    if (!either(nodes_[*add], [&](const std::string& v, const std::string& e) {
          const auto value = scalar_(e);
          if (value) variance = v, eps = *value;
          return value.has_value();
        }))
      return false;
    if (const auto flat = sole(variance, "Reshape")) {  // dynamo: the variance without its dimensions, then back
      taken.push_back(*flat);
      variance = nodes_[*flat].input(0);
    }
    const auto mean_square = group_mean(variance);
    if (!mean_square) return false;
    taken.push_back(*mean_square);
    const auto square = sole(nodes_[*mean_square].input(0), "Mul");
    if (!square || nodes_[*square].input_size() != 2 || nodes_[*square].input(0) != nodes_[*square].input(1))
      return false;
    taken.push_back(*square);
    const std::string& centered = nodes_[*square].input(0);
    const auto sub = producer_.find(centered);
    if (sub == producer_.end() || removed_[sub->second] || readers(centered) != 2) return false;
    const onnx::NodeProto& s = nodes_[sub->second];
    if (!default_domain(s) || s.op_type() != "Sub" || s.input_size() != 2 || s.output_size() != 1) return false;
    taken.push_back(sub->second);
    const std::string& grouped = s.input(0);
    const auto mean = group_mean(s.input(1));
    if (!mean || nodes_[*mean].input(0) != grouped || readers(grouped) != 2) return false;
    taken.push_back(*mean);
    const auto cast = producer_.find(grouped);
    if (cast == producer_.end() || removed_[cast->second]) return false;
    std::string view = grouped;
    if (float_cast(nodes_[cast->second])) {
      taken.push_back(cast->second);
      view = nodes_[cast->second].input(0);
      if (readers(view) != 1) return false;
    }
    const auto front = producer_.find(view);
    if (front == producer_.end() || removed_[front->second]) return false;
    const onnx::NodeProto& reshape = nodes_[front->second];
    if (!default_domain(reshape) || reshape.op_type() != "Reshape" || reshape.input_size() != 2) return false;
    const std::optional<std::vector<int64_t>> shape = ints_(reshape.input(1));
    if (!shape || shape->size() != 5 || (*shape)[1] < 1) return false;
    taken.push_back(front->second);
    const std::string x = reshape.input(0);
    std::optional<size_t> product;
    std::string gate;
    if (div.input(0) != x) {
      product = sole(div.input(0), "Mul");
      if (!product || !either(nodes_[*product], [&](const std::string& a, const std::string& g) {
            if (a == x) gate = g;
            return a == x;
          }))
        return false;
    }
    onnx::NodeProto op;
    op.set_op_type(kGroupStdDivideOp);
    op.add_input(x);
    onnx::AttributeProto* groups = op.add_attribute();
    groups->set_name("groups");
    groups->set_type(onnx::AttributeProto::INT);
    groups->set_i((*shape)[1]);
    onnx::AttributeProto* e = op.add_attribute();
    e->set_name("epsilon");
    e->set_type(onnx::AttributeProto::FLOAT);
    e->set_f(eps);
    for (size_t k : taken) removed_[k] = true;
    if (!product) {  // x / std: the division itself
      op.set_name(div.name());
      op.add_output(div.output(0));
      nodes_[i] = std::move(op);
      return true;
    }
    // (x * g) / std: the product becomes x / std, the division its product with g
    op.set_name(nodes_[*product].name());
    op.add_output(nodes_[*product].output(0));
    const std::string divided = nodes_[*product].output(0);
    nodes_[*product] = std::move(op);
    onnx::NodeProto times;
    times.set_op_type("Mul");
    times.set_name(div.name());
    times.add_input(divided);
    times.add_input(gate);
    times.add_output(div.output(0));
    nodes_[i] = std::move(times);
    return true;
  }

  static bool allows_zero(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.name() == "allowzero") return a.i() != 0;
    return false;
  }
  static bool keeps_dims(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.name() == "keepdims") return a.i() != 0;
    return true;
  }

  const ScalarLookup& scalar_;
  const IntsLookup& ints_;
  std::vector<onnx::NodeProto> nodes_;
  std::vector<bool> removed_;
  bool valid_ = true;
  std::unordered_map<std::string, int> readers_;
  std::unordered_map<std::string, size_t> producer_;
};

}  // namespace

std::vector<onnx::NodeProto> rewrite_patterns(const onnx::GraphProto& graph, const ScalarLookup& scalar,
                                              const IntsLookup& ints, std::map<std::string, int>& counts) {
  return Rewriter(graph, scalar, ints).run(counts);
}

}  // namespace ios::onnx_import
