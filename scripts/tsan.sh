#!/usr/bin/env bash
# Builds the CPU test binary with ThreadSanitizer into build-tsan/ (the GPU runtime off) and runs the tests of
# the search's threads: part workers, idle workers lent to other parts, progress reports. Any report fails the
# run. Only these suites: the rest of the CPU suite is single-threaded and ASan already covers it.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -g -O1" -DIOS_WITH_CUDA=OFF \
  -DIOS_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-tsan -j "$(nproc)" --target ios_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/bin/ios_tests --gtest_filter='PartSearch*:IdleWorkers*'
