// libFuzzer target: weight files, read against a one-convolution graph (2 -> 2 channels, 3x3), small
// enough that the seed (fuzz/corpus/weights/conv.bin) is a complete valid file.
#include <sstream>

#include "ir/builder.h"
#include "ir/weights.h"

namespace {
ios::ir::Graph one_conv() {
  ios::ir::GraphBuilder b("one_conv", {2, 3, 3});
  b.begin_block();
  b.end_block(b.conv(b.input(), ios::ir::Conv(2).kernel(3).pad(1)));
  return *b.build();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ios::ir::Graph graph = one_conv();
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  (void)ios::ir::read_weights(graph, in, "fuzz");
  return 0;
}
