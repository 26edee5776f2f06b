"""The PyTorch copy ops: ``torch.ops.offload.*`` over offload_rt.

Importing this module loads ``liboffload_torch_ops.so`` (C++ on LibTorch,
built from ``lib/TorchOps``), registers the fake (meta) implementations that
FakeTensorMode, Dynamo, AOTAutograd and Inductor trace with, and marks the
waits as side-effectful so no dead-code elimination drops them. See
``docs/torch-ops.md``.

Ops (``after`` only pins an op's place in a graph; the values are ignored)::

    offload_start(Tensor src, SymInt[] stride, Tensor[] after) -> Tensor   # host bytes
    offload_wait(Tensor host, Tensor src, Tensor[] after) -> ()
    load(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype, Device device,
         Tensor[] after) -> Tensor
    load_start(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype,
               Device device, Tensor[] after) -> Tensor
    load_wait(Tensor(a!) dst, Tensor host, Tensor[] after) -> ()
    offload_release(Tensor host, Tensor src) -> ()   # offload_wait, deferred
    prefetch_push(Tensor[] hosts) -> ()   # a forward's loads to start early
    prefetch_issue(Tensor anchor) -> ()   # starts the latest pushed group's

The host value is an opaque 1-D ``torch.uint8`` CPU tensor of
``numel * itemsize`` bytes: the source's values laid out with offload_start's
``stride`` (a non-overlapping and dense layout for the source's shape). A load
rebuilds a tensor of exactly ``size``/``stride``/``dtype`` on ``device`` from
those bytes. :func:`contiguous_stride`, :func:`dense_stride` and
:func:`layout` make the layout arguments, e.g.::

    host = ops.offload_start(x, ops.dense_stride(x), [])
    ops.offload_wait(host, x, [])
    y = ops.load(host, *ops.layout(x), [])      # y: x's shape, strides, dtype
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional

import torch

from . import capi

__all__ = [
    "LIB_NAME",
    "library_search_path",
    "find_library",
    "load_library",
    "runtime_stats",
    "backend_stats",
    "extra_stats",
    "reset_runtime_stats",
    "contiguous_stride",
    "is_dense_stride",
    "dense_stride",
    "layout",
    "host_nbytes",
    "offload_start",
    "offload_wait",
    "load",
    "load_start",
    "load_wait",
    "offload_release",
    "prefetch_push",
    "prefetch_issue",
]

LIB_NAME = "liboffload_torch_ops.so"

def library_search_path() -> list[str]:
    """Directories searched for ``liboffload_torch_ops.so``, in order: those
    of the C API (``$OFFLOAD_MLIR_LIB_DIR``, the package's ``_lib/``, in a
    repository checkout its ``build/lib/``), then, in a checkout,
    ``build/torch-ops/``, where scripts/setup.sh builds the ops."""
    build = capi.repo_build_dir()
    return capi.search_dirs() + ([os.path.join(build, "torch-ops")] if build else [])


def _check_torch_version(path: str) -> None:
    """A staged library names the torch it was built against
    (torch_version.txt beside it); its C++ ABI holds within that release
    series only."""
    try:
        with open(os.path.join(os.path.dirname(path), "torch_version.txt")) as f:
            built = f.read().strip()
    except OSError:
        return
    series = built.split("+")[0].split(".")[:2]
    if torch.__version__.split("+")[0].split(".")[:2] != series:
        raise OSError(f"{path} was built against torch {built}, and this is torch "
                      f"{torch.__version__}: install torch {'.'.join(series)}.x, or rebuild "
                      "the library against this torch (scripts/setup.sh, then "
                      "scripts/stage-python.sh)")


def find_library() -> Optional[str]:
    """Path of the first ``liboffload_torch_ops.so`` on the search path."""
    for d in library_search_path():
        path = os.path.join(d, LIB_NAME)
        if os.path.isfile(path):
            return path
    return None


_lock = threading.Lock()
_lib_path: Optional[str] = None
_cdll: Optional[ctypes.CDLL] = None


def load_library() -> str:
    """Loads the ops library once (``torch.ops.load_library``); returns its path.

    Raises ``OSError`` naming the searched directories if it is not built.
    """
    global _lib_path, _cdll
    with _lock:
        if _lib_path is not None:
            return _lib_path
        path = find_library()
        if path is None:
            raise OSError(
                f"{LIB_NAME} not found in {library_search_path()}; build it with "
                "`cmake -S lib/TorchOps -B build/torch-ops -G Ninja "
                "-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$(python3 -c "
                "'import torch; print(torch.utils.cmake_prefix_path)') && "
                "ninja -C build/torch-ops`, or set OFFLOAD_MLIR_LIB_DIR"
            )
        _check_torch_version(path)
        torch.ops.load_library(path)
        _cdll = _bind(ctypes.CDLL(path))
        _lib_path = path
        return path


# --- statistics (plain C functions of the same .so) -------------------------


class _RtStats(ctypes.Structure):
    """Mirror of ``offload_rt_stats`` (include/offload_rt/offload_rt.h)."""

    _fields_ = [
        ("d2h_copies", ctypes.c_uint64),
        ("h2d_copies", ctypes.c_uint64),
        ("d2h_bytes", ctypes.c_uint64),
        ("h2d_bytes", ctypes.c_uint64),
        ("d2h_ms", ctypes.c_double),
        ("h2d_ms", ctypes.c_double),
        ("waits", ctypes.c_uint64),
        ("wait_ms", ctypes.c_double),
        ("pinned_reserved_bytes", ctypes.c_uint64),
        ("pinned_in_use_bytes", ctypes.c_uint64),
        ("pinned_peak_in_use_bytes", ctypes.c_uint64),
        ("host_live_bytes", ctypes.c_uint64),
        ("host_peak_live_bytes", ctypes.c_uint64),
        ("pool_chunks", ctypes.c_uint64),
        ("pool_grows", ctypes.c_uint64),
        ("fallbacks", ctypes.c_uint64),
        ("pool_stalls", ctypes.c_uint64),
        ("throttles", ctypes.c_uint64),
        ("device_releases", ctypes.c_uint64),
        ("device_in_use_bytes", ctypes.c_uint64),
        ("device_peak_bytes", ctypes.c_uint64),
    ]


class _ExtraStats(ctypes.Structure):
    """Mirror of ``offload_torch_extra_stats`` (lib/TorchOps/offload_torch_ops.h)."""

    _fields_ = [
        ("host_wait_seconds", ctypes.c_double),
        ("host_waits", ctypes.c_uint64),
        ("sync_fallbacks", ctypes.c_uint64),
        ("generic_loads", ctypes.c_uint64),
        ("pending_offloads", ctypes.c_uint64),
        ("pending_loads", ctypes.c_uint64),
        ("live_host_blocks", ctypes.c_uint64),
        ("untimed_cuda_contexts", ctypes.c_uint64),
        ("prefetched_loads", ctypes.c_uint64),
    ]


_BACKENDS = {"cuda": 0, "sim": 1}


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.offload_torch_get_stats.argtypes = [ctypes.c_int, ctypes.POINTER(_RtStats)]
    lib.offload_torch_get_stats.restype = ctypes.c_int
    lib.offload_torch_reset_stats.argtypes = []
    lib.offload_torch_reset_stats.restype = ctypes.c_int
    lib.offload_torch_stats_size.argtypes = []
    lib.offload_torch_stats_size.restype = ctypes.c_size_t
    lib.offload_torch_get_extra_stats.argtypes = [
        ctypes.POINTER(_ExtraStats),
        ctypes.c_size_t,
    ]
    lib.offload_torch_get_extra_stats.restype = ctypes.c_int
    lib.offload_torch_host_wait_seconds.argtypes = []
    lib.offload_torch_host_wait_seconds.restype = ctypes.c_double
    lib.offload_torch_last_error.argtypes = []
    lib.offload_torch_last_error.restype = ctypes.c_char_p
    size = lib.offload_torch_stats_size()
    if size != ctypes.sizeof(_RtStats):
        raise RuntimeError(
            f"{LIB_NAME}: offload_rt_stats is {size} bytes, the Python mirror "
            f"{ctypes.sizeof(_RtStats)}: rebuild the library or update ops.py"
        )
    return lib


def _lib() -> ctypes.CDLL:
    load_library()
    assert _cdll is not None
    return _cdll


def _error(lib: ctypes.CDLL) -> str:
    return (lib.offload_torch_last_error() or b"").decode(errors="replace")


def backend_stats(backend: str) -> Optional[dict]:
    """offload_rt's statistics of one backend ("cuda" or "sim"), as a dict
    with the fields of ``offload_rt_stats``; None if that backend's context
    was never created. Synchronises first (cuda: the devices used)."""
    lib = _lib()
    out = _RtStats()
    rc = lib.offload_torch_get_stats(_BACKENDS[backend], ctypes.byref(out))
    if rc == 1:
        return None
    if rc != 0:
        raise RuntimeError(f"offload_torch_get_stats({backend}) failed: {_error(lib)}")
    return {name: getattr(out, name) for name, _ in _RtStats._fields_}


def extra_stats() -> dict:
    """What the ops add: sim host-blocked wait time, synchronous fallbacks,
    generic loads, loads started early by prefetch_issue and taken by their
    load_start, and pending bookkeeping (offloads and loads not yet waited,
    live host blocks)."""
    lib = _lib()
    out = _ExtraStats()
    if lib.offload_torch_get_extra_stats(ctypes.byref(out), ctypes.sizeof(out)) != 0:
        raise RuntimeError(f"offload_torch_get_extra_stats failed: {_error(lib)}")
    return {name: getattr(out, name) for name, _ in _ExtraStats._fields_}


def runtime_stats() -> dict:
    """Statistics summed over both backends (cuda and sim).

    Keys: the fields of ``offload_rt_stats`` (``d2h_bytes``, ``h2d_bytes``,
    ``d2h_copies``, ``h2d_copies``, ``wait_ms``, ``fallbacks``, ...), plus
    ``pinned_peak_bytes`` (peak pinned bytes in use), ``exposed_wait_seconds``
    (cuda compute-stream wait time + sim host-blocked time; None once a cuda
    context exists that does not time its waits, which is the default:
    ``OFFLOAD_RT_TIMING=1`` before the first copy times them), the extra
    counters of :func:`extra_stats`, and ``backends`` (those with a context).
    ``fallbacks`` counts offloads the pool could not hold (copied
    synchronously instead).
    """
    total = {name: 0 for name, _ in _RtStats._fields_}
    backends = []
    per = {}
    for name in _BACKENDS:
        s = backend_stats(name)
        if s is None:
            continue
        backends.append(name)
        per[name] = s
        for k, v in s.items():
            total[k] += v
    extra = extra_stats()
    total.update(extra)
    total["backends"] = backends
    total["pinned_peak_bytes"] = total["pinned_peak_in_use_bytes"]
    if extra["untimed_cuda_contexts"]:
        # The cuda waits were not timed (OFFLOAD_RT_TIMING unset): unknown.
        total["exposed_wait_seconds"] = None
    else:
        cuda_wait_s = per["cuda"]["wait_ms"] / 1000.0 if "cuda" in per else 0.0
        total["exposed_wait_seconds"] = cuda_wait_s + extra["host_wait_seconds"]
    return total


def reset_runtime_stats() -> None:
    """Zeroes the statistics of every context and the ops' own counters."""
    lib = _lib()
    if lib.offload_torch_reset_stats() != 0:
        raise RuntimeError(f"offload_torch_reset_stats failed: {_error(lib)}")


