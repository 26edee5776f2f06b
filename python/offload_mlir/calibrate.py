"""Measure this machine's GPU and write the device profile the cost model reads.

    python -m offload_mlir.calibrate -o profile.json           # ~1 minute on an H100
    python -m offload_mlir.calibrate --quick -o profile.json   # ~12 s
    offload-opt ... --offload-activations="device-profile=profile.json"
    torch.compile(model, backend=offload_mlir.backend(device_profile="profile.json"))

The profile holds only the keys measured here (docs/calibrate.md says what
each one measures and how); the compiler's defaults stand in for the rest.
Everything else known about the run (device, torch version, date, each
measurement's samples) goes to a details file beside it, `profile.details.json`,
which the compiler never reads: its profile loader rejects unknown keys.

`--device cpu` runs the same code with small sizes on the host, a host
memcpy standing in for the PCIe link: it exists so the tests can check the
plumbing on machines without a GPU, and says so in the profile's name.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "PROFILE_KEYS",
    "attention_flops",
    "details_path_for",
    "fit_latency",
    "main",
    "run_calibration",
]

# The keys lib/Analysis/CostModel.cpp's DeviceProfile::loadJson accepts; it
# rejects any other, so nothing else may go into the profile.
PROFILE_KEYS = (
    "name",
    "d2h_GBps",
    "h2d_GBps",
    "both_ways_GBps",
    "hbm_GBps",
    "bf16_TFLOPs",
    "f16_TFLOPs",
    "f8_TFLOPs",
    "f32_TFLOPs",
    "f64_TFLOPs",
    "attention_TFLOPs",
    "copy_latency_us",
    "op_overhead_us",
    "copy_interference",
)

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# (label, M, K, N): the linear layers of a Llama-style block at 8 x 1024
# tokens (hidden 4096, FFN 14336). Each is timed as forward (x @ W^T),
# input gradient (g @ W) and weight gradient (g^T @ x): the three products
# a training step runs per linear layer, 2*M*K*N FLOPs each.
TRAINING_GEMMS = (
    ("attn_proj", 8192, 4096, 4096),
    ("ffn_up", 8192, 4096, 14336),
    ("ffn_down", 8192, 14336, 4096),
)
GEMM_KINDS = ("fwd", "dgrad", "wgrad")


@dataclass(frozen=True)
class Plan:
    """Sizes and repeat counts of one run."""

    copy_bytes: int  # link bandwidth: one large copy each way
    link_repeats: int  # the link is the noisiest figure: more samples
    latency_sizes: Tuple[int, ...]  # copy sizes the latency fit uses
    latency_repeats: int
    gemm_shapes: Tuple[Tuple[str, int, int, int], ...]  # bf16, f16, f8, f32
    f64_shapes: Tuple[Tuple[str, int, int, int], ...]  # f64 is slow: fewer
    gemm_kinds: Tuple[str, ...]
    gemm_budget_s: float  # at most about this long per product (slow dtypes)
    attention_shape: Tuple[int, int, int, int]  # B, H, S, D
    hbm_bytes: int  # size of each elementwise operand
    tiny_ops: int  # back-to-back tiny kernels per op-overhead sample
    repeats: int
    warmup: int
    spin_s: float  # GEMMs run this long first, so clocks and power settle
    # Each GEMM runs back to back this long and is timed in the second half
    # (the attention runs this long right before its samples): a training
    # step holds the GPU at its power limit, and the gaps between short
    # sample sets would let the clocks boost again.
    sustain_s: float


def plan_for(device_type: str, quick: bool) -> Plan:
    if device_type == "cpu":
        # Only big enough to exercise every code path in a few seconds.
        return Plan(
            copy_bytes=8 * MiB,
            link_repeats=5,
            latency_sizes=(4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB),
            latency_repeats=5,
            gemm_shapes=(("small_up", 256, 128, 448), ("small_down", 256, 448, 128)),
            f64_shapes=(("small_up", 256, 128, 448),),
            gemm_kinds=GEMM_KINDS,
            gemm_budget_s=0.2,
            attention_shape=(1, 2, 128, 32),
            hbm_bytes=16 * MiB,
            tiny_ops=200,
            repeats=3 if quick else 5,
            warmup=1,
            spin_s=0.0,
            sustain_s=0.0,
        )
    if quick:
        return Plan(
            copy_bytes=64 * MiB,
            link_repeats=10,
            latency_sizes=tuple(4 * KiB * 4**i for i in range(7)),  # 4 KiB .. 16 MiB
            latency_repeats=10,
            gemm_shapes=TRAINING_GEMMS[1:],
            f64_shapes=TRAINING_GEMMS[:1],
            gemm_kinds=GEMM_KINDS,
            gemm_budget_s=0.3,
            attention_shape=(8, 32, 1024, 128),
            hbm_bytes=256 * MiB,
            tiny_ops=256,
            repeats=5,
            warmup=2,
            spin_s=0.5,
            sustain_s=0.2,
        )
    return Plan(
        copy_bytes=256 * MiB,
        link_repeats=40,
        latency_sizes=tuple(4 * KiB * 4**i for i in range(8)),  # 4 KiB .. 64 MiB
        latency_repeats=30,
        gemm_shapes=TRAINING_GEMMS,
        f64_shapes=TRAINING_GEMMS[:1],
        gemm_kinds=GEMM_KINDS,
        gemm_budget_s=1.5,
        attention_shape=(8, 32, 1024, 128),
        hbm_bytes=1 * GiB,
        tiny_ops=256,
        repeats=30,
        warmup=3,
        spin_s=5.0,
        sustain_s=0.5,
    )


def details_path_for(output: str) -> str:
    """profile.json -> profile.details.json; any other name gets the suffix
    appended."""
    if output.endswith(".json"):
        return output[: -len(".json")] + ".details.json"
    return output + ".details.json"


def _sig(value: float, digits: int = 4) -> float:
    """`value` to `digits` significant figures: the measurements are not more
    precise than that, and unlike rounding to decimals it never turns a small
    positive rate into 0."""
    return float(f"{value:.{digits}g}")


def _stats(samples: Sequence[float]) -> Dict[str, Any]:
    """Seconds, as the details file records every sample set."""
    return {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "n": len(samples),
    }


class CalibrationError(RuntimeError):
    """The run cannot go on (no CUDA, a bad --device); main() prints it and
    exits non-zero."""


# ---------------------------------------------------------------------------
# Timing: CUDA events on the stream doing the work, wall clock on the CPU
# ---------------------------------------------------------------------------


class Device:
    """The device under test and how to time work on it."""

    def __init__(self, torch, spec: str):
        self.torch = torch
        try:
            self.device = torch.device(spec)
        except RuntimeError as error:
            raise CalibrationError(f"bad --device {spec!r}: {error}") from None
        self.is_cuda = self.device.type == "cuda"
        if self.device.type not in ("cuda", "cpu"):
            raise CalibrationError(
                f"--device {spec!r}: only cuda (a CUDA GPU) and cpu (the "
                "plumbing test) are supported")
        if self.is_cuda:
            if not torch.cuda.is_available():
                raise CalibrationError(
                    f"--device {spec}: CUDA is not available to PyTorch "
                    f"(torch {torch.__version__}, built for CUDA "
                    f"{torch.version.cuda or 'none'}; CUDA_VISIBLE_DEVICES="
                    f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')!r}). "
                    "Run on a machine with an NVIDIA GPU and a CUDA build of "
                    "torch; --device cpu only tests this tool.")
            index = self.device.index if self.device.index is not None else 0
            if index >= torch.cuda.device_count():
                raise CalibrationError(
                    f"--device {spec}: only {torch.cuda.device_count()} CUDA "
                    "device(s) visible")
            self.device = torch.device("cuda", index)
            torch.cuda.set_device(self.device)
        self._sleep_cycles_per_s: Optional[float] = None
        # How many CUDA sample sets were queued before they ran (details).
        self.timing = {"sample_sets": 0, "not_prefilled": 0}

    # -- streams ------------------------------------------------------------

    def side_stream(self):
        """A stream of its own, as the runtime's copy streams are; None on
        the CPU."""
        return self.torch.cuda.Stream(self.device) if self.is_cuda else None

    def on(self, stream):
        return self.torch.cuda.stream(stream) if stream is not None else nullcontext()

    def synchronize(self) -> None:
        if self.is_cuda:
            self.torch.cuda.synchronize(self.device)

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def release(self) -> None:
        """Gives cached device memory back between measurements, so one
        measurement's buffers do not crowd the next one's."""
        if self.is_cuda:
            self.torch.cuda.synchronize(self.device)
            self.torch.cuda.empty_cache()

    # -- holding the GPU back -----------------------------------------------

    def can_hold(self) -> bool:
        return self.is_cuda and hasattr(self.torch.cuda, "_sleep")

    def hold(self, seconds: float) -> None:
        """Keeps the current stream busy for about `seconds` (a spinning
        kernel), so work queued behind it starts only once the host has
        queued all of it: the GPU then runs it back to back, not at the
        host's pace."""
        if self._sleep_cycles_per_s is None:
            self._sleep_cycles_per_s = self._measure_sleep_rate()
        self.torch.cuda._sleep(max(1, int(seconds * self._sleep_cycles_per_s)))

    def hold_for(self, queue_seconds: float) -> Optional[float]:
        """Holds the current stream long enough for the host to queue work
        that takes it about `queue_seconds` (twice that, plus 1 ms, at most
        1 s); returns the hold's length, or None where holding is not
        possible."""
        if not self.can_hold():
            return None
        hold_s = min(2 * queue_seconds + 1e-3, 1.0)
        self.hold(hold_s)
        return hold_s

    def check_prefilled(self, hold_s: Optional[float], queued_s: float) -> bool:
        """Whether the host queued everything before the hold ran out, so the
        samples are device time only; a miss is counted for the details."""
        prefilled = hold_s is not None and queued_s < hold_s
        if self.is_cuda:
            self.timing["sample_sets"] += 1
            if not prefilled:
                self.timing["not_prefilled"] += 1
        return prefilled

    def _measure_sleep_rate(self) -> float:
        cycles = 20_000_000
        rate = 0.0
        for _ in range(2):  # the first call also loads the kernel
            start, end = self.event(), self.event()
            start.record()
            self.torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            rate = cycles / (start.elapsed_time(end) * 1e-3)
        return rate

    # -- timing ---------------------------------------------------------------

    def time_each(self, fn: Callable[[], Any], *, repeats: int, warmup: int,
                  stream=None, budget_s: Optional[float] = None) -> List[float]:
        """Seconds of each of `repeats` calls of fn(), after `warmup` calls.

        On CUDA the calls are queued on `stream` (default: the current one)
        behind a hold, with an event pair around each: a sample is the device
        time of one call, not the host's time to issue it (which small copies
        and kernels would otherwise include, the stream being idle when their
        start event fires). With `budget_s`, repeats shrink (to no fewer than
        3) so the samples take about that long."""
        with self.on(stream):
            issue_s = math.inf  # the host's time to issue one call
            for _ in range(warmup):
                t0 = time.perf_counter()
                fn()
                issue_s = min(issue_s, time.perf_counter() - t0)
            if not math.isfinite(issue_s):
                issue_s = 1e-3
            if budget_s is not None:
                one = self._time_calls(fn, 1, issue_s)[0]
                repeats = max(3, min(repeats, int(budget_s / max(one, 1e-9))))
            return self._time_calls(fn, repeats, issue_s)

    def time_sustained(self, fn: Callable[[], Any], seconds: float) -> List[float]:
        """Seconds per call of fn() under sustained load (CUDA only): the calls
        run back to back for about `seconds`, the host queueing ahead of the
        device with no hold or wait between them, and an event marks each
        window of about 10 ms of calls. The samples are the windows of the
        second half, once the clocks have settled under the load."""
        fn()  # the first call may choose and load its kernel
        one = statistics.median(self._time_calls(fn, 3, 1e-3))
        per_window = max(1, round(0.01 / max(one, 1e-9)))
        windows = max(8, round(seconds / (per_window * max(one, 1e-9))))
        marks = [self.event()]
        marks[0].record()
        for _ in range(windows):
            for _ in range(per_window):
                fn()
            marks.append(self.event())
            marks[-1].record()
        marks[-1].synchronize()
        per_call = [a.elapsed_time(b) * 1e-3 / per_window for a, b in zip(marks, marks[1:])]
        return per_call[len(per_call) // 2:]

    def _time_calls(self, fn, count: int, issue_s: float) -> List[float]:
        if not self.is_cuda:
            samples = []
            for _ in range(count):
                t0 = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t0)
            return samples
        for attempt in range(2):
            # A second attempt holds longer: the first one's estimate of the
            # host's pace was short.
            hold_s = self.hold_for(count * issue_s * (1 if attempt == 0 else 8))
            pairs = [(self.event(), self.event()) for _ in range(count)]
            t0 = time.perf_counter()
            for start, end in pairs:
                start.record()
                fn()
                end.record()
            queued_s = time.perf_counter() - t0
            pairs[-1][1].synchronize()
            if hold_s is None or queued_s < hold_s or attempt == 1:
                break
        self.check_prefilled(hold_s, queued_s)
        return [start.elapsed_time(end) * 1e-3 for start, end in pairs]


