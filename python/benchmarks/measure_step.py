#!/usr/bin/env python3
"""Measure the traced Llama training steps on the GPU, to check the cost model.

The shipped examples `test/Examples/llama_block.mlir` and
`llama_8layers.mlir` are the AOTAutograd forward and backward graphs of
`offload_mlir.models.LlamaStack` (preset `llama-block`, 1 or 8 layers,
batch 8, seq 1024, bf16, CUDA), traced by `offload_mlir.fx_export` with its
defaults:

* no loss: the step returns the hidden states and backward starts from a
  tangent of the output's shape (`tangents_1`);
* the parameters require grad (plain `nn.Parameter`s) and so does the input
  activation, so backward returns the gradient of every parameter and of the
  input; the rotary tables are buffers and get none.

This script runs exactly that computation in eager PyTorch
(`model(x).backward(tangent)`, gradients set to None before every step, so
each step allocates its gradients as the traced backward does) and,
as a second data point, under `torch.compile` (default inductor). For each
it reports:

* step time: 3 warm-up steps, then 20 steps each timed with CUDA events
  around forward + backward (synchronised between steps): median and min;
  also the mean of 20 back-to-back steps;
* memory: `torch.cuda.max_memory_allocated()` during the step minus
  `torch.cuda.memory_allocated()` just before it (parameters, buffers, the
  input, the tangent and whatever the allocator's users still hold, such as
  cuBLAS workspaces), i.e. the step's activations, temporaries and
  gradients; the absolute peak; and "comparable peak" = that delta plus the
  exact bytes of parameters, buffers, input and tangent, which is what the
  cost model's peak counts (its forward arguments for the whole step, the
  tangent from the start of backward);
* a kernel-time breakdown of one eager step from torch.profiler (GEMMs,
  attention, everything else);
* eager only: the peak with the step's output released before backward (the
  traced step frees forward outputs at the end of forward), and with
  `--snapshot-layers N` what is live at the peak of one step, from a CUDA
  memory-history trace.

It also measures achieved bf16 GEMM TFLOP/s for the block's linear layers
(forward `x @ W^T`, input gradient `g @ W`, weight gradient `g^T @ x`) and
achieved HBM bandwidth of large elementwise ops (bytes read + written), to
calibrate the cost model's device profile.

    # on the GPU machine, from the repository root:
    PYTHONUNBUFFERED=1 python3 python/benchmarks/measure_step.py --json out.json
    PYTHONUNBUFFERED=1 python3 python/benchmarks/measure_step.py --compile off \
        --gemm-spin-s 3 --snapshot-layers 1 --json out2.json

    # here, with build/bin/offload-opt: predictions next to the measurements
    python3 python/benchmarks/measure_step.py --compare out.json \
        [--device-profile docs/profiles/h100-measured.json]

Compile runs go to subprocesses with a time limit (`--deadline-s` for the
whole run); whatever finished is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

GiB = 2**30
MiB = 2**20

# The block's linear layers as (name, K = in features, N = out features, count
# per layer).
LINEARS = [
    ("q_proj/o_proj", 4096, 4096, 2),
    ("gate_proj/up_proj", 4096, 14336, 2),
    ("down_proj", 14336, 4096, 1),
    ("k_proj/v_proj", 4096, 1024, 2),
]


# ---------------------------------------------------------------------------
# Helpers (torch imported lazily so --compare runs without it)
# ---------------------------------------------------------------------------


def _torch():
    import torch

    return torch


def time_cuda(fn, warmup: int = 5, iters: int = 20) -> dict:
    """Median and min milliseconds of fn(), each call timed with CUDA events."""
    torch = _torch()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    # The same calls back to back, one event pair around all of them.
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return {"median_ms": statistics.median(times), "min_ms": min(times),
            "back_to_back_ms": s.elapsed_time(e) / iters}


def machine_info() -> dict:
    torch = _torch()
    info = {
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device_name": torch.cuda.get_device_name(0),
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "total_memory_bytes": torch.cuda.get_device_properties(0).total_memory,
        "python": sys.version.split()[0],
    }
    try:
        q = "name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pstate"
        r = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
        info["nvidia_smi"] = {"query": q, "value": r.stdout.strip()}
    except Exception as exc:  # pragma: no cover - depends on the machine
        info["nvidia_smi"] = {"error": repr(exc)}
    return info


# ---------------------------------------------------------------------------
# Micro benchmarks: GEMMs and HBM bandwidth
# ---------------------------------------------------------------------------


def bench_gemms(m: int = 8192, spin_s: float = 0.0) -> dict:
    torch = _torch()
    F = torch.nn.functional
    dt = torch.bfloat16
    rows = []
    if spin_s > 0:
        # Keep the GPU busy first, so clocks and power settle as in a step.
        a = torch.randn(8192, 8192, device="cuda", dtype=dt)
        t0 = time.monotonic()
        while time.monotonic() - t0 < spin_s:
            for _ in range(20):
                torch.mm(a, a)
            torch.cuda.synchronize()
        del a
    total_flops = total_ms = 0.0
    for name, k, n, count in LINEARS:
        x = torch.randn(m, k, device="cuda", dtype=dt)
        w = torch.randn(n, k, device="cuda", dtype=dt)
        g = torch.randn(m, n, device="cuda", dtype=dt)
        flops = 2.0 * m * n * k
        for kind, fn in (
            ("fwd x@W^T", lambda: F.linear(x, w)),
            ("dgrad g@W", lambda: torch.mm(g, w)),
            ("wgrad g^T@x", lambda: torch.mm(g.t(), x)),
        ):
            t = time_cuda(fn)
            tflops = flops / (t["median_ms"] * 1e-3) / 1e12
            rows.append({
                "linear": name, "shape_MxKxN": f"{m}x{k}x{n}", "kind": kind,
                "count_per_layer": count, "median_ms": t["median_ms"],
                "min_ms": t["min_ms"], "tflops": tflops,
                "back_to_back_ms": t["back_to_back_ms"],
                "tflops_back_to_back": flops / (t["back_to_back_ms"] * 1e-3) / 1e12,
            })
            total_flops += flops * count
            total_ms += t["median_ms"] * count
        del x, w, g
    # Square reference.
    a = torch.randn(8192, 8192, device="cuda", dtype=dt)
    b = torch.randn(8192, 8192, device="cuda", dtype=dt)
    t = time_cuda(lambda: torch.mm(a, b))
    ref = 2.0 * 8192**3 / (t["median_ms"] * 1e-3) / 1e12
    del a, b
    torch.cuda.empty_cache()
    return {
        "rows": rows,
        "warmup_spin_s": spin_s,
        "step_weighted_tflops_back_to_back": total_flops / (sum(
            r["back_to_back_ms"] * r["count_per_layer"] for r in rows) * 1e-3) / 1e12,
        "step_weighted_tflops": total_flops / (total_ms * 1e-3) / 1e12,
        "per_layer_gemm_flops": total_flops,
        "per_layer_gemm_ms": total_ms,
        "square_8192_tflops": ref,
    }


def bench_hbm() -> dict:
    torch = _torch()
    rows = []

    def add(name, elems, dtype, n_in, fn_make):
        tensors = [torch.randn(elems, device="cuda", dtype=torch.float32).to(dtype)
                   for _ in range(n_in + 1)]
        fn = fn_make(*tensors)
        t = time_cuda(fn, warmup=3, iters=20)
        bytes_moved = (n_in + 1) * elems * tensors[0].element_size()
        rows.append({
            "op": name, "elements": elems, "dtype": str(dtype).replace("torch.", ""),
            "bytes_read_plus_written": bytes_moved, "median_ms": t["median_ms"],
            "GBps": bytes_moved / (t["median_ms"] * 1e-3) / 1e9,
        })
        del tensors
        torch.cuda.empty_cache()

    bf16, f32 = torch.bfloat16, torch.float32
    big = 512 * MiB  # 1 GiB of bf16
    add("copy_ 1 GiB bf16", big, bf16, 1, lambda a, o: (lambda: o.copy_(a)))
    add("add 1 GiB bf16", big, bf16, 2, lambda a, b, o: (lambda: torch.add(a, b, out=o)))
    # The step's own sizes: [8,1024,4096] bf16 (64 MiB), [8,1024,14336] bf16
    # (224 MiB), [8,1024,4096] f32 (128 MiB).
    n_h, n_f = 8 * 1024 * 4096, 8 * 1024 * 14336
    add("mul [8,1024,14336] bf16", n_f, bf16, 2, lambda a, b, o: (lambda: torch.mul(a, b, out=o)))
    add("add [8,1024,4096] bf16", n_h, bf16, 2, lambda a, b, o: (lambda: torch.add(a, b, out=o)))
    add("mul [8,1024,4096] f32", n_h, f32, 2, lambda a, b, o: (lambda: torch.mul(a, b, out=o)))
    big_rows = [r for r in rows if r["elements"] == big]
    return {"rows": rows, "large_GBps": max(r["GBps"] for r in big_rows),
            "step_sized_GBps_median": statistics.median(
                r["GBps"] for r in rows if r["elements"] != big)}


# ---------------------------------------------------------------------------
# The training step
# ---------------------------------------------------------------------------


def build(layers: int, batch: int, seq: int):
    """The examples' model, input and tangent, as fx_export traced them."""
    torch = _torch()
    from offload_mlir import models

    torch.manual_seed(0)
    cfg = models.preset("llama-block")
    model = models.LlamaStack(cfg, layers, seq, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(batch, seq, cfg.hidden, device="cuda", dtype=torch.bfloat16,
                    requires_grad=True)
    tangent = torch.randn(batch, seq, cfg.hidden, device="cuda", dtype=torch.bfloat16)
    return model, x, tangent


def arg_bytes(model, x, tangent) -> dict:
    def nbytes(ts):
        return sum(t.numel() * t.element_size() for t in ts)

    return {
        "parameters": nbytes(model.parameters()),
        "buffers": nbytes(model.buffers()),
        "input": nbytes([x]),
        "tangent": nbytes([tangent]),
    }


def kernel_breakdown(step) -> dict:
    """GPU kernel time of one step by category, from torch.profiler."""
    torch = _torch()
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    per_kernel: dict[str, list] = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.time_range.elapsed_us()
        rec = per_kernel.setdefault(e.name, [0, 0.0])
        rec[0] += 1
        rec[1] += us

    def category(name: str) -> str:
        n = name.lower()
        if any(s in n for s in ("sdpa", "fmha", "flash", "attention", "attn")):
            return "attention"
        if n.startswith("cudnn") or "cudnn" in n:
            return "attention"
        if any(s in n for s in ("gemm", "nvjet", "xmma", "cutlass", "cublas")):
            return "gemm"
        return "other"

    cats = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    counts = {"gemm": 0, "attention": 0, "other": 0}
    for name, (cnt, us) in per_kernel.items():
        c = category(name)
        cats[c] += us / 1e3
        counts[c] += cnt
    top = sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:30]
    return {
        "ms": cats,
        "kernels": counts,
        "total_kernel_ms": sum(cats.values()),
        "top": [{"name": k[:160], "count": c, "ms": us / 1e3,
                 "category": category(k)} for k, (c, us) in top],
    }


