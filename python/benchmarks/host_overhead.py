"""What the offloading backend costs the host, row by row, at one length.

    python -m benchmarks.host_overhead --length 512

At short sequences a training step's device time comes near the host's
time to issue it, so host work the backend adds per step adds to the step.
This builds `models.TitanLM` (as `benchmarks.variable_lengths` does) once
per row from one seed, compiles each with `dynamic=None` at two lengths (so
the dynamic graph serves the measured length, as in the variable-lengths
benchmark), then per row: the bytes one step offloads, its peak (above what
is allocated before it), the host's time to issue a step (forward and
backward called, the device not waited for) and the step's time, medians
over `--iters` steps, the rows interleaved. Rows (`--rows`):

    compile        plain torch.compile
    nothing        offload_mlir.backend(min_bytes=2**62): the backend's graphs
                   with no copy in them
    default        offload_mlir.backend()
    keep-peak-neutral   backend(drop_peak_neutral=False)
    reuse          backend(reuse_freed_buffers=True)
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TORCHINDUCTOR_DETERMINISTIC", "1")

import torch  # noqa: E402

import offload_mlir  # noqa: E402
from offload_mlir import models  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import variable_lengths as vl  # noqa: E402

ROWS = {
    "compile": None,
    "nothing": {"min_bytes": 2**62},
    "default": {},
    "keep-peak-neutral": {"drop_peak_neutral": False},
    "reuse": {"reuse_freed_buffers": True},
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--compile-lengths", type=int, nargs=2, default=[512, 1024],
                   help="the lengths each row is compiled at first (the second one "
                        "makes the dynamic graph)")
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    args = p.parse_args(argv)
    names = args.rows.split(",")
    for name in names:
        if name not in ROWS:
            p.error(f"unknown row {name!r}; rows: {', '.join(ROWS)}")
    torch.use_deterministic_algorithms(True)
    # Every row's graphs are compiles of TitanLM.forward's one code object:
    # past Dynamo's limit of 8 a row would run eager.
    torch._dynamo.config.recompile_limit = 16 * len(names)
    torch.manual_seed(0)
    base = models.TitanLM(models.preset("llama-block"), args.layers,
                          max(args.length, *args.compile_lengths), args.vocab,
                          device="cuda", dtype=torch.bfloat16)
    fns = {}
    for name in names:
        model = copy.deepcopy(base)
        kw = ROWS[name]
        backend = "inductor" if kw is None else offload_mlir.backend(**kw)
        fns[name] = (torch.compile(model, backend=backend), model)
    for length in args.compile_lengths:
        for fn, model in fns.values():
            vl._step(fn, model, *vl._batch(length, args.batch, args.vocab, False))
    x, y = vl._batch(args.length, args.batch, args.vocab, False)
    moved, peak = {}, {}
    for name, (fn, model) in fns.items():
        offload_mlir.reset_runtime_stats()
        vl._step(fn, model, x, y)
        torch.cuda.synchronize()
        moved[name] = offload_mlir.runtime_stats()["d2h_bytes"]
        peak[name] = vl._peak(fn, model, x, y)
    host = {name: [] for name in names}
    device = {name: [] for name in names}
    for _ in range(args.iters):
        for name, (fn, model) in fns.items():
            issued, waited = vl.issue_and_wait_seconds(fn, model, x, y)
            host[name].append(issued)
            device[name].append(waited)
    print(f"TitanLM, {args.layers} layers, batch {args.batch}, length {args.length} "
          f"(compiled at {args.compile_lengths}), {torch.cuda.get_device_name()}, "
          f"medians of {args.iters} interleaved steps")
    print("| row | host issues a step | step (host waits for the device) | peak | d2h |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        print(f"| {name} | {statistics.median(host[name]) * 1e3:.2f} ms | "
              f"{statistics.median(device[name]) * 1e3:.2f} ms | "
              f"{peak[name] / 2**30:.2f} GiB | {moved[name] / 2**30:.2f} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
