#!/usr/bin/env bash
# Quick start: install what is missing, build, and schedule Inception V3 with IOS.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install_deps.sh
scripts/build.sh
build/bin/ios models
build/bin/ios optimize --model inception_v3 --opt ios-both --out build/inception_v3.ios-both.json
build/bin/ios validate --model inception_v3 --schedule build/inception_v3.ios-both.json
# On a GPU machine (and a build with the runtime), also execute and check the schedule there.
if build/bin/ios run --help >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  build/bin/ios run --model inception_v3 --schedule build/inception_v3.ios-both.json --check
fi
