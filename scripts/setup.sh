#!/usr/bin/env bash
# Installs what offload-mlir needs on a Debian 12 machine, configures and builds
# it with Ninja. Idempotent: a second run only rebuilds what changed.
#   BUILD_DIR (default: build)   where the build goes
#   SKIP_APT=1                   do not call apt-get (dependencies already there)
#   SKIP_PIP=1                   do not pip-install pytest
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

need_packages() {
  for p in libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools cmake ninja-build g++; do
    dpkg -s "$p" >/dev/null 2>&1 || return 0
  done
  return 1
}

if [ "${SKIP_APT:-0}" != 1 ] && need_packages; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
    libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools cmake ninja-build g++ python3
fi

# pytest runs the Python bridge's tests (those needing torch skip without it).
if [ "${SKIP_PIP:-0}" != 1 ] && ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install --quiet pytest || echo "setup: could not install pytest; Python tests will not run" >&2
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
# Two cores and 24 GiB: two compile jobs at a time stay well inside memory.
ninja -C "$BUILD_DIR" -j "${JOBS:-2}"
