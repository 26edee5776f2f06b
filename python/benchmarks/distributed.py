#!/usr/bin/env python3
"""offload-mlir under data parallelism: FSDP2 and DDP on the GPUs of one host.

    python -m benchmarks.distributed --modes fsdp2,fsdp2-whole,ddp --config bf16x8 \\
        --out docs/benchmarks/distributed-bf16x8

(from python/, or with PYTHONPATH=python). Each mode trains the Llama-3-8B-shaped
`LlamaLM` of `python -m benchmarks.peers` (its `--config`: 8 x 1024 tokens per
rank, different tokens on each rank) on `--nproc` ranks, one process per rank
(torch.multiprocessing.spawn), NCCL on CUDA and gloo on the CPU:

    fsdp2        each decoder layer compiled on its own, then `fully_shard` per
                 layer and on the root (as torchtitan applies them)
    fsdp2-whole  `fully_shard` per layer and on the root, then the whole model
                 compiled (Dynamo runs FSDP's hooks outside the graphs)
    ddp          DistributedDataParallel, the whole model compiled (Dynamo's
                 DDPOptimizer splits the graph at the gradient buckets)

Rows (`--rows`): `compile` (Inductor) and `offload-mlir` (the default
`offload_mlir.backend()`, `offload-mlir:prefetch=1` with loads started during
the backward graph before); `compile` runs twice (`compile` and
`compile-again`), the control that plain Inductor reproduces its own
gradients under the mode's sharding. Each row is a fresh set of processes, so
each peak is its own. Per rank: median step time after `--warmup` steps,
peak allocated device memory, pinned host memory (offload_rt's pinned peak
and PyTorch's host allocator's), bytes copied each way, a checksum of every
local gradient (the shard, under FSDP2), and one profiled step whose
collectives (NCCL kernels) are set against the copies on one timeline: their
count and summed duration, the part of it that ran while a copy did, and how
long each waited on the device after its launch. Against `compile`'s, the
durations tell whether copies delay the collectives. Each rank's results and
trace are kept in `<out>-ranks/<mode>/` (the traces for a viewer:
chrome://tracing, Perfetto).

Writes `<out>.json` (every figure) and `<out>.md` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.peers import rows as peer_rows  # noqa: E402
from benchmarks.peers.runner import _grad_checksum  # noqa: E402

MODES = ("fsdp2", "fsdp2-whole", "ddp")
ROWS = ("compile", "compile-again", "offload-mlir")
MiB = 2**20
GiB = 2**30


def parse_row(row: str) -> dict[str, Any] | None:
    """The offload_mlir.backend() arguments of a row, None for Inductor's
    rows (`compile`, `compile-again`). `offload-mlir` takes `prefetch=1`
    (loads start during the backward graph before), `min_bytes=N`,
    `instances=N` (backend(saved_instances=N)) and `max_recompute=X`."""
    family, _, opts = row.partition(":")
    if family in ("compile", "compile-again") and not opts:
        return None
    if family != "offload-mlir":
        raise ValueError(f"unknown row {row!r}; rows: compile, compile-again, "
                         "offload-mlir[:prefetch=1]")
    kw: dict[str, Any] = {}
    for opt in filter(None, opts.split(":")):
        key, _, value = opt.partition("=")
        if key == "prefetch" and value in ("0", "1"):
            kw["prefetch"] = value == "1"
        elif key == "min_bytes" and value.isdigit():
            kw["min_bytes"] = int(value)
        elif key == "instances" and peer_rows.is_instance_count(value):
            kw["saved_instances"] = int(value)
        elif key == "max_recompute" and peer_rows.is_recompute_fraction(value):
            kw["max_recompute"] = float(value)
        else:
            raise ValueError(f"row {row!r}: offload-mlir takes prefetch=0 or 1, min_bytes=N, "
                             "instances=N, max_recompute=X")
    return kw


def row_backend(row: str):
    """The torch.compile backend of a row."""
    kw = parse_row(row)
    if kw is None:
        return "inductor"
    import offload_mlir

    return offload_mlir.backend(**kw)


def build_model(args, device):
    """The benchmark's LlamaLM from seed 0 (the same weights on every rank
    and in every row)."""
    import torch

    from offload_mlir import models

    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    torch.manual_seed(0)
    return models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device, dtype=dtype)


def parallelize(model, mode: str, backend, device):
    """`model` sharded or replicated as `mode` says and compiled with
    `backend`; returns the callable a step runs (tokens, targets) -> loss."""
    import torch

    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ddp = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
        return torch.compile(ddp, backend=backend, dynamic=False)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (torch.distributed.get_world_size(),))
    layers = model.stack.layers
    if mode == "fsdp2":
        for i, layer in enumerate(layers):
            layers[i] = torch.compile(layer, backend=backend, dynamic=False)
    elif mode != "fsdp2-whole":
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    for layer in layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if mode == "fsdp2":
        return model
    return torch.compile(model, backend=backend, dynamic=False)


def local_grads(model) -> dict[str, Any]:
    """Each parameter's gradient on this rank: the local shard of a DTensor."""
    out = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        g = p.grad
        out[name.replace("_orig_mod.", "")] = g.to_local() if hasattr(g, "to_local") else g
    return out


