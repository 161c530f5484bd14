#!/usr/bin/env bash
# Session 39: the SM clock during the calibration pass and the search's passes, read off the lead-in spins
# (IOS_SPIN_CLOCK=1: each spin's elapsed time over its length at the top clock, per pass) and nvidia-smi every
# 10 ms; with IOS_DUMP_CALIBRATION=1 (the calibration's and the search's figures per op). Inception V3 tf32.
# spin_clock.sh OUT
set -uo pipefail
o=$1; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv | tee "$o/gpu.txt"
k=$(mktemp -d)/kc.json
timeout 200 build/bin/ios optimize --model inception_v3 --opt sequential --precision tf32 --cost-model measured \
  --kernel-cache "$k" > /dev/null 2>&1
for pol in sequential ios-both sequential ios-both; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 10 > "$o/smi_$pol.$RANDOM.csv" &
  smi=$!
  date +%H:%M:%S.%N > "$o/start_$pol.txt"
  IOS_SPIN_CLOCK=1 IOS_DUMP_CALIBRATION=1 timeout 200 build/bin/ios optimize --model inception_v3 --opt $pol \
    --precision tf32 --cost-model measured --kernel-cache "$k" > "$o/iv3_tf32_$pol.log" 2>&1
  echo "$pol rc $?: $(grep -oE 'cold share [0-9]+ %: [^)]*|measured / predicted [0-9.]+' "$o/iv3_tf32_$pol.log" | tr '\n' ' ')"
  kill $smi
  grep "^SPIN" "$o/iv3_tf32_$pol.log" | head -3; grep "^SPIN" "$o/iv3_tf32_$pol.log" | awk '{print $NF, $(NF-2), $(NF-4)}' | sort -n | awk '{a[NR]=$0} END {print "passes", NR, "max-ratio median row:", a[int(NR/2)+1]}'
done
