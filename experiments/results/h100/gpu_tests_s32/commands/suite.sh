#!/usr/bin/env bash
# Session 32: the whole GPU test suite on one H100 (cut by its timeout where the network x policy x precision
# matrices run long).   suite.sh OUT
set -uo pipefail
o=$1
mkdir -p "$o"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
echo "${COMMIT:-unknown}" | tee "$o/commit.txt"
timeout 540 build/bin/ios_gpu_tests > "$o/gpu_tests.log" 2>&1
echo "GPU tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' "$o/gpu_tests.log" | tr '\n' ' ') ok $(grep -c '^\[       OK \]' "$o/gpu_tests.log") failed $(grep -c '^\[  FAILED  \]' "$o/gpu_tests.log") skipped $(grep -c '^\[  SKIPPED \]' "$o/gpu_tests.log")"
grep -E "^\[  FAILED|Failure" -A3 "$o/gpu_tests.log" | head -30
tail -3 "$o/gpu_tests.log"