# ---------------------------------------------------------------------------
# Measurements. Each returns (profile entries, details).
# ---------------------------------------------------------------------------

Result = Tuple[Dict[str, float], Dict[str, Any]]


class LinkBuffers:
    """Pinned host and device buffers of the largest copy; smaller copies use
    their prefixes."""

    def __init__(self, dev: Device, nbytes: int):
        torch = dev.torch
        pin = dev.is_cuda  # pinning needs CUDA; on the CPU it is a plain memcpy
        # Filled, so every page is touched before any timing.
        self.host_dst = torch.zeros(nbytes, dtype=torch.uint8, pin_memory=pin)
        self.host_src = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pin)
        self.dev_src = torch.ones(nbytes, dtype=torch.uint8, device=dev.device)
        self.dev_dst = torch.zeros(nbytes, dtype=torch.uint8, device=dev.device)
        self.pinned = bool(self.host_dst.is_pinned() and self.host_src.is_pinned()) if pin else False
        # One stream per direction, as the runtime has.
        self.d2h_stream = dev.side_stream()
        self.h2d_stream = dev.side_stream()
        dev.synchronize()  # the side streams must see the fills

    def d2h(self, nbytes: int) -> Callable[[], Any]:
        dst, src = self.host_dst[:nbytes], self.dev_src[:nbytes]
        return lambda: dst.copy_(src, non_blocking=True)

    def h2d(self, nbytes: int) -> Callable[[], Any]:
        dst, src = self.dev_dst[:nbytes], self.host_src[:nbytes]
        return lambda: dst.copy_(src, non_blocking=True)


