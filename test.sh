#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (GPU tests skip themselves without a GPU);
# then the installed package with examples/ built against it, the Python package installed by pip in a
# fresh virtual environment and its tests, the same CPU suite under ASan + UBSan, the
# search's threaded tests under TSan, and every file reader's fuzz target for a bounded time.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
scripts/check_install.sh
scripts/python_test.sh
scripts/sanitize.sh
scripts/tsan.sh
scripts/fuzz.sh ci
