#include "ir/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "common/file_io.h"
#include "common/overloaded.h"

namespace ios::ir {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-bound, bound].
float uniform(uint64_t key, uint64_t index, float bound) {
  const uint64_t bits = splitmix64(key ^ splitmix64(index));
  const double unit = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return static_cast<float>((2.0 * unit - 1.0) * bound);
}

void fill(std::vector<float>& v, size_t n, uint64_t key, float bound) {
  v.resize(n);
  for (size_t i = 0; i < n; ++i) v[i] = uniform(key, i, bound);
}

ParamSizes param_sizes(const SubOp& step, const Shape& in) {
  return std::visit([&](const auto& s) { return s.params(in); }, step);
}

ParamTensor make_step(const SubOp& step, const Shape& in, uint64_t key) {
  ParamTensor p;
  const ParamSizes sizes = param_sizes(step, in);
  if (sizes.weight == 0) return p;
  fill(p.weight, sizes.weight, key, std::sqrt(6.0f / static_cast<float>(sizes.fan_in)));
  if (sizes.bias) fill(p.bias, sizes.bias, key ^ 0xB1A5ull, 0.05f);
  return p;
}

std::vector<std::pair<SubOp, Shape>> steps_of(const Node& n) {
  std::vector<std::pair<SubOp, Shape>> out;
  if (const std::optional<SubOp> step = as_step(n.op)) {
    out.emplace_back(*step, n.input_shape);
  } else if (n.is<SequentialAttrs>()) {
    Shape in = n.input_shape;
    const auto& steps = n.attrs<SequentialAttrs>().steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      out.emplace_back(steps[i], in);
      in = n.step_shapes[i];
    }
  }
  return out;
}

}  // namespace

size_t Weights::parameter_count() const {
  size_t n = 0;
  for (const auto& node : per_node)
    for (const auto& t : node) n += t.weight.size() + t.bias.size();
  return n;
}

Weights make_weights(const Graph& g) { return make_weights(g, g.weight_seed); }

Weights make_weights(const Graph& g, uint64_t seed) {
  Weights w;
  w.seed = seed;
  w.per_node.resize(g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    auto steps = steps_of(g.nodes[id]);
    w.per_node[id].resize(std::max<size_t>(1, steps.size()));
    for (size_t s = 0; s < steps.size(); ++s)
      w.per_node[id][s] = make_step(steps[s].first, steps[s].second, splitmix64(seed ^ (id << 20) ^ (s << 8)));
  }
  return w;
}

std::vector<float> make_input(const Shape& shape, int batch, uint64_t seed) {
  std::vector<float> v;
  fill(v, static_cast<size_t>(shape.numel()) * static_cast<size_t>(batch), splitmix64(seed ^ 0x1A9u), 1.0f);
  return v;
}

namespace {
constexpr char kMagic[8] = {'I', 'O', 'S', 'W', 'G', 'T', '0', '1'};

template <typename T>
void put(AtomicFile& out, const T& v) {
  out.write(&v, sizeof(T));
}
template <typename T>
bool get(std::istream& in, T& v) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof(T)));
}

// The loader refuses non-finite weights, so such a file is never written.
Status check_finite(const Weights& w, const std::string& path) {
  for (size_t id = 0; id < w.per_node.size(); ++id)
    for (const auto& t : w.per_node[id])
      for (const auto* v : {&t.weight, &t.bias}) {
        const auto bad = std::find_if(v->begin(), v->end(), [](float x) { return !std::isfinite(x); });
        RETURN_ERROR_IF(bad != v->end(), ErrorCode::kInvalidArgument,
                        "cannot write '" + path + "': node " + std::to_string(id) + " holds " + std::to_string(*bad) +
                            " at element " + std::to_string(bad - v->begin()));
      }
  return Status::ok();
}

