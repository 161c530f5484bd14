#include "cli/options.h"

#include "engine/engine.h"

namespace ios::cli {

std::string default_kernel_cache() {
  const std::string path = ios::engine::default_kernel_cache();
  return path.empty() ? "none" : path;  // the flag's spelling of "not persisted"
}

}  // namespace ios::cli