def _time_both_ways(dev: Device, link: LinkBuffers, nbytes: int,
                    repeats: int, warmup: int) -> List[float]:
    """Seconds from the start of a D2H and an H2D copy, issued together on
    the two copy streams, to the end of the later one."""
    d2h, h2d = link.d2h(nbytes), link.h2d(nbytes)
    if not dev.is_cuda:
        # Two host threads stand in for the two streams (copy_ releases the GIL).
        samples = []
        with ThreadPoolExecutor(max_workers=2) as pool:
            for i in range(warmup + repeats):
                t0 = time.perf_counter()
                futures = [pool.submit(d2h), pool.submit(h2d)]
                for future in futures:
                    future.result()
                if i >= warmup:
                    samples.append(time.perf_counter() - t0)
        return samples
    torch = dev.torch
    main = torch.cuda.current_stream(dev.device)
    streams = ((link.d2h_stream, d2h), (link.h2d_stream, h2d))
    rounds = []
    for _ in range(warmup + repeats):
        # Both copies are queued before `start` fires, so they start together.
        hold_s = dev.hold_for(50e-6)
        t0 = time.perf_counter()
        start = dev.event()
        start.record(main)
        ends = []
        for stream, copy in streams:
            stream.wait_event(start)
            with torch.cuda.stream(stream):
                copy()
                end = dev.event()
                end.record(stream)
            ends.append(end)
        dev.check_prefilled(hold_s, time.perf_counter() - t0)
        # The next round starts after both copies.
        main.wait_stream(link.d2h_stream)
        main.wait_stream(link.h2d_stream)
        rounds.append((start, ends))
    dev.synchronize()
    return [max(start.elapsed_time(end) for end in ends) * 1e-3
            for start, ends in rounds[warmup:]]


def measure_link(dev: Device, plan: Plan, link: LinkBuffers) -> Result:
    n = plan.copy_bytes
    d2h = dev.time_each(link.d2h(n), repeats=plan.link_repeats, warmup=plan.warmup,
                        stream=link.d2h_stream)
    h2d = dev.time_each(link.h2d(n), repeats=plan.link_repeats, warmup=plan.warmup,
                        stream=link.h2d_stream)
    both = _time_both_ways(dev, link, n, plan.link_repeats, plan.warmup)
    profile = {
        "d2h_GBps": n / statistics.median(d2h) / 1e9,
        "h2d_GBps": n / statistics.median(h2d) / 1e9,
        "both_ways_GBps": 2 * n / statistics.median(both) / 1e9,
    }
    details = {
        "bytes_per_copy": n,
        "host_memory_pinned": link.pinned,
        "d2h": _stats(d2h),
        "h2d": _stats(h2d),
        "both_ways": dict(_stats(both), bytes=2 * n),
        "method": ("device<->host tensor copy_(non_blocking=True), each "
                   "direction on its own stream; both_ways: one copy each way "
                   "started together on the two streams, 2 x bytes over the "
                   "time to the later one's end; rate = bytes / median"),
    }
    return profile, details


COPY_DIRECTIONS = ("d2h", "h2d", "both_ways")


