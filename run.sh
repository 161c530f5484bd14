#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the main job on Inception V3.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install_deps.sh
scripts/build.sh
build/bin/ios models
build/bin/ios show --model inception_v3
