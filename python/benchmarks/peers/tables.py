"""The results: each row compared with its baseline, the markdown tables
(rows, paired runs) and the plot of peak memory against step time."""

from __future__ import annotations

import json
import math
import os
import statistics

from .rows import GiB, MiB


def _paired_line(label: str, r: dict) -> str:
    ma, mb = (x * 1e3 for x in r["step_s_median"])
    return (f"| {label} | {ma:.1f} ms | {mb:.1f} ms | {r['ratio_median']:.3f}x | "
            f"{r['ratio_q1']:.3f}x–{r['ratio_q3']:.3f}x | {r['ratio_of_medians']:.3f}x | "
            f"{r['pairs_b_not_slower']} of {r['steps']} |\n")


def paired_table(doc: dict) -> str:
    runs = doc.get("paired_runs")
    r = runs[0] if runs else doc["paired"]
    a, b = r["rows"]
    head = (f"| pair | {a} (median) | {b} (median) | {b} / {a}: median of pairs | "
            "quartiles | ratio of medians | pairs with B not slower |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n")
    if not runs:
        return head + _paired_line(f"{r['steps']} pairs", r) + _paired_device_table(r)
    pooled = doc["paired"]
    lines = [_paired_line(f"process {i}, {run['steps']} pairs", run)
             for i, run in enumerate(runs, 1)]
    lines.append(f"| all {pooled['steps']} pairs of {pooled['processes']} processes | | | "
                 f"{pooled['ratio_median']:.3f}x | {pooled['ratio_q1']:.3f}x–"
                 f"{pooled['ratio_q3']:.3f}x | | {pooled['pairs_b_not_slower']} of "
                 f"{pooled['steps']} |\n")
    spread = pooled["process_ratio_medians"]
    return (head + "".join(lines)
            + f"\nThe processes' medians: {min(spread):.3f}x to {max(spread):.3f}x "
              f"(their median {pooled['median_of_process_medians']:.3f}x).\n"
            + "".join(_paired_device_table(run) for run in runs))


def _paired_device_table(r: dict) -> str:
    """The device time of the compute stream per stretch, if measured."""
    device = r.get("device")
    if not device:
        return ""
    a, b = r["rows"]
    lines = ["", f"| device time (CUDA events) | {a} (median) | {b} (median) | "
             f"{b} / {a}: median of pairs | host time, {a} / {b} (median) |",
             "| --- | --- | --- | --- | --- |"]
    for name in ("forward", "backward", "step"):
        d = device[name]
        ma, mb = (x * 1e3 for x in d["median_s"])
        ratio = d["ratio_median"]
        host = d.get("host_median_s")
        lines.append(f"| {name} | {ma:.1f} ms | {mb:.1f} ms | "
                     f"{'' if ratio is None else f'{ratio:.4f}x'} | "
                     + ("" if host is None else
                        f"{host[0] * 1e3:.1f} / {host[1] * 1e3:.1f} ms") + " |")
    return "\n".join(lines) + "\n"


def baseline_of(results: list[dict], r: dict, other_runs: bool = False,
                key: str = "baseline"):
    """The first measured row of `results` named by r's `key` ("baseline",
    or "grad_baseline" for the gradient check), in r's run (the rows of one
    run carry no run number), or with `other_runs` in another run if r's has
    none. Returns it, or None, and whether it is from r's run."""
    name = r.get(key) or r.get("baseline")
    ok = [b for b in results if b["row"] == name and "error" not in b]
    same = [b for b in ok if b.get("run") == r.get("run")]
    if same or not other_runs:
        return (same or [None])[0], True
    return (ok or [None])[0], False


def compare_all(results: list[dict]) -> None:
    """Each row's gradient check against its grad baseline in the same run,
    wherever in the run that one is."""
    for r in results:
        r.pop("vs_baseline", None)
        base, _ = baseline_of(results, r, key="grad_baseline")
        if "error" not in r and base is not None and base is not r:
            r["vs_baseline"] = compare(base, r)


def compare(base: dict, other: dict) -> dict:
    if len(base["losses"]) != len(other["losses"]):
        # The checksums are of the last step's gradients, so of other data.
        return {"comparable": False, "reason": "different step counts"}
    a, b = base["grad_checksums"], other["grad_checksums"]
    differ = sorted(n for n in a if a[n] != b.get(n))
    return {"losses_identical": base["losses"] == other["losses"],
            "grads_identical": not differ and set(a) == set(b),
            "grads_differing": differ[:8], "num_grads": len(a)}