def collective_figures(path: str) -> dict:
    """The NCCL kernels of a torch.profiler chrome trace against its copies:
    count, summed duration, the part that overlapped a host copy, and each
    kernel's wait on the device after the host call that launched it
    returned (a collective queued behind a copy's wait waits longer)."""
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    launch_end, nccl, copies = {}, [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat", ""), e.get("name", "")
        start, end = float(e.get("ts", 0)), float(e.get("ts", 0)) + float(e.get("dur", 0))
        corr = (e.get("args") or {}).get("correlation")
        if cat in ("cuda_runtime", "cuda_driver") and corr is not None:
            launch_end[corr] = end
        elif cat == "kernel" and "nccl" in name.lower():
            nccl.append((start, end, corr))
        elif cat == "gpu_memcpy" and ("DtoH" in name or "HtoD" in name):
            copies.append((start, end))
    durations = [b - a for a, b, _ in nccl]
    overlapped = sum(sum(max(0.0, min(b, d) - max(a, c)) for c, d in copies)
                     for a, b, _ in nccl)
    delays = [a - launch_end[c] for a, _, c in nccl if launch_end.get(c) is not None]
    return {
        "collectives": len(nccl),
        "collective_ms": sum(durations) * 1e-3,
        "collective_median_us": statistics.median(durations) if durations else 0.0,
        "collective_ms_beside_copies": overlapped * 1e-3,
        "collective_launch_wait_median_us": statistics.median(delays) if delays else 0.0,
        "collective_launch_wait_ms": sum(max(0.0, d) for d in delays) * 1e-3,
        "copy_ms": sum(b - a for a, b in copies) * 1e-3,
    }


def run_rank(rank: int, args, rows: list[str], out_dir: str) -> None:
    """One rank: each of `rows` in turn (Dynamo's caches reset between
    them), each result written to <out_dir>/<row>-rank<r>.json."""
    import torch
    import torch.distributed as dist

    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=args.nproc,
                            device_id=device if cuda else None)
    torch.use_deterministic_algorithms(True)
    try:
        for row in rows:
            torch._dynamo.reset()
            result = run_row_on_rank(rank, args, row, device, out_dir)
            with open(os.path.join(out_dir, f"{_file_name(row)}-rank{rank}.json"), "w") as f:
                json.dump(result, f)
    finally:
        dist.destroy_process_group()


def _file_name(row: str) -> str:
    return row.replace(":", "_").replace("=", "")


