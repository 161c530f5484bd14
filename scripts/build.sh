#!/usr/bin/env bash
# Configures and builds into build/ (binaries in build/bin/): the given targets, or everything.
# Extra configure flags come from IOS_CMAKE_ARGS, e.g. IOS_CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${IOS_CMAKE_ARGS:-}
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$(nproc)" "${targets[@]}"