def measure(model, fn, x, tangent, warmup: int, iters: int, profile_it: bool) -> dict:
    torch = _torch()
    params = list(model.parameters())

    def clear():
        for p in params:
            p.grad = None
        x.grad = None

    def step():
        fn(x).backward(tangent)

    res: dict = {}
    t0 = time.perf_counter()
    clear()
    step()
    torch.cuda.synchronize()
    res["first_step_s"] = time.perf_counter() - t0  # includes compilation
    for _ in range(max(0, warmup - 1)):
        clear()
        step()
    torch.cuda.synchronize()

    times, deltas, peaks, befores, afters, reserved = [], [], [], [], [], []
    for _ in range(iters):
        clear()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
        peak = torch.cuda.max_memory_allocated()
        peaks.append(peak)
        befores.append(before)
        deltas.append(peak - before)
        afters.append(torch.cuda.memory_allocated())
        reserved.append(torch.cuda.max_memory_reserved())
    res.update({
        "step_ms_median": statistics.median(times),
        "step_ms_min": min(times),
        "step_ms_max": max(times),
        "step_ms_all": times,
        "allocated_before_bytes": max(befores),
        "peak_delta_bytes": max(deltas),
        "peak_delta_bytes_min": min(deltas),
        "peak_abs_bytes": max(peaks),
        "allocated_after_bytes": max(afters),
        "max_reserved_bytes": max(reserved),
    })
    # Back-to-back: no synchronisation between steps.
    clear()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        clear()
        step()
    e.record()
    torch.cuda.synchronize()
    res["step_ms_back_to_back_mean"] = s.elapsed_time(e) / iters
    if profile_it:
        clear()
        try:
            res["kernels"] = kernel_breakdown(step)
        except Exception as exc:  # keep the timing if the profiler fails
            res["kernels"] = {"error": repr(exc)}
    clear()
    return res