@dataclass
class CopyRounds:
    """What `copy_rounds` measured beside one kernel load, per direction
    (d2h, h2d, both_ways)."""
    bytes_per_direction: int  # moved each way in one round
    spans: Dict[str, List[float]]  # first copy's start to last end, per round
    alone: List[float]  # kernel seconds of each round without copies
    # (kernel seconds, copy seconds summed over the streams), per round
    beside: Dict[str, List[Tuple[float, float]]]

    def interference(self, direction: Optional[str] = None) -> float:
        """Kernel time added per second of copy beside it: the median over
        the rounds with copies (of one direction, or all) of (their kernel
        time less the median round without) / their copy time; 0 where the
        copies slowed nothing."""
        kernels_alone = statistics.median(self.alone)
        rounds = [r for d, rs in self.beside.items() if direction in (None, d) for r in rs]
        per_copy = [(k - kernels_alone) / t for k, t in rounds if t > 0]
        return max(0.0, statistics.median(per_copy)) if per_copy else 0.0

    def rate_GBps(self, direction: str) -> float:
        """The link's rate beside the kernels: the bytes of one round (both
        directions' for both_ways) over its median span."""
        moved = self.bytes_per_direction * (2 if direction == "both_ways" else 1)
        return moved / statistics.median(self.spans[direction]) / 1e9


def copy_rounds(dev: Device, link: LinkBuffers, kernel: Callable[[], Any], count: int,
                nbytes: int, copies: int, repeats: int,
                host_queue_s: float = 0.0) -> CopyRounds:
    """Rounds of `count` calls of kernel() queued on the compute stream, then
    `copies` copies of `nbytes` on the copy streams: each direction alone
    and both at once, and a round without copies before each of those
    three (CUDA only). One warm-up round first.

    Kernels short enough for the host to fall behind them need
    `host_queue_s`, about how long the host takes to queue the round's
    calls: the compute stream is then held that long (twice, plus 1 ms)
    before them, and the copies wait for the kernels' start, so both run
    at the device's pace."""
    torch = dev.torch
    main = torch.cuda.current_stream(dev.device)

    def round_trip(directions) -> Tuple[float, float, float]:
        """(copy span from the first start to the last end, the queued
        kernels' time, the copies' time summed over the streams)."""
        k_start, k_end = dev.event(), dev.event()
        held = host_queue_s > 0 and dev.hold_for(host_queue_s) is not None
        k_start.record(main)
        for _ in range(count):
            kernel()
        k_end.record(main)
        starts, ends = [], []
        for stream, copy in directions:
            with torch.cuda.stream(stream):
                if held:
                    stream.wait_event(k_start)
                start, end = dev.event(), dev.event()
                start.record(stream)
                for _ in range(copies):
                    copy()
                end.record(stream)
            starts.append(start)
            ends.append(end)
        main.wait_stream(link.d2h_stream)
        main.wait_stream(link.h2d_stream)
        dev.synchronize()
        kernels = k_start.elapsed_time(k_end) * 1e-3
        if not directions:
            return 0.0, kernels, 0.0
        span = max(starts[0].elapsed_time(end) for end in ends) * 1e-3
        transfer = sum(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e-3
        return span, kernels, transfer

    d2h = [(link.d2h_stream, link.d2h(nbytes))]
    h2d = [(link.h2d_stream, link.h2d(nbytes))]
    round_trip(d2h + h2d)  # warm-up
    rounds = CopyRounds(copies * nbytes, {d: [] for d in COPY_DIRECTIONS}, [],
                        {d: [] for d in COPY_DIRECTIONS})
    for _ in range(repeats):
        rounds.alone.append(round_trip([])[1])
        for key, directions in zip(COPY_DIRECTIONS, (d2h, h2d, d2h + h2d)):
            span, kernels, transfer = round_trip(directions)
            rounds.spans[key].append(span)
            rounds.beside[key].append((kernels, transfer))
    return rounds


def measure_link_under_compute(dev: Device, plan: Plan, link: LinkBuffers) -> Result:
    """Copy rates while the compute stream works, as a training step's copies
    run: once under bf16 GEMMs, once under memory-bound elementwise kernels
    (which compete with the copy engines for HBM). The profile takes the
    lower rate of each direction: the planner hides copies with it, and
    copies that take longer than planned stall the step.

    Each round queues enough kernels to outlast the copies, then the copies
    on their own streams; a rate is bytes over the time from the first
    copy's start to the last one's end.

    The same rounds give `copy_interference`: how much longer the queued
    kernels ran beside the copies than in a round without copies, per second
    of transfer on each copy stream (the step model adds that much kernel
    time). The profile takes the larger of the two loads'."""
    if not dev.is_cuda:
        raise NotImplementedError("the CPU plumbing test has no concurrent compute")
    torch = dev.torch
    n = plan.copy_bytes
    copies = 4
    link_s = copies * n / 20e9  # a low guess of the rate: longer to cover
    a = torch.randn(8192, 4096, device=dev.device, dtype=torch.bfloat16)
    b = torch.randn(4096, 14336, device=dev.device, dtype=torch.bfloat16)
    c = torch.empty(8192, 14336, device=dev.device, dtype=torch.bfloat16)
    x = torch.ones(256 * MiB, device=dev.device, dtype=torch.bfloat16)
    y = torch.ones_like(x)
    z = torch.empty_like(x)
    gemm_s = 2.0 * 8192 * 4096 * 14336 / 500e12  # low guesses of each
    add_s = 3 * x.numel() * 2 / 2000e9  # kernel's time: more of them
    loads = {
        "gemm": (lambda: torch.mm(a, b, out=c), int(2 * link_s / gemm_s) + 1),
        "elementwise": (lambda: torch.add(x, y, out=z), int(2 * link_s / add_s) + 1),
    }
    moved = copies * n
    repeats = max(2, plan.repeats - 1)
    details: Dict[str, Any] = {}
    rates: Dict[str, List[float]] = {d: [] for d in COPY_DIRECTIONS}
    interference: List[float] = []
    for load_name, (kernel, count) in loads.items():
        rounds = copy_rounds(dev, link, kernel, count, n, copies, repeats)
        interference.append(rounds.interference())
        for key in COPY_DIRECTIONS:
            rates[key].append(rounds.rate_GBps(key))
        details[load_name] = {key: _stats(value) for key, value in rounds.spans.items()}
        details[load_name]["kernels_queued_per_round"] = count
        details[load_name]["kernel_seconds_without_copies"] = _stats(rounds.alone)
        details[load_name]["copy_interference"] = _sig(interference[-1])
        # Not in the profile, which has one figure: the rounds of each
        # direction on their own (loads may slow kernels more than offloads).
        details[load_name]["copy_interference_by_direction"] = {
            d: _sig(rounds.interference(d)) for d in COPY_DIRECTIONS}
    profile = {
        "d2h_GBps": min(rates["d2h"]),
        "h2d_GBps": min(rates["h2d"]),
        "both_ways_GBps": min(rates["both_ways"]),
        "copy_interference": max(interference),
    }
    details.update(
        bytes_per_direction=moved,
        method=("copies of bytes_per_direction (in 4 copies) on the copy "
                "streams while the compute stream runs kernels queued first: "
                "bf16 8192x4096x14336 GEMMs, or bf16 adds of 512 MiB "
                "operands; rate = bytes / median time from the first copy's "
                "start to the last one's end; the profile takes the lower "
                "rate of the two loads"))
    return profile, details


def fit_latency(sizes: Sequence[int], seconds: Sequence[float]) -> Tuple[float, float]:
    """(intercept seconds, slope seconds per byte) of t = latency + bytes / bw,
    weighted by 1/t^2: relative rather than absolute errors, so the small
    copies, which carry the latency, are not drowned by the large copies'
    absolute noise."""
    w = [1.0 / (t * t) for t in seconds]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, sizes))
    st = sum(wi * t for wi, t in zip(w, seconds))
    sxx = sum(wi * x * x for wi, x in zip(w, sizes))
    sxt = sum(wi * x * t for wi, x, t in zip(w, sizes, seconds))
    slope = (sw * sxt - sx * st) / (sw * sxx - sx * sx)
    return (st - slope * sx) / sw, slope


