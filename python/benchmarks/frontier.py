#!/usr/bin/env python3
"""The predicted memory/time frontier: peak against step time over budgets.

For each traced training step given, runs `offload-opt --offload-activations`
with a sweep of `budget=` fractions (and `plan=hidden`, `plan=all`, and
nothing offloaded), reads each run's JSON report, and writes

* `<out>.json`: every run's predicted peak, step time, exposed copy time and
  offloaded bytes (or the error for a budget out of reach);
* `<out>.md`: a table per step;
* `<out>.png`: predicted peak against predicted step time, one line per
  step through its budget plans, with plan=hidden marked.

Everything here is the cost model's prediction, not a measurement.

It also checks, per step, what issue 9 asks of the planner, and prints a
line per violation (exit status 1 if any):

* with `schedule=true`, no plan predicts a higher peak than offloading
  nothing;
* `plan=hidden` predicts a step at most 1% slower than offloading nothing;
* where plan=hidden reaches a peak at or below 0.9 of the peak without
  offload, `budget=0.9` fits at most 5% slower;
* a looser budget never predicts a slower step (among budgets that fit),
  and no budget plan predicts a slower step than a plan=hidden that meets
  the same budget, by more than 1% of the step.

The pipeline options default to the PyTorch bridge's (1 MiB `min-bytes`,
`schedule=true release=at-wait fuse-memory-bound=true`, the packaged H100
profile).

    python3 python/benchmarks/frontier.py test/Examples/llama_block.mlir \\
        test/Examples/llama_8layers.mlir --out docs/benchmarks/frontier/llama
    python3 python/benchmarks/frontier.py step.mlir --budgets 0.95,0.9,0.85
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OPTIONS = (
    "min-bytes=1048576 schedule=true release=at-wait fuse-memory-bound=true "
    f"device-profile={os.path.join(ROOT, 'python/offload_mlir/profiles/h100.json')}"
)


def run(opt: str, path: str, options: str) -> dict:
    """One pipeline run: the step's predicted figures, or the error."""
    proc = subprocess.run(
        [opt, path, f"--offload-activations={options} report=json", "-o", os.devnull],
        capture_output=True, text=True)
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()
        error = next((line.split("error: ", 1)[1] for line in message if "error: " in line),
                     proc.stderr.strip()[:300])
        return {"error": error}
    (step,) = json.loads(proc.stderr)["steps"]
    p = step["predicted"]
    return {
        "offloaded_values": step["offloaded_values"],
        "offloaded_bytes": step["offloaded_bytes"],
        "peak_bytes_before": p["peak_bytes_before"],
        "peak_bytes": p["peak_bytes_after"],
        "step_seconds_before": p["step_seconds_before"],
        "step_seconds": p["step_seconds_after"],
        "exposed_seconds": p["exposed_seconds_after"],
    }


def sweep(opt: str, path: str, options: str, budgets: list[float]) -> dict:
    rows = {"all": run(opt, path, f"{options} plan=all"),
            "hidden": run(opt, path, f"{options} plan=hidden")}
    for b in budgets:
        rows[f"budget={b:g}"] = run(opt, path, f"{options} budget={b:g}")
    return rows


def check(name: str, rows: dict, budgets: list[float]) -> list[str]:
    bad = []
    ok = {k: r for k, r in rows.items() if "error" not in r}
    if not ok:
        return [f"{name}: no run succeeded"]
    base_peak = next(iter(ok.values()))["peak_bytes_before"]
    base_step = next(iter(ok.values()))["step_seconds_before"]
    for key, r in ok.items():
        if r["peak_bytes"] > base_peak:
            bad.append(f"{name} [{key}]: predicted peak {r['peak_bytes']} above "
                       f"{base_peak} without offload")
    hidden = rows["hidden"]
    if "error" in hidden:
        bad.append(f"{name} [hidden]: {hidden['error']}")
        return bad
    if hidden["step_seconds"] > 1.01 * base_step:
        bad.append(f"{name} [hidden]: step {hidden['step_seconds']:.6f} s is more than "
                   f"1% above {base_step:.6f} s")
    r90 = rows.get("budget=0.9")
    if r90 is not None and hidden["peak_bytes"] <= 0.9 * base_peak:
        if "error" in r90:
            bad.append(f"{name} [budget=0.9]: fails ({r90['error']}) though plan=hidden "
                       "reaches 0.9")
        elif r90["step_seconds"] > 1.05 * base_step:
            bad.append(f"{name} [budget=0.9]: step {r90['step_seconds']:.6f} s more than "
                       f"5% above {base_step:.6f} s")
    fitting = sorted(((b, ok[f"budget={b:g}"]) for b in budgets if f"budget={b:g}" in ok),
                     key=lambda x: -x[0])
    for (b1, r1), (b2, r2) in zip(fitting, fitting[1:]):
        if r1["step_seconds"] > r2["step_seconds"] * (1 + 1e-9):
            bad.append(f"{name}: budget={b1:g} predicts a slower step "
                       f"({r1['step_seconds']:.6f} s) than budget={b2:g} "
                       f"({r2['step_seconds']:.6f} s)")
    for b, r in fitting:
        if hidden["peak_bytes"] <= b * base_peak and \
                r["step_seconds"] > hidden["step_seconds"] + 0.01 * base_step:
            bad.append(f"{name}: budget={b:g} predicts {r['step_seconds']:.6f} s, more "
                       f"than 1% above plan=hidden ({hidden['step_seconds']:.6f} s), "
                       "which meets that budget")
    return bad


