#!/usr/bin/env python3
"""What is live at the measured peak of one training step of a benchmark row.

Builds one compiled row of `python -m benchmarks.peers` (the same model,
weights and tokens), warms it up, then records the CUDA caching allocator's
history over one more step (`torch.cuda.memory._record_memory_history`) and
replays it: the peak of the bytes the step allocated, the allocation that
reached it, and the largest allocations live then, each with the line of
Python that made it. For a compiled step that line is in Inductor's
generated code (`buf12 = empty_strided_cuda(...)`, or the call of a copy op
that allocates, such as `torch.ops.offload.load_start`), which names the
buffer and, through the kernel that fills it, the op; the planner's report
(`peak_at_after`) names the op where the model puts the peak.

    PYTHONPATH=python python3 python/benchmarks/peak_snapshot.py --config bf16x8 \\
        --row offload-mlir:budget=15800000000 --out peak.json

It needs CUDA and the bridge's libraries (scripts/stage-python.sh).
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.peers import rows  # noqa: E402

MiB = 2**20


def frame_label(frames: list[dict] | None) -> dict:
    """The innermost frame of generated or project code (else the innermost
    Python frame), with its source line where the file can be read."""
    frames = frames or []
    pick = None
    for f in frames:
        name = str(f.get("filename", ""))
        if "torchinductor" in name or "offload_mlir" in name or "/tmp/" in name:
            pick = f
            break
    if pick is None:
        pick = next((f for f in frames if str(f.get("filename", "")).endswith(".py")), None)
    if pick is None:
        return {"where": "no Python frame"}
    filename, line = str(pick.get("filename", "")), int(pick.get("line", 0))
    return {"where": f"{os.path.basename(filename)}:{line} {pick.get('name', '')}",
            "code": linecache.getline(filename, line).strip()}


def peak_of_trace(trace: list[dict], top: int = 15) -> dict:
    """Replays allocator events (`alloc`, and `free_completed`, or
    `free_requested` where a trace has no completions) in order: the peak of
    the bytes allocated during the trace, the index of the event that reached
    it, and the `top` largest allocations live then."""
    free_action = ("free_completed" if any(e.get("action") == "free_completed" for e in trace)
                   else "free_requested")
    live: dict[int, dict] = {}
    current = peak = 0
    peak_index = -1
    peak_live: list[dict] = []
    for index, event in enumerate(trace):
        action = event.get("action")
        if action == "alloc":
            live[event["addr"]] = event
            current += event["size"]
            if current > peak:
                peak, peak_index = current, index
                peak_live = list(live.values())
        elif action == free_action and event["addr"] in live:
            current -= live.pop(event["addr"])["size"]
    peak_live.sort(key=lambda e: -e["size"])
    return {"peak_bytes": peak, "peak_index": peak_index, "events": len(trace),
            "live_at_peak": peak_live[:top], "all_live_at_peak": peak_live}


def record_allocations(run: Callable[[], None]) -> list[dict]:
    """The CUDA caching allocator's events on this device while `run()`
    runs, with the Python line of each allocation (for peak_of_trace)."""
    import torch

    torch.cuda.memory._record_memory_history(enabled="all", context="alloc",
                                             stacks="python", max_entries=1_000_000)
    try:
        run()
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    return snap["device_traces"][torch.cuda.current_device()]


def live_by_where(live: list[dict]) -> list[dict]:
    """The allocations live at the peak summed by the line that made them,
    largest first: which graph's buffers (or which eager op's) the peak
    holds."""
    groups: dict[str, dict] = {}
    for e in live:
        label = frame_label(e.get("frames"))
        g = groups.setdefault(label["where"], {"bytes": 0, "count": 0, **label})
        g["bytes"] += e["size"]
        g["count"] += 1
    return sorted(groups.values(), key=lambda g: -g["bytes"])


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="bf16x8", choices=sorted(rows.CONFIGS))
    p.add_argument("--row", default="offload-mlir:budget=15800000000")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--out", default=None, help="JSON path for every figure")
    args = p.parse_args(argv)
    try:
        row = rows.parse_row(args.row)
    except ValueError as e:
        p.error(str(e))
    if not row.compiled or row.family not in ("compile", "offload-mlir"):
        p.error(f"--row takes a compile or offload-mlir row, not {row.name}")
    if not torch.cuda.is_available():
        print("peak_snapshot.py needs CUDA", file=sys.stderr)
        return 2
    [(model, compiled)], tokens = rows.compiled_cuda_rows(args.config, [row])

    def step() -> None:
        for q in model.parameters():
            q.grad = None
        compiled(tokens[:, :-1], tokens[:, 1:]).backward()
        torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    for q in model.parameters():
        q.grad = None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    trace = record_allocations(lambda: compiled(tokens[:, :-1], tokens[:, 1:]).backward())
    found = peak_of_trace(trace, args.top)
    reached = trace[found["peak_index"]] if found["peak_index"] >= 0 else {}
    result: dict[str, Any] = {
        "row": row.name, "config": args.config, "device": torch.cuda.get_device_name(),
        "allocated_before_step": base,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "peak": base + found["peak_bytes"],
        "peak_event": found["peak_index"], "events": found["events"],
        "reached_by": {"bytes": reached.get("size"), **frame_label(reached.get("frames"))},
        "live_at_peak": [{"bytes": e["size"], **frame_label(e.get("frames"))}
                         for e in found["live_at_peak"]],
        "live_at_peak_by_where": live_by_where(found["all_live_at_peak"]),
    }
    print(f"{row.name}: peak {result['peak'] / 2**30:.2f} GiB "
          f"(max_memory_allocated {result['max_memory_allocated'] / 2**30:.2f} GiB), "
          f"reached at event {found['peak_index']} of {found['events']} by "
          f"{result['reached_by'].get('where')}: {result['reached_by'].get('code', '')}")
    for e in result["live_at_peak"]:
        print(f"  {e['bytes'] / MiB:10.1f} MiB  {e['where']}  {e.get('code', '')[:140]}")
    print("live at the peak, by the line that allocated it:")
    for g in result["live_at_peak_by_where"][:args.top]:
        print(f"  {g['bytes'] / MiB:10.1f} MiB in {g['count']:4d}  {g['where']}  "
              f"{g.get('code', '')[:120]}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