def measure_copy_latency(dev: Device, plan: Plan, link: LinkBuffers) -> Result:
    directions = {}
    latencies = []
    for name, make, stream in (("d2h", link.d2h, link.d2h_stream),
                               ("h2d", link.h2d, link.h2d_stream)):
        medians = []
        for size in plan.latency_sizes:
            samples = dev.time_each(make(size), repeats=plan.latency_repeats,
                                    warmup=plan.warmup, stream=stream)
            medians.append(statistics.median(samples))
        intercept, slope = fit_latency(plan.latency_sizes, medians)
        entry: Dict[str, Any] = {
            "sizes_bytes": list(plan.latency_sizes),
            "median_s": medians,
            "fit_latency_s": intercept,
            "fit_GBps": (1.0 / slope / 1e9) if slope > 0 else None,
        }
        if intercept > 0:
            latency = intercept
            entry["latency_from"] = "fit intercept"
        else:
            # Below what the fit resolves: the smallest copy's time bounds it.
            latency = medians[0]
            entry["latency_from"] = (
                f"fit intercept not positive; the median time of the smallest "
                f"copy ({plan.latency_sizes[0]} bytes), an upper bound")
        entry["latency_s"] = latency
        directions[name] = entry
        latencies.append(latency)
    # The model has one per-copy latency for both directions.
    latency = sum(latencies) / len(latencies)
    details = dict(directions, repeats_per_size=plan.latency_repeats, method=(
        "each size copied alone, on its direction's stream, timed with an event "
        "pair; median per size; weighted least-squares fit of t = latency + "
        "bytes / bandwidth per direction; copy_latency_us = mean of the two "
        "directions' latencies"))
    return {"copy_latency_us": latency * 1e6}, details


def spin(dev: Device, seconds: float) -> Dict[str, Any]:
    """Runs large bf16 GEMMs for `seconds`, so the GEMM measurements see the
    clocks and power state of sustained load, as a training run does."""
    if seconds <= 0:
        return {"seconds": 0.0}
    torch = dev.torch
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev.device)
    out = torch.empty_like(a)
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            torch.mm(a, a, out=out)
        calls += 10
        dev.synchronize()
    del a, out
    dev.release()
    return {"seconds": time.perf_counter() - t0, "gemms_8192^3": calls}


def sustain(dev: Device, fn: Callable[[], Any], seconds: float) -> int:
    """Queues fn() back to back for about `seconds` of device time and
    returns the number of calls, without waiting for them: the timing that
    follows on the same stream starts when they end, with the clocks and
    power where a training step's sustained load holds them (an H100 at its
    700 W limit runs a bf16 GEMM about 10% slower after a second of it than
    in its first 100 ms, docs/calibrate.md). For the attention, whose
    samples time forward and backward apart; GEMMs use
    Device.time_sustained."""
    if seconds <= 0 or not dev.is_cuda:
        return 0
    fn()  # the first call may choose and load its kernel
    start, end = dev.event(), dev.event()
    start.record()
    fn()
    end.record()
    end.synchronize()
    calls = max(1, int(seconds / max(start.elapsed_time(end) * 1e-3, 1e-6)))
    for _ in range(calls):
        fn()
    return calls


def _gemm_dims(kind: str, m: int, k: int, n: int) -> Tuple[int, int, int]:
    """(rows, inner, cols) of one of a linear layer's three products."""
    return {"fwd": (m, k, n), "dgrad": (m, n, k), "wgrad": (n, m, k)}[kind]


def _gemm_call(dev: Device, dtype_name: str, kind: str, m: int, k: int, n: int):
    """A zero-argument call running the product, with its operands laid out
    as in training: fwd x @ W^T (W stored [N, K]), dgrad g @ W, wgrad g^T @ x.
    f8 uses the layout torch._scaled_mm requires (A row-major, B
    column-major) for the same dimensions."""
    torch = dev.torch
    d = dev.device
    rows, inner, cols = _gemm_dims(kind, m, k, n)
    if dtype_name == "f8":
        f8 = torch.float8_e4m3fn
        a = torch.randn(rows, inner, device=d, dtype=torch.bfloat16).to(f8)
        b = torch.randn(cols, inner, device=d, dtype=torch.bfloat16).to(f8).t()
        one = torch.ones((), device=d, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16,
             "f32": torch.float32, "f64": torch.float64}[dtype_name]
    if kind == "fwd":
        a = torch.randn(m, k, device=d, dtype=dtype)
        b = torch.randn(n, k, device=d, dtype=dtype).t()
    elif kind == "dgrad":
        a = torch.randn(m, n, device=d, dtype=dtype)
        b = torch.randn(n, k, device=d, dtype=dtype)
    else:
        a = torch.randn(m, n, device=d, dtype=dtype).t()
        b = torch.randn(m, k, device=d, dtype=dtype)
    out = torch.empty(rows, cols, device=d, dtype=dtype)
    return lambda: torch.mm(a, b, out=out)


