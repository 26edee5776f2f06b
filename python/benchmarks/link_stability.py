"""How steady is the host link? Back-to-back pinned copies, timed one by one.

The peers benchmark (docs/benchmarks/peers/README.md) saw some steps in
which H2D copies ran at half the link's rate for tens of milliseconds. This
script asks whether that happens with nothing but copies (and, with
--compute, a matmul loop beside them), and whether it follows a buffer (a
pinned block on a far NUMA node would be slow every time it is used) or a
moment (every buffer slow for a while).

It cycles copies over --buffers pinned blocks of --mib MiB each, on a side
stream, for --seconds per phase (H2D alone, D2H alone, then H2D beside
compute if --compute), and times every copy with CUDA events. It prints,
per phase, the rate's median, 5th percentile and minimum, how many copies
ran below --slow (a fraction of the median), when they ran (ms from the
phase's start) and on which buffer, and each buffer's median rate.

    python3 python/benchmarks/link_stability.py --seconds 10 --compute
    python3 python/benchmarks/link_stability.py --json out.json
"""

import argparse
import json
import statistics
import sys
import time


def run_phase(torch, direction, host, device, seconds, compute):
    side = torch.cuda.Stream()
    records = []
    matmul = None
    if compute:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        matmul = (a, torch.empty_like(a))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    pending = []
    i = 0
    while time.perf_counter() - t0 < seconds:
        if matmul is not None:
            # About 3 ms of bf16 GEMMs per copy of 4.3 ms: busy, but the
            # compute stream never falls behind the copies.
            for _ in range(2):
                torch.matmul(matmul[0], matmul[0], out=matmul[1])
        b = i % len(host)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(side):
            start.record(side)
            if direction == "H2D":
                device[b].copy_(host[b], non_blocking=True)
            else:
                host[b].copy_(device[b], non_blocking=True)
            end.record(side)
        pending.append((b, start, end))
        # Bounded queue: wait for the copy issued 4 before this one.
        if len(pending) > 4:
            records.append(pending.pop(0))
            records[-1][2].synchronize()
        i += 1
    torch.cuda.synchronize()
    records.extend(pending)
    first = records[0][1]
    out = []
    for b, start, end in records:
        ms = start.elapsed_time(end)
        out.append({"buffer": b, "at_ms": first.elapsed_time(start), "ms": ms})
    return out


def summarize(name, copies, nbytes, slow_fraction, buffers):
    rates = [nbytes / (c["ms"] * 1e-3) / 1e9 for c in copies]
    median = statistics.median(rates)
    ordered = sorted(rates)
    p5 = ordered[max(0, int(0.05 * len(ordered)) - 1)]
    slow = [(c, r) for c, r in zip(copies, rates) if r < slow_fraction * median]
    per_buffer = {}
    for c, r in zip(copies, rates):
        per_buffer.setdefault(c["buffer"], []).append(r)
    summary = {
        "phase": name,
        "copies": len(copies),
        "median_GBps": round(median, 2),
        "p5_GBps": round(p5, 2),
        "min_GBps": round(min(rates), 2),
        "slow_copies": len(slow),
        "slow_at_ms": [round(c["at_ms"], 1) for c, _ in slow][:50],
        "slow_buffers": sorted({c["buffer"] for c, _ in slow}),
        "buffer_median_GBps": {b: round(statistics.median(v), 2)
                               for b, v in sorted(per_buffer.items())},
    }
    print(f"{name}: {len(copies)} copies of {nbytes / 2**20:.0f} MiB over "
          f"{buffers} buffers: median {median:.1f} GB/s, p5 {p5:.1f}, "
          f"min {min(rates):.1f}; {len(slow)} below {slow_fraction:.0%} of "
          f"the median")
    if slow:
        print(f"  slow at ms: {summary['slow_at_ms']}")
        print(f"  on buffers: {summary['slow_buffers']}")
    print(f"  per buffer median GB/s: {summary['buffer_median_GBps']}")
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=224)
    parser.add_argument("--buffers", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--slow", type=float, default=0.7,
                        help="a copy is slow below this fraction of the median")
    parser.add_argument("--compute", action="store_true",
                        help="also run H2D copies beside a bf16 matmul loop")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("link_stability: needs a CUDA device", file=sys.stderr)
        return 2
    nbytes = args.mib << 20
    host = [torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            for _ in range(args.buffers)]
    device = [torch.empty(nbytes, dtype=torch.uint8, device="cuda")
              for _ in range(args.buffers)]
    phases = [("H2D", "H2D", False), ("D2H", "D2H", False)]
    if args.compute:
        phases.append(("H2D beside matmuls", "H2D", True))
    results = {"device": torch.cuda.get_device_name(), "mib": args.mib,
               "buffers": args.buffers, "phases": []}
    for name, direction, compute in phases:
        copies = run_phase(torch, direction, host, device, args.seconds, compute)
        results["phases"].append(
            summarize(name, copies, nbytes, args.slow, args.buffers))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
