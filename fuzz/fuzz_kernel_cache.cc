// libFuzzer target: kernel-cache files (a corrupt cache is ignored with a reason, never a crash).
#include "runtime/kernel_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ios::rt::KernelCache cache("env");
  (void)cache.load_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
