#include "cli/run_reference.h"

#include <algorithm>
#include <chrono>

#include "common/tensor_file.h"
#include "reference/reference_executor.h"

namespace ios::cli {

Expected<std::vector<float>> read_run_input(const std::string& input_file, const ir::Graph& g, int batch) {
  const ir::Shape in = g.input_shape();
  if (input_file.empty()) return ir::make_input(in, batch, 1);
  return read_tensor_file(input_file, {batch, in.c, in.h, in.w});
}

Status run_reference(const ir::Graph& g, const ir::Weights& weights, const ReferenceRunOptions& options, FILE* text,
                     nlohmann::json& json) {
  ASSIGN_OR_RETURN(std::vector<float> input, read_run_input(options.input_file, g, options.batch));
  reference::Tensor in(options.batch, g.input_shape());
  in.data = std::move(input);
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(reference::Tensor out, reference::run(g, weights, in));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<int64_t> shape{out.batch, out.shape.c, out.shape.h, out.shape.w};
  // The arg-max of each sample over its C x H x W values: a classifier's predicted class.
  const size_t per_sample = size_t(out.shape.numel());
  std::vector<int64_t> argmax;
  for (int n = 0; n < out.batch; ++n) {
    const auto first = out.data.begin() + std::ptrdiff_t(size_t(n) * per_sample);
    argmax.push_back(std::max_element(first, first + std::ptrdiff_t(per_sample)) - first);
  }
  std::string argmax_text;
  for (int64_t a : argmax) argmax_text += (argmax_text.empty() ? "" : ", ") + std::to_string(a);
  std::fprintf(text,
               "Model: %s | Device: cpu (the reference executor: fp32, unscheduled, for checking, not speed) | "
               "Batchsize: %d | %.2f s\nOutput: %s | arg-max per sample: %s\n",
               g.name.c_str(), options.batch, seconds, shape_text(shape).c_str(), argmax_text.c_str());
  json["device"] = "cpu";
  json["model"] = g.name;
  json["batch"] = options.batch;
  json["seconds"] = seconds;
  json["output_shape"] = shape;
  json["argmax"] = argmax;
  if (!options.output_file.empty()) {
    RETURN_IF_ERROR(write_tensor_file(options.output_file, out.data, shape));
    std::fprintf(text, "wrote %s\n", options.output_file.c_str());
    json["output_file"] = options.output_file;
  }
  return Status::ok();
}

}  // namespace ios::cli
