#include "ir/json_io.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "common/json_fields.h"
#include "common/limits.h"
#include "common/overloaded.h"
#include "ir/ops/op_io.h"

namespace ios::ir {

using nlohmann::json;

// Every attribute is written, defaults included, so the text is also a complete key.
json attrs_to_json(const SubOp& step) {
  return std::visit(
      [](const auto& s) {
        json j = {{"type", std::decay_t<decltype(s)>::kType}};
        OpWriter w(j);
        s.write(w);
        return j;
      },
      step);
}

json attrs_to_json(const Op& op) {
  auto shape = [](const Shape& s) { return json::array({s.c, s.h, s.w}); };
  return std::visit(Overloaded{[&](const InputAttrs& in) {
                                 return json{{"type", "placeholder"}, {"output_shape", shape(in.shape)}};
                               },
                               [](const IdentityAttrs&) {
                                 return json{{"type", "identity"}};
                               },
                               [](const ElementAttrs& e) {
                                 return json{{"type", "element"}, {"op_type", e.op == ElementOp::kAdd ? "add" : "mul"}};
                               },
                               [](const SequentialAttrs& seq) {
                                 json steps = json::array();
                                 for (const SubOp& s : seq.steps) steps.push_back(attrs_to_json(s));
                                 return json{{"type", "sequential"}, {"steps", std::move(steps)}};
                               },
                               [](const auto& step) { return attrs_to_json(SubOp{step}); }},
                    op);
}

std::string attrs_key(const Op& op) { return attrs_to_json(op).dump(); }

namespace {

json inputs_to_json(const Graph& g, const Inputs& inputs) {
  json terms = json::array();
  for (const Term& term : inputs) {
    json t = json::array();
    for (const Value& v : term) t.push_back(json::array({g.node(v.node).name, v.begin, v.end}));
    terms.push_back(std::move(t));
  }
  return terms;
}

json shape_json(const Shape& s) { return json::array({s.c, s.h, s.w}); }

json node_to_json(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  json j = attrs_to_json(n.op);
  if (n.is<SequentialAttrs>()) {
    // IOS spells a sequential op as a chain of named sub-nodes, the first reading the op's inputs.
    json subs = json::array();
    const auto& steps = n.attrs<SequentialAttrs>().steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      json s = attrs_to_json(steps[i]);
      s["name"] = s["hint_name"] = n.name + "." + std::to_string(i);
      s["inputs"] =
          i == 0 ? inputs_to_json(g, n.inputs)
                 : json::array(
                       {json::array({json::array({n.name + "." + std::to_string(i - 1), 0, n.step_shapes[i - 1].c})})});
      s["output_shape"] = shape_json(n.step_shapes[i]);
      subs.push_back(std::move(s));
    }
    j = {{"type", "sequential"}, {"nodes", std::move(subs)}};
  }
  j["name"] = n.name;
  j["hint_name"] = n.name;
  if (n.kind() != OpKind::kInput && n.kind() != OpKind::kSequential) j["inputs"] = inputs_to_json(g, n.inputs);
  j["output_shape"] = shape_json(n.output_shape);
  return j;
}

// ---- reading ----

class Reader {
 public:
  Graph graph;

  Status read(const json& j) {
    RETURN_ERROR_IF(!j.is_object(), ErrorCode::kInvalidGraph, "graph file: top level must be an object");
    ASSIGN_OR_RETURN(graph.name, get_string(j, "name", "graph"));
    if (j.contains("weight_seed")) {
      RETURN_ERROR_IF(!j["weight_seed"].is_number_unsigned(), ErrorCode::kInvalidGraph,
                      "graph field 'weight_seed' must be a non-negative integer");
      graph.weight_seed = j["weight_seed"].get<uint64_t>();
    }
    RETURN_ERROR_IF(!j.contains("input"), ErrorCode::kInvalidGraph, "graph: missing field 'input'");
    RETURN_IF_ERROR(read_node(j["input"], true));
    RETURN_ERROR_IF(!j.contains("blocks") || !j["blocks"].is_array(), ErrorCode::kInvalidGraph,
                    "graph: field 'blocks' must be an array");
    for (size_t b = 0; b < j["blocks"].size(); ++b)
      RETURN_IF_ERROR(read_block(j["blocks"][b]).with_context("block " + std::to_string(b)));
    RETURN_IF_ERROR(resolve_inputs());
    RETURN_IF_ERROR(graph.validate_and_infer());
    return check_declared_shapes();
  }