def peak_with_output_freed(model, x, tangent, steps: int = 3) -> dict:
    """Peak delta when the step's output storage is released before backward.

    `model(x).backward(tangent)` keeps the output alive during backward (it
    is the `self` of the call), which the traced step does not: its forward
    outputs die at the end of forward. The last op is an add, whose backward
    does not read its result, so the storage can be dropped.
    """
    torch = _torch()
    params = list(model.parameters())
    deltas = []
    for _ in range(steps):
        for p in params:
            p.grad = None
        x.grad = None
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = model(x)
        out.untyped_storage().resize_(0)
        out.backward(tangent)
        del out
        torch.cuda.synchronize()
        deltas.append(torch.cuda.max_memory_allocated() - before)
    for p in params:
        p.grad = None
    x.grad = None
    return {"peak_delta_bytes": max(deltas)}


def snapshot_at_peak(model, x, tangent) -> dict:
    """Replay a CUDA memory-history trace of one step; what is live at its peak.

    Only allocations made during the step are seen (not parameters, input,
    tangent or workspaces). Allocations from the autograd engine's thread
    have no Python frames and are labelled "backward".
    """
    torch = _torch()
    params = list(model.parameters())
    for p in params:
        p.grad = None
    x.grad = None
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(
        enabled="all", context="alloc", stacks="python", max_entries=1_000_000)
    try:
        model(x).backward(tangent)
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    for p in params:
        p.grad = None
    x.grad = None
    trace = snap["device_traces"][0]

    def label(frames) -> str:
        for f in frames or []:
            fn = str(f.get("filename", ""))
            if fn.endswith("models.py"):
                return f"models.py:{f.get('line')} {f.get('name')}"
        for f in frames or []:
            fn = str(f.get("filename", ""))
            if fn.endswith(".py") and "torch" not in fn:
                return f"{Path(fn).name}:{f.get('line')} {f.get('name')}"
        return "backward (autograd thread)" if not frames else "other python"

    free_action = ("free_completed" if any(ev.get("action") == "free_completed" for ev in trace)
                   else "free_requested")
    live: dict = {}
    cur = peak = 0
    order = 0
    at_peak = None
    actions = {}
    for ev in trace:
        a = ev.get("action")
        actions[a] = actions.get(a, 0) + 1
        if a == "alloc":
            order += 1
            live[ev["addr"]] = (ev["size"], order, label(ev.get("frames")))
            cur += ev["size"]
            if cur > peak:
                peak = cur
                at_peak = dict(live)
        elif a == free_action:
            rec = live.pop(ev["addr"], None)
            if rec:
                cur -= rec[0]
    rows = sorted(((sz, o, lab) for sz, o, lab in (at_peak or {}).values()),
                  key=lambda r: r[1])
    by_label: dict = {}
    for sz, _, lab in rows:
        k = f"{lab} | {sz / MiB:.1f} MiB"
        by_label[k] = by_label.get(k, 0) + 1
    return {
        "peak_live_bytes_during_step": peak,
        "allocations_in_step": order,
        "actions": actions,
        "live_at_peak": [{"order": o, "MiB": round(sz / MiB, 3), "where": lab}
                         for sz, o, lab in rows if sz >= MiB],
        "live_at_peak_small_bytes": sum(sz for sz, _, _ in rows if sz < MiB),
        "live_at_peak_by_site": by_label,
    }