def _failure_reason(stderr: str) -> str:
    """The exception's own line, not the traceback's closing advice."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if "Error:" in l or "Exception:" in l]
    return (errors or lines or ["no output"])[-1][:300]


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return ""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _moved(r: dict) -> tuple[float, float]:
    t = r.get("trace") or {}
    rt = r.get("runtime_per_step") or {}
    return (t.get("d2h_bytes", rt.get("d2h_bytes", 0)), t.get("h2d_bytes", rt.get("h2d_bytes", 0)))


def ratio_spread(results: list[dict]) -> dict[str, list[float]]:
    """Per row, its step-time ratio to its baseline in each run (round) that
    has both: what one process-to-process comparison is worth."""
    out: dict[str, list[float]] = {}
    for r in results:
        if "error" in r:
            continue
        base, same_run = baseline_of(results, r)
        if base is not None and base is not r and same_run:
            out.setdefault(r["row"], []).append(r["step_s_median"] / base["step_s_median"])
    return out


def table(doc: dict) -> str:
    results = doc["results"]
    merged = "merged_from" in doc or doc.get("repeat", 1) > 1

    lines = [
        "| row | step (median) | vs baseline | peak allocated | vs baseline | pinned host | "
        "host RSS peak | D2H / H2D per step | exposed copy | gradients | predicted step / peak |"
        + (" run |" if merged else ""),
        "| --- " * (12 if merged else 11) + "|"]
    other_run = False
    for r in results:
        run = f" {r.get('run', '')} |" if merged else ""
        if "error" in r:
            reason = (_failure_reason(r["stderr_tail"]) if r.get("stderr_tail")
                      else r.get("reason", ""))
            lines.append(f"| {r['row']} | {r.get('status', 'failed')}: "
                         f"{reason[:160].replace('|', '/')} |" + " |" * 9 + run)
            continue
        base, same_run = baseline_of(results, r, other_runs=True)
        ratio = dmem = ""
        if base and base is not r:
            mark = "" if same_run else "*"
            other_run = other_run or not same_run
            ratio = f"{r['step_s_median'] / base['step_s_median']:.3f}x{mark}"
            delta = r["peak_allocated_bytes"] - base["peak_allocated_bytes"]
            dmem = ("+" if delta >= 0 else "-") + _fmt_bytes(abs(delta)) + mark
        cmp_ = r.get("vs_baseline")
        gbase, _ = baseline_of(results, r, key="grad_baseline")
        if cmp_ is None:
            grads = ("" if base is r or not base else
                     f"not compared (no {r.get('grad_baseline') or r['baseline']} row in this run)")
        elif not cmp_.get("comparable", True):
            grads = f"not compared ({cmp_['reason']})"
        elif cmp_["losses_identical"] and cmp_["grads_identical"]:
            grads = "identical" + ("" if gbase is base else f" to {gbase['row']}")
        else:
            grads = (f"DIFFER ({len(cmp_['grads_differing'])}+ tensors"
                     f"{', loss differs' if not cmp_['losses_identical'] else ''})")
        d2h, h2d = _moved(r)
        exposed = (r.get("trace") or {}).get("exposed_copy_seconds")
        pred = r.get("predicted") or {}
        pred_s = ""
        if pred:
            pred_s = (f"{pred['step_seconds_after'] * 1e3:.1f} ms / "
                      f"{_fmt_bytes(pred['peak_bytes_after'])}")
            fb = r.get("forward_backward")
            if fb:
                # The prediction covers forward and backward: set beside them.
                fb_peak = fb["peak_allocated_bytes"]
                pred_s += (f" (measured forward and backward: {fb['step_s_median'] * 1e3:.1f} ms"
                           + ("" if fb_peak is None else
                              f" / {_fmt_bytes(fb_peak - fb['optimizer_state_bytes'])} without "
                              f"the optimizer's {_fmt_bytes(fb['optimizer_state_bytes'])}")
                           + ")")
        if r.get("fallback"):
            why = r["fallback"].split("error: ", 1)[-1].splitlines()[0]
            pred_s += f"fallback, untransformed: {why[:160]}"
        lines.append(
            f"| {r['row']} | {r['step_s_median'] * 1e3:.1f} ms | {ratio} | "
            f"{_fmt_bytes(r['peak_allocated_bytes'])} | {dmem} | "
            f"{_fmt_bytes(r.get('pinned_bytes'))} | {_fmt_bytes(r.get('host_rss_peak_bytes'))} | "
            f"{_fmt_bytes(d2h)} / {_fmt_bytes(h2d)} | "
            f"{'' if exposed is None else f'{exposed * 1e3:.1f} ms'} | {grads} | {pred_s} |{run}")
    a = doc["args"]
    head = (f"{a['config']}: {a['layers']} layers, {a['dtype']}, batch {a['batch']} x "
            f"{a['seq']}, optimizer {a['optimizer']}, deterministic {a['deterministic']}, "
            f"{doc.get('device_name', a['device'])}, torch {doc.get('torch', '')}\n\n")
    foot = ("\n\\* against the baseline of another run (same machine kind, another "
            "process).\n" if other_run else "")
    spread = {row: v for row, v in ratio_spread(results).items() if len(v) > 1}
    if spread:
        foot += ("\nStep time against the baseline, per run (each its own processes):\n\n"
                 "| row | runs | median | min | max |\n| --- | --- | --- | --- | --- |\n")
        for row, v in spread.items():
            foot += (f"| {row} | {len(v)} | {statistics.median(v):.3f}x | {min(v):.3f}x | "
                     f"{max(v):.3f}x |\n")
    return head + "\n".join(lines) + "\n" + foot


# Point colours of the plot by kind of row, in the order of its legend.
PLOT_KINDS = (
    ("offload-mlir", "tab:red"),
    ("Inductor's recompute budget, checkpointing", "tab:blue"),
    ("peers' own packages", "tab:green"),
    ("other rows", "tab:gray"),
)


def plot_kind(r: dict) -> str:
    """The kind of row a result is, for its colour (PLOT_KINDS)."""
    family = r.get("family") or r["row"].split(":")[0]
    if family == "offload-mlir":
        return "offload-mlir"
    if (family in ("checkpoint", "checkpoint-compile", "sac-compile")
            or (family == "compile" and ":amb=" in r["row"])):
        return "Inductor's recompute budget, checkpointing"
    if family in ("deepspeed-cpu-ckpt", "megatron-offload", "thunder-offload", "torchtune"):
        return "peers' own packages"
    return "other rows"


def plot_rows(doc: dict) -> tuple[list, list]:
    """What the plot shows: the measured rows, numbered from 1 ([(number,
    result)]: one per row name, the first run's, unless a later run
    superseded it, as marked in the data), fallback rows among them (they
    ran untransformed, and the plot marks them so); and the rows with no
    figures ([(row, why)]: failed or skipped), which its key lists."""
    measured, failed, seen = [], [], set()
    for r in doc["results"]:
        if r.get("superseded") or r["row"] in seen:
            continue
        seen.add(r["row"])
        if "error" in r:
            reason = (_failure_reason(r["stderr_tail"]) if r.get("stderr_tail")
                      else r.get("reason", ""))
            failed.append((r["row"], f"{r.get('status', 'failed')}: {reason}"))
        else:
            measured.append(r)
    return list(enumerate(measured, 1)), failed


def plot_figure(doc: dict):
    """Peak allocated memory against step time, one point per measured row
    (plot_rows), with offload-mlir's rows joined as a frontier: every row on
    a time axis (logarithmic where the rows span more than 3x), and beside
    it the compiled rows within 1.15x of their run's `compile`, against that
    ratio (where the compiled peers and the targets lie, and where their
    labels would otherwise overprint). Points carry numbers; the key names
    their rows, then the rows that have no figures and why. Colours tell the
    kind of row (PLOT_KINDS), squares eager rows from compiled circles, and
    a cross a fallback row (untransformed: offload-mlir's plan did not
    apply). The matplotlib figure, or None if matplotlib is absent."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.lines
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    numbered, failed = plot_rows(doc)
    ok = [r for _, r in numbered]
    near = []
    for i, r in numbered:
        base, _ = baseline_of(doc["results"], r)
        if r["compiled"] and base is not None:
            ratio = r["step_s_median"] / base["step_s_median"]
            if ratio <= 1.15:
                near.append((i, r, ratio))
    colours = dict(PLOT_KINDS)

    fig, (ax_all, ax_near, ax_key) = plt.subplots(
        1, 3, figsize=(15, 5.5), gridspec_kw={"width_ratios": [1, 1, 0.75]})
    panels = ((ax_all, [(i, r, r["step_s_median"] * 1e3) for i, r in numbered]),
              (ax_near, near))
    for ax, points in panels:
        placed: list[tuple[float, float]] = []
        xs = [x for _, _, x in points] or [1.0]
        ys = [r["peak_allocated_bytes"] / GiB for _, r, _ in points] or [1.0]
        # The x distance that counts as near: a fraction of the panel's
        # range, in logarithms on the left (a ratio of 1 would give none).
        dx = max(max(xs) / min(xs), 1.0 + 1e-9) if ax is ax_all else (max(xs) - min(xs)) or 1.0
        dy = (max(ys) - min(ys)) or 1.0
        for i, r, x in points:
            y = r["peak_allocated_bytes"] / GiB
            ax.scatter(x, y, marker="x" if r.get("fallback") else
                       ("o" if r["compiled"] else "s"),
                       color=colours[plot_kind(r)], zorder=3)
            # Numbers of points that nearly coincide are stacked, not overprinted.
            stacked = sum(
                1 for px, py in placed
                if (abs(math.log(px / x)) < 0.05 * math.log(dx) if ax is ax_all
                    else abs(px - x) < 0.05 * dx) and abs(py - y) < 0.04 * dy)
            placed.append((x, y))
            ax.annotate(str(i), (x, y), fontsize=7, xytext=(4, 2 - 8 * stacked),
                        textcoords="offset points")
        ours = sorted((x, r["peak_allocated_bytes"] / GiB) for _, r, x in points
                      if r["family"] == "offload-mlir" and not r.get("fallback"))
        frontier, best = [], float("inf")
        for x, y in ours:  # the points no other offload-mlir point beats on both axes
            if y < best:
                frontier.append((x, y))
                best = y
        if len(frontier) > 1:
            ax.plot(*zip(*frontier), color="tab:red", zorder=2, label="offload-mlir frontier")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_ylabel("peak allocated GPU memory (GiB)")
        ax.grid(True, which="both", alpha=0.3)
    times = [r["step_s_median"] for r in ok] or [1.0]
    if max(times) > 3 * min(times):  # eager peers up to several times the baseline
        ax_all.set_xscale("log")
        ax_all.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax_all.xaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        ax_all.tick_params(axis="x", which="minor", labelsize=7)
        ax_all.set_xlabel("median step time (ms, logarithmic)")
    else:
        ax_all.set_xlabel("median step time (ms)")
    ax_all.set_title("every row; squares eager, circles compiled, x fallback", fontsize=9)
    ax_near.set_xlabel("median step time / compile's in the same run")
    ax_near.set_title("compiled rows within 1.15x of compile", fontsize=9)
    ax_key.axis("off")
    key = [f"{i:>2}  {r['row']}" + ("  (fallback, untransformed)" if r.get("fallback") else "")
           for i, r in numbered]
    if failed:
        import textwrap

        key += ["", "no figures:"]
        for row, why in failed:
            # "failed: RuntimeError: ROW: what" -> "failed: what", in lines.
            status, _, what = why.partition(": ")
            what = what.split(": ", 1)[-1] if ("Error: " in what or "Exception: " in what) else what
            what = what.removeprefix(f"{row}: ")
            lines = textwrap.wrap(what, 52) or [""]
            key.append(f"  {row}: {status}")
            key += [f"      {line}" for line in lines[:3]]
            if len(lines) > 3:
                key[-1] += " ..."
    ax_key.text(0, 1, "\n".join(key), va="top", ha="left", fontsize=6.5, family="monospace",
                transform=ax_key.transAxes)
    kinds = [k for k, _ in PLOT_KINDS if any(plot_kind(r) == k for r in ok)]
    ax_key.legend(handles=[matplotlib.lines.Line2D([], [], marker="o", linestyle="",
                                                   color=colours[k], label=k) for k in kinds],
                  loc="lower left", fontsize=7, frameon=False)
    a = doc["args"]
    fig.suptitle(f"{a['config']} ({a['layers']} layers, {a['dtype']}), "
                 f"{doc.get('device_name', a['device'])}", fontsize=10)
    fig.tight_layout()
    return fig


def plot(doc: dict, path: str) -> bool:
    """plot_figure's figure, written to `path`; False if matplotlib is absent."""
    fig = plot_figure(doc)
    if fig is None:
        return False
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _write(doc: dict, out: str | None) -> None:
    if not out:
        return
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(table(doc))