def f8_unsupported_reason(dev: Device) -> Optional[str]:
    """None if torch._scaled_mm runs here, else why not."""
    torch = dev.torch
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no torch._scaled_mm / float8_e4m3fn"
    try:
        call = _gemm_call(dev, "f8", "fwd", 64, 64, 64)
        call()
        dev.synchronize()
    except Exception as error:  # any failure means: not on this device
        return f"torch._scaled_mm failed: {type(error).__name__}: {str(error).strip().splitlines()[0]}"
    return None


def measure_gemm(dev: Device, plan: Plan, dtype_name: str) -> Result:
    shapes = plan.f64_shapes if dtype_name == "f64" else plan.gemm_shapes
    products = []
    total_flops = 0.0
    total_seconds = 0.0
    sustained = plan.sustain_s > 0 and dev.is_cuda
    for label, m, k, n in shapes:
        for kind in plan.gemm_kinds:
            call = _gemm_call(dev, dtype_name, kind, m, k, n)
            if sustained:
                samples = dev.time_sustained(call, plan.sustain_s)
            else:
                samples = dev.time_each(call, repeats=plan.repeats, warmup=plan.warmup,
                                        budget_s=plan.gemm_budget_s)
            del call
            dev.release()
            flops = 2.0 * m * k * n
            median = statistics.median(samples)
            rows, inner, cols = _gemm_dims(kind, m, k, n)
            products.append(dict(_stats(samples), layer=label, kind=kind,
                                 rows=rows, inner=inner, cols=cols, flops=flops,
                                 TFLOPs=flops / median / 1e12))
            total_flops += flops
            total_seconds += median
    rate = total_flops / total_seconds / 1e12
    details = {"products": products, "total_flops": total_flops,
               "total_median_s": total_seconds, "TFLOPs": rate,
               "method": "sum of FLOPs / sum of median times (FLOP-weighted); "
                         + (f"each product run back to back for {plan.sustain_s} s, its "
                            "samples the ~10 ms windows of the second half (sustained "
                            "clocks)" if sustained else
                            "samples timed one call each")}
    return {f"{dtype_name}_TFLOPs": rate}, details


def attention_flops(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int,
                    causal: bool) -> Tuple[float, float]:
    """(forward, backward) FLOPs of scaled-dot-product attention as the cost
    model counts them: forward 4*B*H*Sq*Sk*D, backward 2.5x that, causal
    halves both."""
    forward = 4.0 * batch * heads * seq_q * seq_k * head_dim
    if causal:
        forward /= 2
    return forward, 2.5 * forward


def measure_attention(dev: Device, plan: Plan) -> Result:
    torch = dev.torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    b, h, s, d = plan.attention_shape
    q, k, v = (torch.randn(b, h, s, d, device=dev.device, dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    grad_out = torch.randn(b, h, s, d, device=dev.device, dtype=torch.bfloat16)
    backend = None
    try:
        from torch.nn.attention import SDPBackend
        backend = SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=True)).name
    except Exception:  # private API: only for the record
        pass

    # Marks: an event on the current stream, or the wall clock on the CPU.
    if dev.is_cuda:
        def record():
            event = dev.event()
            event.record()
            return event
    else:
        record = time.perf_counter

    def step():
        out = sdpa(q, k, v, is_causal=True)
        mid = record()
        # autograd.grad, not backward(): no accumulation into .grad, which
        # would add elementwise kernels to the backward's time.
        torch.autograd.grad(out, (q, k, v), grad_out)
        return mid

    sustained_calls = sustain(dev, step, plan.sustain_s)
    issue_s = math.inf  # the host's time to issue one step
    for _ in range(plan.warmup):
        t0 = time.perf_counter()
        step()
        issue_s = min(issue_s, time.perf_counter() - t0)
    dev.synchronize()
    # On CUDA, the steps are queued behind a hold, as in Device.time_each.
    hold_s = dev.hold_for(plan.repeats * issue_s) if dev.is_cuda else None
    marks = []
    t0 = time.perf_counter()
    for _ in range(plan.repeats):
        start = record()
        mid = step()
        marks.append((start, mid, record()))
    queued_s = time.perf_counter() - t0
    dev.synchronize()
    dev.check_prefilled(hold_s, queued_s)
    if dev.is_cuda:
        fwd = [a.elapsed_time(m) * 1e-3 for a, m, _ in marks]
        bwd = [m.elapsed_time(e) * 1e-3 for _, m, e in marks]
    else:
        fwd = [m - a for a, m, _ in marks]
        bwd = [e - m for _, m, e in marks]
    fwd_flops, bwd_flops = attention_flops(b, h, s, s, d, causal=True)
    t_fwd, t_bwd = statistics.median(fwd), statistics.median(bwd)
    rate = (fwd_flops + bwd_flops) / (t_fwd + t_bwd) / 1e12
    details = {
        "shape_BHSD": [b, h, s, d], "dtype": "bf16", "causal": True,
        "sdpa_backend": backend, "sustained_calls_before": sustained_calls,
        "forward": dict(_stats(fwd), flops=fwd_flops, TFLOPs=fwd_flops / t_fwd / 1e12),
        "backward": dict(_stats(bwd), flops=bwd_flops, TFLOPs=bwd_flops / t_bwd / 1e12),
        "TFLOPs": rate,
        "method": ("F.scaled_dot_product_attention forward, then "
                   "torch.autograd.grad for q, k, v; FLOPs as the cost model "
                   "counts them over median forward + median backward time"),
    }
    return {"attention_TFLOPs": rate}, details


