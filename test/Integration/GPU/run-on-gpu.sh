#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds offload_rt with its
# CUDA backend, links each compiled step (build-step-objects.sh) with
# driver.c, runs it on the CUDA backend, and checks that the offloaded step
# prints the same values as the plain one. For the step lowered with buffer
# deallocation (step_peak_*) it also checks that the offloaded step's device
# peak (the runtime's count of the device memory the step allocated) is lower.
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
for pair in step step_peak; do
  run "${pair}_plain"
  run "${pair}_offloaded"
  if diff <(values "${pair}_plain") <(values "${pair}_offloaded") > "$log/$pair.diff"; then
    echo "$pair: same values with and without offloading ($(values "${pair}_plain" | wc -l) lines)"
  else
    echo "$pair: FAIL: the values differ (see $log/$pair.diff)"; status=1
  fi
done
plain=$(peak step_peak_plain) offloaded=$(peak step_peak_offloaded)
echo "step_peak: device peak $plain bytes without offloading, $offloaded bytes with"
if [ -n "$plain" ] && [ -n "$offloaded" ] && [ "$offloaded" -lt "$plain" ]; then
  echo "step_peak: offloading lowers the device peak by $((plain - offloaded)) bytes"
else
  echo "step_peak: FAIL: the offloaded step's device peak is not lower"; status=1
fi
[ $status = 0 ] && echo "GPU execution test: PASS" || echo "GPU execution test: FAIL"
exit $status