def analytic_flops(layers: int, batch: int, seq: int) -> dict:
    """GEMM and attention FLOPs of the step, counted as the cost model does."""
    t = batch * seq
    gemm_fwd = sum(2.0 * t * k * n * c for _, k, n, c in LINEARS)
    attn_fwd = 4.0 * batch * 32 * seq * seq * 128 * 0.5  # causal halves it
    return {
        "gemm_flops": layers * 3 * gemm_fwd,
        "attention_flops": layers * attn_fwd * (1 + 2.5),
    }


def run_worker(args) -> int:
    """Measure one mode for each --layers value; JSON after each."""
    torch = _torch()
    out: dict = {"mode": args.worker, "configs": {}}
    for layers in args.layers:
        model, x, tangent = build(layers, args.batch, args.seq)
        key = f"layers={layers}"
        if args.worker == "eager":
            fn = model
        elif args.worker == "compile-regional":
            for layer in model.layers:
                layer.compile()
            fn = model
        elif args.worker == "compile-whole":
            fn = torch.compile(model)
        else:
            raise SystemExit(f"unknown worker mode {args.worker}")
        print(f"[{args.worker}] {key}: measuring", flush=True)
        try:
            r = measure(model, fn, x, tangent, args.warmup, args.iters,
                        profile_it=(args.worker == "eager"))
            r["arg_bytes"] = arg_bytes(model, x, tangent)
            r["comparable_peak_bytes"] = r["peak_delta_bytes"] + sum(r["arg_bytes"].values())
            r["flops"] = analytic_flops(layers, args.batch, args.seq)
            k = r.get("kernels", {})
            if "ms" in k and k["ms"]["gemm"] > 0:
                r["achieved_gemm_tflops_in_step"] = (
                    r["flops"]["gemm_flops"] / (k["ms"]["gemm"] * 1e-3) / 1e12)
            if "ms" in k and k["ms"]["attention"] > 0:
                r["achieved_attention_tflops_in_step"] = (
                    r["flops"]["attention_flops"] / (k["ms"]["attention"] * 1e-3) / 1e12)
        except Exception as exc:
            r = {"error": repr(exc)}
        if args.worker == "eager" and "error" not in r:
            try:
                r["output_freed"] = peak_with_output_freed(model, x, tangent)
            except Exception as exc:
                r["output_freed"] = {"error": repr(exc)}
            if layers in (args.snapshot_layers or []):
                try:
                    r["snapshot"] = snapshot_at_peak(model, x, tangent)
                except Exception as exc:
                    r["snapshot"] = {"error": repr(exc)}
        out["configs"][key] = r
        print(f"[{args.worker}] {key}: {_short(r)}", flush=True)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        del model, x, tangent, fn
        torch.cuda.empty_cache()
    return 0


