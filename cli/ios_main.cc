// `ios`: the command-line front end. Subcommands: models, export, show.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include <chrono>

#include "ir/json_io.h"
#include "models/models.h"
#include "scheduler/policies.h"

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

struct OptimizeArgs {
  GraphSource src;
  std::string policy = "dp_parallel_merge";
  std::string cost_model = "analytic";
  std::string out;
  std::string stage_cache;
  ios::sched::OptimizeOptions options;
  bool quiet = false;

  void add_to(CLI::App* cmd) {
    src.add_to(cmd);
    cmd->add_option("--opt", policy,
                    "sequential | greedy | dp_merge | dp_parallel | dp_parallel_merge (ios-both) | opara");
    cmd->add_option("--batch", options.batch, "batch size")->check(CLI::PositiveNumber);
    cmd->add_option("--r", options.r, "IOS r: max ops per group")->check(CLI::PositiveNumber);
    cmd->add_option("--s", options.s, "IOS s: max groups per stage")->check(CLI::PositiveNumber);
    cmd->add_option("--max-part-size", options.max_part_size, "DP part size (IOS: 100; its experiments: 50)")
        ->check(CLI::Range(1, 128));
    cmd->add_option("--greedy-streams", options.greedy_max_streams, "greedy's stream cap")->check(CLI::PositiveNumber);
    cmd->add_option("--cost-model", cost_model, "analytic | measured (needs the GPU runtime)");
    cmd->add_option("--stage-cache", stage_cache, "JSON file persisting stage latencies between runs");
    cmd->add_flag("--quiet", quiet, "no progress line on stderr");
  }
};

std::string display_name(const OptimizeArgs& a, ios::sched::Policy p) {
  std::string name = ios::sched::policy_display_name(p);
  const bool dp = p == ios::sched::Policy::kDpBoth || p == ios::sched::Policy::kDpParallel;
  if (dp && (a.options.r != 3 || a.options.s != 8))
    name += "(r=" + std::to_string(a.options.r) + ", s=" + std::to_string(a.options.s) + ")";
  return name;
}

int cmd_optimize(OptimizeArgs& a) {
  Expected<Graph> g = a.src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Policy> policy = ios::sched::parse_policy(a.policy);
  if (!policy) return fail(policy.status().with_context("--opt"));
  a.options.policy = *policy;
  if (a.cost_model == "measured")
    return fail(ios::error(ios::ErrorCode::kUnavailable,
                           "--cost-model measured needs the GPU runtime, which this build does not include"));
  if (a.cost_model != "analytic")
    return fail(ios::error(ios::ErrorCode::kInvalidArgument,
                           "--cost-model must be 'analytic' or 'measured', got '" + a.cost_model + "'"));
  ios::sched::AnalyticCostModel analytic;
  ios::sched::StageCache cache(analytic, "analytic|batch" + std::to_string(a.options.batch));
  if (!a.stage_cache.empty())
    if (Status s = cache.load(a.stage_cache); !s) return fail(s);

  const auto start = std::chrono::steady_clock::now();
  if (!a.quiet)
    a.options.on_block = [start](size_t done, size_t total, const ios::sched::DpStats& st) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (t > 1.0 || done == total)
        std::fprintf(stderr, "\r[block %zu/%zu] states %lld transitions %lld stages costed %lld (%.1f s)%s", done,
                     total, static_cast<long long>(st.states), static_cast<long long>(st.transitions),
                     static_cast<long long>(st.stages_costed), t, done == total ? "\n" : "");
    };
  auto result = ios::sched::optimize(*g, a.options, cache);
  if (!result) return fail(result.status());
  const auto& sched = result->schedule;
  std::printf("Model: %s | Optimization: %s | Batchsize: %d | Optimization cost: %.2f sec | Latency: %.2f ms\n",
              g->name.c_str(), display_name(a, *policy).c_str(), a.options.batch, sched.meta.search_seconds,
              sched.meta.latency_ms);
  std::printf("States: %lld | Transitions: %lld | Stages costed: %lld | Stages: %d | Cost model: %s (cache hits %zu)\n",
              static_cast<long long>(result->stats.states), static_cast<long long>(result->stats.transitions),
              static_cast<long long>(result->stats.stages_costed), sched.stage_count(), cache.name().c_str(),
              cache.hits());
  for (const auto& note : sched.meta.notes) std::printf("Note: %s\n", note.c_str());
  if (!a.stage_cache.empty())
    if (Status s = cache.save(a.stage_cache); !s) return fail(s);
  if (!a.out.empty()) {
    if (Status s = ios::sched::save_schedule(*g, sched, a.out); !s) return fail(s);
    std::printf("wrote %s\n", a.out.c_str());
  }
  return 0;
}

int cmd_validate(const GraphSource& src, const std::string& schedule_file) {
  Expected<Graph> g = src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Schedule> s = ios::sched::load_schedule_for(*g, schedule_file);
  if (!s) return fail(s.status());
  std::printf("%s: valid %s schedule (%s), %d stages\n", schedule_file.c_str(),
              s->is_stream_level() ? "stream-level" : "staged", s->meta.policy.c_str(), s->stage_count());
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

  auto* opt = app.add_subcommand("optimize", "schedule a network with a policy");
  OptimizeArgs optimize_args;
  optimize_args.add_to(opt);
  opt->add_option("--out", optimize_args.out, "write the schedule (IOS JSON shape)");

  auto* val = app.add_subcommand("validate", "check a schedule file against a network");
  GraphSource validate_src;
  validate_src.add_to(val);
  std::string validate_file;
  val->add_option("--schedule", validate_file, "schedule file")->required();

  CLI11_PARSE(app, argc, argv);

  if (app.got_subcommand("optimize")) return cmd_optimize(optimize_args);
  if (app.got_subcommand("validate")) return cmd_validate(validate_src, validate_file);

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
