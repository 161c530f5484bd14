#include "experiments/harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/file_io.h"
#include "engine/components.h"
#include "engine/search.h"
#include "ir/json_io.h"
#include "reference/reference_executor.h"
#include "runtime/measured_cost_model.h"
#include "runtime/profiler.h"
#include "scheduler/cost_model.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"

namespace ios::exp {

void CommonArgs::add_to(CLI::App& app) {
  app.add_option("--out-dir", out_dir, "where the CSV and JSON go");
  app.add_option("--cost-model", cost_model, "auto | measured | analytic");
  app.add_option("--precision", precision, "fp32 | tf32 | fp16 | bf16")->capture_default_str();
  app.add_option("--layout", layout, "nchw | nhwc | auto (nhwc with tensor cores)")->capture_default_str();
  app.add_option("--concat-writes", concat_writes,
                 "in-place (producers write their slices of a concatenation) | conv-copy (convolutions writing a "
                 "strided slice write their own tensor, the concatenation copies)")
      ->capture_default_str();
  app.add_option(
         "--conv-engine", conv_engine,
         "auto (graph-exhaustive for strict fp32, else graph-rtc) | graph | graph-exhaustive | graph-rtc | legacy")
      ->capture_default_str();
  app.add_flag("--own-kernels,!--no-own-kernels", own_kernels,
               "our depthwise and pointwise convolution kernels timed against cuDNN's engines, kept where faster");
  kernel_cache = rt::default_kernel_cache_path();
  app.add_option("--kernel-cache", kernel_cache, "tuned-engine file (none: not persisted)")->capture_default_str();
  app.add_flag("--verbose", verbose, "report convolution engines and fallbacks");
  app.add_option("--randwire-graphs", randwire_graphs, "IOS's RandWire graph folder (absent: seeded graphs)");
  app.add_option("--warmup", warmup, "warm-up replays per variant")->check(CLI::NonNegativeNumber);
  app.add_option("--iters", iters, "timed replays per variant and round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "interleaved rounds (median of round medians)")->check(CLI::PositiveNumber);
  app.add_option_function<std::string>(
         "--stage-timing",
         [this](const std::string& text) {
           Expected<sched::StageTimingRule> rule = sched::parse_stage_timing(text);
           if (!rule) throw CLI::ValidationError(rule.status().message());
           stage_timing = *rule;
         },
         sched::kStageTimingHelp)
      ->default_str("adaptive");
  app.add_option("--max-part-size", max_part_size, "DP part size")->check(CLI::Range(1, 128));
  app.add_flag("!--no-check", check, "skip the comparison with the CPU reference");
}

std::string ios_log_line(const std::string& model, const std::string& opt, int batch, double search_s,
                         double latency_ms) {
  char line[512];
  std::snprintf(line, sizeof line,
                "Model: %s | Optimization: %s | Batchsize: %d | Optimization cost: %.2f sec | Latency: %.3f ms",
                model.c_str(), opt.c_str(), batch, search_s, latency_ms);
  return line;
}

nlohmann::json environment(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  std::string smi;
  if (FILE* p = popen("nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,"
                      "driver_version --format=csv,noheader 2>/dev/null",
                      "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) smi += buf;
    pclose(p);
  }
  while (!smi.empty() && (smi.back() == '\n' || smi.back() == '\r')) smi.pop_back();
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {
      {"device", rt::device_description()},
      {"libraries", rt::library_versions()},
      {"nvidia_smi (name, sm clock, max sm clock, mem clock, power, temp, driver)", smi.empty() ? "unavailable" : smi},
      {"clocks_locked", false},
      {"command", command},
      {"date", date}};
}

void Table::add(const std::vector<nlohmann::json>& row) {
  rows_.push_back(row);
  rows_.back().insert(rows_.back().end(), constants_.begin(), constants_.end());
}

void Table::add_constant_columns(const std::vector<std::string>& names, const std::vector<nlohmann::json>& values) {
  columns_.insert(columns_.end(), names.begin(), names.end());
  constants_.insert(constants_.end(), values.begin(), values.end());
}

namespace {

// RFC 4180: text with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const nlohmann::json& value) {
  if (!value.is_string()) return value.dump();
  const std::string text = value.get<std::string>();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

}  // namespace

Status Table::write(const std::string& dir, const std::string& stem, const nlohmann::json& env) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  RETURN_ERROR_IF(ec, ErrorCode::kIoError, "cannot create --out-dir '" + dir + "': " + ec.message());
  std::ostringstream csv;
  for (size_t c = 0; c < columns_.size(); ++c) csv << (c ? "," : "") << columns_[c];
  csv << "\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : rows_) {
    nlohmann::json obj;
    for (size_t c = 0; c < row.size() && c < columns_.size(); ++c) {
      csv << (c ? "," : "") << csv_field(row[c]);
      obj[columns_[c]] = row[c];
    }
    csv << "\n";
    rows.push_back(obj);
  }
  RETURN_IF_ERROR(write_text_file(dir + "/" + stem + ".csv", csv.str()));
  return write_text_file(dir + "/" + stem + ".json", nlohmann::json{{"environment", env}, {"rows", rows}}.dump(1));
}

struct Bench::Impl {
  CommonArgs args;
  ExecConfig base;  // batch set per call
  std::shared_ptr<rt::Context> context;
  std::map<std::string, std::unique_ptr<ir::Graph>> graphs;
  std::map<const ir::Graph*, ir::Weights> weights;
  struct Model {
    std::unique_ptr<sched::CostModel> inner;
    std::unique_ptr<sched::StageCache> cache;
  };
  std::map<std::pair<const ir::Graph*, int>, Model> models;
  std::map<std::tuple<const ir::Graph*, int, bool>, Model> bound_models;     // per L2 mode, for the bounds
  std::map<std::pair<const ir::Graph*, int>, std::vector<float>> reference;  // CPU output per batch