# --- layouts ------------------------------------------------------------------


def _shape(x) -> list:
    return list(x.shape) if isinstance(x, torch.Tensor) else list(x)


def contiguous_stride(x) -> list:
    """Row-major (contiguous) strides for a tensor's shape or a shape."""
    stride, acc = [], 1
    for d in reversed(_shape(x)):
        stride.append(acc)
        acc = acc * max(d, 1)
    return stride[::-1]


def is_dense_stride(size, stride) -> bool:
    """True if ``stride`` lays out ``size`` without overlaps or gaps (PyTorch's
    non-overlapping-and-dense rule, the check the ops make): a tensor of
    fewer than 2 elements always is; otherwise, ignoring dims of size < 2, the
    strides sorted ascending must be 1, s0, s0*s1, ... Negative strides are
    not."""
    size, stride = list(size), list(stride)
    if len(size) != len(stride) or any(s < 0 for s in stride):
        return False
    if host_nbytes(size, torch.uint8) < 2:  # numel
        return True
    dims = sorted((i for i in range(len(size)) if size[i] >= 2), key=lambda i: stride[i])
    required = 1
    for i in dims:
        if stride[i] != required:
            return False
        required *= size[i]
    return True


def dense_stride(t: torch.Tensor) -> list:
    """``t``'s own strides if they are dense (no copy to a temporary at
    offload_start), contiguous ones otherwise (a transposed view keeps its
    strides, a slice or an expand gets contiguous ones). With symbolic sizes
    (a fake tensor of a graph with dynamic shapes) the strides are symbolic
    too, and decided without a guard: its own strides where they are dense
    for every size, contiguous ones otherwise."""
    if not (_is_static(t.shape) and _is_static(t.stride())):
        from torch._prims_common import (is_non_overlapping_and_dense_or_false,
                                         make_contiguous_strides_for)

        if is_non_overlapping_and_dense_or_false(t):
            return list(t.stride())
        return list(make_contiguous_strides_for(t.shape))
    if is_dense_stride(t.shape, t.stride()):
        return list(t.stride())
    return contiguous_stride(t)


