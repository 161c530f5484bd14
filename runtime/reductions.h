// Reductions that need every thread of the GPU to be fast at batch 1: global pooling and global response
// normalization (a squeeze-excite gate pools 112 x 112 pixels of 32 channels: one thread per channel would
// run 32 threads, so blocks split the pixels too) and layer normalization over the channels of each pixel
// in channels-last layout (one warp per pixel, reading along the channels).
#pragma once

#include <cuda_runtime.h>

#include "common/element_types.h"
#include "runtime/kernels.h"

namespace ios::rt {

// The float scratch launch_global_pool needs for `e` (its input's extent): 0 when one pass suffices.
size_t global_pool_scratch_bytes(const Extent& e);

// out[b, c] = the mean (or the maximum) of in[b, c, :] over e.hw pixels. Blocks split the pixels where the
// channels alone would leave the GPU idle; their partial results go to `scratch`
// (global_pool_scratch_bytes(e), float-aligned), which a second kernel reduces.
void launch_global_pool(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, bool is_max,
                        void* scratch, cudaStream_t stream);

// The float scratch launch_response_norm needs for `e`.
size_t response_norm_scratch_bytes(const Extent& e);

// Global response normalization (ir/ops/response_norm.h) in three kernels: each channel's sum of squares
// (pixels split over blocks as for global pooling), each sample's gains, then the element-wise scale.
// `scale` and `shift` hold e.channels values in the storage type; `scratch` holds
// response_norm_scratch_bytes(e), float-aligned.
void launch_response_norm(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                          const void* shift, float eps, void* scratch, cudaStream_t stream);

// Layer normalization over each pixel's channels when they are contiguous (e.channels_inner): a warp per
// pixel. `scale` and `shift` hold e.channels values in the storage type.
void launch_channel_norm_rows(DataType t, const DevTensor& in, const DevTensor& out, const Extent& e, const void* scale,
                              const void* shift, float eps, cudaStream_t stream);

}  // namespace ios::rt
