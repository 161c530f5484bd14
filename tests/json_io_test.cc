#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/file_io.h"
#include "ir/json_io.h"
#include "models/models.h"
#include "test_graphs.h"

namespace ios::ir {
namespace {

using nlohmann::json;

void expect_same_graph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    EXPECT_TRUE(a.nodes[i].op == b.nodes[i].op) << "node " << a.nodes[i].name;
    EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs) << "node " << a.nodes[i].name;
    EXPECT_EQ(a.nodes[i].output_shape, b.nodes[i].output_shape);
  }
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    EXPECT_EQ(a.blocks[i].members(), b.blocks[i].members());
    EXPECT_EQ(a.blocks[i].parts, b.blocks[i].parts);
  }
  EXPECT_EQ(a.weight_seed, b.weight_seed);
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, ModelSurvivesJsonRoundTrip) {
  auto g = models::build_model(GetParam());
  ASSERT_TRUE(g) << g.status().to_string();
  auto text = graph_to_json(*g).dump();
  auto parsed = parse_json_text(text, "mem");
  ASSERT_TRUE(parsed);
  auto back = graph_from_json(*parsed);
  ASSERT_TRUE(back) << back.status().to_string();
  expect_same_graph(*g, *back);
}

INSTANTIATE_TEST_SUITE_P(AllModels, RoundTrip,
                         ::testing::Values("inception_v3", "squeezenet", "nasnet", "randwire", "googlenet"));

TEST(GraphFile, MalformedJsonNamesLineAndColumn) {
  auto r = parse_json_text("{\n  \"name\": \"x\",\n  \"input\": [1, 2,,]\n}", "bad.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("bad.json:3:"), std::string::npos) << r.status().message();
}

json tiny_json() { return graph_to_json(testing::diamond()); }

TEST(GraphFile, MissingFieldIsNamed) {
  json j = tiny_json();
  j["blocks"][0]["inner_nodes"][0].erase("out_channels");
  auto g = graph_from_json(j);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("'out_channels'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("node '1'"), std::string::npos) << g.status().message();
}

TEST(GraphFile, UnknownOpTypeIsNamed) {
  json j = tiny_json();
  j["blocks"][0]["inner_nodes"][0]["type"] = "deconv";
  auto g = graph_from_json(j);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("deconv"), std::string::npos);
}

TEST(GraphFile, UnknownInputNameIsNamed) {
  json j = tiny_json();
  j["blocks"][0]["inner_nodes"][0]["inputs"] = json::parse(R"([[["nope", 0, 8]]])");
  auto g = graph_from_json(j);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("'nope'"), std::string::npos) << g.status().message();
}

TEST(GraphFile, ForwardReferenceIsReportedAsCycle) {
  json j = tiny_json();
  j["blocks"][0]["inner_nodes"][0]["inputs"] = json::parse(R"([[["3", 0, 8]]])");
  auto g = graph_from_json(j);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("cyclic"), std::string::npos) << g.status().message();
}

TEST(GraphFile, BadShapeFieldIsNamed) {
  json j = tiny_json();
  j["input"]["output_shape"] = json::array({3, 0, 8});
  auto g = graph_from_json(j);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find("output_shape"), std::string::npos) << g.status().message();
}

// An IOS-exported sequential op: named sub-nodes, the first reading the op's inputs.
TEST(GraphFile, ReadsIosSequentialAndReluNodes) {
  json j = json::parse(R"({
    "name": "ios_style",
    "input": {"type": "placeholder", "name": "0", "hint_name": "0", "output_shape": [4, 6, 6]},
    "blocks": [{
      "enter_name": "0",
      "enter_node": {"type": "placeholder", "name": "0", "hint_name": "0", "output_shape": [4, 6, 6]},
      "inner_nodes": [
        {"type": "relu", "name": "1", "hint_name": "1", "inputs": [[["0", 0, 4]]], "output_shape": [4, 6, 6]}
      ],
      "exit_node": {"type": "sequential", "name": "4", "hint_name": "SepConv", "nodes": [
        {"type": "conv", "name": "2", "hint_name": "2", "inputs": [[["1", 0, 4]]], "out_channels": 4,
         "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "groups": 4, "act": "identity",
         "output_shape": [4, 6, 6]},
        {"type": "conv", "name": "3", "hint_name": "3", "inputs": [[["2", 0, 4]]], "out_channels": 8,
         "kernel": [1, 1], "stride": [1, 1], "padding": [0, 0], "groups": 1, "act": "identity",
         "output_shape": [8, 6, 6]}], "output_shape": [8, 6, 6]},
      "stages": [[["1"]], [["4"]]]
    }]})");
  auto g = graph_from_json(j);
  ASSERT_TRUE(g) << g.status().to_string();
  EXPECT_EQ(g->op_count(), 2);
  EXPECT_EQ(g->output_shape(), (Shape{8, 6, 6}));
  EXPECT_EQ(g->node(2).attrs<SequentialAttrs>().steps.size(), 2u);
}

