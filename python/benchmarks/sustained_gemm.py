"""Does a GPU's matmul throughput hold under sustained load?

`python -m offload_mlir.calibrate` times each matmul for a few tens of
milliseconds; a training step keeps the tensor cores busy for hundreds of
milliseconds, step after step. This script idles the GPU, then runs one of
the step's matmuls (8192 x 4096 x 14336, bf16) back to back for
`--seconds`, and reports its throughput per window of about 50 ms against
the time since the load started, with the SM clock, power and throttle
reasons that `nvidia-smi` samples meanwhile.

    python3 python/benchmarks/sustained_gemm.py --seconds 20 --out sustained.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time


SPAN_EDGES_S = (0, 0.1, 0.5, 1, 2, 5, 10)


def spans(seconds: float) -> list[tuple[float, float]]:
    """The windows the report summarises: the edges that fall within a load
    of `seconds`, then one span from the last edge to its end. None is
    empty, so every span has a median (JSON has no NaN to write)."""
    edges = [e for e in SPAN_EDGES_S if e < seconds] + [seconds]
    return list(zip(edges, edges[1:]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--idle", type=float, default=3.0, help="idle seconds before the load")
    p.add_argument("--out")
    args = p.parse_args()

    import torch

    m, k, n = 8192, 4096, 14336
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    per_window = 40
    flops = 2.0 * m * k * n * per_window

    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
         "clocks_throttle_reasons.active", "--format=csv,noheader,nounits", "-lms", "100"],
        stdout=subprocess.PIPE, text=True)
    time.sleep(args.idle)
    windows = []
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        at = time.perf_counter() - start
        begin.record()
        for _ in range(per_window):
            torch.mm(a, b, out=c)
        end.record()
        end.synchronize()
        windows.append({"t_s": at, "TFLOPs": flops / (begin.elapsed_time(end) * 1e-3) / 1e12})
    time.sleep(0.3)
    smi.terminate()
    samples = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.strip()]

    def over(t0: float, t1: float) -> float:
        v = [w["TFLOPs"] for w in windows if t0 <= w["t_s"] < t1]
        return statistics.median(v) if v else float("nan")

    doc = {"device": torch.cuda.get_device_name(), "shape": [m, k, n],
           "TFLOPs_by_span": {f"{t0:g}-{t1:g}s": over(t0, t1) for t0, t1 in spans(args.seconds)},
           "windows": windows, "nvidia_smi": samples}
    print(doc["device"])
    for span, v in doc["TFLOPs_by_span"].items():
        print(f"  {span:>10}: {v:7.1f} TFLOP/s")
    for s in samples[:: max(1, len(samples) // 25)]:
        print("  smi:", ", ".join(s))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
