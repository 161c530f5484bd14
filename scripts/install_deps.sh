#!/usr/bin/env bash
# Installs the Debian packages the build needs, only those missing. Needs root (or sudo) when it installs.
set -euo pipefail
packages=(cmake g++ make libeigen3-dev libboost-graph-dev nlohmann-json3-dev libcli11-dev libgtest-dev
          libgmock-dev libbenchmark-dev clang libclang-rt-14-dev libonnx-dev libprotobuf-dev
          python3-dev python3-venv python3-pip ninja-build)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
"$(dirname "$0")/install_cudnn_frontend.sh"
