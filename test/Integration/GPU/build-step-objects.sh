#!/usr/bin/env bash
# Lowers the JIT tests' training steps with and without the offload pipeline
# (the lowering of docs/lowering.md) and compiles them to x86-64 object files
# for the GPU machine, which has no MLIR:
#   step_{plain,offloaded,scheduled}.o       test/Integration/jit-training-step.mlir
#   step_peak_{plain,offloaded,scheduled}.o  test/Integration/jit-device-peak.mlir,
#                                            with -buffer-deallocation-pipeline
#   step_group_{plain,grouped}.o             test/Integration/jit-copy-groups.mlir,
#                                            with -buffer-deallocation-pipeline
#                                            (grouped: copy groups, coalesce-below)
# (offloaded: synchronous copies; scheduled: schedule=true, start/wait pairs
# with hoisted loads, through the bufferization of the futures)
#   build-step-objects.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:?usage: build-step-objects.sh OUT_DIR}
mkdir -p "$out"
bin=/usr/lib/llvm-22/bin
bufferize=(--convert-elementwise-to-linalg
  "--one-shot-bufferize=bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map")
lower=(--convert-offload-to-llvm --convert-linalg-to-loops --convert-scf-to-cf
  --expand-strided-metadata --lower-affine
  --finalize-memref-to-llvm=use-generic-functions --convert-math-to-llvm
  --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm
  --reconcile-unrealized-casts)
# build NAME STEP [--dealloc]: NAME{plain,offloaded,scheduled}.o
build() {
  local name=$1 step=$2 dealloc=()
  [ "${3:-}" = --dealloc ] && dealloc=(--buffer-deallocation-pipeline)
  for variant in plain offloaded scheduled; do
    local extra=()
    [ "$variant" = offloaded ] && extra=("--offload-activations=min-bytes=0 schedule=false")
    [ "$variant" = scheduled ] && extra=("--offload-activations=min-bytes=0 schedule=true")
    build/bin/offload-opt "$step" "${extra[@]}" "${bufferize[@]}" "${dealloc[@]}" "${lower[@]}" |
      sed -e 's/@main\b/@step_main/' |
      "$bin/mlir-translate" --mlir-to-llvmir |
      "$bin/llc" -O2 -filetype=obj -relocation-model=pic -o "$out/${name}${variant}.o"
  done
}
build step_ test/Integration/jit-training-step.mlir
build step_peak_ test/Integration/jit-device-peak.mlir --dealloc
for variant in plain grouped; do
  extra=()
  [ "$variant" = grouped ] &&
    extra=("--offload-activations=min-bytes=0 schedule=true coalesce-below=1MiB max-inflight-bytes=1")
  build/bin/offload-opt test/Integration/jit-copy-groups.mlir "${extra[@]}" "${bufferize[@]}" \
      --buffer-deallocation-pipeline "${lower[@]}" |
    sed -e 's/@main\b/@step_main/' |
    "$bin/mlir-translate" --mlir-to-llvmir |
    "$bin/llc" -O2 -filetype=obj -relocation-model=pic -o "$out/step_group_${variant}.o"
done
cp test/Integration/GPU/driver.c test/Integration/GPU/run-on-gpu.sh "$out/"
echo "wrote $out/step_{,peak_}{plain,offloaded,scheduled}.o $out/step_group_{plain,grouped}.o"