def measure_hbm(dev: Device, plan: Plan) -> Result:
    torch = dev.torch
    elements = plan.hbm_bytes // 2
    x = torch.randn(elements, device=dev.device, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    z = torch.empty_like(x)
    ops = (
        ("copy_", lambda: y.copy_(x), 2 * plan.hbm_bytes),  # read x, write y
        ("add", lambda: torch.add(x, y, out=z), 3 * plan.hbm_bytes),  # read 2, write 1
    )
    entries = {}
    total_bytes = 0.0
    total_seconds = 0.0
    for name, call, nbytes in ops:
        samples = dev.time_each(call, repeats=plan.repeats, warmup=plan.warmup)
        median = statistics.median(samples)
        entries[name] = dict(_stats(samples), bytes=nbytes, GBps=nbytes / median / 1e9)
        total_bytes += nbytes
        total_seconds += median
    del x, y, z
    dev.release()
    rate = total_bytes / total_seconds / 1e9
    details = dict(entries, operand_bytes=plan.hbm_bytes, dtype="bf16", GBps=rate,
                   method="bytes read + written over median time, summed over the ops")
    return {"hbm_GBps": rate}, details


def measure_op_overhead(dev: Device, plan: Plan) -> Result:
    torch = dev.torch
    tiny = torch.zeros(1, device=dev.device, dtype=torch.float32)
    count = plan.tiny_ops

    def issue(n):
        for _ in range(n):
            tiny.add_(1.0)

    issue(count)  # warm-up: kernel load, caches
    dev.synchronize()
    if not dev.is_cuda:
        samples = dev.time_each(lambda: issue(count), repeats=plan.repeats, warmup=0)
        per_op = [s / count for s in samples]
        details = dict(_stats(per_op), ops_per_sample=count, method=(
            "wall time of back-to-back in-place adds on a 1-element tensor, per op"))
        return {"op_overhead_us": statistics.median(per_op) * 1e6}, details

    def timed(n, hold):
        """(device seconds per op, host seconds to queue them, hold length)."""
        hold_s = dev.hold_for(hold) if hold else None
        start, end = dev.event(), dev.event()
        start.record()
        t0 = time.perf_counter()
        issue(n)
        queued_s = time.perf_counter() - t0
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / n, queued_s, hold_s

    # Host-bound: the GPU runs the ops as fast as Python and PyTorch queue them.
    host_bound = [timed(count, 0)[0] for _ in range(plan.repeats)]
    details: Dict[str, Any] = {"host_bound_per_op": _stats(host_bound)}
    if not dev.can_hold():
        details["method"] = ("torch.cuda._sleep missing: per-op time of tiny "
                             "kernels queued by the host as fast as it can")
        return {"op_overhead_us": statistics.median(host_bound) * 1e6}, details
    # Device-bound: a spinning kernel holds the stream while the host queues
    # all the ops, so the GPU runs them back to back from a full queue: the
    # fixed cost of an op on the device, which is what the model adds per op
    # when the GPU, not the host, sets the pace. If the host took longer to
    # queue them than the hold lasted (the queue filled up), fewer ops.
    queue_s = statistics.median([timed(count, 0)[1] for _ in range(3)])
    for _ in range(4):
        results = [timed(count, queue_s) for _ in range(plan.repeats)]
        prefilled = all(queued < hold_s for _, queued, hold_s in results)
        if prefilled:
            break
        count //= 2
        queue_s /= 2
    for _, queued, hold_s in results:
        dev.check_prefilled(hold_s, queued)
    device_bound = [per_op for per_op, _, _ in results]
    details.update({
        "device_bound_per_op": _stats(device_bound),
        "ops_per_sample": count,
        "queue_prefilled": prefilled,
        "method": ("in-place add on a 1-element tensor, `ops_per_sample` back "
                   "to back behind a spinning kernel (so queued before they "
                   "run); op_overhead_us = median device time per op"),
    })
    return {"op_overhead_us": statistics.median(device_bound) * 1e6}, details


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _environment(dev: Device) -> Dict[str, Any]:
    torch = dev.torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # allow_tf32's getter may be deprecated
        env: Dict[str, Any] = {
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "python": platform.python_version(),
            "host": platform.platform(),
            "cpu_threads": torch.get_num_threads(),
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }
        precision = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
        if precision is not None:
            env["matmul_fp32_precision"] = precision
    if not dev.is_cuda:
        env["device"] = {"type": "cpu", "processor": platform.processor() or platform.machine()}
        return env
    props = torch.cuda.get_device_properties(dev.device)
    env["device"] = {
        "type": "cuda",
        "index": dev.device.index,
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "total_memory_bytes": props.total_memory,
    }
    try:
        env["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        pass
    env["nvidia_smi"] = _nvidia_smi(props)
    return env


def _nvidia_smi(props) -> Optional[Dict[str, str]]:
    """Driver, clocks and power of this GPU, if nvidia-smi is there (only for
    the record)."""
    uuid = getattr(props, "uuid", None)
    fields = ("name", "driver_version", "clocks.sm", "clocks.max.sm",
              "clocks.mem", "power.draw", "power.limit", "temperature.gpu", "pstate")
    command = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
    if uuid is not None:
        uuid = str(uuid)
        command.append(f"--id={uuid if uuid.startswith('GPU-') else 'GPU-' + uuid}")
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    values = [v.strip() for v in proc.stdout.strip().splitlines()[0].split(",")]
    return dict(zip(fields, values))


def run_calibration(torch, device: str, quick: bool, name: Optional[str],
                    log: Callable[[str], None]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(profile, details) of a full run."""
    started = time.perf_counter()
    dev = Device(torch, device)
    plan = plan_for(dev.device.type, quick)
    if dev.is_cuda:
        gpu = torch.cuda.get_device_name(dev.device)
        profile_name = name or _slug(gpu)
    else:
        gpu = None
        profile_name = f"{name or 'cpu'} (CPU plumbing test, not a GPU profile)"
        # One thread: on small machines, waking the intra-op thread pool
        # costs more than the small copies and products being timed.
        torch.set_num_threads(1)
    details: Dict[str, Any] = {
        "tool": "offload_mlir.calibrate",
        "command": sys.argv,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        "plan": asdict(plan),
        "environment": _environment(dev),
        "measurements": {},
        "skipped": {},
    }
    if not dev.is_cuda:
        details["note"] = ("CPU run: a host memcpy stands in for the PCIe link and "
                           "host memory for HBM. The figures test this tool's "
                           "plumbing; they are not a device profile.")
    profile: Dict[str, Any] = {"name": profile_name}

    def measure(label: str, how: Callable[..., Result], *args,
                optional_key: Optional[str] = None) -> None:
        """Runs one measurement and records it. With `optional_key`, a
        failure means the device or this torch cannot run it: the key is
        skipped, with the reason in the details."""
        t0 = time.perf_counter()
        try:
            entries, info = how(*args)
        except (RuntimeError, NotImplementedError) as error:
            if optional_key is None:
                raise
            reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
            details["skipped"][optional_key] = reason
            log(f"  {label}: skipped ({reason})")
            return
        finally:
            dev.release()
        info["seconds"] = round(time.perf_counter() - t0, 2)
        for key, value in entries.items():
            if value is None or not math.isfinite(value) or value <= 0:
                details["skipped"][key] = f"measured value {value!r} is not a positive number"
                continue
            profile[key] = _sig(value)
        details["measurements"][label] = info
        log(f"  {label}: " + ", ".join(f"{k}={_sig(v)}" for k, v in entries.items()
                                       if v is not None))

    log(f"calibrating {gpu or 'the CPU (plumbing test)'} on {dev.device}, "
        f"{'quick' if quick else 'full'} run")
    link = LinkBuffers(dev, plan.copy_bytes)
    measure("link", measure_link, dev, plan, link)
    # A step's copies share the GPU with its kernels: where they are slower
    # then, those rates are the profile's (the idle ones stay in details).
    # The GEMMs beside the copies must run at sustained clocks from their
    # first round, or their slowing under load would read as interference.
    details["spin"] = {"before_link_under_compute": spin(dev, plan.spin_s)}
    measure("link_under_compute", measure_link_under_compute, dev, plan, link,
            optional_key="link_under_compute")
    measure("copy_latency", measure_copy_latency, dev, plan, link)
    del link
    dev.release()

    details["spin"]["before_gemms"] = spin(dev, plan.spin_s)
    for dtype_name in ("bf16", "f16", "f8", "f32", "f64"):
        if dtype_name == "f8":
            reason = f8_unsupported_reason(dev)
            if reason is not None:
                details["skipped"]["f8_TFLOPs"] = reason
                log(f"  gemm_f8: skipped ({reason})")
                continue
        measure(f"gemm_{dtype_name}", measure_gemm, dev, plan, dtype_name)
    if dev.is_cuda:
        # Clocks, power and temperature just after the GEMMs' sustained load,
        # beside those before the run (nvidia-smi, when there is one).
        details["environment"]["nvidia_smi_after_gemms"] = _nvidia_smi(
            torch.cuda.get_device_properties(dev.device))
    # No fused or math kernel for bf16 attention here: skipped, not fatal.
    measure("attention", measure_attention, dev, plan, optional_key="attention_TFLOPs")
    measure("hbm", measure_hbm, dev, plan)
    measure("op_overhead", measure_op_overhead, dev, plan)
    if dev.is_cuda:
        details["timing"] = dict(dev.timing, method=(
            "CUDA events; each sample set queued behind a spinning kernel "
            "(torch.cuda._sleep) so samples are device time; not_prefilled "
            "counts sets the host could not queue in time"))
    details["seconds"] = round(time.perf_counter() - started, 2)
    details["profile"] = profile
    return profile, details


# What each written key measured, for the table on stderr.
_HOW = {
    "d2h_GBps": "pinned device->host copy, GPU busy (lower of GEMMs, adds)",
    "h2d_GBps": "pinned host->device copy, GPU busy (lower of GEMMs, adds)",
    "both_ways_GBps": "both at once, total bytes / time, GPU busy",
    "copy_latency_us": "per-copy latency (fit over sizes)",
    "bf16_TFLOPs": "training-shape GEMMs, FLOP-weighted",
    "f16_TFLOPs": "training-shape GEMMs, FLOP-weighted",
    "f8_TFLOPs": "torch._scaled_mm, e4m3 -> bf16",
    "f32_TFLOPs": "GEMMs, default matmul precision",
    "f64_TFLOPs": "GEMMs",
    "attention_TFLOPs": "causal SDPA fwd+bwd, bf16",
    "hbm_GBps": "copy_ + add, read + written",
    "op_overhead_us": "tiny kernel back to back, per op",
    "copy_interference": "kernel time added per second of copy beside it (GEMMs, adds; larger)",
}


def format_table(profile: Dict[str, Any], details: Dict[str, Any]) -> str:
    lines = [f"profile {profile['name']!r}:"]
    for key in PROFILE_KEYS[1:]:
        if key in profile:
            lines.append(f"  {key:<17} {profile[key]:>10g}   {_HOW[key]}")
    for key, reason in details["skipped"].items():
        lines.append(f"  {key:<17} {'-':>10}   not written: {reason}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m offload_mlir.calibrate",
        description="Measure this GPU and write the device profile (JSON) the "
                    "offload cost model reads (docs/calibrate.md).")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="write the profile here (default: print it to stdout); "
                             "details go to PATH with .json replaced by .details.json")
    parser.add_argument("--details", metavar="PATH",
                        help="write the details here instead (default: next to "
                             "--output; none when printing to stdout)")
    parser.add_argument("--name", help="the profile's name (default: from the GPU's name)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes, fewer repeats, a shorter warm-up: about 12 s "
                             "instead of 25 on an H100")
    parser.add_argument("--device", default="cuda",
                        help="cuda or cuda:N (default cuda); cpu only tests this tool")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    import torch

    try:
        profile, details = run_calibration(torch, args.device, args.quick, args.name, log)
    except CalibrationError as error:
        print(f"offload_mlir.calibrate: error: {error}", file=sys.stderr)
        return 1

    text = json.dumps(profile, indent=2) + "\n"
    details_path = args.details or (details_path_for(args.output) if args.output else None)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if details_path:
        with open(details_path, "w") as f:
            json.dump(details, f, indent=2, default=str)
            f.write("\n")
    log(format_table(profile, details))
    written = [p for p in (args.output, details_path) if p]
    log(f"{'wrote ' + ' and '.join(written) + ', ' if written else ''}"
        f"{details['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
