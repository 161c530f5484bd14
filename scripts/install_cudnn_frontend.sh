#!/usr/bin/env bash
# Fetches the header-only cudnn-frontend (pinned) from its PyPI wheel into a build-local prefix,
# build/_deps/cudnn-frontend/include. Only where the CUDA toolkit is present; nothing is committed.
# --no-deps: the wheel's Python dependencies are not needed for C++.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.32.0
prefix=build/_deps/cudnn-frontend
if [ -f "$prefix/include/cudnn_frontend.h" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "no CUDA toolkit: cudnn-frontend not needed"
  exit 0
fi
python=$(command -v python3 || true)
if [ -z "$python" ]; then
  echo "python3 is needed to fetch cudnn-frontend's headers" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m pip download --quiet --no-deps --only-binary=:all: "nvidia-cudnn-frontend==$version" -d "$tmp"
"$python" - "$tmp" "$prefix" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, prefix = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
shutil.rmtree(prefix, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, prefix)
PY
echo "$version" > "$prefix/VERSION"
echo "cudnn-frontend $version headers in $prefix/include"
