#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds offload_rt with its
# CUDA backend, links each compiled step (build-step-objects.sh) with
# driver.c, runs it on the CUDA backend, and checks that the offloaded steps
# (synchronous copies, the scheduled start/wait form, and copy groups) print the same
# values as the plain one. For the step lowered with buffer deallocation
# (step_peak_*) it also checks that each offloaded step's device peak (the
# runtime's count of the device memory the step allocated) is lower, and
# that no device memory is left in use at the end.
#   run-on-gpu.sh OBJ_DIR LOG_DIR
# (GPU_TEST_BACKEND=sim runs the same checks on the host-simulation backend.)
set -euo pipefail
obj=${1:?usage: run-on-gpu.sh OBJ_DIR LOG_DIR}
log=${2:?usage: run-on-gpu.sh OBJ_DIR LOG_DIR}
mkdir -p "$log"
cmake -S lib/Runtime -B /tmp/offload-rt -G Ninja -DCMAKE_BUILD_TYPE=Release > "$log/cmake.log"
ninja -C /tmp/offload-rt offload_rt > "$log/ninja.log"
status=0
run() {  # run NAME: links and runs $obj/NAME.o, output in $log/NAME.{out,err}
  cc -O1 -Iinclude "$obj/driver.c" "$obj/$1.o" \
     -L/tmp/offload-rt -loffload_rt -Wl,-rpath,/tmp/offload-rt -lm -o "/tmp/$1"
  OFFLOAD_RT_BACKEND=${GPU_TEST_BACKEND:-cuda} OFFLOAD_RT_HOST_ACCESSIBLE_DEVICE=1 \
    "/tmp/$1" > "$log/$1.out" 2> "$log/$1.err"
  cat "$log/$1.err"
}
values() { grep -E '^(rank|\s*\[)' "$log/$1.out"; }
peak() {  # the device peak the driver's final summary reports, in bytes
  grep -o 'device memory through offload_rt: .*(\([0-9]*\) bytes)' "$log/$1.err" |
    tail -1 | sed 's/.*(\([0-9]*\) bytes)/\1/'
}
inuse() {  # the device bytes the driver's final summary reports in use
  grep -o 'device memory through offload_rt: [^,]* in use' "$log/$1.err" |
    tail -1 | sed 's/device memory through offload_rt: \(.*\) in use/\1/'
}
for pair in step step_peak; do
  run "${pair}_plain"
  for variant in offloaded scheduled; do
    run "${pair}_$variant"
    if diff <(values "${pair}_plain") <(values "${pair}_$variant") > "$log/${pair}_$variant.diff"; then
      echo "${pair}_$variant: same values as without offloading ($(values "${pair}_plain" | wc -l) lines)"
    else
      echo "${pair}_$variant: FAIL: the values differ (see $log/${pair}_$variant.diff)"; status=1
    fi
  done
done
plain=$(peak step_peak_plain)
for variant in offloaded scheduled; do
  offloaded=$(peak "step_peak_$variant") left=$(inuse "step_peak_$variant")
  echo "step_peak_$variant: device peak $plain bytes without offloading, $offloaded bytes with; $left in use at the end"
  if [ -n "$plain" ] && [ -n "$offloaded" ] && [ "$offloaded" -lt "$plain" ]; then
    echo "step_peak_$variant: offloading lowers the device peak by $((plain - offloaded)) bytes"
  else
    echo "step_peak_$variant: FAIL: the offloaded step's device peak is not lower"; status=1
  fi
  if [ "$left" != "0 B" ]; then
    echo "step_peak_$variant: FAIL: device memory left in use"; status=1
  fi
done
# Copy groups: the same values, both saved values through the group calls,
# nothing left in use.
run step_group_plain
run step_group_grouped
if diff <(values step_group_plain) <(values step_group_grouped) > "$log/step_group.diff"; then
  echo "step_group_grouped: same values as without offloading ($(values step_group_plain | wc -l) lines)"
else
  echo "step_group_grouped: FAIL: the values differ (see $log/step_group.diff)"; status=1
fi
left=$(inuse step_group_grouped)
echo "step_group_grouped: copies each way:$(grep -E '^ *copies ' "$log/step_group_grouped.err" | tail -1 | tr -s ' ' | cut -d' ' -f3-); $left in use at the end"
[ "$left" = "0 B" ] || { echo "step_group_grouped: FAIL: device memory left in use"; status=1; }
[ $status = 0 ] && echo "GPU execution test: PASS" || echo "GPU execution test: FAIL"
exit $status