 private:
  // Inputs are resolved after every node is known, so a reference to a later node is reported as a
  // cycle or an ordering error by validation instead of as an unknown name.
  // Pointers into the document being read (it outlives the reader), never copies of it.
  std::vector<const json*> pending_inputs_;
  std::vector<const json*> declared_shapes_;  // a node's "output_shape", where the file gives one
  static inline const json kNull;

  // IOS files state every node's output shape; one that disagrees with inference means the file is not
  // what its writer meant, so it is named instead of silently replaced.
  Status check_declared_shapes() const {
    for (size_t id = 1; id < graph.nodes.size(); ++id) {
      const json& d = *declared_shapes_[id];
      if (d.is_null()) continue;
      const Shape& s = graph.nodes[id].output_shape;
      RETURN_ERROR_IF(d != json::array({s.c, s.h, s.w}), kCode,
                      "node '" + graph.nodes[id].name + "': field 'output_shape' is " + d.dump() +
                          " but the inputs and attributes give [" + std::to_string(s.c) + ", " + std::to_string(s.h) +
                          ", " + std::to_string(s.w) + "]");
    }
    return Status::ok();
  }
  std::map<std::string, NodeId> ids_;
  std::map<std::string, std::pair<NodeId, int>> sub_names_;  // sequential sub-node -> (node, step)

  static constexpr ErrorCode kCode = ErrorCode::kInvalidGraph;
  static std::string field_of(const std::string& where, const char* field) { return where + " field '" + field + "'"; }
  static Expected<std::string> get_string(const json& j, const char* field, const std::string& where) {
    RETURN_ERROR_IF(!j.contains(field), kCode, where + ": missing field '" + field + "'");
    return json_string(j[field], field_of(where, field), kCode);
  }
  // The step op whose kType is `type`, read by its own from_json.
  template <size_t... I>
  static std::optional<Expected<SubOp>> read_step_of(const std::string& type, const json& j, const std::string& where,
                                                     std::index_sequence<I...>) {
    std::optional<Expected<SubOp>> read;
    auto try_one = [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (read || type != T::kType) return;
      Expected<T> attrs = T::read(OpReader(j, where));
      read = attrs ? Expected<SubOp>(SubOp{*attrs}) : Expected<SubOp>(attrs.status());
    };
    (try_one(std::type_identity<std::variant_alternative_t<I, SubOp>>{}), ...);
    return read;
  }

  Expected<SubOp> read_step(const json& j, const std::string& where) {
    ASSIGN_OR_RETURN(std::string type, OpReader(j, where).string("type"));
    if (type == "relu") return SubOp{ActivationAttrs{Act::kRelu}};  // IOS's spelling of a lone ReLU
    if (auto read = read_step_of(type, j, where, std::make_index_sequence<std::variant_size_v<SubOp>>{}))
      return std::move(*read);
    return error(ErrorCode::kInvalidGraph, where + ": field 'type' has unknown op type '" + type + "'");
  }

