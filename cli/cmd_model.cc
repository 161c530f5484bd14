// `ios models`, `import`, `export`, `show` and `validate`: commands on a network and its files, no GPU.
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"

namespace ios::cli {

// `ios import`: an ONNX model as an IOS graph file and a weights file, with what the import did.
int cmd_import(const std::string& onnx_file, const std::string& out, const std::string& weights_out) {
  const auto start = std::chrono::steady_clock::now();
  auto m = ios::onnx_import::import_file(onnx_file);
  if (!m) return fail(m.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Graph& g = m->graph;
  std::printf(
      "imported %s (opset %d) in %.2f s: %d ops in %zu blocks, %.3f GFLOPs, %.1f M parameters, input %s, "
      "output %s\n",
      onnx_file.c_str(), m->opset, seconds, g.op_count(), g.blocks.size(), g.total_flops() / 1e9,
      m->weights.parameter_count() / 1e6, g.input_shape().to_string().c_str(), g.output_shape().to_string().c_str());
  for (const auto& note : m->notes) std::printf("  %s\n", note.c_str());
  if (!out.empty()) {
    if (Status s = ios::write_text_file(out, ios::ir::graph_to_json(g).dump(1) + "\n"); !s) return fail(s);
    std::printf("wrote %s\n", out.c_str());
  }
  if (!weights_out.empty()) {
    if (Status s = ios::ir::save_weights(m->weights, weights_out); !s) return fail(s);
    std::printf("wrote %s\n", weights_out.c_str());
  }
  return 0;
}

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

int cmd_show(const Graph& g, const std::string& dot_file, const std::string& schedule_file) {
  if (!schedule_file.empty()) {
    Expected<ios::sched::Schedule> s = ios::sched::load_schedule_for(g, schedule_file);
    if (!s) return fail(s.status());
    std::printf("%s", ios::sched::describe_schedule(g, *s).c_str());
    return 0;
  }
  std::printf("graph %s: %zu blocks, %d ops, %.3f GFLOPs, input %s, output %s\n", g.name.c_str(), g.blocks.size(),
              g.op_count(), g.total_flops() / 1e9, g.input_shape().to_string().c_str(),
              g.output_shape().to_string().c_str());
  // parts: the DP's explicit parts of the block ("-": none, the DP cuts it by --max-part-size).
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
    const std::string parts = blk.parts.empty() ? "-" : std::to_string(blk.parts.size());
    std::printf("%-6zu %-7zu %-7s %6d %10.1f  %s\n", b, blk.members().size(), parts.c_str(), convs, flops / 1e6,
                g.node(blk.exit).output_shape.to_string().c_str());
  }
  if (!dot_file.empty()) {
    Status s = ios::write_text_file(dot_file, ios::ir::graph_to_dot(g));
    if (!s) return fail(s);
    std::printf("wrote %s\n", dot_file.c_str());
  }
  return 0;
}

int cmd_export(const GraphSource& src, int batch, const std::string& out) {
  Expected<Graph> g = src.load();
  if (!g) return fail(g.status());
  auto j = ios::ir::graph_to_json(*g);
  j["batch"] = batch;
  Status s = ios::write_text_file(out, j.dump(1) + "\n");
  if (!s) return fail(s);
  std::printf("wrote %s (%d ops)\n", out.c_str(), g->op_count());
  return 0;
}

int cmd_validate(const GraphSource& src, const std::string& schedule_file, Report& report) {
  Expected<Graph> g = src.load();
  if (!g) return fail(g.status());
  Expected<ios::sched::Schedule> s = ios::sched::load_schedule_for(*g, schedule_file);
  if (!s) return fail(s.status());
  const char* kind = s->is_stream_level() ? "stream-level" : "staged";
  std::fprintf(report.text(), "%s: valid %s schedule (%s), %d stages\n", schedule_file.c_str(), kind,
               s->meta.policy.c_str(), s->stage_count());
  // Peak activation memory (fp32, batch 1) beside the sequential schedule's: what concurrency costs.
  auto peak = [&](const ios::sched::Schedule& schedule) -> Expected<size_t> {
    ASSIGN_OR_RETURN(ios::sched::ExecutionPlan plan, ios::sched::compile_plan(*g, schedule));
    ASSIGN_OR_RETURN(ios::sched::MemoryPlan memory, ios::sched::plan_memory(*g, plan, {}));
    return memory.arena_bytes;
  };
  Expected<size_t> own = peak(*s), sequential = peak(ios::sched::sequential_schedule(*g));
  if (!own) return fail(own.status());
  if (!sequential) return fail(sequential.status());
  std::fprintf(report.text(),
               "Memory: peak activations %.1f MiB at fp32 batch 1 (sequential schedule: %.1f MiB, %.2fx)\n",
               *own / 1048576.0, *sequential / 1048576.0, double(*own) / double(*sequential));
  report.json = {{"schedule_file", schedule_file},
                 {"valid", true},
                 {"kind", kind},
                 {"policy", s->meta.policy},
                 {"model", g->name},
                 {"stages", s->stage_count()},
                 {"latency_ms", s->meta.latency_ms},
                 {"precision", s->meta.precision},
                 {"peak_activation_bytes", *own},
                 {"sequential_peak_activation_bytes", *sequential}};
  return report.finish();
}

}  // namespace ios::cli