def run_row_on_rank(rank: int, args, row: str, device, out_dir: str) -> dict:
    """Builds, trains and measures one row on this rank."""
    import torch

    import offload_mlir

    cuda = device.type == "cuda"
    model = build_model(args, device)
    step_fn = parallelize(model, args.mode, row_backend(row), device)
    g = torch.Generator().manual_seed(1 + rank)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
            for _ in range(2)]
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step(i: int) -> tuple[float, float]:
        tokens = data[i % 2]
        for p in model.parameters():
            p.grad = None
        sync()
        t0 = time.perf_counter()
        loss = step_fn(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        sync()
        return time.perf_counter() - t0, loss.item()

    offloading = parse_row(row) is not None
    reports_before = len(offload_mlir.reports())
    times, losses = [], []
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            offload_mlir.reset_runtime_stats()
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
        dt, loss = step(i)
        losses.append(loss)
        if i >= args.warmup:
            times.append(dt)
    result: dict[str, Any] = {
        "row": row, "mode": args.mode, "rank": rank, "losses": losses,
        "step_s_median": statistics.median(times), "step_s_all": times,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "grad_checksums": {n: _grad_checksum(torch, t)
                           for n, t in local_grads(model).items()},
    }
    pinned = 0
    if offloading:
        rt = offload_mlir.runtime_stats()
        result["runtime_per_step"] = {"d2h_bytes": rt["d2h_bytes"] / args.steps,
                                      "h2d_bytes": rt["h2d_bytes"] / args.steps,
                                      "prefetched_loads": rt["prefetched_loads"] / args.steps}
        pinned = rt["pinned_peak_bytes"]
        reports = offload_mlir.reports()[reports_before:]
        result["graphs"] = len(reports)
        result["offloaded"] = sum(len(r.get("offloaded") or []) for r in reports)
        result["fallbacks"] = [r["fallback"] for r in reports if r.get("fallback")]
    if cuda:
        stats = torch.cuda.host_memory_stats()
        pinned = max(pinned, max((v for k, v in stats.items()
                                  if "allocated_bytes" in k and "peak" in k), default=0))
    result["pinned_bytes"] = pinned
    if cuda and not args.no_profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(0)
        path = os.path.join(out_dir, f"{_file_name(row)}-rank{rank}.trace.json")
        prof.export_chrome_trace(path)
        result["trace"] = collective_figures(path)
        result["trace_path"] = path
    return result


def run_rows(args, rows: list[str], out_dir: str) -> dict[str, list[dict]]:
    """Runs `rows` in turn on `args.nproc` fresh processes (one per rank);
    per row, each rank's result."""
    import torch.multiprocessing as mp

    os.makedirs(out_dir, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(20000 + (os.getpid() * 7 + len(os.listdir(out_dir))) % 20000)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    mp.spawn(run_rank, args=(args, rows, out_dir), nprocs=args.nproc, join=True)
    results = {}
    for row in rows:
        results[row] = []
        for rank in range(args.nproc):
            with open(os.path.join(out_dir, f"{_file_name(row)}-rank{rank}.json")) as f:
                results[row].append(json.load(f))
    return results


def compare(results: dict[str, list[dict]]) -> dict[str, dict]:
    """Per row of one mode, against `compile` on the same rank: gradients
    bit for bit on every rank, step time (the slowest rank's median) and
    each rank's peak."""
    base = results.get("compile")
    out = {}
    for row, ranks in results.items():
        entry: dict[str, Any] = {
            "step_s": max(r["step_s_median"] for r in ranks),
            "peaks": [r["peak_allocated_bytes"] for r in ranks],
            "pinned": [r["pinned_bytes"] for r in ranks]}
        if base is not None and row != "compile":
            entry["grads_identical"] = all(
                a["grad_checksums"] == b["grad_checksums"] and a["losses"] == b["losses"]
                for a, b in zip(ranks, base))
            entry["step_vs_compile"] = entry["step_s"] / max(r["step_s_median"] for r in base)
        out[row] = entry
    return out


def table(doc: dict) -> str:
    lines = ["| mode | row | step (slowest rank) | vs compile | peak per rank | "
             "pinned per rank | moved to host per rank and step | grads = compile | "
             "collectives per rank: ms (beside copies), median launch wait |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def gib(xs):
        return " / ".join("-" if x is None else f"{x / GiB:.2f} GiB" for x in xs)

    for mode, rows in doc["modes"].items():
        for row, c in rows["compare"].items():
            traces = [r.get("trace") for r in rows["results"][row]]
            coll = " / ".join(f"{t['collective_ms']:.1f} ({t['collective_ms_beside_copies']:.1f}), "
                              f"{t['collective_launch_wait_median_us']:.0f} us"
                              for t in traces if t) or "-"
            moved = [(r.get("runtime_per_step") or {}).get("d2h_bytes", 0)
                     for r in rows["results"][row]]
            ratio = f"{c['step_vs_compile']:.3f}x" if "step_vs_compile" in c else ""
            same = {True: "yes", False: "NO"}.get(c.get("grads_identical"), "")
            lines.append(f"| {mode} | {row} | {c['step_s'] * 1e3:.1f} ms | {ratio} | "
                         f"{gib(c['peaks'])} | {gib(c['pinned'])} | {gib(moved)} | {same} | "
                         f"{coll} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.distributed",
                                description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--config", default="bf16x8", choices=sorted(peer_rows.CONFIGS))
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "seq"):
        p.add_argument("--" + key.replace("_", "-"), type=int, default=None)
    p.add_argument("--dtype", choices=["bf16", "f32"], default=None)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--out", default=None, help="path prefix for .json and .md")
    args = p.parse_args(argv)
    config = dict(peer_rows.MODEL_DEFAULTS, **peer_rows.CONFIGS[args.config])
    for key, value in config.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    rows = [r for r in args.rows.split(",") if r]
    for row in rows:
        try:
            parse_row(row)
        except ValueError as e:
            p.error(str(e))
    doc: dict[str, Any] = {"config": args.config, "nproc": args.nproc, "device": args.device,
                           "modes": {}}
    for mode in filter(None, args.modes.split(",")):
        if mode not in MODES:
            p.error(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        args.mode = mode
        where = (args.out + "-ranks/" + mode) if args.out else tempfile.mkdtemp()
        # Each row in processes of its own, so that each peak is its own.
        results = {}
        for row in rows:
            results |= run_rows(args, [row], where)
        doc["modes"][mode] = {"results": results, "compare": compare(results)}
        if args.out:
            with open(args.out + ".json", "w") as f:
                json.dump(doc, f, indent=1)
            with open(args.out + ".md", "w") as f:
                f.write(table(doc))
    print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
