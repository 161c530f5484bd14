// libFuzzer target: engine plan files. Seeds (fuzz/corpus/engine_plan/): a plan built for the CPU of a
// two-convolution graph (`ios build --graph tiny.json --device cpu --save tiny.plan`), and the same with an
// fp16 NHWC dataflow execution and a kernel choice in its header, a file of batch buckets holding both
// (the first format: a copy of the weights per plan), and one whose second plan shares the first's weights.
#include <sstream>

#include "engine/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::istringstream one(bytes), several(bytes);
  (void)ios::engine::read_engine_plan(one, "fuzz");
  (void)ios::engine::read_engine_plans(several, "fuzz");
  return 0;
}
