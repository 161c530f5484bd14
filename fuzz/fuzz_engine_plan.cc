// libFuzzer target: engine plan files. Seeds (fuzz/corpus/engine_plan/): a plan built for the CPU of a
// two-convolution graph (`ios build --graph tiny.json --device cpu --save tiny.plan`), and the same with an
// fp16 NHWC dataflow execution and a kernel choice in its header.
#include <sstream>

#include "engine/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  (void)ios::engine::read_engine_plan(in, "fuzz");
  return 0;
}
