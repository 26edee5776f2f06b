#!/usr/bin/env bash
# Copies the bridge's two native libraries from the build tree into the
# Python package (python/offload_mlir/_lib), so the package works on its own:
# `pip install ./python`, or the folder carried to a machine without MLIR.
#   liboffload_mlir_capi.so   the pipeline, MLIR linked statically
#   liboffload_torch_ops.so   torch.ops.offload.* on LibTorch and offload_rt
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
dest=python/offload_mlir/_lib
mkdir -p "$dest"
for lib in "$BUILD_DIR/lib/liboffload_mlir_capi.so" "$BUILD_DIR/torch-ops/liboffload_torch_ops.so"; do
  [ -f "$lib" ] || { echo "stage-python: $lib is missing; run scripts/setup.sh first" >&2; exit 1; }
  cp "$lib" "$dest/"
done
ls -l "$dest"
