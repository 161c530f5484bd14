#!/usr/bin/env bash
# Installs the build (build/ must exist) into build/install and builds examples/ against the installed
# package alone, then runs the examples: what a user of `find_package(IOSScheduler)` does.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/build/install"
rm -rf "$prefix" build/examples-installed
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples -B build/examples-installed -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build/examples-installed -j "$(nproc)"
build/examples-installed/dsl_schedule
build/bin/ios export --model squeezenet --out build/examples-installed/squeezenet.json >/dev/null
build/examples-installed/run_graph_file build/examples-installed/squeezenet.json
# An engine built and saved by one process, loaded and run by a second: the same output bits.
build/examples-installed/engine_save_load build build/examples-installed/squeezenet.json build/examples-installed/squeezenet.plan
build/examples-installed/engine_save_load run build/examples-installed/squeezenet.plan
echo "installed package: headers $(find "$prefix/include/ios" -name '*.h' | wc -l), libraries $(ls "$prefix"/lib*/libios_*.a | wc -l); examples built against it and ran"
