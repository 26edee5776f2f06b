#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds offload_rt with its
# CUDA backend, links the compiled step (plain and offloaded) with driver.c,
# runs both on the CUDA backend and checks they print the same values.
#   run-on-gpu.sh OBJ_DIR LOG_DIR
set -euo pipefail
obj=${1:?usage: run-on-gpu.sh OBJ_DIR LOG_DIR}
log=${2:?usage: run-on-gpu.sh OBJ_DIR LOG_DIR}
mkdir -p "$log"
cmake -S lib/Runtime -B /tmp/offload-rt -G Ninja -DCMAKE_BUILD_TYPE=Release > "$log/cmake.log"
ninja -C /tmp/offload-rt offload_rt > "$log/ninja.log"
for variant in plain offloaded; do
  cc -O1 -Iinclude "$obj/driver.c" "$obj/step_$variant.o" \
     -L/tmp/offload-rt -loffload_rt -Wl,-rpath,/tmp/offload-rt -lm \
     -o "/tmp/step_$variant"
  OFFLOAD_RT_BACKEND=cuda OFFLOAD_RT_HOST_ACCESSIBLE_DEVICE=1 \
    "/tmp/step_$variant" > "$log/$variant.out" 2> "$log/$variant.err"
  cat "$log/$variant.out"; cat "$log/$variant.err"
done
if diff "$log/plain.out" "$log/offloaded.out"; then
  echo "GPU execution test: PASS (same values with and without offloading)"
else
  echo "GPU execution test: FAIL"; exit 1
fi
