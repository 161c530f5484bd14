// `ios run --device cpu`: a network run by the CPU reference executor (reference/), so that a user without
// a GPU can check an import or produce expected outputs. It is the reference (fp32, direct loops, slow),
// not a CPU backend.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "ir/graph.h"
#include "ir/weights.h"

namespace ios::cli {

struct ReferenceRunOptions {
  int batch = 1;
  std::string input_file;   // .npy or raw float32; empty: the seeded input of ir/weights.h
  std::string output_file;  // .npy or raw float32; empty: not written
};

// Runs the graph once and reports the output's shape, its arg-max per sample and the time taken, as text
// to `text` and as fields of `json`.
Status run_reference(const ir::Graph& g, const ir::Weights& weights, const ReferenceRunOptions& options, FILE* text,
                     nlohmann::json& json);

// The batch a run feeds: the input file (its shape must be (batch, C, H, W)), else the seeded input.
Expected<std::vector<float>> read_run_input(const std::string& input_file, const ir::Graph& g, int batch);

}  // namespace ios::cli
