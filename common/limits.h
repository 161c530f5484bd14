// The documented limits of what the project accepts. Readers and validation enforce them, so that every
// shape, FLOP count, byte count and memory offset computed later fits in 64-bit arithmetic: a value
// past a limit is an error that names the limit, never a wrap-around.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ios::limits {

inline constexpr int64_t kMaxChannels = int64_t{1} << 20;  // channels of a tensor, out_channels, out_features
inline constexpr int64_t kMaxSpatial = int64_t{1} << 16;   // height or width of a tensor
inline constexpr int64_t kMaxWindow = 1024;                // kernel, stride, dilation
inline constexpr int64_t kMaxPadding = 1024;
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;  // one tensor of one sample
inline constexpr int64_t kMaxNodeParameters = int64_t{1} << 31;  // weights + biases of one node
inline constexpr int64_t kMaxGraphElements = int64_t{1} << 40;   // all node outputs of one sample together
// The memory plan compares every pair of buffers (which may share memory is a partial order over
// streams), so its time and memory grow with the square of the nodes: at this limit a chain is
// scheduled and planned in about 7 s and 300 MB on one core.
inline constexpr int64_t kMaxNodes = int64_t{1} << 14;
inline constexpr int64_t kMaxBatch = 65536;
inline constexpr int64_t kMaxStreams = 1024;    // streams of a stream-level schedule (Opara: up to one per op)
inline constexpr int64_t kMaxGroupOps = 64;     // IOS's r
inline constexpr int64_t kMaxStageGroups = 64;  // IOS's s
inline constexpr int64_t kMaxPartSize = 128;
inline constexpr double kMaxLatencyMs = 1e7;  // a stage or schedule latency beyond this is not a measurement

// Files: a reader never takes more than this (so an endless device such as /dev/zero ends with an error),
// and JSON documents never nest deeper, so no recursive copy, dump or destruction can exhaust the stack.
inline constexpr size_t kMaxFileBytes = size_t{256} << 20;
inline constexpr int kMaxJsonDepth = 64;

}  // namespace ios::limits