  Expected<Model> make_model(const ir::Graph& g, int batch, const std::string& kind) const {
    return make_model(g, batch, kind, args.stage_timing);
  }
  Expected<Model> make_model(const ir::Graph& g, int batch, const std::string& kind,
                             const sched::StageTimingRule& rule) const {
    Model m;
    // Every model of a run shares the run's context, so that the executors they build share its kernels.
    ASSIGN_OR_RETURN(m.inner,
                     engine::make_cost_model(g, kind, base, rule, [this] { return engine::GpuContext(context); }));
    ExecConfig c = base;
    c.batch = batch;
    // One cache per network and batch in this process: keyed as the engine keys its files, so a figure is
    // never reused under another configuration.
    m.cache = std::make_unique<sched::StageCache>(*m.inner, engine::stage_cache_key(*m.inner, c, rule));
    return m;
  }
};

Bench::Bench(std::unique_ptr<Impl> impl, std::string cost_model)
    : impl_(std::move(impl)), cost_model_(std::move(cost_model)) {}
Bench::~Bench() = default;

Expected<std::unique_ptr<Bench>> Bench::create(const CommonArgs& args) {
  auto impl = std::make_unique<Impl>();
  impl->args = args;
  ASSIGN_OR_RETURN(impl->base, make_exec_config(args.precision, args.layout, 1, args.concat_writes));
  RETURN_IF_ERROR(rt::require_gpu());
  ASSIGN_OR_RETURN(impl->context, engine::make_gpu_context(impl->base, args.conv_engine, args.own_kernels,
                                                           args.kernel_cache, args.verbose));
  std::string kind = args.cost_model == "auto" ? "measured" : args.cost_model;
  RETURN_ERROR_IF(kind != "measured" && kind != "analytic", ErrorCode::kInvalidArgument,
                  "--cost-model must be auto, measured or analytic, got '" + args.cost_model + "'");
  return std::unique_ptr<Bench>(new Bench(std::move(impl), kind));
}

ExecConfig Bench::config(int batch) const {
  ExecConfig c = impl_->base;
  c.batch = batch;
  return c;
}

std::vector<nlohmann::json> Bench::config_columns() const {
  return {impl_->base.precision(), layout_name(impl_->base.layout), impl_->args.conv_engine,
          concat_writes_name(impl_->base.concat_writes)};
}

const std::shared_ptr<rt::Context>& Bench::context() const { return impl_->context; }

Expected<const ir::Graph*> Bench::model(const std::string& name) {
  auto it = impl_->graphs.find(name);
  if (it == impl_->graphs.end()) {
    models::ModelOptions mo;
    if (std::filesystem::is_directory(impl_->args.randwire_graphs))
      mo.randwire_graphs_dir = impl_->args.randwire_graphs;
    ASSIGN_OR_RETURN(ir::Graph g, models::build_model(name, mo));
    it = impl_->graphs.emplace(name, std::make_unique<ir::Graph>(std::move(g))).first;
  }
  return it->second.get();
}

const ir::Weights& Bench::weights(const ir::Graph& g) {
  auto it = impl_->weights.find(&g);
  if (it == impl_->weights.end()) it = impl_->weights.emplace(&g, ir::make_weights(g)).first;
  return it->second;
}

Expected<Scheduled> Bench::optimize(const ir::Graph& g, sched::Policy policy, int batch, int r, int s, bool fresh) {
  sched::OptimizeOptions o;
  o.policy = policy;
  o.batch = batch;
  o.r = r, o.s = s;
  o.max_part_size = impl_->args.max_part_size;
  o.dataflow_segment = sched::default_dataflow_segment(cost_model_);
  if (policy == sched::Policy::kOpara && cost_model_ == "measured") {
    rt::ExecutorOptions eo;
    eo.config = config(batch);
    eo.context = impl_->context;
    ASSIGN_OR_RETURN(o.profile, rt::measure_resource_profile(g, weights(g), eo));
  }
  Impl::Model temporary;
  Impl::Model* model = &temporary;
  if (fresh) {
    ASSIGN_OR_RETURN(temporary, impl_->make_model(g, batch, cost_model_));
  } else {
    auto key = std::make_pair(&g, batch);
    auto it = impl_->models.find(key);
    if (it == impl_->models.end()) {
      ASSIGN_OR_RETURN(Impl::Model made, impl_->make_model(g, batch, cost_model_));
      it = impl_->models.emplace(key, std::move(made)).first;
    }
    model = &it->second;
  }
  const size_t before = model->cache->misses();
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(sched::OptimizeResult result, sched::optimize(g, o, *model->cache));
  Scheduled out;
  out.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.schedule = std::move(result.schedule);
  out.stages_costed = static_cast<long long>(model->cache->misses() - before);
  return out;
}

Expected<std::vector<Measured>> Bench::measure(const ir::Graph& g, const std::vector<const sched::Schedule*>& schedules,
                                               int batch, const std::vector<sched::ExecMode>& modes,
                                               const std::vector<int>& prefetch_ahead) {
  RETURN_ERROR_IF(!modes.empty() && modes.size() != schedules.size(), ErrorCode::kInvalidArgument,
                  "measure: one execution mode per schedule");
  RETURN_ERROR_IF(!prefetch_ahead.empty() && prefetch_ahead.size() != schedules.size(), ErrorCode::kInvalidArgument,
                  "measure: one prefetch choice per schedule");
  const auto input = ir::make_input(g.input_shape(), batch, 1);
  std::vector<std::unique_ptr<rt::Executor>> execs;
  std::vector<Measured> out(schedules.size());
  const bool check = impl_->args.check && batch <= 4;  // the CPU reference is slow beyond that
  if (check && !impl_->reference.count({&g, batch})) {
    reference::Tensor in(batch, g.input_shape());
    in.data = input;
    ASSIGN_OR_RETURN(reference::Tensor ref, reference::run(g, weights(g), in));
    impl_->reference[{&g, batch}] = std::move(ref.data);
  }
  for (size_t i = 0; i < schedules.size(); ++i) {
    const sched::ExecMode mode = modes.empty() ? sched::ExecMode::kStaged : modes[i];
    ASSIGN_OR_RETURN(sched::ExecutionPlan plan, sched::compile_plan(g, *schedules[i], mode));
    rt::ExecutorOptions eo;
    eo.config = config(batch);
    eo.context = impl_->context;
    eo.prefetch_ahead = prefetch_ahead.empty() ? 0 : prefetch_ahead[i];
    ASSIGN_OR_RETURN(std::unique_ptr<rt::Executor> exec, rt::Executor::create(g, weights(g), plan, eo));
    if (check) {
      RETURN_IF_ERROR(exec->poison_activations());
      RETURN_IF_ERROR(exec->set_input(input));
      RETURN_IF_ERROR(exec->run());
      ASSIGN_OR_RETURN(std::vector<float> got, exec->output());
      out[i].error = reference::relative_l2_error(got, impl_->reference[{&g, batch}]);
      const double tol = eo.config.tolerance();
      RETURN_ERROR_IF(!(out[i].error < tol), ErrorCode::kRuntimeError,
                      g.name + " schedule " + schedules[i]->meta.policy + " (" + sched::exec_mode_name(mode) +
                          "): GPU output differs from the CPU reference " + "(relative L2 " +
                          std::to_string(out[i].error) + ")");
    }
    RETURN_IF_ERROR(exec->set_input(input));
    out[i].peak_mib = double(exec->activation_bytes()) / 1048576.0;
    out[i].no_reuse_mib = double(exec->activation_bytes_no_reuse()) / 1048576.0;
    out[i].graph_edges = exec->graph_edges();
    execs.push_back(std::move(exec));
  }
  std::vector<std::vector<rt::Timing>> rounds(schedules.size());
  for (int r = 0; r < impl_->args.rounds; ++r)
    for (size_t i = 0; i < execs.size(); ++i) {
      ASSIGN_OR_RETURN(rt::Timing t, execs[i]->time(r == 0 ? impl_->args.warmup : 5, impl_->args.iters));
      rounds[i].push_back(t);
    }
  for (size_t i = 0; i < execs.size(); ++i) {
    std::vector<double> medians, p90s;
    double best = 1e30;
    for (const rt::Timing& t : rounds[i]) {
      medians.push_back(t.median_ms);
      p90s.push_back(t.p90_ms);
      best = std::min(best, t.min_ms);
    }
    std::sort(medians.begin(), medians.end());
    std::sort(p90s.begin(), p90s.end());
    out[i].median_ms = medians[medians.size() / 2];
    out[i].p90_ms = p90s[p90s.size() / 2];
    out[i].min_ms = best;
  }
  return out;
}

Expected<double> Bench::critical_path_ms(const ir::Graph& g, int batch, bool l2_as_in_network) {
  auto key = std::make_tuple(&g, batch, l2_as_in_network);
  auto it = impl_->bound_models.find(key);
  if (it == impl_->bound_models.end()) {
    sched::StageTimingRule rule = impl_->args.stage_timing;
    if (!l2_as_in_network) rule.l2 = sched::L2Timing::kWarm;
    ASSIGN_OR_RETURN(Impl::Model made, impl_->make_model(g, batch, "measured", rule));
    it = impl_->bound_models.emplace(key, std::move(made)).first;
  }
  std::vector<double> finish(g.nodes.size(), 0.0);
  double longest = 0;
  // Node ids follow creation order, so producers come first.
  for (size_t id = 1; id < g.nodes.size(); ++id) {
    double start = 0;
    for (ir::NodeId p : g.producers(ir::NodeId(id))) start = std::max(start, finish[size_t(p)]);
    double ms = 0;
    if (!g.nodes[id].is<ir::IdentityAttrs>()) {
      ASSIGN_OR_RETURN(ms, it->second.cache->stage_latency_ms(
                               g, sched::Stage{sched::StageKind::kConcurrent, {{ir::NodeId(id)}}}, batch));
    }
    finish[id] = start + ms;
    longest = std::max(longest, finish[id]);
  }
  return longest;
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream ss(csv);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Expected<std::vector<int>> parse_positive_list(const std::string& csv, const std::string& flag) {
  std::vector<int> out;
  for (const std::string& item : split_list(csv)) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RETURN_ERROR_IF(used != item.size() || value < 1, ErrorCode::kInvalidArgument,
                    flag + " must list positive integers, got '" + item + "'");
    out.push_back(value);
  }
  RETURN_ERROR_IF(out.empty(), ErrorCode::kInvalidArgument, flag + " is empty");
  return out;
}

int run_main(const std::function<Status()>& body) {
  const Status s = body();
  if (!s) {
    std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace ios::exp
