#!/usr/bin/env bash
# Installs what offload-mlir needs on a Debian 12 machine, configures and builds
# it with Ninja. Idempotent: a second run only rebuilds what changed.
#   BUILD_DIR (default: build)   where the build goes
#   SKIP_APT=1                   do not call apt-get (dependencies already there)
#   SKIP_PIP=1                   do not pip-install torch or the test tools
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

# The PyTorch bridge builds its copy ops against the torch of python3, and
# never replaces one that is there: torch 2.11 or later is used as it is
# (tested with 2.11.0); with no torch, 2.11.0 is installed. numpy and pytest
# (with pytest-xdist) run the Python tests, wheel (or setuptools 70.1 or
# later) builds the wheel, matplotlib draws the benchmarks' plots.
TORCH_VERSION=2.11.0
if [ "${SKIP_PIP:-0}" != 1 ]; then
  if have=$(python3 -c "import torch; print(torch.__version__)" 2>/dev/null); then
    if ! python3 -c "import sys, torch; v = tuple(int(x) for x in torch.__version__.split('+')[0].split('.')[:2]); sys.exit(v < (2, 11))"; then
      echo "setup: python3 has torch $have; offload-mlir needs torch 2.11 or later." >&2
      echo "setup: it leaves your torch alone. Either upgrade it (python3 -m pip install 'torch>=2.11')," >&2
      echo "setup: or use a fresh environment: python3 -m venv .venv && . .venv/bin/activate && scripts/setup.sh" >&2
      exit 1
    fi
  else
    python3 -m pip install --quiet "torch==$TORCH_VERSION"
  fi
  python3 -c "import numpy, pytest, xdist, matplotlib" 2>/dev/null ||
    python3 -m pip install --quiet numpy pytest pytest-xdist matplotlib
  python3 -c "import setuptools.command.bdist_wheel" 2>/dev/null || python3 -c "import wheel" 2>/dev/null ||
    python3 -m pip install --quiet wheel
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
# Two cores and 24 GiB: two compile jobs at a time stay well inside memory.
ninja -C "$BUILD_DIR" -j "${JOBS:-2}"

# The copy ops on LibTorch (lib/TorchOps, its own CMake project: it needs
# torch, not MLIR). Python finds both libraries of the bridge in the build
# tree; scripts/stage-python.sh copies them into the package.
TORCH_OPS_DIR="$BUILD_DIR/torch-ops"
if [ ! -f "$TORCH_OPS_DIR/build.ninja" ]; then
  cmake -S lib/TorchOps -B "$TORCH_OPS_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
fi
ninja -C "$TORCH_OPS_DIR" -j "${JOBS:-2}"