def layout(t: torch.Tensor, stride=None, device=None) -> tuple:
    """``(size, stride, dtype, device)`` of ``t`` for :func:`load` and
    :func:`load_start` (``stride`` defaults to :func:`dense_stride`)."""
    return (
        list(t.shape),
        list(stride) if stride is not None else dense_stride(t),
        t.dtype,
        torch.device(device) if device is not None else t.device,
    )


def host_nbytes(size, dtype: torch.dtype) -> int:
    """Bytes of the host buffer of a ``size``/``dtype`` tensor (numel * itemsize)."""
    n = 1
    for d in _shape(size):
        n *= d
    return n * dtype.itemsize


def _is_static(xs) -> bool:
    return all(isinstance(x, int) for x in xs)


def _check_layout(op: str, size, stride) -> None:
    # The C++ ops make the same check; here it fails at trace time. Symbolic
    # sizes are left to the real op.
    size, stride = list(size), list(stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"offload::{op}: stride {stride} has {len(stride)} dims, but size "
            f"{size} has {len(size)}"
        )
    if _is_static(size) and _is_static(stride) and not is_dense_stride(size, stride):
        raise RuntimeError(
            f"offload::{op}: stride {stride} is not a non-overlapping and dense "
            f"layout for size {size}"
        )


# --- loading, fake implementations, side effects -----------------------------

