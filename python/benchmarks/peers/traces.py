"""What a torch.profiler trace of one step says: copies and kernels on
their streams, the copy time no kernel covers, the device's idle gaps and
what each waited for, and the copies the planner predicted."""

from __future__ import annotations

import bisect
import json
from typing import NamedTuple

from .rows import MiB


class Trace(NamedTuple):
    """The complete events of a torch.profiler chrome trace, in microseconds."""
    kernels: list    # kernels and memsets: (start, end, name), sorted by start
    copies: list     # host-to-device and device-to-host copies: (start,
                     # end, "H2D" or "D2H", bytes), in trace order
    host: list       # host ops and CUDA runtime calls: (start, end, name)
    launched: list   # per kernel, when the host call that launched it


def read_trace(path: str) -> Trace:
    """The kernels, copies and host events of a torch.profiler chrome trace."""
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    kernels, copies, host, launch_end = [], [], [], {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat", ""), e.get("name", "")
        start, dur = float(e.get("ts", 0)), float(e.get("dur", 0))
        correlation = (e.get("args") or {}).get("correlation")
        if cat in ("cpu_op", "cuda_runtime", "python_function", "user_annotation"):
            host.append((start, start + dur, name))
        if cat in ("cuda_runtime", "cuda_driver") and correlation is not None:
            launch_end[correlation] = start + dur
        if cat in ("kernel", "gpu_memset"):
            # A memset occupies its stream as a kernel does: the device is
            # not idle while one runs.
            kernels.append((start, start + dur, name, correlation))
        elif cat == "gpu_memcpy" and ("DtoH" in name or "HtoD" in name):
            n = int((e.get("args") or {}).get("bytes", 0))
            copies.append((start, start + dur, "D2H" if "DtoH" in name else "H2D", n))
    kernels.sort(key=lambda k: k[:3])
    return Trace([k[:3] for k in kernels], copies, host,
                 [launch_end.get(k[3]) for k in kernels])


def stream_waits(host: list) -> list:
    """Host start times of the cudaStreamWaitEvent calls among `host`."""
    return [a for a, _, name in host if name == "cudaStreamWaitEvent"]


# CUDA runtime calls that put work other than a kernel on a stream: the
# copy ops' events, waits and copies (and any other such call).
_STREAM_WORK = ("EventRecord", "StreamWaitEvent", "Memcpy", "Memset")


def stream_calls(host: list) -> list:
    """(host start, name) of the CUDA calls among `host` that enqueue stream
    work other than a kernel (_STREAM_WORK), sorted by start."""
    return sorted((a, name) for a, _, name in host
                  if name.startswith("cu") and any(w in name for w in _STREAM_WORK))


# A kernel that starts this soon after a copy ended, with the device idle
# since before that end, waited for the copy (a wait's event fires with it).
COPY_END_SLACK_US = 20.0


def _queued_gaps(kernels: list, launched: list):
    """Each gap with no kernel running (between the first kernel and the
    last) before a kernel whose launch the trace has: (gap start, kernel
    start, its launch's end, the previous launch's end or -inf, host-late
    microseconds). Gaps before a kernel of unknown launch come as a launch
    of None."""
    busy_until = None
    previous_launch = float("-inf")
    for (start, end, _), launch in zip(kernels, launched):
        if busy_until is not None and start > busy_until:
            late = None if launch is None else min(start - busy_until,
                                                   max(0.0, launch - busy_until))
            yield busy_until, start, launch, previous_launch, late
        busy_until = end if busy_until is None else max(busy_until, end)
        if launch is not None:
            previous_launch = launch


def _copy_ended(ends: list, gap_start: float, start: float):
    """Index into `ends` (sorted copy end times) of a copy that ended in the
    gap's last COPY_END_SLACK_US, i.e. that the kernel starting at `start`
    waited for; None if there is none."""
    j = bisect.bisect_left(ends, max(gap_start, start - COPY_END_SLACK_US))
    return j if j < len(ends) and ends[j] <= start else None


def idle_causes(kernels: list, launched: list, wait_calls: list = (),
                copy_ends: list = ()) -> dict:
    """Microseconds of the device's idle time (no kernel running, between
    its first kernel and its last) by cause: `host_late`, the part before
    the next kernel's launch call returned (the host had not asked for it
    yet); `queued`, the rest, with the kernel already launched (waiting on
    another stream's event, or the launch's own latency); `unknown`, gaps
    before a kernel whose launch the trace lacks. `queued_at_stream_wait`
    is the part of `queued` before kernels whose launch came after a
    cudaStreamWaitEvent call (host start times in `wait_calls`, on any
    stream) that followed the previous kernel's launch: the gaps at the
    copies' waits and events. `queued_until_copy_end` is the part of
    `queued` whose kernel started within COPY_END_SLACK_US of the end of a
    copy (end times in `copy_ends`) that ended during the gap: compute
    stalled on a copy, not on the cost of the wait itself."""
    out = {"host_late_us": 0.0, "queued_us": 0.0, "unknown_us": 0.0,
           "queued_at_stream_wait_us": 0.0, "queued_until_copy_end_us": 0.0}
    waits, ends = sorted(wait_calls), sorted(copy_ends)
    for gap_start, start, launch, previous_launch, late in _queued_gaps(kernels, launched):
        gap = start - gap_start
        if launch is None:
            out["unknown_us"] += gap
            continue
        out["host_late_us"] += late
        out["queued_us"] += gap - late
        i = bisect.bisect_right(waits, previous_launch)
        if i < len(waits) and waits[i] < launch:
            out["queued_at_stream_wait_us"] += gap - late
        if _copy_ended(ends, gap_start, start) is not None:
            out["queued_until_copy_end_us"] += gap - late
    return out


def queued_by_calls(kernels: list, launched: list, calls: list, copies: list = ()) -> dict:
    """The queued idle time (as idle_causes counts it) by the stream work
    the host enqueued between the previous kernel's launch and the gap's
    kernel's: `calls` is stream_calls' (host start, name) list; a gap's key
    names each call with its count ("cudaEventRecord x2 +
    cudaStreamWaitEvent"), "none" where there was none (a kernel's own
    launch latency), and ends in ", until a D2H copy ended" (or H2D) where
    the gap ended as a copy did (`copies` as read_trace gives them, or
    (start, end) spans: "a copy"): a stall on that copy, not the calls' own
    cost. Per key: [queued microseconds, gaps]. An offload (event, wait on
    the copy stream, copy, event), a load (event, two waits, copy, event)
    and a wait (one cudaStreamWaitEvent) each leave their own key."""
    out: dict[str, list] = {}
    starts = [a for a, _ in calls]
    ended = sorted((c[1], f"a {c[2]} copy" if len(c) > 2 else "a copy") for c in copies)
    ends = [e for e, _ in ended]
    for gap_start, start, launch, previous_launch, late in _queued_gaps(kernels, launched):
        if launch is None:
            continue
        names: dict[str, int] = {}
        for _, name in calls[bisect.bisect_right(starts, previous_launch):
                             bisect.bisect_left(starts, launch)]:
            names[name] = names.get(name, 0) + 1
        key = " + ".join(n if c == 1 else f"{n} x{c}" for n, c in sorted(names.items())) \
            or "none"
        j = _copy_ended(ends, gap_start, start)
        if j is not None:
            key += f", until {ended[j][1]} ended"
        entry = out.setdefault(key, [0.0, 0])
        entry[0] += start - gap_start - late
        entry[1] += 1
    return out


def _trace_figures(path: str, worst: int = 12) -> dict:
    """Bytes copied each way and the copy time no kernel overlapped, from a
    torch.profiler chrome trace of one step; and the `worst` longest exposed
    intervals, each with the copy under it and the kernel that ran next (for
    placing them against the planner's timeline)."""
    kernels, copies, host, launched = read_trace(path)
    d2h = sum(n for *_, d, n in copies if d == "D2H")
    h2d = sum(n for *_, d, n in copies if d == "H2D")
    spans = [(a, b) for a, b, *_ in copies]
    cover = [(a, b) for a, b, _ in kernels]
    t0 = min([a for a, _ in spans + cover], default=0.0)
    gaps = []
    for a, b in _uncovered_intervals(spans, cover):
        under = [c for c in copies if c[0] < b and c[1] > a]
        after = next((k[2] for k in kernels if k[0] >= b), "")
        gaps.append({"at_ms": (a - t0) * 1e-3, "ms": (b - a) * 1e-3,
                     "copies": sorted({f"{c[2]} {c[3] / MiB:.0f} MiB" for c in under}),
                     "next_kernel": after[:80]})
    gaps.sort(key=lambda g: -g["ms"])
    # Each copy in issue order (the runtime issues them in the IR's order),
    # with the part of it no kernel overlapped: to set against the
    # planner's per-value prediction (predicted_copies).
    timeline = [{"dir": d, "mib": round(n / MiB, 3), "start_ms": round((a - t0) * 1e-3, 3),
                 "end_ms": round((b - t0) * 1e-3, 3),
                 "exposed_ms": round(_uncovered_length([(a, b)], cover) * 1e-3, 4)}
                for a, b, d, n in sorted(copies)]
    # The device idle with no copy under it either: the host was behind.
    # Each gap with the host ops running when it ended (whose launch ended
    # it), innermost first, for a slower step whose kernels are not.
    gpu = spans + cover
    gpu_end = max([b for _, b in gpu], default=t0)
    host_gaps = []
    for a, b in _uncovered_intervals([(t0, gpu_end)], gpu):
        if b - a < 20:
            continue
        running = sorted((y - x, n) for x, y, n in host if x <= b <= y)
        names = list(dict.fromkeys(n[:80] for _, n in running))
        host_gaps.append({"at_ms": round((a - t0) * 1e-3, 3), "ms": round((b - a) * 1e-3, 3),
                          "host_ops": names[:6]})
    host_gaps.sort(key=lambda g: -g["ms"])
    host_start = min([a for a, _, _ in host], default=t0)
    host_end = max([b for _, b, _ in host], default=gpu_end)
    return {"d2h_bytes": d2h, "h2d_bytes": h2d,
            # The host's part of the step outside the device's: before its
            # first kernel or copy, and after its last one.
            "host_before_ms": max(0.0, t0 - host_start) * 1e-3,
            "host_after_ms": max(0.0, host_end - gpu_end) * 1e-3,
            "device_idle_ms": _uncovered_length([(t0, gpu_end)], gpu) * 1e-3,
            # No kernel running (copies or not), by whether the host had
            # launched the next kernel yet.
            "kernel_idle_ms": {k.removesuffix("_us"): v * 1e-3
                               for k, v in idle_causes(kernels, launched, stream_waits(host),
                                                       [b for _, b, *_ in copies]).items()},
            # Its queued part by the stream work enqueued before each gap
            # and the copy it stalled on: [ms, gaps] (queued_by_calls).
            "kernel_queued_by_calls": {
                k: [us * 1e-3, n] for k, (us, n) in queued_by_calls(
                    kernels, launched, stream_calls(host), copies).items()},
            "device_idle_worst": host_gaps[:worst],
            "copy_seconds": _union_length(spans) * 1e-6,
            "exposed_copy_seconds": _uncovered_length(spans, cover) * 1e-6,
            "step_trace_ms": (max([b for _, b in spans + cover], default=t0) - t0) * 1e-3,
            # Against another row's: a slower step is either longer kernels
            # (copies contending for memory) or more idle time (waits).
            "kernel_busy_ms": _union_length(cover) * 1e-3,
            "worst_exposed": gaps[:worst], "copies": timeline}


def predicted_copies(step: dict) -> list[dict]:
    """The planner's per-value figures for the offloaded values of one
    step's report, in forward order: bytes, predicted exposed copy time, and
    the ops the offload follows and the load starts at and precedes."""
    def where(pos):
        return (pos or {}).get("op", "")[:60]

    rows = [s for s in step.get("saved") or [] if s.get("offloaded")]
    rows.sort(key=lambda s: (s.get("offload_after") or {}).get("index", 0))
    return [{"mib": round(s["bytes"] / MiB, 3),
             "exposed_ms": round(s.get("exposed_seconds", 0.0) * 1e3, 4),
             "offload_after": where(s.get("offload_after")),
             "load_start": where(s.get("load_start")),
             "load_before": where(s.get("load_before"))} for s in rows]


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _union_length(intervals) -> float:
    return sum(b - a for a, b in _merge(intervals))


def _uncovered_intervals(intervals, cover) -> list[tuple[float, float]]:
    """The parts of the union of `intervals` outside the union of `cover`."""
    cover = _merge(cover)
    out, j = [], 0
    for a, b in _merge(intervals):
        while j < len(cover) and cover[j][1] <= a:
            j += 1
        k, at = j, a
        while k < len(cover) and cover[k][0] < b:
            if cover[k][0] > at:
                out.append((at, cover[k][0]))
            at = max(at, cover[k][1])
            k += 1
        if at < b:
            out.append((at, b))
    return out


def _uncovered_length(intervals, cover) -> float:
    """Length of the union of `intervals` not inside the union of `cover`."""
    return sum(b - a for a, b in _uncovered_intervals(intervals, cover))