def _short(r: dict) -> str:
    if "error" in r:
        return "error " + r["error"]
    return (f"median {r['step_ms_median']:.2f} ms, min {r['step_ms_min']:.2f} ms, "
            f"back-to-back {r['step_ms_back_to_back_mean']:.2f} ms; peak delta "
            f"{r['peak_delta_bytes'] / GiB:.3f} GiB, abs {r['peak_abs_bytes'] / GiB:.3f} GiB, "
            f"comparable {r['comparable_peak_bytes'] / GiB:.3f} GiB; first step "
            f"{r['first_step_s']:.1f} s")


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def run_all(args) -> int:
    start = time.monotonic()
    result: dict = {"args": vars(args).copy(), "stages": {}}

    def save():
        result["elapsed_s"] = time.monotonic() - start
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)

    def left() -> float:
        return args.deadline_s - (time.monotonic() - start)

    torch = _torch()
    result["machine"] = machine_info()
    print(json.dumps(result["machine"], indent=1), flush=True)
    save()
    if not args.skip_micro:
        for name, fn in (("gemm", lambda: bench_gemms(spin_s=args.gemm_spin_s)),
                         ("hbm", bench_hbm)):
            t0 = time.monotonic()
            try:
                result[name] = fn()
            except Exception as exc:
                result[name] = {"error": repr(exc)}
            print(f"{name}: {time.monotonic() - t0:.1f} s", flush=True)
            save()
        torch.cuda.empty_cache()

    modes = ["eager"]
    if args.compile != "off":
        modes += ["compile-regional", "compile-whole"]
    for mode in modes:
        layers = args.layers
        if mode == "compile-whole":
            layers = [l for l in args.layers if l > 1]  # 1 layer: same as regional
            if not layers:
                continue
        budget = left() - 10
        if budget < 30:
            result["stages"][mode] = {"skipped": f"only {left():.0f} s left"}
            save()
            continue
        tmp = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", mode,
               "--layers", *map(str, layers), "--batch", str(args.batch),
               "--seq", str(args.seq), "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--json", tmp]
        if args.snapshot_layers:
            cmd += ["--snapshot-layers", *map(str, args.snapshot_layers)]
        t0 = time.monotonic()
        print(f"== {mode} layers={layers} (limit {budget:.0f} s)", flush=True)
        proc = subprocess.Popen(cmd, start_new_session=True)
        status = "ok"
        try:
            rc = proc.wait(timeout=budget)
            if rc != 0:
                status = f"exit {rc}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            status = f"killed after {budget:.0f} s"
        stage = {"status": status, "wall_s": time.monotonic() - t0}
        try:
            with open(tmp) as f:
                stage.update(json.load(f))
        except Exception:
            pass
        os.unlink(tmp)
        result["stages"][mode] = stage
        save()
    save()
    print_measured(result)
    return 0


