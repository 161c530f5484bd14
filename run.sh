#!/usr/bin/env bash
# Quick start: install what is missing, build the `ios` command, and schedule Inception V3 with IOS; on a
# machine with a GPU (and a build with the runtime) the search measures stages there and the schedule is
# then run and checked against the CPU reference.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install_deps.sh
scripts/build.sh ios
build/bin/ios models
gpu=no
if build/bin/ios run --help >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=yes; fi
if [ "$gpu" = yes ]; then
  echo "GPU found ($(nvidia-smi -L | head -1)): IOS-Both with the measured cost model, then run and checked"
else
  echo "No GPU here (or no GPU runtime in this build): IOS-Both with the analytic cost model, not run"
fi
# --prefetch-weights auto: the measured search prices stages for the graph `ios run` below may pick
build/bin/ios optimize --model inception_v3 --opt ios-both --prefetch-weights auto --out build/inception_v3.ios-both.json
build/bin/ios validate --model inception_v3 --schedule build/inception_v3.ios-both.json
if [ "$gpu" = yes ]; then
  build/bin/ios run --model inception_v3 --schedule build/inception_v3.ios-both.json --exec auto --prefetch-weights auto --check
fi
