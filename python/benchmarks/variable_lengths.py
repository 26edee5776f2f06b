"""Variable-length training on one GPU: offload-mlir against plain
`torch.compile`, both with the same dynamic setting, at each length.

    python -m benchmarks.variable_lengths --lengths 512 1024 2048 3072 4096

Builds `models.TitanLM` (Llama-3-8B-shaped layers, torchtitan's complex
rotary embedding) twice from one seed: once under
`torch.compile(model, dynamic=...)`, once under
`torch.compile(model, backend=offload_mlir.backend(), dynamic=...)`, and a
third plain model as the control (plain Inductor against itself). It runs
every length once through each (with `dynamic=None` the first length
compiles static and the second recompiles with the length a symbol), then
per length: the gradients of one step against plain compile (bit for bit,
deterministic algorithms), the peak memory of a step above what is
allocated before it, and the step time over `--iters` interleaved pairs
(median of the per-pair ratios). Prints one row per length.

`--examine L` looks at one length more closely, for a row that misses: a
torch.profiler trace of one plain and one offload step at L (kernel busy
time, device idle time by cause, copy time no kernel hid; the figures of
`peers.traces`), and what is live at each step's peak (the allocator's
history replayed as `peak_snapshot.py` does), written with `--out`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import statistics
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TORCHINDUCTOR_DETERMINISTIC", "1")

import torch  # noqa: E402

import offload_mlir  # noqa: E402
from offload_mlir import models  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import peak_snapshot  # noqa: E402
from benchmarks.peers import traces  # noqa: E402


def _batch(length: int, batch: int, vocab: int, mark: bool):
    g = torch.Generator().manual_seed(length)
    tokens = torch.randint(0, vocab, (batch, length + 1), generator=g).cuda()
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    if mark:
        torch._dynamo.mark_dynamic(x, 1)
        torch._dynamo.mark_dynamic(y, 1)
    return x, y


def _step(fn, model, x, y):
    for p in model.parameters():
        p.grad = None
    fn(x, y).backward()


def _peak(fn, model, x, y) -> int:
    torch.cuda.synchronize()
    for p in model.parameters():
        p.grad = None
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn(x, y).backward()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _seconds(fn, model, x, y) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    _step(fn, model, x, y)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000


def _trace(fn, model, x, y, keep: str | None = None) -> dict:
    """The figures of a torch.profiler trace of one step (peers.traces);
    the trace itself is kept at `keep` if given."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        _step(fn, model, x, y)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        figures = traces._trace_figures(path)
        if keep:
            import shutil

            shutil.copyfile(path, keep)
    figures.pop("copies", None)
    return figures


def issue_and_wait_seconds(fn, model, x, y) -> tuple[float, float]:
    """One step from an idle device: the host's time to issue it (forward
    and backward called, the device not waited for), and the time until the
    device has run it too."""
    import time

    torch.cuda.synchronize()
    start = time.perf_counter()
    _step(fn, model, x, y)
    issued = time.perf_counter()
    torch.cuda.synchronize()
    return issued - start, time.perf_counter() - start


def _host_seconds(fn, model, x, y, iters: int = 10) -> float:
    """The host's time to issue one step, median of `iters`: where it is
    near the step's device time, host work added per step (the copy ops')
    adds to the step."""
    return statistics.median(issue_and_wait_seconds(fn, model, x, y)[0] for _ in range(iters))


def _live_at_peak(fn, model, x, y, top: int = 12) -> dict:
    """What is live at the peak of one step, by the line that allocated it."""
    torch.cuda.synchronize()
    for p in model.parameters():
        p.grad = None
    base = torch.cuda.memory_allocated()
    found = peak_snapshot.peak_of_trace(
        peak_snapshot.record_allocations(lambda: fn(x, y).backward()), top)
    return {"allocated_before_step": base, "peak_above_before": found["peak_bytes"],
            "live_at_peak_by_where": peak_snapshot.live_by_where(found["all_live_at_peak"])[:top]}


