#!/usr/bin/env bash
# Downloads what `python -m benchmarks.peers` needs on the GPU machine,
# which has no package registry, into bench-deps/ (git-ignored; carry it):
#   torchtune's wheel, for the benchmark's `torchtune` row. The bench runs
#   torchtune's OffloadActivations from the wheel as it is (see bench.py).
set -euo pipefail
cd "$(dirname "$0")/.."
TORCHTUNE_VERSION=0.6.1
mkdir -p bench-deps
[ -f "bench-deps/torchtune-$TORCHTUNE_VERSION-py3-none-any.whl" ] ||
  python3 -m pip download --quiet --no-deps "torchtune==$TORCHTUNE_VERSION" -d bench-deps
ls -l bench-deps
