// Which kernel runs a convolution: our per-channel kernel for a per-channel affine, the legacy API where asked,
// an engine recorded in the kernel cache (its compiled plan loaded, or rebuilt), else the graph engines tuned,
// fused with the bias and activation where cuDNN can, and the legacy API where no graph engine runs it.
#include <string>

#include "runtime/conv_cudnn.h"

namespace ios::rt {

using namespace conv_detail;

Expected<std::shared_ptr<ConvKernel>> build_conv_kernel(cudnnHandle_t handle, const ConvSpec& spec,
                                                        const ConvBuffers& b, void* workspace,
                                                        const std::optional<KernelChoice>& cached,
                                                        const std::vector<uint8_t>& cached_plan,
                                                        const ConvBuildOptions& o) {
  if (is_channel_affine(spec)) return channel_affine_kernel(spec);
  if (o.engine == ConvEngine::kLegacy) return build_legacy(handle, spec, b, workspace, cached, o);
  if (cached && !cached->output_copied && !cached_plan.empty()) {  // an output-copied engine is precompiled
    auto k = load_compiled(handle, spec, *cached, cached_plan);
    if (k) {
      say(o, spec.key() + " <- " + cached->name + " (compiled plan from the kernel cache)");
      return k;
    }
    say(o, "compiled plan of " + cached->name + " does not load (" + k.status().message() + "); building it");
  }
  if (cached && (cached->backend == kGraphBackend || cached->backend == kExploredBackend)) {
    auto k = rebuild_recorded(handle, spec, *cached, o.workspace_limit);
    if (k) {
      say(o, spec.key() + " <- " + cached->name + " (kernel cache, " + std::to_string(cached->ms) + " ms when tuned)");
      return k;
    }
    say(o, "recorded engine " + cached->name + " no longer builds (" + k.status().message() + "); tuning again");
  } else if (cached && cached->backend == kLegacyBackend) {
    return build_legacy(handle, spec, b, workspace, cached, o);
  }
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

}  // namespace ios::rt
