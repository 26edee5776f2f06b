#!/usr/bin/env bash
# Copies the bridge's two native libraries from the build tree into the
# Python package (python/offload_mlir/_lib, or $STAGE_DIR), so the package
# works on its own: `pip install ./python`, or the folder carried to a
# machine without MLIR.
#   liboffload_mlir_capi.so   the pipeline, MLIR linked statically
#   liboffload_torch_ops.so   torch.ops.offload.* on LibTorch and offload_rt
#   torch_version.txt         the torch the ops were built against (the wheel
#                             requires its release series; python/setup.py)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
dest=${STAGE_DIR:-python/offload_mlir/_lib}
mkdir -p "$dest"
for lib in "$BUILD_DIR/lib/liboffload_mlir_capi.so" "$BUILD_DIR/torch-ops/liboffload_torch_ops.so"; do
  [ -f "$lib" ] || { echo "stage-python: $lib is missing; run scripts/setup.sh first" >&2; exit 1; }
  # A copy beside it, then a rename: a process that has the old library
  # loaded keeps its file (cp over it in place would crash that process).
  cp "$lib" "$dest/.$(basename "$lib").tmp"
  mv -f "$dest/.$(basename "$lib").tmp" "$dest/$(basename "$lib")"
done
torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$BUILD_DIR/torch-ops/CMakeCache.txt")
version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$torch_dir/TorchConfigVersion.cmake")
[ -n "$version" ] || { echo "stage-python: no torch version in $torch_dir" >&2; exit 1; }
echo "$version" > "$dest/torch_version.txt"
ls -l "$dest"
