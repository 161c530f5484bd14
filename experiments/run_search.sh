#!/usr/bin/env bash
# Measured-search runs (issue #10), each profile sized for one 10-minute device call. From the
# repository root on the GPU machine, binaries in build/bin:
#   run_search.sh OUT small        SqueezeNet, GoogLeNet, Inception V3: IOS-Both searched with IOS's 2/6/6
#                                  stage timing and with the adaptive rule (Inception twice with 2/6/6), the
#                                  schedules compared, then run ABAB end to end
#   run_search.sh OUT rule DIR     the three searched with the adaptive rule now in force, run ABAB beside
#                                  DIR's schedules from IOS's 2/6/6 timing (an earlier `small` run)
#   run_search.sh OUT big NET      one measured IOS-Both search of NET (nasnet | randwire), then the same
#                                  search again from its stage cache
#   run_search.sh OUT devices NET LIST   the search of NET with --devices 0, then --devices LIST (same machine)
#   run_search.sh OUT memory NET EARLIER  NET searched under the default memory budget, again from its stage
#                                  cache, both schedules' activations beside the sequential schedule's and the
#                                  schedule EARLIER's (searched without a budget), then EARLIER and the new one
#                                  run ABAB end to end
#   run_search.sh OUT batch NET EARLIER [SIZES]  NET searched with each --stage-batch in SIZES (default
#                                  "1 8"), the last again from its stage cache, then EARLIER (an earlier
#                                  session's schedule) and the last search's run ABAB end to end; the last
#                                  stage cache is kept (offline replays of the search)
#   run_search.sh OUT rules NET "RULE..." [EARLIER...]  NET searched with each --stage-timing RULE in turn
#                                  (the first search also fills the kernel cache), then EARLIER and every
#                                  new schedule run ABAB end to end
#   run_search.sh OUT workers NET "COUNTS" [EARLIER...]  NET searched with each --workers-per-gpu count in
#                                  turn, then EARLIER and every new schedule run ABAB end to end
#   run_search.sh OUT variants NET "FLAGS|FLAGS..." [EARLIER...]  NET searched once per flag set (e.g.
#                                  "--screen-margin 0|--screen-margin 0.1"), then EARLIER and every new
#                                  schedule run ABAB end to end
# SEARCH_FLAGS are added to every search (e.g. "--stage-timing fast").
# Results are also packed into OUT.tar.gz (the device tool brings back a few files only).
set -uo pipefail
out=${1:-experiments/results/latest}
profile=${2:-small}
mkdir -p "$out"
export IOS_KERNEL_CACHE="$out/kernel_cache.json"
[ -f kernel_cache.json ] && [ ! -f "$IOS_KERNEL_CACHE" ] && cp kernel_cache.json "$IOS_KERNEL_CACHE"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee -a "$out/gpu.txt"
graphs=${RANDWIRE_GRAPHS:-../shared/ios_randwire_graphs}  # IOS graph files (copied beside the binaries for the GPU machine)
search() {  # NAME NET EXTRA-FLAGS...
  local name=$1 net=$2
  shift 2
  timeout "${SEARCH_TIMEOUT:-590}" build/bin/ios optimize --model "$net" --randwire-graphs "$graphs" --opt ios-both --cost-model measured \
    --max-part-size 50 --out "$out/$name.json" ${SEARCH_FLAGS:-} "$@" 2>&1 | tr '\r' '\n' | tee "$out/$name.log" |
    grep -E "Model:|Parts:|Stage timing|Fidelity|error" | cut -c1-400
}
abab() {  # NET SCHEDULE...: each schedule run end to end, two interleaved rounds
  local net=$1
  shift
  for round in 1 2; do
    for schedule in "$@"; do
      timeout 120 build/bin/ios run --model "$net" --randwire-graphs "$graphs" --schedule "$schedule" --iters 1000 2>&1 |
        tee -a "$out/abab.log" | grep -E "^Latency" | sed "s|^|$net $(basename "$schedule") round $round: |"
    done
  done
}
case "$profile" in
  small)
    for net in squeezenet googlenet inception_v3; do
      search "${net}_ios" "$net" --stage-timing ios
      search "${net}_adaptive" "$net"
    done
    search inception_v3_ios_again inception_v3 --stage-timing ios
    for net in squeezenet googlenet inception_v3; do
      for round in 1 2; do
        for rule in ios adaptive; do
          timeout 60 build/bin/ios run --model "$net" --schedule "$out/${net}_${rule}.json" --iters 1000 2>&1 |
            tee -a "$out/abab.log" | grep -E "^Latency" | sed "s/^/$net $rule round $round: /"
        done
      done
    done ;;
  rule)
    earlier=${3:?DIR of an earlier small run}
    for net in squeezenet googlenet inception_v3; do
      search "${net}_adaptive" "$net"
      for round in 1 2; do
        for schedule in "$earlier/${net}_ios.json" "$out/${net}_adaptive.json"; do
          timeout 60 build/bin/ios run --model "$net" --schedule "$schedule" --iters 1000 2>&1 |
            tee -a "$out/abab.log" | grep -E "^Latency" | sed "s|^|$net $(basename "$schedule") round $round: |"
        done
      done
    done ;;
  big)
    net=${3:-nasnet}
    search "${net}_adaptive" "$net" --stage-cache "$out/${net}_stages.json"
    search "${net}_cached" "$net" --stage-cache "$out/${net}_stages.json" --no-measure
    rm -f "$out/${net}_stages.json" ;;
  memory)
    net=${3:-nasnet} earlier=${4:?schedule searched without a memory budget}
    search "${net}_budget" "$net" --stage-cache "$out/${net}_stages.json"
    search "${net}_cached" "$net" --stage-cache "$out/${net}_stages.json" --no-measure
    for schedule in "$earlier" "$out/${net}_budget.json"; do
      build/bin/ios validate --model "$net" --randwire-graphs "$graphs" --schedule "$schedule" 2>&1 | tee -a "$out/memory.log"
    done
    abab "$net" "$earlier" "$out/${net}_budget.json"
    rm -f "$out/${net}_stages.json" ;;
  batch)
    net=${3:-nasnet} earlier=${4:?an earlier schedule of NET} sizes=${5:-1 8}
    for size in $sizes; do
      search "${net}_batch${size}" "$net" --stage-batch "$size" --stage-cache "$out/${net}_stages_${size}.json"
      last=$size
    done
    search "${net}_cached" "$net" --stage-batch "$last" --stage-cache "$out/${net}_stages_${last}.json" --no-measure
    abab "$net" "$earlier" "$out/${net}_batch${last}.json"
    for size in $sizes; do [ "$size" = "$last" ] || rm -f "$out/${net}_stages_${size}.json"; done ;;
  rules)
    net=${3:-nasnet} rules=${4:?stage-timing rules} i=0 schedules=("${@:5}")
    for rule in $rules; do
      i=$((i + 1))
      search "${net}_rule${i}" "$net" --stage-timing "$rule"
      schedules+=("$out/${net}_rule${i}.json")
    done
    abab "$net" "${schedules[@]}" ;;
  workers)
    net=${3:-nasnet} counts=${4:?worker counts} schedules=("${@:5}")
    for count in $counts; do
      search "${net}_workers${count}" "$net" --workers-per-gpu "$count"
      schedules+=("$out/${net}_workers${count}.json")
    done
    abab "$net" "${schedules[@]}" ;;
  variants)
    net=${3:-nasnet} schedules=("${@:5}") i=0
    IFS='|' read -ra sets <<< "${4:?flag sets}"
    for flags in "${sets[@]}"; do
      i=$((i + 1))
      echo "variant$i: $flags" | tee -a "$out/variants.txt"
      # shellcheck disable=SC2086  # each set is a list of flags
      search "${net}_variant$i" "$net" $flags
      schedules+=("$out/${net}_variant$i.json")
    done
    abab "$net" "${schedules[@]}" ;;
  devices)
    net=${3:-nasnet} list=${4:-all}
    search "${net}_devices_0" "$net" --devices 0 --no-measure
    search "${net}_devices_${list//,/_}" "$net" --devices "$list" --no-measure ;;
esac
tar czf "$out.tar.gz" --exclude=kernel_cache.json -C "$(dirname "$out")" "$(basename "$out")"
