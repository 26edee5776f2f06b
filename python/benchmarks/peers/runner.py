"""Running the rows: one row in its own process (`run_row`, the child of
`--row`), two compiled rows interleaved in one process (`run_paired`), and
the environment and arguments of the child processes."""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from .rows import (
    INDUCTOR_FAMILIES, Row, _mark_all_for_offload, _set_process_compiler_config,
    checkpoint_layers, compile_model, parse_row)
from .offloaders import (
    LayerGroupOffloader, _deepspeed_cpu_checkpointing, _megatron_fine_grained_offloading,
    _thunder_cpu_offloading, _torchtune_offloader)
from .traces import _trace_figures, predicted_copies


def _grad_checksum(torch, t) -> list:
    """Position-weighted sum of the gradient's bits, and its float64 sum:
    equal checksums mean equal bits (up to a collision)."""
    flat = t.detach().reshape(-1)
    bits = flat.view({1: torch.int8, 2: torch.int16, 4: torch.int32,
                      8: torch.int64}[flat.element_size()])
    total, chunk = 0, 1 << 24
    for start in range(0, bits.numel(), chunk):
        part = bits[start:start + chunk].to(torch.int64)
        weight = torch.arange(start, start + part.numel(), device=part.device,
                              dtype=torch.int64) % 1000003 + 1
        total += int((part * weight).sum().item())
    return [total & 0xFFFFFFFFFFFFFFFF, float(flat.double().sum().item())]


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_row(args: argparse.Namespace, row: Row) -> dict:
    import torch

    from offload_mlir import models

    device = args.device
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    # torch-offload-stream's prefetch benchmarks kernels while compiling,
    # which deterministic Inductor refuses.
    deterministic = args.deterministic and "prefetch" not in row.options
    if deterministic:
        torch.use_deterministic_algorithms(True)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    torch.manual_seed(0)
    model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device, dtype=dtype)
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
           if args.optimizer == "adamw" else None)

    fam, o = row.family, row.options
    checkpoint_layers(model, row.checkpointing)
    _set_process_compiler_config(torch, row)
    if fam.startswith("torch-offload"):
        torch._functorch.config.enable_activation_offloading = True
        torch._inductor.config.joint_custom_post_pass = _mark_all_for_offload
        if fam == "torch-offload-stream":
            torch._functorch.config.activation_offload_separate_stream = True
            torch._functorch.config.activation_offload_sink_wait = True
            torch._functorch.config.activation_reload_prefetch = "prefetch" in o

    hooks: Any = contextlib.nullcontext()
    offloader = None
    if fam == "layer-group":
        offloader = LayerGroupOffloader(model, int(o["layers"]) if "layers" in o else None,
                                        int(o.get("min_bytes", 1 << 20)))
        hooks = offloader.hooks
    elif fam == "torchtune":
        hooks = _torchtune_offloader(model)
    peer_figures = None
    if fam == "deepspeed-cpu-ckpt":
        peer_figures = _deepspeed_cpu_checkpointing(
            model, o.get("partition", "0").lower() in ("1", "true"))
    elif fam == "megatron-offload":
        peer_figures = _megatron_fine_grained_offloading(model)

    if fam == "thunder-offload":
        jitted = _thunder_cpu_offloading(model)

        def forward(tokens, targets):
            return jitted(tokens, targets)
    elif row.compiled:
        compiled = compile_model(torch, model, row)

        def forward(tokens, targets):
            return compiled(tokens, targets)
    else:
        def forward(tokens, targets):
            with hooks:
                logits = model.logits(tokens)
            return model.loss(logits, targets)

    if fam == "offload-mlir":
        import offload_mlir

    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
            for _ in range(2)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # With an optimizer, forward and backward are also measured on their own:
    # the planner predicts them, not the optimizer's step. Their time comes
    # from CUDA events (no synchronisation added before the optimizer), their
    # peak from the allocator's books when backward returns (it allocates on
    # the host's side, so the device need not have caught up).
    events = opt is not None and device == "cuda"

    def step(i: int):
        tokens = data[i % 2]
        for p in model.parameters():
            p.grad = None
        sync()
        t0 = time.perf_counter()
        if events:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
        loss = forward(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        fwd_bwd = None  # (seconds, peak bytes or None) of forward and backward
        if opt is not None:
            if events:
                end.record()
                peak_at_backward = torch.cuda.max_memory_allocated()
            else:
                fwd_bwd = (time.perf_counter() - t0, None)
            opt.step()
        sync()
        dt = time.perf_counter() - t0
        if events:
            fwd_bwd = (begin.elapsed_time(end) / 1e3, peak_at_backward)
        return dt, loss, fwd_bwd

    times, losses, first_step_s = [], [], 0.0
    fwd_bwd_times, fwd_bwd_peak = [], 0
    peak = 0
    for i in range(args.warmup + args.steps):
        if i == args.warmup and fam == "offload-mlir":
            offload_mlir.reset_runtime_stats()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        dt, loss, fwd_bwd = step(i)
        losses.append(loss.item())
        if i == 0:
            first_step_s = dt
        if i >= args.warmup:
            times.append(dt)
            if device == "cuda":
                peak = max(peak, torch.cuda.max_memory_allocated())
            if fwd_bwd is not None:
                fwd_bwd_times.append(fwd_bwd[0])
                fwd_bwd_peak = max(fwd_bwd_peak, fwd_bwd[1] or 0)
    result: dict[str, Any] = {
        "row": row.name, "family": fam, "compiled": row.compiled, "baseline": row.baseline,
        "grad_baseline": row.grad_baseline,
        "step_s_median": statistics.median(times), "step_s_all": times,
        "first_step_s": first_step_s, "peak_allocated_bytes": peak, "losses": losses,
        "deterministic": deterministic,
        "grad_checksums": {n: _grad_checksum(torch, p.grad)
                           for n, p in model.named_parameters() if p.grad is not None},
    }
    if opt is not None:
        # The optimizer's state stays resident through forward and backward,
        # outside the graphs the planner sees: subtracted from their peak, it
        # leaves what the planner's predicted peak is comparable with.
        state_bytes = sum(t.numel() * t.element_size() for st in opt.state.values()
                          for t in st.values() if torch.is_tensor(t) and t.device.type == device)
        result["forward_backward"] = {
            "step_s_median": statistics.median(fwd_bwd_times),
            "peak_allocated_bytes": fwd_bwd_peak if device == "cuda" else None,
            "optimizer_state_bytes": state_bytes}
    if fam == "offload-mlir":
        rt = offload_mlir.runtime_stats()
        n = args.steps
        result["runtime_per_step"] = {
            "d2h_bytes": rt["d2h_bytes"] / n, "h2d_bytes": rt["h2d_bytes"] / n,
            # None unless OFFLOAD_RT_TIMING=1: the profiled step's trace
            # gives the exposed copy time instead.
            "exposed_wait_seconds": (None if rt["exposed_wait_seconds"] is None
                                     else rt["exposed_wait_seconds"] / n),
            "pinned_peak_bytes": rt["pinned_peak_bytes"],
            # per-layer=1: loads the backward of the layer after started.
            "prefetched_loads": rt["prefetched_loads"] / n}
        rep = offload_mlir.last_report() or {}
        result["fallback"] = rep.get("fallback")
        result["offloaded"] = len(rep.get("offloaded") or [])
        # The saved values the joint plan computes again in backward (the
        # partitioner carried them out), with the forward nodes each repeats.
        result["recomputed"] = rep.get("recomputed") or {}
        joint = ((rep.get("joint_plan") or {}).get("steps")) or []
        if joint:
            result["joint_planned"] = joint[0].get("planned")
        steps = ((rep.get("pipeline") or {}).get("steps")) or []
        if steps:
            result["predicted"] = steps[0].get("predicted")
            result["predicted_copies"] = predicted_copies(steps[0])
    if offloader is not None:
        result["runtime_per_step"] = {
            "d2h_bytes": offloader.d2h_bytes / (args.warmup + args.steps),
            "h2d_bytes": offloader.h2d_bytes / (args.warmup + args.steps)}
    if peer_figures is not None:
        # The package's own counts, over every step so far (the profiled
        # step's trace has the bytes copied).
        result["peer"] = peer_figures()

    # One more step under the profiler, for the copies and what hid them.
    if device == "cuda" and not args.no_profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(args.warmup + args.steps)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            result["trace"] = _trace_figures(path)
    pinned = (result.get("runtime_per_step") or {}).get("pinned_peak_bytes", 0)
    if device == "cuda":
        stats = torch.cuda.host_memory_stats()
        host_peak = max((v for k, v in stats.items()
                         if "allocated_bytes" in k and "peak" in k), default=0)
        pinned = max(pinned, host_peak, sum(b.numel() * b.element_size()
                                            for b in (offloader.pool.values() if offloader else [])))
    result["pinned_bytes"] = pinned
    result["host_rss_peak_bytes"] = _peak_rss_bytes()
    return result


def paired_rows(spec: str, option: str = "--paired") -> tuple[Row, Row]:
    """The two rows of `--paired A,B` (or of another tool's `option` that
    takes the same pair); ValueError naming `option` if they cannot be
    paired."""
    names = spec.split(",")
    if len(names) != 2:
        raise ValueError(f"{option} takes two rows, A,B, not {spec!r}")
    row_a, row_b = (parse_row(s) for s in names)
    for row in (row_a, row_b):
        if row.family not in (*INDUCTOR_FAMILIES, "offload-mlir"):
            raise ValueError(f"{option} takes compile and offload-mlir rows (and "
                             f"checkpoint-compile, sac-compile), not {row.name}")
    # A compile row's recompute budget, partitioner and Inductor settings are
    # torch's process-wide settings, which an offload-mlir row without its
    # own would inherit.
    for row, other in ((row_a, row_b), (row_b, row_a)):
        for key, value in row.compiler_options.items():
            if row.family in INDUCTOR_FAMILIES and other.options.get(key) != value:
                raise ValueError(f"{option}: a compile row's {key}= applies to both rows; "
                                 f"give the other row the same {key}=")
    return row_a, row_b


def run_paired(args: argparse.Namespace, row_a: Row, row_b: Row) -> dict:
    """Two compiled rows (from paired_rows) in one process, their steps
    interleaved."""
    import torch

    from offload_mlir import models

    device = args.device
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    for row in (row_a, row_b):
        _set_process_compiler_config(torch, row)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    cfg = models.LlamaConfig(hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                             ffn=args.ffn)
    steps = []
    for row in (row_a, row_b):
        torch.manual_seed(0)
        model = models.LlamaLM(cfg, args.layers, args.seq, args.vocab, device=device,
                               dtype=dtype)
        checkpoint_layers(model, row.checkpointing)
        opt = (torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
               if args.optimizer == "adamw" else None)
        steps.append((model, compile_model(torch, model, row), opt))
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
            for _ in range(2)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    # On CUDA, events on the compute stream split each step in two: from its
    # start to the end of forward's work there, and from that to the end of
    # backward's (and the optimizer's). A cost that a paired wall-clock
    # ratio cannot place shows in one stretch or the other.
    cuda = device == "cuda"

    def step(which: int, i: int) -> tuple[float, float, float, float, float]:
        """(wall seconds, forward and rest device seconds (0 off CUDA), and
        the host's seconds in the forward call and in the rest)."""
        model, compiled, opt = steps[which]
        tokens = data[i % 2]
        for p in model.parameters():
            p.grad = None
        sync()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if cuda else []
        t0 = time.perf_counter()
        if cuda:
            marks[0].record()
        loss = compiled(tokens[:, :-1], tokens[:, 1:])
        t1 = time.perf_counter()
        if cuda:
            marks[1].record()
        loss.backward()
        if opt is not None:
            opt.step()
        t2 = time.perf_counter()
        if cuda:
            marks[2].record()
        sync()
        wall = time.perf_counter() - t0
        if not cuda:
            return wall, 0.0, 0.0, t1 - t0, t2 - t1
        return (wall, marks[0].elapsed_time(marks[1]) * 1e-3,
                marks[1].elapsed_time(marks[2]) * 1e-3, t1 - t0, t2 - t1)

    for i in range(args.warmup):
        step(0, i)
        step(1, i)
    times: list[list[float]] = [[], []]
    device_times: list[list[tuple[float, float]]] = [[], []]
    host_times: list[list[tuple[float, float]]] = [[], []]
    ratios = []
    for i in range(args.steps):
        # A B, then B A: each row goes first as often as the other.
        order = (0, 1) if i % 2 == 0 else (1, 0)
        got = {}
        for which in order:
            wall, fwd, rest, host_fwd, host_rest = step(which, args.warmup + i)
            got[which] = wall
            times[which].append(wall)
            device_times[which].append((fwd, rest))
            host_times[which].append((host_fwd, host_rest))
        ratios.append(got[1] / got[0])
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    stretches = {}
    if cuda:
        # Per stretch, the median over pairs of B's device time over A's.
        # And the host's time in the same stretch (the forward call's, and
        # backward's with the optimizer's): near the device's, the host
        # sets the pace, and whatever it does more shows in the step.
        for name, pick in (("forward", lambda t: t[0]), ("backward", lambda t: t[1]),
                           ("step", lambda t: t[0] + t[1])):
            per_pair = [pick(b) / pick(a) for a, b in zip(*device_times) if pick(a) > 0]
            stretches[name] = {
                "median_s": [statistics.median(pick(t) for t in ts) for ts in device_times],
                "ratio_median": statistics.median(per_pair) if per_pair else None,
                "host_median_s": [statistics.median(pick(t) for t in ts)
                                  for ts in host_times]}
    return {
        # Device time on the compute stream, from CUDA events: forward (the
        # compiled call), backward (with the optimizer, if any) and both.
        "device": stretches or None,
        "rows": [row_a.name, row_b.name],
        "steps": args.steps,
        "step_s_all": times,
        "step_s_median": [statistics.median(t) for t in times],
        "ratio_all": ratios,
        "ratio_median": statistics.median(ratios),
        "ratio_q1": q[0], "ratio_q3": q[2],
        "ratio_of_medians": statistics.median(times[1]) / statistics.median(times[0]),
        "pairs_b_not_slower": sum(r <= 1 for r in ratios),
    }


def pool_paired(runs: list[dict]) -> dict:
    """The pairs of several processes (one run_paired result each) together:
    the median and quartiles of all their ratios, and each process's own
    median, whose spread is what one process's figure is worth."""
    ratios = [x for r in runs for x in r["ratio_all"]]
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    medians = [r["ratio_median"] for r in runs]
    return {"rows": runs[0]["rows"], "processes": len(runs), "steps": len(ratios),
            "ratio_median": statistics.median(ratios), "ratio_q1": q[0], "ratio_q3": q[2],
            "process_ratio_medians": medians,
            "median_of_process_medians": statistics.median(medians),
            "pairs_b_not_slower": sum(x <= 1 for x in ratios)}


def child_args(argv: list[str], dropped: tuple[str, ...]) -> list[str]:
    """`argv` without the options in `dropped` and their values: what the
    parent passes on to each child process."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in dropped:
            skip = True
        elif not a.startswith(tuple(d + "=" for d in dropped)):
            kept.append(a)
    return kept


def _machine(args) -> dict:
    import torch

    info = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if args.device == "cuda" and torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name()
    return info


def _child_env() -> dict:
    """The environment of a child process of the benchmark: python/ (this
    benchmark and offload_mlir) on its path, and cuBLAS's workspace fixed
    for deterministic algorithms."""
    env = dict(os.environ)
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    python_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([python_dir, env.get("PYTHONPATH", "")])
    return env
