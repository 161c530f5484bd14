// `ios`: the command-line front end. Subcommands: models, export, show.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "models/models.h"

namespace {

using ios::Expected;
using ios::Status;
using ios::ir::Graph;

int fail(const Status& s) {
  std::fprintf(stderr, "ios: error: %s\n", s.to_string().c_str());
  return 1;
}

struct GraphSource {
  std::string model;
  std::string graph_file;
  ios::models::ModelOptions options;

  void add_to(CLI::App* cmd) {
    auto* m = cmd->add_option("--model", model, "network name (see `ios models`)");
    auto* f = cmd->add_option("--graph", graph_file, "graph file in IOS's JSON format");
    m->excludes(f);
    cmd->add_option("--randwire-graphs", options.randwire_graphs_dir,
                    "folder holding IOS's four RandWire graph files (ws-*.txt)");
    cmd->add_option("--nasnet-filters", options.nasnet_filters, "NasNet filters (IOS: 168; issue #20 uses 32)");
    cmd->add_option("--nasnet-stem-filters", options.nasnet_stem_filters, "NasNet stem filters (IOS: 96)");
  }

  Expected<Graph> load() const {
    if (!graph_file.empty()) return ios::ir::load_graph(graph_file);
    if (model.empty()) return ios::error(ios::ErrorCode::kInvalidArgument, "give --model NAME or --graph FILE");
    return ios::models::build_model(model, options);
  }
};

int cmd_models() {
  std::printf("%-14s %7s %5s %9s %8s  %s\n", "name", "blocks", "ops", "GFLOPs", "input", "description");
  for (const auto& info : ios::models::model_list()) {
    Expected<Graph> g = ios::models::build_model(info.name);
    if (!g) return fail(g.status());
    std::printf("%-14s %7zu %5d %9.2f %8s  %s\n", info.name.c_str(), g->blocks.size(), g->op_count(),
                g->total_flops() / 1e9, g->input_shape().to_string().c_str(), info.description.c_str());
  }
  return 0;
}

int cmd_show(const Graph& g, const std::string& dot_file) {
  std::printf("graph %s: %zu blocks, %d ops, %.3f GFLOPs, input %s, output %s\n", g.name.c_str(), g.blocks.size(),
              g.op_count(), g.total_flops() / 1e9, g.input_shape().to_string().c_str(),
              g.output_shape().to_string().c_str());
  std::printf("%-6s %-7s %-7s %6s %10s  %s\n", "block", "ops", "parts", "convs", "MFLOPs", "exit shape");
  for (size_t b = 0; b < g.blocks.size(); ++b) {
    const auto& blk = g.blocks[b];
    int convs = 0;
    double flops = 0;
    for (auto id : blk.members()) {
      flops += g.cost(id).flops;
      const auto kind = g.node(id).kind();
      convs += kind == ios::ir::OpKind::kConv || kind == ios::ir::OpKind::kSequential;
    }
    std::printf("%-6zu %-7zu %-7zu %6d %10.1f  %s\n", b, blk.members().size(), blk.parts.size(), convs, flops / 1e6,
                g.node(blk.exit).output_shape.to_string().c_str());
  }
  if (!dot_file.empty()) {
    Status s = ios::ir::write_text_file(dot_file, ios::ir::graph_to_dot(g));
    if (!s) return fail(s);
    std::printf("wrote %s\n", dot_file.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"IOS inter-operator scheduler for CNN inference"};
  app.require_subcommand(1);

  app.add_subcommand("models", "list the built-in networks");

  auto* exp = app.add_subcommand("export", "write a network as an IOS graph file");
  GraphSource export_src;
  std::string export_out;
  int export_batch = 1;
  exp->add_option("--model", export_src.model, "network name")->required();
  exp->add_option("--randwire-graphs", export_src.options.randwire_graphs_dir, "IOS RandWire graph folder");
  exp->add_option("--batch", export_batch, "batch size recorded in the file")->check(CLI::PositiveNumber);
  exp->add_option("--out", export_out, "output JSON file")->required();

  auto* show = app.add_subcommand("show", "summarise a network or graph file");
  GraphSource show_src;
  show_src.add_to(show);
  std::string dot_file;
  show->add_option("--dot", dot_file, "also write a Graphviz file");

  CLI11_PARSE(app, argc, argv);

  if (app.got_subcommand("models")) return cmd_models();
  if (app.got_subcommand("export")) {
    Expected<Graph> g = export_src.load();
    if (!g) return fail(g.status());
    auto j = ios::ir::graph_to_json(*g);
    j["batch"] = export_batch;
    Status s = ios::ir::write_text_file(export_out, j.dump(1) + "\n");
    if (!s) return fail(s);
    std::printf("wrote %s (%d ops)\n", export_out.c_str(), g->op_count());
    return 0;
  }
  if (app.got_subcommand("show")) {
    Expected<Graph> g = show_src.load();
    if (!g) return fail(g.status());
    return cmd_show(*g, dot_file);
  }
  return 0;
}
