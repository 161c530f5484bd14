// Which kernel runs a convolution: our per-channel kernel for a per-channel affine, the legacy API where asked,
// a kernel recorded in the kernel cache (ours, or a cuDNN engine: its compiled plan loaded, or rebuilt), else
// the graph engines tuned, fused with the bias and activation where cuDNN can, and the legacy API where no
// graph engine runs it; then our kernels that run the convolution, timed against cuDNN's pick.
#include <string>

#include "runtime/conv_cudnn.h"

namespace ios::rt {

using namespace conv_detail;

namespace {

// The cuDNN engine tuning picks: the graph engines fused where they run the epilogue, else the convolution
// alone, else the legacy API.
Expected<std::shared_ptr<ConvKernel>> tune_cudnn(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                 void* workspace, const ConvBuildOptions& o) {
  if (o.engine == ConvEngine::kLegacy) return build_legacy(handle, spec, b, workspace, std::nullopt, o);
  auto fused = tune_graph(handle, spec, b, workspace, true, o);
  if (fused) {
    say(o,
        spec.key() + " -> " + (*fused)->choice().name + " (fused, " + std::to_string((*fused)->choice().ms) + " ms)");
    return fused;
  }
  if (needs_epilogue(spec)) {
    say(o, spec.key() + ": no engine runs conv+bias+activation (" + fused.status().message() +
               "); tuning the convolution alone");
    auto alone = tune_graph(handle, spec, b, workspace, false, o);
    if (alone) return alone;
    say(o, spec.key() + ": no graph engine at all (" + alone.status().message() + "); legacy API");
  }
  return build_legacy(handle, spec, b, workspace, std::nullopt, o);
}

// The kernel the cache file (or an engine plan) recorded; nullopt where it no longer builds (tuned again).
Expected<std::optional<std::shared_ptr<ConvKernel>>> from_cache(cudnnHandle_t handle, const ConvSpec& spec,
                                                                const ConvBuffers& b, void* workspace,
                                                                const KernelChoice& cached,
                                                                const std::vector<uint8_t>& cached_plan,
                                                                const ConvBuildOptions& o) {
  using Found = std::optional<std::shared_ptr<ConvKernel>>;
  if (cached.backend == kOwnBackend) {
    auto k = make_own_conv_kernel(spec, cached);
    if (k) return Found(*k);
    say(o, "recorded kernel " + cached.name + " does not run here (" + k.status().message() + "); tuning again");
    return Found();
  }
  if (cached.backend == kLegacyBackend) {
    ASSIGN_OR_RETURN(auto k, build_legacy(handle, spec, b, workspace, cached, o));
    return Found(k);
  }
  if (!cached.output_copied && !cached_plan.empty()) {  // an output-copied engine is precompiled
    auto k = load_compiled(handle, spec, cached, cached_plan);
    if (k) {
      say(o, spec.key() + " <- " + cached.name + " (compiled plan from the kernel cache)");
      return Found(*k);
    }
    say(o, "compiled plan of " + cached.name + " does not load (" + k.status().message() + "); building it");
  }
  auto k = rebuild_recorded(handle, spec, cached, o.workspace_limit);
  if (k) {
    say(o, spec.key() + " <- " + cached.name + " (kernel cache, " + std::to_string(cached.ms) + " ms when tuned)");
    return Found(*k);
  }
  say(o, "recorded engine " + cached.name + " no longer builds (" + k.status().message() + "); tuning again");
  return Found();
}

}  // namespace

Expected<std::shared_ptr<ConvKernel>> build_conv_kernel(cudnnHandle_t handle, const ConvSpec& spec,
                                                        const ConvBuffers& b, void* workspace,
                                                        const std::optional<KernelChoice>& cached,
                                                        const std::vector<uint8_t>& cached_plan,
                                                        const ConvBuildOptions& o) {
  if (is_channel_affine(spec)) return channel_affine_kernel(spec);
  if (cached) {
    ASSIGN_OR_RETURN(auto found, from_cache(handle, spec, b, workspace, *cached, cached_plan, o));
    if (found) return *found;
  }
  Expected<std::shared_ptr<ConvKernel>> picked = tune_cudnn(handle, spec, b, workspace, o);
  if (!o.own_kernels || own_conv_kernels(spec).empty()) return picked;
  return challenge_with_own(handle, spec, b, workspace, std::move(picked), o);
}

}  // namespace ios::rt
