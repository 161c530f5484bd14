// libFuzzer target: ONNX models. The importer must end every input with a model or an error; a model it
// returns must write as JSON (valid UTF-8 names), read back as the same graph, and hold finite weights.
// External data resolves against an empty folder, so no file outside the input is read.
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "frontends/onnx/onnx_import.h"
#include "fuzz_check.h"
#include "ir/json_io.h"

namespace {
const std::string& empty_folder() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / "ios_fuzz_onnx_empty";
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = ios::onnx_import::import_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                                          empty_folder());
  if (!m) return 0;
  const nlohmann::json j = ios::ir::graph_to_json(m->graph);
  const std::string text = j.dump();  // throws (a crash) on a name that is not UTF-8
  auto back = ios::ir::graph_from_json(nlohmann::json::parse(text));
  IOS_FUZZ_CHECK(back, "an imported graph does not read back: " + back.status().to_string());
  IOS_FUZZ_CHECK(back->nodes.size() == m->graph.nodes.size(), "node count changed on the round trip");
  for (const auto& node : m->weights.per_node)
    for (const auto& t : node)
      for (const auto* v : {&t.weight, &t.bias})
        for (float x : *v) IOS_FUZZ_CHECK(std::isfinite(x), "an imported weight is not finite");
  return 0;
}
