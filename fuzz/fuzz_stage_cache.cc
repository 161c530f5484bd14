// libFuzzer target: stage-cache files.
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "scheduler/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = ios::parse_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j) return 0;
  ios::sched::AnalyticCostModel model;
  ios::sched::StageCache cache(model, "k");
  (void)cache.load_json(*j, "fuzz");
  return 0;
}
