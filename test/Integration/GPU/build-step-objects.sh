#!/usr/bin/env bash
# Lowers test/Integration/jit-training-step.mlir with and without the offload
# pipeline (the lowering of docs/lowering.md) and compiles both to x86-64
# object files for the GPU machine, which has no MLIR.
#   build-step-objects.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:?usage: build-step-objects.sh OUT_DIR}
mkdir -p "$out"
bin=/usr/lib/llvm-22/bin
lower=(--convert-elementwise-to-linalg
  "--one-shot-bufferize=bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map"
  --convert-offload-to-llvm --convert-linalg-to-loops --convert-scf-to-cf
  --expand-strided-metadata --lower-affine
  --finalize-memref-to-llvm=use-generic-functions --convert-math-to-llvm
  --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm
  --reconcile-unrealized-casts)
step=test/Integration/jit-training-step.mlir
for variant in plain offloaded; do
  extra=()
  [ "$variant" = offloaded ] && extra=(--offload-activations=min-bytes=0)
  build/bin/offload-opt "$step" "${extra[@]}" "${lower[@]}" |
    sed -e 's/@main\b/@step_main/' |
    "$bin/mlir-translate" --mlir-to-llvmir |
    "$bin/llc" -O2 -filetype=obj -relocation-model=pic -o "$out/step_$variant.o"
done
cp test/Integration/GPU/driver.c test/Integration/GPU/run-on-gpu.sh "$out/"
echo "wrote $out/step_plain.o $out/step_offloaded.o"