TEST(GraphFile, DotHasOneClusterPerBlock) {
  auto g = models::squeezenet();
  ASSERT_TRUE(g);
  std::string dot = graph_to_dot(*g);
  size_t clusters = 0;
  for (size_t p = dot.find("subgraph cluster_"); p != std::string::npos; p = dot.find("subgraph cluster_", p + 1)) ++clusters;
  EXPECT_EQ(clusters, g->blocks.size());
}

// The one serialization feeds files, stage signatures and kernel keys: every attribute must show.
TEST(AttrsKey, EveryConvAndPoolAttributeChangesTheKey) {
  const ConvAttrs conv = Conv(8).kernel(3).pad(1);
  std::vector<ConvAttrs> convs(11, conv);
  convs[0].out_channels = 9, convs[1].kh = 5, convs[2].kw = 5, convs[3].sh = 2, convs[4].sw = 2, convs[5].ph = 0;
  convs[6].pw = 0, convs[7].dh = 2, convs[8].dw = 2, convs[9].groups = 2, convs[10].has_bias = false;
  std::set<std::string> keys{attrs_key(conv), attrs_key(Conv(8).kernel(3).pad(1).act(Act::kNone))};
  for (const ConvAttrs& c : convs) keys.insert(attrs_key(c));
  EXPECT_EQ(keys.size(), convs.size() + 2);

  const PoolAttrs pool = MaxPool(3).stride(2);
  std::vector<PoolAttrs> pools(8, pool);
  pools[0].kind = PoolKind::kAvg, pools[1].kh = 2, pools[2].kw = 2, pools[3].sh = 1, pools[4].sw = 1;
  pools[5].ph = 1, pools[6].pw = 1, pools[7].ceil_mode = true;
  std::set<std::string> pool_keys{attrs_key(pool)};
  for (const PoolAttrs& p : pools) pool_keys.insert(attrs_key(p));
  EXPECT_EQ(pool_keys.size(), pools.size() + 1);
}

TEST(AttrsKey, FileFieldsAreTheSerializedAttributes) {
  const ConvAttrs c = Conv(16).kernel(1, 7).pad(0, 3).dilation(1, 2).bias(false).act(Act::kTanh);
  const json j = attrs_to_json(SubOp{c});
  EXPECT_EQ(j["type"], "conv");
  EXPECT_EQ(j["dilation"], json::array({1, 2}));
  EXPECT_EQ(j["bias"], false);
  EXPECT_EQ(j["act"], "tanh");
  EXPECT_EQ(attrs_key(c), j.dump());
}

TEST(GraphFile, NonBooleanFlagsAreRejectedByName) {
  for (const char* field : {"bias", "ceil_mode"}) {
    json j = tiny_json();
    json& node = j["blocks"][0]["inner_nodes"][0];
    if (std::string(field) == "ceil_mode") node = {{"name", "1"}, {"type", "pool"}, {"pool_type", "max"},
                                                   {"kernel", {2, 2}}, {"inputs", node["inputs"]}};
    node[field] = 1;
    auto g = graph_from_json(j);
    ASSERT_FALSE(g) << field;
    EXPECT_NE(g.status().message().find(std::string("'") + field + "' must be true or false"), std::string::npos)
        << g.status().message();
  }
}

}  // namespace
}  // namespace ios::ir
