"""How much do pinned copies slow the kernels beside them, by kind of kernel?

The device profile's `copy_interference` comes from one memory-bound load
(`python -m offload_mlir.calibrate`: adds of 512 MiB operands; GEMMs beside
copies measure 0). In a traced training step the memory-bound kernels beside
big copies slowed by about 0.047 s per second of copy (docs/benchmarks/peers/README.md),
more than the 0.014-0.018 calibrated. This script runs the calibration's
rounds (`calibrate.copy_rounds`: kernels queued on the compute stream, then
4 copies of 256 MiB each way on the copy streams, one direction and both)
beside several loads shaped like the step's kernels, and prints each load's
interference (over all its rounds, and per direction: D2H alone, H2D
alone, both at once) with the copy rates beside it:

    PYTHONPATH=python python3 python/benchmarks/copy_interference.py --out ci.json

Loads: the step's GEMM (8192 x 4096 x 14336 bf16), bf16 adds of 8, 64 and
512 MiB operands, an RMSNorm and a SwiGLU product compiled by Inductor on
the step's shapes (batch 8 x 1024, hidden 4096, MLP 14336), and causal
flash attention forward (8 x 32 heads x 1024 x 128). Each load runs for
about `--load-ms` per round, after `--spin` seconds of GEMMs, so the clocks
are those of sustained load; the compute stream is held while the host
queues each round, and the copies start with its kernels, so short kernels
run at the device's pace, not the host's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from offload_mlir import calibrate  # noqa: E402

MiB = 1 << 20
COPIES = 4  # per direction and round, as the calibration copies


def loads(torch, device):
    """name -> a zero-argument call of one kernel (or one fused kernel)."""
    bf16 = torch.bfloat16
    tokens, hidden, ffn = 8 * 1024, 4096, 14336
    a = torch.randn(tokens, hidden, device=device, dtype=bf16)
    w = torch.randn(ffn, hidden, device=device, dtype=bf16)
    mm_out = torch.empty(tokens, ffn, device=device, dtype=bf16)
    out = {"gemm 8192x4096x14336": lambda: torch.mm(a, w.t(), out=mm_out)}
    for mib in (8, 64, 512):
        x = torch.ones(mib * MiB // 2, device=device, dtype=bf16)
        y, z = torch.ones_like(x), torch.empty_like(x)
        out[f"add, {mib} MiB operands"] = (lambda x=x, y=y, z=z: torch.add(x, y, out=z))

    norm_w = torch.ones(hidden, device=device, dtype=bf16)

    def rms_norm(x, weight):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * weight

    def swiglu(gate, up):
        return torch.nn.functional.silu(gate) * up

    norm = torch.compile(rms_norm)
    glu = torch.compile(swiglu)
    gate, up = torch.randn_like(mm_out), torch.randn_like(mm_out)
    out["rmsnorm 8192x4096 (Inductor)"] = lambda: norm(a, norm_w)
    out["swiglu 8192x14336 (Inductor)"] = lambda: glu(gate, up)
    q = torch.randn(8, 32, 1024, 128, device=device, dtype=bf16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    out["flash attention fwd, causal"] = lambda: sdpa(q, k, v, is_causal=True)
    return out


def call_seconds(dev, fn, calls: int = 50) -> tuple[float, float]:
    """(device seconds, host seconds) per call of fn(), the calls queued
    behind a hold so that the device's figure is not the host's pace."""
    for _ in range(3):
        fn()  # compile, choose and load the kernels
    dev.synchronize()
    dev.hold(0.05)
    start, end = dev.event(), dev.event()
    start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host_s = time.perf_counter() - t0
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3 / calls, host_s / calls


def table_row(r: dict) -> str:
    """One load's line of the printed table, from its result."""
    rates, by = r["GBps"], r["interference_by_direction"]
    return (f"| {r['load']}{' (host-paced)' if r['host_paced'] else ''} "
            f"| {r['call_s'] * 1e3:.3f} ms ({r['host_call_s'] * 1e3:.3f} ms) "
            f"| {r['calls_per_round']} | {r['interference']:.4f} | "
            + " | ".join(f"{by[d]:.4f}" for d in calibrate.COPY_DIRECTIONS)
            + f" | {rates['d2h']:.1f} / {rates['h2d']:.1f} / {rates['both_ways']:.1f} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--copy-mib", type=int, default=256,
                   help=f"each of the {COPIES} copies per direction")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--load-ms", type=float, default=60.0,
                   help="kernel time queued per round (outlasts the copies)")
    p.add_argument("--spin", type=float, default=2.0, help="seconds of GEMMs before each load")
    p.add_argument("--only", help="comma-separated substrings of the loads to run")
    p.add_argument("--out")
    args = p.parse_args()

    import torch

    dev = calibrate.Device(torch, "cuda")
    link = calibrate.LinkBuffers(dev, args.copy_mib * MiB)
    nbytes = args.copy_mib * MiB
    results = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"{COPIES} x {args.copy_mib} MiB each way beside each load, {args.repeats} rounds")
    print("| load | one call (host) | calls per round | interference: all | D2H | H2D | both ways "
          "| GB/s D2H / H2D / both |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, fn in loads(torch, dev.device).items():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        one, host = call_seconds(dev, fn)
        count = max(1, math.ceil(args.load_ms * 1e-3 / one))
        calibrate.spin(dev, args.spin)
        rounds = calibrate.copy_rounds(dev, link, fn, count, nbytes, COPIES, args.repeats,
                                       host_queue_s=count * host)
        rates = {d: rounds.rate_GBps(d) for d in calibrate.COPY_DIRECTIONS}
        by_direction = {d: rounds.interference(d) for d in calibrate.COPY_DIRECTIONS}
        # Where the host queues a call more slowly than the device runs it, the
        # hold runs out mid-round and the kernels run at the host's pace.
        host_paced = host > one
        results.append({"load": name, "call_s": one, "host_call_s": host,
                        "host_paced": host_paced, "calls_per_round": count,
                        "interference": rounds.interference(),
                        "interference_by_direction": by_direction, "GBps": rates,
                        "kernel_seconds_alone": rounds.alone,
                        "beside": rounds.beside, "spans": rounds.spans})
        print(table_row(results[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "args": vars(args), "loads": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
