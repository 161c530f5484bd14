#include "cli/options.h"

namespace ios::cli {

std::string default_kernel_cache() {
#ifdef IOS_WITH_RUNTIME
  return ios::rt::default_kernel_cache_path();
#else
  return "none";
#endif
}

}  // namespace ios::cli
