// libFuzzer target: schedule files for IOS's sample network. What validation accepts must compile to a
// plan and get a memory plan: `ios validate` accepting a schedule means `ios run` can run it.
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "fuzz/fuzz_check.h"
#include "models/models.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ios::ir::Graph graph = *ios::models::build_model("ios_sample");
  auto j = ios::parse_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j) return 0;
  auto s = ios::sched::schedule_from_json(graph, *j);
  if (!s) return 0;
  auto plan = ios::sched::compile_plan(graph, *s);
  IOS_FUZZ_CHECK(plan, plan.status().to_string());
  auto memory = ios::sched::plan_memory(graph, *plan, ios::sched::MemoryOptions{});
  IOS_FUZZ_CHECK(memory, memory.status().to_string());
  return 0;
}
