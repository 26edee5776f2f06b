#!/usr/bin/env bash
# Downloads the packages of the benchmark's peer rows (`python -m benchmarks.peers`
# rows deepspeed-cpu-ckpt, megatron-offload, thunder-offload; see bench.py's
# docstring) and those of their dependencies that the GPU machine's image lacks,
# as wheels, into .whl/ at the repository root (git-ignored; carry it).
#
# The GPU machine has CPython 3.12, torch 2.11 + CUDA 13 and no package registry.
# Install the wheels there, beside its own packages, with
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
#
# Usage: python/benchmarks/peer_wheels.sh [DIR]    (DIR defaults to .whl)
#
# What is in the set, and why:
#   deepspeed 0.19.8       PyPI has only its source distribution: it is built here into a
#                          pure-Python wheel with DS_BUILD_OPS=0 (no compiled ops; the
#                          activation checkpointing the row uses needs none)
#   hjson, pydantic, pydantic-core, annotated-types, typing-inspection
#                          DeepSpeed's requirements missing from the GPU image
#   typing-extensions      pydantic needs >= 4.14.1; the image's version is not known
#   megatron-core 0.19.2   (its requirements torch, numpy, packaging are in the image)
#   lightning-thunder 0.2.6, looseversion, optree, dill
#                          Thunder and its requirements missing from the image
#                          (lightning-utilities, networkx, opt-einsum, mpmath are there)
# torch and nvidia-* wheels are never downloaded: the GPU machine has its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-.whl}
PY=3.12
CP=cp312
mkdir -p "$DIR"
if [ "$DIR" = .whl ] && ! grep -qx '/.whl/' .git/info/exclude 2>/dev/null; then
  mkdir -p .git/info && echo /.whl/ >>.git/info/exclude
fi

PIP=(python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PY"
     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64
     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DIR")

PEERS=(megatron-core==0.19.2 lightning-thunder==0.2.6)
DEPS=(hjson==3.1.0 pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0
      typing-inspection==0.4.2 typing-extensions==4.15.0
      looseversion==1.3.0 optree==0.17.0 dill==0.4.0)
for req in "${PEERS[@]}" "${DEPS[@]}"; do
  "${PIP[@]}" "$req"
done

# DeepSpeed: no wheel on PyPI; build its sdist into one, without compiled ops.
if ! ls "$DIR"/deepspeed-0.19.8-*.whl >/dev/null 2>&1; then
  DS_BUILD_OPS=0 python3 -m pip wheel --quiet --no-deps -w "$DIR" deepspeed==0.19.8
fi

# Every wheel's requirements, for checking that nothing else is missing.
for w in "$DIR"/*.whl; do
  deps=$(unzip -p "$w" '*.dist-info/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' |
         sed 's/^Requires-Dist: //' | tr '\n' ';' || true)
  echo "$(basename "$w"): ${deps:-no requirements}"
done
ls "$DIR"/*.whl | grep -v -e "-$CP-" -e "-py3-none-any" -e "-py2.py3-none-any" -e "-abi3-" &&
  { echo "wheels for another Python than $PY above" >&2; exit 1; }
du -sh "$DIR"
