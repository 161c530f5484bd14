// Small ONNX models built with the protobuf API for the importer's tests: one float input, one output,
// initializers and nodes; plus helpers to set attributes, import, and run the result on the CPU reference.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "frontends/onnx/onnx_import.h"
#include "reference/reference_executor.h"

namespace ios::onnx_import::testing_model {

// A ModelProto under construction: one float input, one output, initializers and nodes.
class Model {
 public:
  explicit Model(int opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    graph()->set_name("test");
  }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  Model& input(const std::string& name, std::vector<int64_t> dims) {
    auto* t = graph()->add_input();
    t->set_name(name);
    t->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  Model& output(const std::string& name) {
    graph()->add_output()->set_name(name);
    return *this;
  }
  // Float initializer; `raw` stores it as raw_data (the exporters' way), else as float_data.
  Model& init(const std::string& name, std::vector<int64_t> dims, std::vector<float> values, bool raw = true) {
    auto* t = graph()->add_initializer();
    fill(*t, name, dims, values, raw);
    return *this;
  }
  // A 1-D int64 initializer, or one of shape `dims`.
  Model& init_ints(const std::string& name, std::vector<int64_t> values, std::vector<int64_t> dims = {}) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (dims.empty()) dims = {int64_t(values.size())};
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(graph()->node_size()) : name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return *n;
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  Expected<ImportedModel> import() const {
    save_seed();
    return import_bytes(bytes(), "test", ".");
  }
  // With IOS_ONNX_SEED_DIR set, every model a test imports is also written there: the ONNX fuzz target's
  // seed corpus (fuzz/corpus/onnx/) is made this way.
  void save_seed() const {
    const char* dir = std::getenv("IOS_ONNX_SEED_DIR");
    const std::string b = bytes();
    if (!dir || b.size() > 65536) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    static int count = 0;
    std::ofstream(
        std::string(dir) + "/" + info->test_suite_name() + "." + info->name() + "_" + std::to_string(++count) + ".onnx",
        std::ios::binary)
        << b;
  }

  static void fill(onnx::TensorProto& t, const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values, bool raw) {
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    if (raw)
      t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    else
      for (float v : values) t.add_float_data(v);
  }

 private:
  onnx::ModelProto model_;
};

inline void set_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

inline std::vector<float> iota(size_t n, float start = 1.f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

inline ImportedModel imported(const Model& m) {
  auto r = m.import();
  EXPECT_TRUE(r) << r.status().to_string();
  return r ? std::move(*r) : ImportedModel{};
}

// The message of a model that must not import.
inline std::string import_error(const Model& m) {
  auto r = m.import();
  EXPECT_FALSE(r);
  return r ? "" : r.status().message();
}

inline std::vector<float> run(const ImportedModel& m, std::vector<float> input, int batch = 1) {
  if (m.graph.nodes.empty()) {
    ADD_FAILURE() << "no model to run (its import failed)";
    return {};
  }
  reference::Tensor in(batch, m.graph.input_shape());
  in.data = std::move(input);
  auto out = reference::run(m.graph, m.weights, in);
  EXPECT_TRUE(out) << out.status().to_string();
  return out ? out->data : std::vector<float>{};
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

inline int count_kind(const ir::Graph& g, ir::OpKind kind) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.kind() == kind;
  return n;
}

// Direct 2-D convolution of one sample (NCHW), written out loop by loop as the definition reads.
inline std::vector<float> direct_conv(const std::vector<float>& x, int c, int h, int w, const std::vector<float>& wt,
                                      int o, int k, int pad, int stride, const std::vector<float>& bias) {
  const int oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  std::vector<float> y(size_t(o * oh * ow));
  for (int co = 0; co < o; ++co)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        double acc = bias.empty() ? 0 : bias[size_t(co)];
        for (int ci = 0; ci < c; ++ci)
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += double(x[size_t((ci * h + iy) * w + ix)]) * wt[size_t(((co * c + ci) * k + ky) * k + kx)];
            }
        y[size_t((co * oh + oy) * ow + ox)] = float(acc);
      }
  return y;
}

class OnnxFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("ios_onnx_test_" + std::to_string(::getpid()) + "_" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
};

// A conv whose weight lives in an external data file beside the model.
inline Model external_model(const std::string& location) {
  Model m;
  m.input("x", {1, 1, 1, 2}).output("y");
  auto* t = m.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) t->add_dims(1);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : {std::pair<std::string, std::string>{"location", location}, {"offset", "4"}, {"length", "4"}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  m.node("Conv", {"x", "w"}, {"y"});
  return m;
}

}  // namespace ios::onnx_import::testing_model