def fmt_gib(b) -> str:
    return "-" if b is None else f"{b / GiB:.2f} GiB"


def print_measured(result: dict) -> None:
    if "gemm" in result and "rows" in result["gemm"]:
        print("\nbf16 GEMMs (M x K x N; median of 20):")
        print(f"{'linear':20} {'shape':18} {'kind':12} {'ms':>8} {'TFLOP/s':>8} {'b2b':>8}")
        for r in result["gemm"]["rows"]:
            print(f"{r['linear']:20} {r['shape_MxKxN']:18} {r['kind']:12} "
                  f"{r['median_ms']:8.3f} {r['tflops']:8.1f} "
                  f"{r.get('tflops_back_to_back', 0):8.1f}")
        g = result["gemm"]
        print(f"step-weighted: {g['step_weighted_tflops']:.1f} TFLOP/s per call, "
              f"{g.get('step_weighted_tflops_back_to_back', 0):.1f} back to back; "
              f"8192^3: {g['square_8192_tflops']:.1f} TFLOP/s")
    if "hbm" in result and "rows" in result["hbm"]:
        print("\nHBM (bytes read + written; median of 20):")
        for r in result["hbm"]["rows"]:
            print(f"{r['op']:28} {r['median_ms']:8.3f} ms {r['GBps']:8.0f} GB/s")
    print("\nsteps:")
    print(f"{'mode':18} {'layers':>6} {'median ms':>10} {'min ms':>8} {'b2b ms':>8} "
          f"{'peak delta':>11} {'abs peak':>10} {'comparable':>11} {'1st step s':>10}")
    for mode, stage in result.get("stages", {}).items():
        for key, r in stage.get("configs", {}).items():
            if "error" in r:
                print(f"{mode:18} {key}: {r['error']}")
                continue
            print(f"{mode:18} {key.split('=')[1]:>6} {r['step_ms_median']:10.2f} "
                  f"{r['step_ms_min']:8.2f} {r['step_ms_back_to_back_mean']:8.2f} "
                  f"{fmt_gib(r['peak_delta_bytes']):>11} {fmt_gib(r['peak_abs_bytes']):>10} "
                  f"{fmt_gib(r['comparable_peak_bytes']):>11} {r['first_step_s']:10.1f}")
            of = r.get("output_freed", {})
            if "peak_delta_bytes" in of:
                print(f"{'':18} peak delta with the step output freed before backward: "
                      f"{fmt_gib(of['peak_delta_bytes'])}")
            sn = r.get("snapshot", {})
            if "live_at_peak_by_site" in sn:
                print(f"{'':18} live at peak (allocated during the step, "
                      f"{fmt_gib(sn['peak_live_bytes_during_step'])}):")
                for site, n in sn["live_at_peak_by_site"].items():
                    print(f"{'':20} {n} x {site}")
            k = r.get("kernels")
            if k and "ms" in k:
                print(f"{'':18} kernels: gemm {k['ms']['gemm']:.2f} ms "
                      f"({r.get('achieved_gemm_tflops_in_step', 0):.0f} TFLOP/s), "
                      f"attention {k['ms']['attention']:.2f} ms, other "
                      f"{k['ms']['other']:.2f} ms, total {k['total_kernel_ms']:.2f} ms")
        if "status" in stage and stage["status"] != "ok":
            print(f"{mode:18} {stage['status']}")


