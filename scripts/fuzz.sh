#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each one: first over the
# kept crash inputs (fuzz/regressions/<target>/, every one must now pass), then for SECONDS on a copy
# of the committed seed corpus (fuzz/corpus/<target>/). ./test.sh runs it for 20 s a target; run it
# longer by hand: scripts/fuzz.sh 3600. A crash leaves its input in build-fuzz/crashes/<target>/
# (copy it into fuzz/regressions/<target>/ once fixed) and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
targets=(graph_json schedule_json stage_cache randwire weights kernel_cache)
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
  if "$bin" "$work" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$crashes/" -print_final_stats=1 >"build-fuzz/$t.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$t.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz_$t: ${seconds}s, $runs inputs, no crash (corpus $(ls "$work" | wc -l) files)"
  else
    echo "fuzz_$t: CRASH, input in $crashes/ (log build-fuzz/$t.log)"; tail -20 "build-fuzz/$t.log"; status=1
  fi
done
exit $status