  Status read_node(const json& j, bool is_input) {
    RETURN_ERROR_IF(!j.is_object(), ErrorCode::kInvalidGraph, "a node must be an object");
    ASSIGN_OR_RETURN(std::string name, get_string(j, "name", "node"));
    const std::string where = "node '" + name + "'";
    RETURN_ERROR_IF(ids_.count(name) || sub_names_.count(name), ErrorCode::kInvalidGraph,
                    where + ": name is used twice");
    ASSIGN_OR_RETURN(std::string type, get_string(j, "type", where));
    Node n;
    n.name = name;
    const json* inputs = j.contains("inputs") ? &j["inputs"] : &kNull;
    if (is_input) {
      RETURN_ERROR_IF(type != "placeholder", ErrorCode::kInvalidGraph,
                      where + ": the graph input must be a placeholder");
      RETURN_ERROR_IF(!j.contains("output_shape") || !j["output_shape"].is_array() || j["output_shape"].size() != 3,
                      kCode, where + ": field 'output_shape' must be [C, H, W]");
      const json& s = j["output_shape"];
      ASSIGN_OR_RETURN(int64_t c,
                       json_integer(s[0], field_of(where, "output_shape") + "[0]", 1, limits::kMaxChannels, kCode));
      ASSIGN_OR_RETURN(int64_t h,
                       json_integer(s[1], field_of(where, "output_shape") + "[1]", 1, limits::kMaxSpatial, kCode));
      ASSIGN_OR_RETURN(int64_t w,
                       json_integer(s[2], field_of(where, "output_shape") + "[2]", 1, limits::kMaxSpatial, kCode));
      n.op = InputAttrs{Shape{int(c), int(h), int(w)}};
    } else if (type == "placeholder") {
      return error(ErrorCode::kInvalidGraph, where + ": only the graph input may be a placeholder");
    } else if (type == "identity") {
      n.op = IdentityAttrs{};
    } else if (type == "element") {
      ASSIGN_OR_RETURN(std::string op, get_string(j, "op_type", where));
      RETURN_ERROR_IF(op != "add" && op != "mul", ErrorCode::kInvalidGraph,
                      where + ": field 'op_type' must be 'add' or 'mul', got '" + op + "'");
      n.op = ElementAttrs{op == "add" ? ElementOp::kAdd : ElementOp::kMul};
    } else if (type == "sequential") {
      RETURN_ERROR_IF(!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty(), ErrorCode::kInvalidGraph,
                      where + ": field 'nodes' must be a non-empty array");
      SequentialAttrs seq;
      const auto id = static_cast<NodeId>(graph.nodes.size());
      for (size_t i = 0; i < j["nodes"].size(); ++i) {
        const json& sub = j["nodes"][i];
        const std::string sub_where = where + " step " + std::to_string(i);
        ASSIGN_OR_RETURN(SubOp step, read_step(sub, sub_where));
        seq.steps.push_back(step);
        if (sub.contains("name") && sub["name"].is_string()) sub_names_[sub["name"].get<std::string>()] = {id, int(i)};
      }
      inputs = j["nodes"][0].contains("inputs") ? &j["nodes"][0]["inputs"] : &kNull;
      n.op = std::move(seq);
    } else {
      ASSIGN_OR_RETURN(SubOp step, read_step(j, where));
      std::visit([&](const auto& a) { n.op = a; }, step);
    }
    if (!is_input) RETURN_ERROR_IF(!inputs->is_array(), kCode, where + ": field 'inputs' must be an array");
    RETURN_ERROR_IF(graph.nodes.size() >= size_t(limits::kMaxNodes), kCode,
                    "graph has more nodes than the limit of " + std::to_string(limits::kMaxNodes));
    ids_[name] = static_cast<NodeId>(graph.nodes.size());
    graph.nodes.push_back(std::move(n));
    pending_inputs_.push_back(inputs);
    declared_shapes_.push_back(j.contains("output_shape") ? &j["output_shape"] : &kNull);
    return Status::ok();
  }

  Expected<NodeId> read_member(const json& j, const char* field) {
    RETURN_ERROR_IF(!j.contains(field), ErrorCode::kInvalidGraph, std::string("missing field '") + field + "'");
    RETURN_IF_ERROR(read_node(j[field], false));
    return static_cast<NodeId>(graph.nodes.size() - 1);
  }

  Status read_block(const json& j) {
    RETURN_ERROR_IF(!j.is_object(), ErrorCode::kInvalidGraph, "must be an object");
    Block blk;
    ASSIGN_OR_RETURN(std::string enter, get_string(j, "enter_name", "block"));
    auto it = ids_.find(enter);
    RETURN_ERROR_IF(it == ids_.end(), ErrorCode::kInvalidGraph,
                    "field 'enter_name' names unknown node '" + enter + "'");
    blk.enter = it->second;
    RETURN_ERROR_IF(!j.contains("inner_nodes") || !j["inner_nodes"].is_array(), ErrorCode::kInvalidGraph,
                    "field 'inner_nodes' must be an array");
    for (const json& n : j["inner_nodes"]) {
      RETURN_IF_ERROR(read_node(n, false));
      blk.inner.push_back(static_cast<NodeId>(graph.nodes.size() - 1));
    }
    ASSIGN_OR_RETURN(blk.exit, read_member(j, "exit_node"));
    if (j.contains("parts") && !j["parts"].is_null()) {
      RETURN_ERROR_IF(!j["parts"].is_array(), ErrorCode::kInvalidGraph, "field 'parts' must be an array");
      for (const json& part : j["parts"]) {
        std::vector<NodeId> ids;
        RETURN_ERROR_IF(!part.is_array(), ErrorCode::kInvalidGraph, "field 'parts' must hold arrays of names");
        for (const json& name : part) {
          auto f = name.is_string() ? ids_.find(name.get<std::string>()) : ids_.end();
          RETURN_ERROR_IF(f == ids_.end(), kCode,
                          "field 'parts' names an unknown node " + (name.is_string() ? name.dump() : "(not a string)"));
          ids.push_back(f->second);
        }
        blk.parts.push_back(std::move(ids));
      }
    }
    graph.blocks.push_back(std::move(blk));
    return Status::ok();
  }

