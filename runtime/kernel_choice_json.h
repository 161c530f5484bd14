// One kernel choice as the kernel cache file writes it; an engine plan file embeds its network's the same
// way. Apart from kernel_cache.h because translation units that include cudnn-frontend (which bundles its
// own nlohmann/json) must not see the system's json headers.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "runtime/kernel_cache.h"

namespace ios::rt {

nlohmann::json kernel_choice_to_json(const KernelChoice& c);
// Checks every field's type and range and names the first that is wrong.
Expected<KernelChoice> kernel_choice_from_json(const nlohmann::json& j);

}  // namespace ios::rt
