#!/usr/bin/env python3
"""Which kernels the copies slow down, measured on the training step itself.

Builds two compiled rows of `python -m benchmarks.peers` in one process
(default: `compile` and an offload-mlir budget plan), warms both up, then
profiles single steps of each, alternating A B B A ..., with torch.profiler.
For each round it aligns B's kernels with A's by name (Inductor compiles
both from the same model, so apart from the copies' own ops the kernel
sequences match) and reports, per kernel class (GEMMs, attention, the
rest: Triton's fused memory-bound kernels and ATen's elementwise ones):

* the kernel time of A, and how much longer the matched kernels of B ran;
* the part of B's kernel time that ran while a copy transferred, and the
  added time per second of such overlap: the measured counterpart of the
  device profile's `copy_interference` (0.018, calibrated beside adds; 0
  beside GEMMs);
* the same comparison between two steps of A, as the noise floor.

    python python/benchmarks/kernel_interference.py --config bf16x8 \\
        --rows compile,offload-mlir:budget=15750000000 --rounds 8 --out OUT.json

With `--heat N` each profiled step follows N unprofiled steps of its row, so
that it runs at the power-limited clocks of a training loop rather than
those of a GPU that idled while the last trace was written.

It needs CUDA, the bridge's libraries (scripts/stage-python.sh) and
PYTHONPATH=python.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.peers import runner, traces  # noqa: E402
from benchmarks.peers.rows import CONFIGS, compiled_cuda_rows  # noqa: E402

CLASSES = ("gemm", "attention", "other")


def kernel_class(name: str) -> str:
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(k in n for k in ("nvjet", "gemm", "cutlass", "xmma", "cublas")):
        return "gemm"
    return "other"


def matching_name(name: str) -> str:
    """A kernel's name without Inductor's numbering (`triton_poi_fused_add_12`
    is the 12th such kernel of its graph; the same kernel of the other row's
    graph may have another number)."""
    return re.sub(r"_\d+$", "", name)


def overlap(a: float, b: float, spans: list[tuple[float, float]]) -> float:
    """Microseconds of [a, b) under any of `spans` (each counted once per
    span: two copies at once count twice, as the model's transfer seconds
    summed over the streams do)."""
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in spans if x < b and y > a)


def _idle(kernels, copies) -> float:
    """Microseconds between the first kernel's start and the last one's end
    with no kernel (and none of `copies`) running."""
    if not kernels:
        return 0.0
    step = (kernels[0][0], max(b for _, b, _ in kernels))
    return traces._uncovered_length([step], [(a, b) for a, b, _ in kernels] + list(copies))


def compare(base, other) -> dict:
    """Align other's kernels with base's by name; per class, base's time,
    the matched kernels' added time, and other's copy overlap. Each step is
    (kernels, copy spans, launch ends, stream-wait calls[, stream calls]) as
    traces.read_trace, traces.stream_waits and traces.stream_calls give them;
    launch ends may be None (unknown)."""
    (bk, _, bl, bw, *b_calls), (ok, o_copies, ol, ow, *o_calls) = base, other
    oc = [(a, b) for a, b, *_ in o_copies]
    matcher = difflib.SequenceMatcher(None, [matching_name(k[2]) for k in bk],
                                      [matching_name(k[2]) for k in ok], autojunk=False)
    out = {c: {"base_us": 0.0, "added_us": 0.0, "overlap_us": 0.0, "added_under_copy_us": 0.0,
               "added_clear_us": 0.0, "kernels": 0} for c in CLASSES}
    matched = 0
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            b = bk[block.a + i]
            o = ok[block.b + i]
            c = out[kernel_class(b[2])]
            added = (o[1] - o[0]) - (b[1] - b[0])
            under = overlap(o[0], o[1], oc)
            c["kernels"] += 1
            c["base_us"] += b[1] - b[0]
            c["added_us"] += added
            c["overlap_us"] += under
            c["added_under_copy_us" if under > 0 else "added_clear_us"] += added
            matched += 1
    # What one row runs and the other does not, by name: kernels the copies
    # brought in, or a fusion the rebuilt graph changed.
    unmatched: list[dict[str, list[float]]] = [{}, {}]
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for side, ks in ((0, bk[i1:i2]), (1, ok[j1:j2])):
            for k in ks:
                entry = unmatched[side].setdefault(matching_name(k[2])[:120], [0, 0.0])
                entry[0] += 1
                entry[1] += k[1] - k[0]
    # Device time with no kernel running, and with neither kernel nor copy;
    # and the time with no kernel by whether its next kernel was launched.
    idle = [_idle(ks, []) for ks in (bk, ok)] + [_idle(ok, oc)]
    causes = [traces.idle_causes(*side) for side in
              ((bk, bl, bw, []), (ok, ol, ow, [b for _, b in oc]))]
    by_calls = [traces.queued_by_calls(ks, ls, calls[0] if calls else [], copies)
                for ks, ls, calls, copies in ((bk, bl, b_calls, []),
                                              (ok, ol, o_calls, o_copies))]
    totals = {c: [sum(k[1] - k[0] for k in ks if kernel_class(k[2]) == c) for ks in (bk, ok)]
              for c in CLASSES}
    span = [ks[-1][1] - ks[0][0] if ks else 0.0 for ks in (bk, ok)]
    return {"classes": out, "matched": matched, "kernels": [len(bk), len(ok)],
            # Every kernel of each step by class, matched or not, and the
            # device's span from the first kernel's start to the last one's end.
            "class_totals_us": totals, "span_us": span,
            "idle_us": {"base": idle[0], "other": idle[1], "other_without_copy": idle[2]},
            "idle_causes_us": {"base": causes[0], "other": causes[1]},
            "queued_by_calls": {"base": by_calls[0], "other": by_calls[1]},
            "unmatched_base": unmatched[0], "unmatched_other": unmatched[1],
            "unmatched_base_us": sum(us for _, us in unmatched[0].values()),
            "unmatched_other_us": sum(us for _, us in unmatched[1].values()),
            "copy_us": sum(y - x for x, y in oc)}


def summarize(rounds: list[dict]) -> dict:
    """Per class: medians over the rounds, and the added time per second of
    copy overlap."""
    summary = {}
    for c in CLASSES:
        rows = [r["classes"][c] for r in rounds]
        med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        ratios = [row["added_under_copy_us"] / row["overlap_us"] for row in rows
                  if row["overlap_us"] > 0]
        med["added_per_copy_second"] = statistics.median(ratios) if ratios else None
        med["all_added_us"] = statistics.median(
            r["class_totals_us"][c][1] - r["class_totals_us"][c][0] for r in rounds)
        summary[c] = med
    for key in ("base", "other", "other_without_copy"):
        summary[f"idle_{key}_us"] = statistics.median(r["idle_us"][key] for r in rounds)
    for side in ("base", "other"):
        for cause in ("host_late_us", "queued_us", "unknown_us", "queued_at_stream_wait_us",
                      "queued_until_copy_end_us"):
            summary[f"idle_{side}_{cause}"] = statistics.median(
                r["idle_causes_us"][side][cause] for r in rounds)
    for side in ("base", "other"):
        per_round = [r.get("queued_by_calls", {}).get(side, {}) for r in rounds]
        keys = sorted({k for calls in per_round for k in calls})
        summary[f"queued_by_calls_{side}"] = {
            k: [statistics.median(calls.get(k, [0.0, 0])[i] for calls in per_round)
                for i in range(2)] for k in keys}
    summary["span_added_us"] = statistics.median(r["span_us"][1] - r["span_us"][0]
                                                 for r in rounds)
    summary["unmatched_other_us"] = statistics.median(r["unmatched_other_us"] for r in rounds)
    summary["unmatched_base_us"] = statistics.median(r["unmatched_base_us"] for r in rounds)
    return summary


def trace_file_name(which: int, row: str) -> str:
    """The kept trace of row A (`which` 0) or B (1): the side first, so two
    rows of one name (`--rows compile,compile`, the noise check) keep two
    files, and only letters, digits, '.', '_' and '-' (a row's options
    hold ':' and '=', which some file transfers refuse)."""
    return "ab"[which] + "-" + re.sub(r"[^A-Za-z0-9._-]", "_", row) + ".json.gz"


def main(argv: list[str] | None = None) -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="bf16x8", choices=sorted(CONFIGS))
    p.add_argument("--rows", default="compile,offload-mlir:budget=15750000000")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--heat", type=int, default=0, metavar="N",
                   help="run N unprofiled steps of the row right before each profiled "
                        "one, so it runs at the clocks of the timed steps: a step after "
                        "the pause of a trace export runs faster, below the GPU's power "
                        "limit (docs/benchmarks/peers/README.md)")
    p.add_argument("--out", default=None, help="JSON path for every figure")
    p.add_argument("--keep-traces", default=None, metavar="DIR",
                   help="gzip the last round's two chrome traces into DIR "
                        "(a-ROW.json.gz, b-ROW.json.gz; see trace_file_name)")
    args = p.parse_args(argv)
    # The rows --paired takes, with its checks (a compile row's amb= is
    # process-wide, so the other row must share it).
    try:
        rows = runner.paired_rows(args.rows, option="--rows")
    except ValueError as e:
        p.error(str(e))
    if not torch.cuda.is_available():
        print("kernel_interference.py needs CUDA", file=sys.stderr)
        return 2
    steps, tokens = compiled_cuda_rows(args.config, list(rows))

    def step(which: int) -> None:
        model, compiled = steps[which]
        for q in model.parameters():
            q.grad = None
        torch.cuda.synchronize()
        compiled(tokens[:, :-1], tokens[:, 1:]).backward()
        torch.cuda.synchronize()

    for _ in range(args.warmup):
        step(0)
        step(1)
    # The first profiled steps run slower (about 10%): profile one of each
    # and drop it.
    for which in (0, 1):
        with profile(activities=[ProfilerActivity.CUDA]):
            step(which)
    traces: list[list] = [[], []]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for which in ((0, 1) if r % 2 == 0 else (1, 0)):
                for _ in range(args.heat):
                    step(which)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    step(which)
                path = os.path.join(tmp, f"{which}-{r}.json")
                prof.export_chrome_trace(path)
                t = traces.read_trace(path)
                if args.keep_traces and r == args.rounds - 1:
                    os.makedirs(args.keep_traces, exist_ok=True)
                    with open(path, "rb") as src, gzip.open(os.path.join(
                            args.keep_traces, trace_file_name(which, rows[which].name)),
                            "wb") as dst:
                        shutil.copyfileobj(src, dst)
                traces[which].append((t.kernels, t.copies,
                                      t.launched, traces.stream_waits(t.host),
                                      traces.stream_calls(t.host)))
    versus = [compare(a, b) for a, b in zip(traces[0], traces[1])]
    noise = [compare(traces[0][i], traces[0][i + 1]) for i in range(len(traces[0]) - 1)]
    doc = {"rows": [r.name for r in rows], "config": args.config, "rounds": args.rounds,
           "heat": args.heat,
           "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "versus": summarize(versus), "noise": summarize(noise) if noise else None,
           "per_round": versus, "noise_per_round": noise}
    print(f"{rows[1].name} against {rows[0].name}, {args.config}, median of "
          f"{args.rounds} rounds ({doc['device']})")
    print("| class | kernel time (A) | added in B (matched) | of it under copies | copy overlap "
          "| added per copy second | noise: A against A | added in B (all kernels) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in CLASSES:
        v, n = doc["versus"][c], (doc["noise"] or {}).get(c, {})
        per = v["added_per_copy_second"]
        print(f"| {c} | {v['base_us'] / 1e3:.2f} ms | {v['added_us'] / 1e3:+.3f} ms | "
              f"{v['added_under_copy_us'] / 1e3:+.3f} ms | {v['overlap_us'] / 1e3:.1f} ms | "
              f"{'' if per is None else f'{per:.4f}'} | "
              f"{n.get('added_us', 0) / 1e3:+.3f} ms | {v['all_added_us'] / 1e3:+.3f} ms |")
    print(f"device span (first kernel to last): B {doc['versus']['span_added_us'] / 1e3:+.3f} ms "
          f"against A; A against A {(doc['noise'] or {}).get('span_added_us', 0) / 1e3:+.3f} ms")
    v = doc["versus"]
    print(f"device idle (no kernel): A {v['idle_base_us'] / 1e3:.3f} ms, B "
          f"{v['idle_other_us'] / 1e3:.3f} ms, of it with no copy either "
          f"{v['idle_other_without_copy_us'] / 1e3:.3f} ms")
    for side, key in (("A", "base"), ("B", "other")):
        print(f"{side}'s idle by cause: host late {v[f'idle_{key}_host_late_us'] / 1e3:.3f} ms, "
              f"kernel already launched {v[f'idle_{key}_queued_us'] / 1e3:.3f} ms "
              f"(at a stream wait {v[f'idle_{key}_queued_at_stream_wait_us'] / 1e3:.3f} ms, "
              f"until a copy ended {v[f'idle_{key}_queued_until_copy_end_us'] / 1e3:.3f} ms), "
              f"unknown {v[f'idle_{key}_unknown_us'] / 1e3:.3f} ms")
    for side, key in (("A", "base"), ("B", "other")):
        print(f"{side}'s queued idle by the stream work enqueued before each gap "
              "(median per step: ms, gaps):")
        calls = sorted(v[f"queued_by_calls_{key}"].items(), key=lambda kv: -kv[1][0])
        for name, (us, n) in calls[:12]:
            print(f"  {name}: {us / 1e3:.3f} ms, {n:g}")
    last = versus[-1]
    for side, key in (("B", "unmatched_other"), ("A", "unmatched_base")):
        worst = sorted(last[key].items(), key=lambda kv: -kv[1][1])[:8]
        print(f"{side}'s kernels without a match (last round): " + "; ".join(
            f"{n} x{c} {us / 1e3:.3f} ms" for n, (c, us) in worst))
    print(f"kernels of B without a match in A: {doc['versus']['unmatched_other_us'] / 1e3:.3f} ms;"
          f" of A without a match in B: {doc['versus']['unmatched_base_us'] / 1e3:.3f} ms")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