load_library()


@torch.library.register_fake("offload::offload_start")
def _offload_start_fake(src, stride, after):
    # The opaque host buffer: numel * itemsize bytes on the CPU, whatever
    # src's device. 1-D, so a compiler has no layout to change.
    _check_layout("offload_start", src.shape, stride)
    return torch.empty(src.numel() * src.element_size(), dtype=torch.uint8, device="cpu")


@torch.library.register_fake("offload::offload_wait")
def _offload_wait_fake(host, src, after):
    return None


def _load_fake_impl(op, host, size, stride, dtype, device):
    _check_layout(op, size, stride)
    if host.dtype != torch.uint8 or host.dim() != 1:
        raise RuntimeError(
            f"offload::{op}: host must be a 1-D torch.uint8 byte buffer (as "
            f"offload_start returns), got {host.dtype} of shape {tuple(host.shape)}"
        )
    nbytes = host_nbytes(size, dtype)
    if _is_static([host.numel(), nbytes]) and host.numel() != nbytes:
        raise RuntimeError(
            f"offload::{op}: host has {host.numel()} bytes, but size {list(size)} "
            f"of {dtype} needs {nbytes} (numel * itemsize)"
        )
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


@torch.library.register_fake("offload::load")
def _load_fake(host, size, stride, dtype, device, after):
    return _load_fake_impl("load", host, size, stride, dtype, device)


@torch.library.register_fake("offload::load_start")
def _load_start_fake(host, size, stride, dtype, device, after):
    return _load_fake_impl("load_start", host, size, stride, dtype, device)


@torch.library.register_fake("offload::load_wait")
def _load_wait_fake(dst, host, after):
    return None


@torch.library.register_fake("offload::offload_release")
def _offload_release_fake(host, src):
    return None


@torch.library.register_fake("offload::prefetch_push")
def _prefetch_push_fake(hosts):
    return None


@torch.library.register_fake("offload::prefetch_issue")
def _prefetch_issue_fake(anchor):
    return None


# The waits return nothing, so every dead-code elimination (FX's
# eliminate_dead_code, Dynamo's, AOTAutograd's, Inductor's scheduler through
# FallbackKernel.has_side_effects -> torch._library.utils.is_impure) would
# drop them. load_wait is mutable (impure anyway), but once functionalised it
# becomes auto_functionalized(load_wait, ...), which is impure only if
# load_wait is in this set. The starts are marked too: each starts a copy
# whose token a wait consumes, so dropping one would orphan its wait.
for _op in (
    torch.ops.offload.offload_wait.default,
    torch.ops.offload.load_wait.default,
    torch.ops.offload.offload_start.default,
    torch.ops.offload.load_start.default,
    torch.ops.offload.offload_release.default,
    torch.ops.offload.prefetch_push.default,
    torch.ops.offload.prefetch_issue.default,
):
    torch.fx.node.has_side_effect(_op)
del _op

offload_start = torch.ops.offload.offload_start
offload_wait = torch.ops.offload.offload_wait
load = torch.ops.offload.load
load_start = torch.ops.offload.load_start
load_wait = torch.ops.offload.load_wait
offload_release = torch.ops.offload.offload_release
prefetch_push = torch.ops.offload.prefetch_push
prefetch_issue = torch.ops.offload.prefetch_issue
