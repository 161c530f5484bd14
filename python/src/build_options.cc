// `ios.build`'s keyword options as engine::BuildOptions, with the CLI's spellings and checks.
#include <functional>
#include <map>

#include "binding.h"
#include "engine/components.h"
#include "scheduler/policies.h"
#include "scheduler/stage_timing.h"

namespace ios::python {

namespace {

template <typename T>
T option_value(const std::string& key, nb::handle value, const char* type_name) {
  T out;
  if (!nb::try_cast(value, out, /*convert=*/false))
    throw nb::type_error(("build option '" + key + "' must be " + type_name + ", got " +
                          nb::cast<std::string>(nb::str(value.type().attr("__name__"))))
                             .c_str());
  return out;
}

std::string text(const std::string& key, nb::handle v) { return option_value<std::string>(key, v, "a str"); }
bool flag(const std::string& key, nb::handle v) { return option_value<bool>(key, v, "a bool"); }
int64_t integer(const std::string& key, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) throw nb::type_error(("build option '" + key + "' must be an int").c_str());
  return option_value<int64_t>(key, v, "an int");
}
int bounded(const std::string& key, nb::handle v, int lo, int hi) {
  const int64_t n = integer(key, v);
  if (n < lo || n > hi)
    throw Error("build option '" + key + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                std::to_string(n));
  return int(n);
}
double real(const std::string& key, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) throw nb::type_error(("build option '" + key + "' must be a number").c_str());
  double out;
  if (!nb::try_cast(v, out, /*convert=*/true))
    throw nb::type_error(("build option '" + key + "' must be a number").c_str());
  return out;
}

template <typename T>
T parsed(const std::string& key, Expected<T> e) {
  if (!e.has_value()) throw Error(e.status().with_context("build option '" + key + "'"));
  return std::move(e).value();
}

using Setter = std::function<void(engine::BuildOptions&, const std::string&, nb::handle)>;

// One entry per option; the prefetch options are set together afterwards (see build_options).
const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"device", [](auto& o, auto& k, auto v) { o.device = parsed(k, engine::parse_device(text(k, v))); }},
      {"precision", [](auto& o, auto& k, auto v) { o.precision = text(k, v); }},
      {"layout", [](auto& o, auto& k, auto v) { o.layout = text(k, v); }},
      {"policy", [](auto& o, auto& k, auto v) { o.search.policy = parsed(k, sched::parse_policy(text(k, v))); }},
      {"r", [](auto& o, auto& k, auto v) { o.search.r = bounded(k, v, 1, 64); }},
      {"s", [](auto& o, auto& k, auto v) { o.search.s = bounded(k, v, 1, 64); }},
      {"batch", [](auto& o, auto& k, auto v) { o.search.batch = bounded(k, v, 1, 65536); }},
      {"max_part_size", [](auto& o, auto& k, auto v) { o.search.max_part_size = bounded(k, v, 1, 128); }},
      {"search_budget",
       [](auto& o, auto& k, auto v) {
         const int64_t n = integer(k, v);
         if (n < 1) throw Error("build option 'search_budget' must be at least 1");
         o.search.max_transitions = n;
       }},
      {"memory_budget", [](auto& o, auto& k, auto v) { o.search.memory_budget = real(k, v); }},
      {"cost_model", [](auto& o, auto& k, auto v) { o.cost_model = text(k, v); }},
      {"stage_timing",
       [](auto& o, auto& k, auto v) { o.timing_rule = parsed(k, sched::parse_stage_timing(text(k, v))); }},
      {"exec", [](auto& o, auto& k, auto v) { o.exec_modes = parsed(k, engine::parse_exec_modes(text(k, v))); }},
      {"concat_writes",
       [](auto& o, auto& k, auto v) { o.concat_writes = parsed(k, engine::parse_concat_writes_variants(text(k, v))); }},
      {"cuda_graph", [](auto& o, auto& k, auto v) { o.cuda_graph = flag(k, v); }},
      {"fused_sums", [](auto& o, auto& k, auto v) { o.fused_sums = flag(k, v); }},
      {"shared_concats", [](auto& o, auto& k, auto v) { o.shared_concats = flag(k, v); }},
      {"conv_engine", [](auto& o, auto& k, auto v) { o.conv_engine = text(k, v); }},
      {"own_kernels", [](auto& o, auto& k, auto v) { o.own_kernels = flag(k, v); }},
      {"kernel_cache",
       [](auto& o, auto& k, auto v) {
         const std::string path = text(k, v);
         o.kernel_cache = path == "none" ? "" : path;
       }},
      {"verbose", [](auto& o, auto& k, auto v) { o.verbose = flag(k, v); }},
      {"stage_cache", [](auto& o, auto& k, auto v) { o.resources.stage_cache = text(k, v); }},
      {"devices", [](auto& o, auto& k, auto v) { o.resources.devices = text(k, v); }},
      {"workers_per_gpu", [](auto& o, auto& k, auto v) { o.resources.workers_per_gpu = bounded(k, v, 1, 16); }},
  };
  return table;
}

// prefetch_weights: "off" | "on" | "auto" (both built and timed); prefetch_ahead: stages ahead when on.
void set_prefetch(engine::BuildOptions& o, const nb::dict& options) {
  std::string mode = "off";
  int ahead = 1;
  if (options.contains("prefetch_weights")) mode = text("prefetch_weights", options["prefetch_weights"]);
  if (options.contains("prefetch_ahead")) ahead = bounded("prefetch_ahead", options["prefetch_ahead"], 1, 99);
  o.prefetch_aheads = parsed("prefetch_weights", engine::parse_prefetch_aheads(mode, ahead));
  if (mode != "off" && !o.cuda_graph)
    throw Error("build option 'prefetch_weights' adds nodes to the CUDA graph; it needs cuda_graph=True");
  o.timing_rule.prefetch_ahead = o.prefetch_aheads.back();  // the search may price stages for prefetching
}

}  // namespace

engine::BuildOptions build_options(const nb::dict& options) {
  engine::BuildOptions o;
  o.device = engine::gpu_present() ? engine::Device::kGpu : engine::Device::kCpu;
  o.kernel_cache = engine::default_kernel_cache();
  for (auto [key_object, value] : options) {
    const std::string key = nb::cast<std::string>(key_object);
    if (key == "prefetch_weights" || key == "prefetch_ahead" || value.is_none()) continue;
    auto it = setters().find(key);
    if (it == setters().end()) throw Error("unknown build option '" + key + "'");
    it->second(o, key, value);
  }
  set_prefetch(o, options);
  return o;
}

}  // namespace ios::python
