// libFuzzer target: RandWire wiring files (IOS's text format).
#include "models/models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ios::models::parse_wiring_graph(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