def _examine(fns, length: int, args) -> dict:
    """--examine: the trace and the peak's contents at one length."""
    x, y = _batch(length, args.batch, args.vocab, args.dynamic == "mark_dynamic")
    found = {}
    for name in ("plain", "offload"):
        fn, model = fns[name]
        _step(fn, model, x, y)
        host = _host_seconds(fn, model, x, y)
        device = statistics.median(_seconds(fn, model, x, y) for _ in range(10))
        trace = _trace(fn, model, x, y, keep=args.traces and os.path.join(
            args.traces, f"{name}-{length}.json"))
        live = _live_at_peak(fn, model, x, y)
        found[name] = {"host_seconds": host, "step_seconds": device, "trace": trace,
                       "peak": live}
        print(f"{name} at {length}: the host issues a step in {host * 1e3:.2f} ms; "
              f"the step takes {device * 1e3:.2f} ms")
        idle = ", ".join(f"{k} {v:.2f}" for k, v in trace["kernel_idle_ms"].items())
        print(f"{name} at {length}: step trace {trace['step_trace_ms']:.2f} ms, kernels busy "
              f"{trace['kernel_busy_ms']:.2f} ms, no kernel running ({idle}) ms, copies "
              f"{trace['copy_seconds'] * 1e3:.2f} ms of which no kernel hid "
              f"{trace['exposed_copy_seconds'] * 1e3:.2f} ms; peak "
              f"{live['peak_above_before'] / 2**30:.2f} GiB above the step's start, holding:")
        for g in live["live_at_peak_by_where"]:
            print(f"  {g['bytes'] / 2**20:9.1f} MiB in {g['count']:4d}  {g['where']}  "
                  f"{g.get('code', '')[:110]}")
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 3072, 4096])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--dynamic", choices=["none", "true", "mark_dynamic"], default="none")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--replan", type=int, default=0,
                   help="backend(replan_far_from_hint=N): plan a graph again, at most N "
                        "times, at a length 4x or more from every plan's hint")
    p.add_argument("--drop-peak-neutral", choices=["auto", "0", "1"], default="auto",
                   help="backend(drop_peak_neutral=): auto (None) decides per graph")
    p.add_argument("--examine", type=int, nargs="*", default=[], metavar="LENGTH",
                   help="trace one step of each model at these lengths and show what is "
                        "live at their peaks")
    p.add_argument("--out", help="write --examine's figures here (JSON)")
    p.add_argument("--traces", help="keep --examine's profiler traces in this folder")
    args = p.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    cfg = models.preset("llama-block")
    plain = models.TitanLM(cfg, args.layers, max(args.lengths), args.vocab,
                           device="cuda", dtype=torch.bfloat16)
    control, offloaded = copy.deepcopy(plain), copy.deepcopy(plain)
    dynamic = {"none": None, "true": True, "mark_dynamic": False}[args.dynamic]
    mark = args.dynamic == "mark_dynamic"
    fns = {
        "plain": (torch.compile(plain, dynamic=dynamic), plain),
        "control": (torch.compile(control, dynamic=dynamic), control),
        "offload": (torch.compile(offloaded,
                                  backend=offload_mlir.backend(
                                      replan_far_from_hint=args.replan,
                                      drop_peak_neutral={"auto": None, "0": False, "1": True}[
                                          args.drop_peak_neutral]),
                                  dynamic=dynamic),
                    offloaded),
    }
    first = len(offload_mlir.reports())
    for length in args.lengths:  # compile: static first, then the dynamic graph
        for fn, model in fns.values():
            _step(fn, model, *_batch(length, args.batch, args.vocab, mark))
    hints = [r["size_hints"] for r in offload_mlir.reports()[first:] if r.get("size_hints")]
    print(f"TitanLM, Llama-3-8B-shaped, {args.layers} layers, batch {args.batch}, bf16, "
          f"dynamic={args.dynamic}, replan_far_from_hint={args.replan}, "
          f"drop_peak_neutral={args.drop_peak_neutral}; the offload graph's "
          f"dynamic plans were made at {hints}; {torch.cuda.get_device_name()}")
    print("| length | gradients (control, offload) | peak compile GiB | peak offload GiB "
          "| step compile ms | offload / compile | d2h GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for length in args.lengths:
        x, y = _batch(length, args.batch, args.vocab, mark)
        grads = {}
        for name, (fn, model) in fns.items():
            _step(fn, model, x, y)
            grads[name] = [q.grad.clone() for q in model.parameters()]
        same = [all(torch.equal(a, b) for a, b in zip(grads["plain"], grads[other]))
                for other in ("control", "offload")]
        del grads
        peaks = {name: _peak(fn, model, x, y) for name, (fn, model) in fns.items()
                 if name != "control"}
        offload_mlir.reset_runtime_stats()
        _step(*fns["offload"], x, y)
        d2h = offload_mlir.runtime_stats()["d2h_bytes"]
        ratios, times = [], []
        for _ in range(args.iters):
            t_plain = _seconds(*fns["plain"], x, y)
            t_off = _seconds(*fns["offload"], x, y)
            ratios.append(t_off / t_plain)
            times.append(t_plain)
        print(f"| {length} | {same[0]}, {same[1]} | {peaks['plain'] / 2**30:.2f} | "
              f"{peaks['offload'] / 2**30:.2f} | {statistics.median(times) * 1e3:.1f} | "
              f"{statistics.median(ratios):.3f}x | {d2h / 2**30:.2f} |")
    examined = {length: _examine(fns, length, args) for length in args.examine}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"examined": examined, "plans": hints,
                       "reports": offload_mlir.reports()[first:]}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