  Status resolve_inputs() {
    for (size_t id = 1; id < graph.nodes.size(); ++id) {
      Node& n = graph.nodes[id];
      const std::string where = "node '" + n.name + "' field 'inputs'";
      for (const json& term : *pending_inputs_[id]) {
        RETURN_ERROR_IF(!term.is_array(), ErrorCode::kInvalidGraph, where + ": each term must be an array");
        Term t;
        for (const json& v : term) {
          RETURN_ERROR_IF(!v.is_array() || v.size() != 3 || !v[0].is_string(), kCode,
                          where + ": each value must be [name, begin, end]");
          const std::string src = v[0].get<std::string>();
          auto it = ids_.find(src);
          RETURN_ERROR_IF(it == ids_.end(), kCode, where + ": references unknown value '" + src + "'");
          ASSIGN_OR_RETURN(int64_t begin,
                           json_integer(v[1], where + " begin of '" + src + "'", 0, limits::kMaxChannels, kCode));
          ASSIGN_OR_RETURN(int64_t end,
                           json_integer(v[2], where + " end of '" + src + "'", 0, limits::kMaxChannels, kCode));
          t.push_back(Value{it->second, int(begin), int(end)});
        }
        n.inputs.push_back(std::move(t));
      }
    }
    return Status::ok();
  }
};

}  // namespace

json graph_to_json(const Graph& g) {
  json blocks = json::array();
  for (const Block& b : g.blocks) {
    json inner = json::array();
    for (NodeId id : b.inner) inner.push_back(node_to_json(g, id));
    json jb = {{"enter_name", g.node(b.enter).name},
               {"enter_node", node_to_json(g, b.enter)},
               {"inner_nodes", std::move(inner)},
               {"exit_node", node_to_json(g, b.exit)},
               {"stages", nullptr}};
    if (!b.parts.empty()) {
      json parts = json::array();
      for (const auto& part : b.parts) {
        json p = json::array();
        for (NodeId id : part) p.push_back(g.node(id).name);
        parts.push_back(std::move(p));
      }
      jb["parts"] = std::move(parts);
    }
    blocks.push_back(std::move(jb));
  }
  return {
      {"name", g.name}, {"input", node_to_json(g, 0)}, {"blocks", std::move(blocks)}, {"weight_seed", g.weight_seed}};
}

Expected<Graph> graph_from_json(const json& j) {
  Reader r;
  RETURN_IF_ERROR(r.read(j));
  return std::move(r.graph);
}

Expected<Graph> load_graph(const std::string& path) {
  ASSIGN_OR_RETURN(json j, read_json_file(path));
  Expected<Graph> g = graph_from_json(j);
  if (!g) return g.status().with_context(path);
  return g;
}

Status save_graph(const Graph& g, const std::string& path) {
  return write_text_file(path, graph_to_json(g).dump(1) + "\n");
}

namespace {
// Text inside a DOT double-quoted string: quotes and backslashes escaped, line breaks as \n, other control
// characters dropped, so a node name cannot end the string and inject statements.
std::string dot_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\')
      out += '\\', out += ch;
    else if (ch == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(ch) >= 0x20)
      out += ch;
  }
  return out;
}
}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(g.name) << "\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  os << "  n0 [label=\"input " << g.input_shape().to_string() << "\"];\n";
  for (size_t b = 0; b < g.blocks.size(); ++b) {
    os << "  subgraph cluster_" << b << " {\n    label=\"block " << b << "\";\n";
    for (NodeId id : g.blocks[b].members()) {
      const Node& n = g.node(id);
      os << "    n" << id << " [label=\"" << dot_escape(n.name) << ": " << op_kind_name(n.kind()) << "\\n"
         << n.output_shape.to_string() << "\"];\n";
    }
    os << "  }\n";
  }
  for (NodeId id = 1; id < static_cast<NodeId>(g.nodes.size()); ++id) {
    const Node& n = g.node(id);
    for (size_t t = 0; t < n.inputs.size(); ++t)
      for (const Value& v : n.inputs[t]) {
        os << "  n" << v.node << " -> n" << id;
        const bool partial = v.begin != 0 || v.end != g.node(v.node).output_shape.c;
        if (partial || n.inputs.size() > 1)
          os << " [label=\"" << (partial ? "[" + std::to_string(v.begin) + ":" + std::to_string(v.end) + "]" : "")
             << (n.inputs.size() > 1 ? "t" + std::to_string(t) : "") << "\"]";
        os << ";\n";
      }
  }
  os << "}\n";
  return os.str();
}

}  // namespace ios::ir
