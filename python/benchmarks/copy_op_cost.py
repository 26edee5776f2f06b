#!/usr/bin/env python3
"""What the copy ops cost apart from the copies: device gaps and host time.

*On the device.* The copy ops put stream work between the compute stream's
kernels: an offload records an event there (its copy stream waits on it),
a load records one too, and each wait makes the compute stream wait on a
copy's event. Even when the copy is long done, each of these may leave a
gap between two kernels. This measures that gap, apart from any stall on a
copy: a sleep kernel first lets the host enqueue everything ahead of the
device, then N short kernels run back to back with one kind of stream work
between each two, timed by CUDA events around the N; the added time per op
is (time with the op - time without) / N. Variants:

    none           kernels only (the reference)
    record         an event recorded on the compute stream
    wait-done      the compute stream waits on an event of another stream
                   that completed long ago
    record+wait    both (one offload and its wait, or one load and its wait)
    handoff        an event on compute and a second stream waiting on it
                   (what offload_start and load_start do)

*On the host.* The wall-clock time of one call of each `torch.ops.offload`
op, called as Inductor's generated code calls them (`.default`, a list for
`after`), on a tensor of `--mib` MiB: offload_start, offload_wait,
load_start, load_wait; the median over `--calls` rounds, with the device
synchronized between rounds so no call waits for a full queue.

    PYTHONPATH=python python3 python/benchmarks/copy_op_cost.py --out OUT.json

It needs CUDA and, for the host part, the ops library (scripts/stage-python.sh).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

VARIANTS = ("none", "record", "wait-done", "record+wait", "handoff")


def host_cost(torch, mib: int, calls: int,
              device: str = "cuda") -> dict[str, tuple[float, float]]:
    """Median and 90th percentile of each copy op's host time, microseconds
    (on "cpu", the ops' simulated backend: for testing this function)."""
    import time

    from offload_mlir import ops

    x = torch.randn(mib << 19, device=device, dtype=torch.bfloat16)
    stride, layout = ops.dense_stride(x), ops.layout(x)
    names = ("offload_start", "offload_wait", "load_start", "load_wait")
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(calls + 3):  # the first rounds grow the pinned pool
        t0 = time.perf_counter()
        host = torch.ops.offload.offload_start.default(x, stride, [])
        t1 = time.perf_counter()
        torch.ops.offload.offload_wait.default(host, x, [])
        t2 = time.perf_counter()
        y = torch.ops.offload.load_start.default(host, *layout, [])
        t3 = time.perf_counter()
        torch.ops.offload.load_wait.default(y, host, [])
        t4 = time.perf_counter()
        if device == "cuda":
            torch.cuda.synchronize()
        del host, y
        if i >= 3:
            for n, (a, b) in zip(names, ((t0, t1), (t1, t2), (t2, t3), (t3, t4))):
                times[n].append((b - a) * 1e6)
    return {n: (statistics.median(t), statistics.quantiles(t, n=10)[-1])
            for n, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=400, help="short kernels per timing")
    p.add_argument("--numel", type=int, default=1 << 20, help="elements each kernel adds to")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--mib", type=int, default=64, help="size of the host part's tensor")
    p.add_argument("--calls", type=int, default=50, help="rounds of the host part")
    p.add_argument("--out", default=None, help="JSON path for every figure")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("copy_op_cost.py needs CUDA", file=sys.stderr)
        return 2
    compute = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.zeros(args.numel, device="cuda", dtype=torch.bfloat16)
    done = torch.cuda.Event()  # untimed, as the copy ops' events are
    done.record(side)
    torch.cuda.synchronize()

    def timed(variant: str) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(20_000_000)  # ~10 ms: the host gets ahead
        start.record(compute)
        for _ in range(args.kernels):
            x.add_(1)
            if variant in ("record", "record+wait", "handoff"):
                e = torch.cuda.Event()
                e.record(compute)
                if variant == "handoff":
                    side.wait_event(e)
            if variant in ("wait-done", "record+wait"):
                compute.wait_event(done)
        end.record(compute)
        end.synchronize()
        return start.elapsed_time(end) * 1e3  # us

    for v in VARIANTS:  # warm-up
        timed(v)
    runs = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for v in VARIANTS:  # interleaved, so drift hits all alike
            runs[v].append(timed(v))
    med = {v: statistics.median(t) for v, t in runs.items()}
    per_op = {v: (med[v] - med["none"]) / args.kernels for v in VARIANTS}
    host = host_cost(torch, args.mib, args.calls)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "kernels": args.kernels, "numel": args.numel, "repeats": args.repeats,
           "median_us": med, "added_per_op_us": per_op, "runs_us": runs,
           "host_mib": args.mib, "host_calls": args.calls, "host_us": host}
    print(f"{doc['device']}: {args.kernels} kernels of {med['none'] / args.kernels:.2f} us "
          f"each (median of {args.repeats})")
    print("| between each two kernels | time of the N | added per op |")
    print("| --- | --- | --- |")
    for v in VARIANTS:
        print(f"| {v} | {med[v] / 1e3:.3f} ms | {per_op[v]:+.2f} us |")
    print(f"host time per call, {args.mib} MiB, median of {args.calls}:")
    print("| op | median | 90th percentile |")
    print("| --- | --- | --- |")
    for op, (median, p90) in host.items():
        print(f"| {op} | {median:.1f} us | {p90:.1f} us |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
