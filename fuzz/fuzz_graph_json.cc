// libFuzzer target: graph files. A graph the reader accepts must also serialize, render and plan.
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "fuzz/fuzz_check.h"
#include "ir/json_io.h"
#include "scheduler/memory_plan.h"
#include "scheduler/plan.h"
#include "scheduler/policies.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = ios::parse_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j) return 0;
  auto g = ios::ir::graph_from_json(*j);
  if (!g) return 0;
  (void)ios::ir::graph_to_dot(*g);
  auto again = ios::ir::graph_from_json(ios::ir::graph_to_json(*g));
  IOS_FUZZ_CHECK(again, again.status().to_string());
  auto plan = ios::sched::compile_plan(*g, ios::sched::greedy_schedule(*g, 4));
  IOS_FUZZ_CHECK(plan, plan.status().to_string());
  auto memory = ios::sched::plan_memory(*g, *plan, ios::sched::MemoryOptions{});
  IOS_FUZZ_CHECK(memory, memory.status().to_string());
  return 0;
}
