#include "frontends/onnx/onnx_patterns.h"

#include <cmath>
#include <unordered_map>

namespace ios::onnx_import {

namespace {

class Rewriter {
 public:
  Rewriter(const onnx::GraphProto& g, const ScalarLookup& scalar) : scalar_(scalar) {
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
      if (removed_[i] || !default_domain(nodes_[i]) || nodes_[i].op_type() != "Mul") continue;
      if (silu(i))
        ++counts["x * Sigmoid(x) imported as one SiLU activation"];
      else if (gelu(i))
        ++counts["GELU's erf form (Div, Erf, Add, Mul, Mul) imported as one GELU activation"];
    }
    std::vector<onnx::NodeProto> kept;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (!removed_[i]) kept.push_back(std::move(nodes_[i]));
    return kept;
  }

 private:
  static bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

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

  // Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) -> Gelu(x), every binary op in either operand order.
  bool gelu(size_t i) {
    return either(nodes_[i], [&](const std::string& m, const std::string& half) {
      const auto outer = sole(m, "Mul");
      if (!outer || !is_scalar(half, 0.5f, 1e-6f)) return false;
      return either(nodes_[*outer], [&](const std::string& x, const std::string& a) {
        const auto add = sole(a, "Add");
        if (!add) return false;
        return either(nodes_[*add], [&](const std::string& e, const std::string& one) {
          const auto erf = sole(e, "Erf");
          if (!erf || !is_scalar(one, 1.f, 1e-6f) || nodes_[*erf].input_size() != 1) return false;
          const auto div = sole(nodes_[*erf].input(0), "Div");
          if (!div || nodes_[*div].input_size() != 2 || nodes_[*div].input(0) != x ||
              !is_scalar(nodes_[*div].input(1), 1.41421356f, 1e-5f))
            return false;
          for (size_t k : {*outer, *add, *erf, *div}) removed_[k] = true;
          replace(i, "Gelu", x);
          return true;
        });
      });
    });
  }

  const ScalarLookup& scalar_;
  std::vector<onnx::NodeProto> nodes_;
  std::vector<bool> removed_;
  bool valid_ = true;
  std::unordered_map<std::string, int> readers_;
  std::unordered_map<std::string, size_t> producer_;
};

}  // namespace

std::vector<onnx::NodeProto> rewrite_patterns(const onnx::GraphProto& graph, const ScalarLookup& scalar,
                                              std::map<std::string, int>& counts) {
  return Rewriter(graph, scalar).run(counts);
}

}  // namespace ios::onnx_import