# ---------------------------------------------------------------------------
# Comparison with the cost model (no torch needed)
# ---------------------------------------------------------------------------

EXAMPLES = {1: "test/Examples/llama_block.mlir", 8: "test/Examples/llama_8layers.mlir"}


def predict(offload_opt: str, example: str, profile: str | None) -> dict:
    opts = "plan=all min-bytes=1024 report=json report-file=-"
    if profile:
        opts += f" device-profile={profile}"
    r = subprocess.run(
        [offload_opt, str(ROOT / example), f"--offload-activations={opts}", "-o", "/dev/null"],
        capture_output=True, text=True, check=True,
    )
    p = json.loads(r.stdout)["steps"][0]["predicted"]
    return {"device": p["device"], "step_s": p["step_seconds_before"],
            "peak_bytes": p["peak_bytes_before"]}


def compare(args) -> int:
    with open(args.compare) as f:
        measured = json.load(f)
    profiles = [None] + ([args.device_profile] if args.device_profile else [])
    eager = measured["stages"]["eager"]["configs"]
    rows = []
    print("| example | profile | measured step (median) | predicted step | error "
          "| measured peak (comparable) | predicted peak | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for layers, example in EXAMPLES.items():
        m = eager.get(f"layers={layers}")
        if not m or "error" in m:
            continue
        for prof in profiles:
            p = predict(args.offload_opt, example, prof)
            ms = m["step_ms_median"]
            pm = p["step_s"] * 1e3
            mb = m["comparable_peak_bytes"]
            pb = p["peak_bytes"]
            row = {
                "example": Path(example).name, "profile": p["device"],
                "measured_step_ms": ms, "predicted_step_ms": pm,
                "step_error_pct": 100 * (pm - ms) / ms,
                "measured_peak_bytes": mb, "predicted_peak_bytes": pb,
                "peak_error_pct": 100 * (pb - mb) / mb,
            }
            rows.append(row)
            print(f"| `{row['example']}` | {row['profile']} | {ms:.1f} ms | {pm:.1f} ms | "
                  f"{row['step_error_pct']:+.1f}% | {mb / GiB:.2f} GiB | {pb / GiB:.2f} GiB | "
                  f"{row['peak_error_pct']:+.1f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, nargs="+", default=[1, 8])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--compile", choices=["auto", "off"], default="auto",
                   help="also measure under torch.compile (in subprocesses, "
                        "within --deadline-s)")
    p.add_argument("--deadline-s", type=float, default=430.0,
                   help="stop starting or running measurements after this long")
    p.add_argument("--skip-micro", action="store_true",
                   help="skip the GEMM and HBM benchmarks")
    p.add_argument("--gemm-spin-s", type=float, default=0.0,
                   help="run 8192^3 matmuls this long before the GEMM benchmark")
    p.add_argument("--snapshot-layers", type=int, nargs="*", default=[],
                   help="eager: record a CUDA memory history of one step of these "
                        "models and list what is live at its peak")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--compare", metavar="MEASURED_JSON",
                   help="print measured vs predicted (needs offload-opt, not torch)")
    p.add_argument("--offload-opt", default=str(ROOT / "build/bin/offload-opt"))
    p.add_argument("--device-profile", help="with --compare: also predict with this profile")
    args = p.parse_args(argv)
    if args.compare:
        return compare(args)
    if args.worker:
        return run_worker(args)
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
