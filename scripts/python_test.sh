#!/usr/bin/env bash
# The Python package as a user installs it: a fresh virtual environment (build/python-venv, Debian's
# python3), `pip install .` from the repository, then its tests (python/tests) with pytest. Without a GPU
# the engines run on the CPU reference executor; the GPU tests skip themselves. examples/serve_triton.py is
# tested serving over loopback.
# IOS_PYTHON_CUDA_ARCHITECTURES (default 90): the GPUs the test build compiles kernels for.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$PWD/build/python-venv"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The build requirements (pyproject.toml's, pinned) in the environment itself, so that build/python keeps a
# valid CMake build between runs and a second install recompiles only what changed.
mapfile -t requires < <("$venv/bin/python" -c \
  'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
# nvidia-pytriton: Triton Inference Server for the serving example's test (it pins numpy below 2).
"$venv/bin/python" -m pip install --quiet numpy pytest onnx nvidia-pytriton==0.7.0 "${requires[@]}"
start=$(date +%s)
"$venv/bin/python" -m pip install --quiet --no-build-isolation . -Cbuild-dir=build/python \
  -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="${IOS_PYTHON_CUDA_ARCHITECTURES:-90}"
echo "pip install . took $(($(date +%s) - start)) s"
# From another folder, so that `import ios` is the installed package.
cd build
"$venv/bin/python" -c "import ios; print('ios', ios.__version__, '| GPU runtime:', ios.has_gpu_runtime(), '| GPU:', ios.gpu_present())"
"$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests
