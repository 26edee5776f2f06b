"""Does a copy between device and pinned host memory slow the host down?

    PYTHONPATH=python python3 python/benchmarks/host_under_copies.py

At short sequences the backend's copies add more host time to a step than
their own calls cost (docs/benchmarks/variable-lengths-h200/README.md). One
explanation is the copy itself: a DMA transfer into or out of host memory
shares the host's memory system (and, on CPUs that place inbound DMA in the
last-level cache, its cache) with the Python and C++ code that issues the
kernels. This measures the host's time to issue `--launches` small kernels
(`torch.add` on a 4 KiB tensor, each its own launch, no host synchronisation
in between) with nothing on the copy streams, beside a queue of D2H copies
into pinned memory, and beside a queue of H2D copies from it, `--copy-mib`
MiB each, queued on their own stream before the launches start and long
enough to outlast them. Medians over `--repeats` rounds, the three cases
interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=2000)
    p.add_argument("--copy-mib", type=int, default=256)
    p.add_argument("--copies", type=int, default=24, help="copies queued per round")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("host_under_copies.py needs CUDA", file=sys.stderr)
        return 2
    n = args.copy_mib << 20
    device_buf = torch.empty(n, dtype=torch.uint8, device="cuda")
    host_buf = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    small = torch.zeros(1024, device="cuda")
    side = torch.cuda.Stream()

    def issue_seconds(direction: str) -> float:
        torch.cuda.synchronize()
        if direction != "none":
            with torch.cuda.stream(side):
                for _ in range(args.copies):
                    if direction == "d2h":
                        host_buf.copy_(device_buf, non_blocking=True)
                    else:
                        device_buf.copy_(host_buf, non_blocking=True)
        # The copies are queued; the launches start while they run.
        start = time.perf_counter()
        x = small
        for _ in range(args.launches):
            x = torch.add(x, 1.0)
        seconds = time.perf_counter() - start
        torch.cuda.synchronize()
        return seconds

    cases = ("none", "d2h", "h2d")
    for case in cases:  # warm up
        issue_seconds(case)
    times = {case: [] for case in cases}
    for _ in range(args.repeats):
        for case in cases:
            times[case].append(issue_seconds(case))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "launches": args.launches, "copy_mib": args.copy_mib, "copies": args.copies,
              "issue_us_per_launch": {c: statistics.median(t) / args.launches * 1e6
                                      for c, t in times.items()},
              "runs_s": times}
    print(f"{result['device']}: host time to issue one small kernel, median of "
          f"{args.repeats} rounds of {args.launches}")
    print("| copies running | us per launch | vs none |")
    print("| --- | --- | --- |")
    base = result["issue_us_per_launch"]["none"]
    for case, us in result["issue_us_per_launch"].items():
        print(f"| {case} | {us:.2f} | {us / base:.3f}x |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
