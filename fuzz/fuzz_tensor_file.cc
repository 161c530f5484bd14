// libFuzzer target: .npy tensor files (the `--input` reader). Every input ends in an array or an error;
// an array read holds exactly as many floats as its shape says.
#include "common/tensor_file.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<int64_t> shape;
  auto v = ios::decode_npy(std::string(reinterpret_cast<const char*>(data), size), &shape, "fuzz.npy");
  if (!v) return 0;
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  IOS_FUZZ_CHECK(int64_t(v->size()) == count, "the array's size is not its shape's product");
  return 0;
}
