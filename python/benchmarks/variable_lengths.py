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
                                  backend=offload_mlir.backend(replan_far_from_hint=args.replan),
                                  dynamic=dynamic),
                    offloaded),
    }
    first = len(offload_mlir.reports())
    for length in args.lengths:  # compile: static first, then the dynamic graph
        for fn, model in fns.values():
            _step(fn, model, *_batch(length, args.batch, args.vocab, mark))
    hints = [r["size_hints"] for r in offload_mlir.reports()[first:] if r.get("size_hints")]
    print(f"TitanLM, Llama-3-8B-shaped, {args.layers} layers, batch {args.batch}, bf16, "
          f"dynamic={args.dynamic}, replan_far_from_hint={args.replan}; the offload graph's "
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
