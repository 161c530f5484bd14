#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each one: first over the
# kept crash inputs (fuzz/regressions/<target>/, every one must now pass), then on a copy of the
# committed seed corpus (fuzz/corpus/<target>/):
#   scripts/fuzz.sh ci        what ./test.sh runs: a fixed seed and a fixed number of inputs per target
#                             (about 20 s each); exploration still varies a little between runs
#                             (coverage feedback is not fully reproducible), so a new finding can surface
#   scripts/fuzz.sh SECONDS   exploration: a random seed for SECONDS per target (e.g. 3600)
# A crash leaves its input in build-fuzz/crashes/<target>/ (copy it into fuzz/regressions/<target>/
# once fixed) and fails the script. The ONNX seeds are the models the importer tests build:
#   IOS_ONNX_SEED_DIR=fuzz/corpus/onnx build/bin/ios_onnx_tests
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-ci}"
targets=(graph_json schedule_json stage_cache randwire weights kernel_cache onnx tensor_file engine_plan)
declare -A ci_runs=([graph_json]=100000 [schedule_json]=100000 [stage_cache]=100000 [randwire]=1000000
                    [weights]=1000000 [kernel_cache]=200000 [onnx]=30000 [tensor_file]=1000000
                    [engine_plan]=100000)
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_FLAGS="$flags" -DIOS_WITH_CUDA=OFF -DIOS_BUILD_TESTS=OFF -DIOS_BUILD_BENCHMARKS=OFF \
  -DIOS_BUILD_FUZZERS=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
status=0
for t in "${targets[@]}"; do
  bin="build-fuzz/bin/fuzz_$t"
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    "$bin" fuzz/regressions/"$t"/* >"build-fuzz/$t.regressions.log" 2>&1 ||
      { echo "fuzz_$t: a kept crash input fails again (build-fuzz/$t.regressions.log)"; status=1; }
  fi
  work="build-fuzz/corpus/$t" crashes="build-fuzz/crashes/$t"
  mkdir -p "$work" "$crashes"
  cp -n fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  if [ "$mode" = ci ]; then budget=(-seed=1 -runs="${ci_runs[$t]}"); else budget=(-max_total_time="$mode"); fi
  start=$SECONDS
  if "$bin" "$work" "${budget[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$crashes/" -print_final_stats=1 >"build-fuzz/$t.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$t.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz_$t: $((SECONDS - start)) s, $runs inputs, no crash (corpus $(ls "$work" | wc -l) files)"
  else
    echo "fuzz_$t: CRASH, input in $crashes/ (log build-fuzz/$t.log)"; tail -20 "build-fuzz/$t.log"; status=1
  fi
done
exit $status
