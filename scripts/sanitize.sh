#!/usr/bin/env bash
# Builds the CPU test suite with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ (the GPU
# runtime off: the sanitizers do not see into CUDA) and runs it. Any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" -DIOS_WITH_CUDA=OFF \
  -DIOS_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j "$(nproc)" --target ios_tests ios_cli_tests ios_onnx_tests ios
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