void write_body(const Weights& w, AtomicFile& out) {
  out.write(kMagic, sizeof(kMagic));
  put(out, w.seed);
  put(out, static_cast<uint64_t>(w.per_node.size()));
  for (const auto& node : w.per_node) {
    put(out, static_cast<uint64_t>(node.size()));
    for (const auto& t : node)
      for (const auto* v : {&t.weight, &t.bias}) {
        put(out, static_cast<uint64_t>(v->size()));
        out.write(v->data(), v->size() * sizeof(float));
      }
  }
}

}  // namespace

// Values are checked before the file is opened, so a refused file leaves nothing behind.
Status save_weights(const Weights& w, const std::string& path) {
  RETURN_IF_ERROR(check_finite(w, path));
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::create(path));
  write_body(w, out);
  return out.commit();
}

Status write_weights(const Weights& w, AtomicFile& out, const std::string& path) {
  RETURN_IF_ERROR(check_finite(w, path));
  write_body(w, out);
  return Status::ok();
}

Expected<Weights> load_weights(const Graph& g, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RETURN_ERROR_IF(!in, ErrorCode::kIoError, "cannot open '" + path + "'");
  return read_weights(g, in, path);
}

// Every size is checked against the graph before anything is allocated, so a file can never ask for
// more memory than the graph's own parameters.
Expected<Weights> read_weights(const Graph& g, std::istream& in, const std::string& path) {
  ASSIGN_OR_RETURN(Weights w, read_weights_record(g, in, path));
  RETURN_ERROR_IF(in.peek() != std::char_traits<char>::eof(), ErrorCode::kInvalidArgument,
                  path + ": unexpected bytes after the last tensor");
  return w;
}

Expected<Weights> read_weights_record(const Graph& g, std::istream& in, const std::string& path) {
  char magic[8];
  RETURN_ERROR_IF(!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0, ErrorCode::kInvalidArgument,
                  path + ": not a weights file (bad magic)");
  Weights w;
  uint64_t nodes = 0;
  RETURN_ERROR_IF(!get(in, w.seed) || !get(in, nodes), ErrorCode::kInvalidArgument, path + ": truncated header");
  RETURN_ERROR_IF(nodes != g.nodes.size(), ErrorCode::kInvalidArgument,
                  path + ": holds " + std::to_string(nodes) + " nodes, graph has " + std::to_string(g.nodes.size()));
  w.per_node.resize(nodes);
  for (size_t id = 0; id < nodes; ++id) {
    const auto node_steps = steps_of(g.nodes[id]);
    uint64_t steps = 0;
    RETURN_ERROR_IF(!get(in, steps) || steps != std::max<size_t>(1, node_steps.size()), ErrorCode::kInvalidArgument,
                    path + ": node '" + g.nodes[id].name + "' has the wrong number of steps");
    w.per_node[id].resize(steps);
    for (size_t s = 0; s < steps; ++s) {
      auto& t = w.per_node[id][s];
      const ParamSizes e =
          s < node_steps.size() ? param_sizes(node_steps[s].first, node_steps[s].second) : ParamSizes{};
      for (auto [dst, expected_size] : {std::pair{&t.weight, e.weight}, std::pair{&t.bias, e.bias}}) {
        uint64_t n = 0;
        RETURN_ERROR_IF(
            !get(in, n) || n != expected_size, ErrorCode::kInvalidArgument,
            path + ": node '" + g.nodes[id].name + "' step " + std::to_string(s) + " has a tensor of the wrong size");
        dst->resize(n);
        RETURN_ERROR_IF(!in.read(reinterpret_cast<char*>(dst->data()), static_cast<std::streamsize>(n * sizeof(float))),
                        ErrorCode::kInvalidArgument, path + ": truncated at node '" + g.nodes[id].name + "'");
        const auto bad = std::find_if(dst->begin(), dst->end(), [](float x) { return !std::isfinite(x); });
        RETURN_ERROR_IF(bad != dst->end(), ErrorCode::kInvalidArgument,
                        path + ": node '" + g.nodes[id].name + "' step " + std::to_string(s) + " holds " +
                            std::to_string(*bad) + " at element " + std::to_string(bad - dst->begin()));
      }
    }
  }
  return w;
}

}  // namespace ios::ir