def gib(n: int) -> str:
    return f"{n / 2**30:.2f}"


def markdown(results: dict, options: str) -> str:
    lines = ["# Predicted frontier", "",
             f"Pipeline options: `{options}` (the PyTorch bridge's). Predictions of "
             "the cost model, not measurements.", ""]
    for name, rows in results.items():
        first = next((r for r in rows.values() if "error" not in r), None)
        lines.append(f"## {name}")
        lines.append("")
        if first:
            lines.append(f"Without offload: peak {gib(first['peak_bytes_before'])} GiB, "
                         f"step {first['step_seconds_before'] * 1e3:.2f} ms.")
            lines.append("")
        lines.append("| plan | offloaded | peak (GiB) | peak / none | step (ms) | "
                     "step / none | exposed copies (ms) |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for key, r in rows.items():
            if "error" in r:
                m = re.search(r"smallest predicted peak is ([0-9.]+ [KMG]iB)", r["error"])
                why = f"out of reach (smallest peak {m.group(1)})" if m else r["error"]
                lines.append(f"| {key} | {why} | | | | | |")
                continue
            lines.append(
                f"| {key} | {r['offloaded_values']} values, {gib(r['offloaded_bytes'])} GiB "
                f"| {gib(r['peak_bytes'])} | {r['peak_bytes'] / r['peak_bytes_before']:.3f} "
                f"| {r['step_seconds'] * 1e3:.2f} "
                f"| {r['step_seconds'] / r['step_seconds_before']:.3f} "
                f"| {r['exposed_seconds'] * 1e3:.2f} |")
        lines.append("")
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(2, len(results))
    rows_n = (len(results) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(6 * cols, 4.2 * rows_n), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.set_visible(False)
    for ax, (name, rows) in zip(axes.flat, results.items()):
        ok = [(k, r) for k, r in rows.items() if "error" not in r]
        if not ok:
            continue
        base = ok[0][1]
        ratio = lambda r: r["step_seconds"] / base["step_seconds_before"]
        budget = sorted(((ratio(r), r["peak_bytes"] / 2**30) for k, r in ok
                         if k.startswith("budget=")), key=lambda p: -p[1])
        if budget:
            ax.plot([p[0] for p in budget], [p[1] for p in budget], "o-",
                    label="budget= (0.98 down to the last that fits)")
        hidden = rows.get("hidden")
        if hidden and "error" not in hidden:
            ax.plot(ratio(hidden), hidden["peak_bytes"] / 2**30, "*", markersize=14,
                    label="plan=hidden (default)")
        ax.plot(1.0, base["peak_bytes_before"] / 2**30, "s", label="no offload")
        right = max([1.02] + [p[0] for p in budget]) * 1.01
        every = rows.get("all")
        if every and "error" not in every:
            # plan=all is several times slower: named, not drawn to scale.
            ax.annotate(f"plan=all: {ratio(every):.2f}x, {every['peak_bytes'] / 2**30:.2f} GiB",
                        xy=(right, every["peak_bytes"] / 2**30), xytext=(-5, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=8)
        ax.set_xlim(0.995, right)
        ax.set_title(os.path.basename(name))
        ax.set_xlabel("predicted step time / no offload")
        ax.set_ylabel("predicted peak (GiB)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("steps", nargs="+", help="traced training steps (.mlir)")
    p.add_argument("--budgets", default=",".join(f"{b / 100:g}" for b in range(98, 69, -2)),
                   help="budget fractions to sweep (default: 0.98 to 0.70 by 0.02)")
    p.add_argument("--options", default=DEFAULT_OPTIONS,
                   help="pipeline options for every run (default: the bridge's)")
    p.add_argument("--offload-opt", default=os.path.join(ROOT, "build/bin/offload-opt"))
    p.add_argument("--out", help="write <out>.json, <out>.md and <out>.png")
    args = p.parse_args(argv)

    opt = shutil.which(args.offload_opt) or (
        args.offload_opt if os.access(args.offload_opt, os.X_OK) else None)
    if not opt:
        print(f"error: offload-opt not found at {args.offload_opt!r}", file=sys.stderr)
        return 2
    budgets = [float(b) for b in args.budgets.split(",") if b]
    results, violations = {}, []
    for path in args.steps:
        rows = sweep(opt, path, args.options, budgets)
        results[path] = rows
        violations += check(path, rows, budgets)
    text = markdown(results, args.options)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".json", "w") as f:
            json.dump({"options": args.options, "budgets": budgets, "steps": results}, f,
                      indent=1)
        with open(args.out + ".md", "w") as f:
            f.write(text + "\n")
        plot(results, args.out + ".png")
    for v in violations:
        print("VIOLATION:", v)
    print(f"frontier: {len(args.steps)} steps, {len(budgets)} budgets, "
          f"{len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
