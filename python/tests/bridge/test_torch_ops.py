"""Tests of the PyTorch copy ops (torch.ops.offload.*, lib/TorchOps) on CPU.

CPU tensors go through offload_rt's sim backend, so these tests copy through
the real runtime (pool, copy streams, events) without a GPU. Skipped when
torch is not importable; when the ops library is not built they skip too,
except with CI=true, where a missing library is a failure.

The host value is an opaque 1-D uint8 buffer of numel * itemsize bytes laid
out with offload_start's `stride`; a load rebuilds the tensor with the size,
stride and dtype it is given.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading

import pytest

from tests.helpers import import_ops_or_skip

torch = pytest.importorskip("torch")

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

ops = import_ops_or_skip()


CPU = torch.device("cpu")
U8 = torch.uint8


def _bits(t):
    """The tensor's bytes in logical (row-major) order, for bit-exact
    comparison (NaN payloads, -0.0)."""
    t = t.contiguous()
    if t.dtype == torch.bool:
        return t.view(torch.uint8).reshape(-1).clone()
    return t.reshape(-1).view(torch.uint8).clone()


def _span(t):
    """The bytes of a dense tensor in memory order (its storage span)."""
    assert ops.is_dense_stride(t.shape, t.stride())
    return _bits(t.as_strided((t.numel(),), (1,)))


def _bytes_in_layout(t, stride):
    """The bytes a host buffer of `t` laid out with `stride` must hold."""
    x = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device)
    x.copy_(t)
    return _span(x.cpu())


def _sample(dtype, shape=(33, 17), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        t = (torch.randn(shape, generator=g) * 100).to(dtype)
        flat = t.view(-1)
        flat[:4] = torch.tensor([float("inf"), float("-inf"), -0.0, float("nan")])
        return t
    return torch.randint(-(2**40), 2**40, shape, generator=g, dtype=torch.int64).to(dtype)


def _offload(src, stride=None, after=()):
    """offload_start + offload_wait with `stride` (default: ops.dense_stride)."""
    stride = ops.dense_stride(src) if stride is None else stride
    host = ops.offload_start(src, stride, list(after))
    ops.offload_wait(host, src, [])
    return host


def _check_host(host, src, stride):
    assert host.device == CPU and host.dtype == U8 and host.dim() == 1
    assert host.numel() == src.numel() * src.element_size()
    assert host.is_contiguous()
    assert torch.equal(host, _bytes_in_layout(src, stride))


def _check_loaded(dst, src, stride, device=CPU):
    assert dst.device.type == torch.device(device).type
    assert dst.dtype == src.dtype and dst.shape == src.shape
    assert dst.stride() == tuple(stride)  # exactly the requested layout
    assert torch.equal(_bits(dst.cpu()), _bits(src.cpu()))


def _run_child(code: str, **env_vars) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (so env vars reach the runtime's
    context creation) with the same ops library; returns the finished process
    (stdout, stderr as text)."""
    env = dict(os.environ)
    env.update({k: str(v) for k, v in env_vars.items()})
    env["PYTHONPATH"] = _PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env["OFFLOAD_MLIR_LIB_DIR"] = os.path.dirname(ops.load_library())
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"child failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


# --- loading and registration ----------------------------------------------


def test_library_is_found_and_loaded_once():
    path = ops.load_library()
    assert os.path.basename(path) == ops.LIB_NAME
    assert ops.load_library() == path
    assert ops.find_library() is not None
    dirs = ops.library_search_path()
    repo = os.path.dirname(_PYTHON_DIR)
    assert dirs[-2:] == [
        os.path.join(repo, "build", "lib"),
        os.path.join(repo, "build", "torch-ops"),  # scripts/setup.sh
    ]
    for name in ("offload_start", "offload_wait", "load", "load_start", "load_wait"):
        assert hasattr(torch.ops.offload, name)


def test_schemas():
    schemas = {
        name: str(getattr(torch.ops.offload, name).default._schema)
        for name in ("offload_start", "offload_wait", "load", "load_start", "load_wait")
    }
    assert schemas == {
        "offload_start": "offload::offload_start(Tensor src, SymInt[] stride, Tensor[] after) -> Tensor",
        "offload_wait": "offload::offload_wait(Tensor host, Tensor src, Tensor[] after) -> ()",
        "load": "offload::load(Tensor host, SymInt[] size, SymInt[] stride, ScalarType dtype, "
        "Device device, Tensor[] after) -> Tensor",
        "load_start": "offload::load_start(Tensor host, SymInt[] size, SymInt[] stride, "
        "ScalarType dtype, Device device, Tensor[] after) -> Tensor",
        "load_wait": "offload::load_wait(Tensor(a!) dst, Tensor host, Tensor[] after) -> ()",
    }


def test_ops_are_side_effectful_and_flexible_layout():
    from torch._library.utils import is_impure
    from torch.fx.node import _side_effectful_functions

    for op in (ops.offload_wait, ops.load_wait, ops.offload_start, ops.load_start):
        assert op.default in _side_effectful_functions
        assert is_impure(op.default)
    # Inductor must hand every op the same buffer for one FX value (see
    # test_compiled_ops_share_the_source_buffer).
    for op in (ops.offload_start, ops.offload_wait, ops.load, ops.load_start, ops.load_wait):
        assert torch.Tag.flexible_layout in op.default.tags


def test_layout_helpers():
    assert ops.contiguous_stride((2, 3, 4)) == [12, 4, 1]
    assert ops.contiguous_stride(torch.empty(2, 0, 4)) == [4, 4, 1]  # as PyTorch
    assert ops.contiguous_stride(()) == []
    x = torch.empty(4, 6)
    assert ops.dense_stride(x.t()) == [1, 6]  # a transpose keeps its layout
    assert ops.dense_stride(x[:, ::2]) == [3, 1]  # gaps: contiguous instead
    assert ops.dense_stride(x[:1].expand(3, 6)) == [6, 1]  # overlap: contiguous
    cl = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert ops.dense_stride(cl) == list(cl.stride())
    assert ops.layout(x.t()) == ([6, 4], [1, 6], torch.float32, CPU)
    assert ops.layout(x, device="cpu") == ([4, 6], [6, 1], torch.float32, CPU)
    assert ops.host_nbytes([4, 6], torch.bfloat16) == 48
    assert ops.is_dense_stride([1, 5], [99, 1])  # size-1 dims do not count
    assert not ops.is_dense_stride([2, 5], [4, 1])  # overlap
    assert not ops.is_dense_stride([2, 5], [6, 1])  # gap
    assert not ops.is_dense_stride([2, 5], [5])  # rank mismatch
    assert not ops.is_dense_stride([2, 3], [-3, 1])  # negative
    for size, stride in [
        ([2, 3, 4], [12, 4, 1]), ([2, 3, 4], [1, 2, 6]), ([3, 1, 2], [2, 7, 1]),
        ([2, 3, 4], [24, 8, 2]), ([2, 3, 4], [4, 0, 1]), ([2, 2], [2, 2]), ([0, 3], [5, 9]),
        ([1, 1], [5, 9]),
    ]:
        t = torch.empty_strided(size, stride)
        assert ops.is_dense_stride(size, stride) == torch._prims_common.is_non_overlapping_and_dense_or_false(t)


# --- round trips ---------------------------------------------------------------

_DTYPES = [torch.bfloat16, torch.float32, torch.float16, torch.int64, torch.bool, torch.uint8]


@pytest.mark.parametrize("order", ["row_major", "column_major"])
@pytest.mark.parametrize("dtype", _DTYPES)
def test_roundtrip_bit_exact(dtype, order):
    src = _sample(dtype)
    # The requested layout: src's own (the copy reads src directly) or the
    # transposed one (src is first copied into a temporary of that layout).
    stride = [1, src.shape[0]] if order == "column_major" else list(src.stride())
    host = ops.offload_start(src, stride, [])
    ops.offload_wait(host, src, [])
    _check_host(host, src, stride)

    back = ops.load(host, list(src.shape), stride, dtype, CPU, [])
    _check_loaded(back, src, stride)
    assert back.data_ptr() != host.data_ptr()

    dst = ops.load_start(host, list(src.shape), stride, dtype, CPU, [back])
    ops.load_wait(dst, host, [])
    _check_loaded(dst, src, stride)

    # The same bytes rebuilt with another dtype and shape: a plain
    # reinterpretation (the host buffer is opaque bytes).
    raw = ops.load(host, [host.numel()], [1], U8, CPU, [])
    assert torch.equal(raw, _bytes_in_layout(src, stride))

    # The host copy is independent of the source once waited for.
    expected = _bits(src.clone())
    src.zero_() if dtype != torch.bool else src.fill_(False)
    assert torch.equal(_bits(back), expected)
    assert torch.equal(_bits(dst), expected)
    assert torch.equal(host, _bytes_in_layout(back, stride))


@pytest.mark.parametrize(
    "make, own_layout",
    [
        (lambda t: t.t(), True),  # transposed: dense, its strides are kept
        (lambda t: t[::2, 1:], False),  # strided slice: gaps
        (lambda t: t.unsqueeze(0).expand(3, *t.shape), False),  # stride-0 expand
        (lambda t: t[3:], True),  # contiguous view at a storage offset
    ],
    ids=["transpose", "slice", "expand", "offset"],
)
@pytest.mark.parametrize("requested", ["dense", "contiguous"])
def test_strided_sources(make, own_layout, requested):
    base = _sample(torch.float32, (24, 16), seed=3)
    src = make(base)
    stride = ops.dense_stride(src) if requested == "dense" else ops.contiguous_stride(src)
    # A temporary of the requested layout is needed unless src has it.
    temporary = not own_layout if requested == "dense" else not src.is_contiguous()
    assert temporary == (stride != list(src.stride()))
    ops.reset_runtime_stats()
    host = ops.offload_start(src, stride, [])
    ops.offload_wait(host, src, [])
    _check_host(host, src, stride)
    back = ops.load(host, *ops.layout(src, stride), [])
    _check_loaded(back, src, stride)
    # The temporary the copy read is handed back after the copy.
    ops.offload_start(torch.ones(1), [1], [])  # a later runtime call runs callbacks
    s = ops.runtime_stats()
    assert s["device_releases"] == (1 if temporary else 0)
    assert s["d2h_bytes"] == src.numel() * 4 + 4


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
def test_deterministic_mode_fills_no_memory_the_copies_overwrite(device):
    """Under torch.use_deterministic_algorithms(True) PyTorch fills new
    memory with NaN (torch.utils.deterministic.fill_uninitialized_memory).
    A load's destination and an offload's layout temporary are overwritten
    whole by their copies: the ops allocate them without that fill, which
    on the H100 cost a memory-bound kernel per load (1.0 ms a step for 23
    loads of the bf16x8 benchmark)."""
    src = _sample(torch.float32, (24, 16), seed=5).to(device).t()  # not dense-contiguous
    stride = ops.contiguous_stride(src)  # so the offload needs a temporary
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert torch.utils.deterministic.fill_uninitialized_memory
        assert torch.isnan(torch.empty(4, device=device)).all()  # the fill is on
        with torch.profiler.profile() as prof:
            host = ops.offload_start(src, stride, [])
            ops.offload_wait(host, src, [])
            back = ops.load(host, *ops.layout(src, stride), [])
            dst = ops.load_start(host, *ops.layout(src, stride), [])
            ops.load_wait(dst, host, [])
        names = {e.name for e in prof.events()}
        assert not names & {"aten::fill_", "aten::empty_strided", "aten::empty"}, names
        _check_host(host, src, stride)
        _check_loaded(back, src, stride, device)
        _check_loaded(dst, src, stride, device)
    finally:
        torch.use_deterministic_algorithms(was)


def test_source_strides_differ_from_the_requested_layout():
    # A channels-last source saved with contiguous strides, and vice versa:
    # the host bytes follow the requested layout, the loads rebuild it.
    nchw = _sample(torch.float32, (2, 5, 4, 3), seed=7)
    nhwc = nchw.to(memory_format=torch.channels_last)
    assert torch.equal(_bits(nchw), _bits(nhwc)) and nchw.stride() != nhwc.stride()
    for src, stride in ((nhwc, list(nchw.stride())), (nchw, list(nhwc.stride()))):
        ops.reset_runtime_stats()
        host = ops.offload_start(src, stride, [])
        ops.offload_wait(host, src, [])
        _check_host(host, src, stride)
        assert torch.equal(host, _span(nchw if stride == list(nchw.stride()) else nhwc))
        back = ops.load(host, list(src.shape), stride, src.dtype, CPU, [])
        _check_loaded(back, src, stride)
        dst = ops.load_start(host, list(src.shape), stride, src.dtype, CPU, [])
        ops.load_wait(dst, host, [])
        _check_loaded(dst, src, stride)
        ops.offload_start(torch.ones(1), [1], [])
        assert ops.runtime_stats()["device_releases"] == 1  # the temporary


def test_size_one_dims_do_not_count_as_a_different_layout():
    # Strides of size-1 dims do not matter (as for PyTorch's contiguity):
    # the copy reads src itself, no temporary, and the wait's source check
    # sees the same memory.
    base = torch.randn(4, 8)
    src = base[1:2]  # (1, 8), strides (8, 1), at an offset
    ops.reset_runtime_stats()
    host = ops.offload_start(src, [1, 1], [])
    ops.offload_wait(host, src, [])
    _check_host(host, src, [1, 1])
    back = ops.load(host, [1, 8], [123, 1], torch.float32, CPU, [])
    assert back.stride() == (123, 1) and torch.equal(back, src)
    ops.offload_start(torch.ones(1), [1], [])
    assert ops.runtime_stats()["device_releases"] == 0
    # A different tensor at the wait is still caught.
    host = ops.offload_start(src, [1, 1], [])
    with pytest.raises(RuntimeError, match="is not the tensor offload_start copied from"):
        ops.offload_wait(host, src.clone(), [])


def test_zero_size_tensors():
    src = torch.empty(0, 7, dtype=torch.bfloat16)
    host = ops.offload_start(src, [7, 1], [])
    assert host.shape == (0,) and host.dtype == U8 and host.device == CPU
    ops.offload_wait(host, src, [])
    back = ops.load(host, [0, 7], [1, 1], torch.bfloat16, CPU, [])  # dense: a size-0 dim
    assert back.shape == (0, 7) and back.stride() == (1, 1)
    dst = ops.load_start(host, [0, 7], [7, 1], torch.bfloat16, CPU, [])
    assert dst.shape == (0, 7) and dst.stride() == (7, 1)
    ops.load_wait(dst, host, [])
    with pytest.raises(RuntimeError, match="host has 0 bytes, but size"):
        ops.load(host, [1, 7], [7, 1], torch.bfloat16, CPU, [])


def test_scalar_tensor():
    src = torch.tensor(3.25, dtype=torch.float64)
    host = ops.offload_start(src, [], [])
    ops.offload_wait(host, src, [])
    assert host.shape == (8,) and host.view(torch.float64).item() == 3.25
    back = ops.load(host, [], [], torch.float64, CPU, [])
    assert back.shape == () and back.item() == 3.25


def test_user_host_tensor_is_loaded_with_a_plain_copy():
    before = ops.extra_stats()["generic_loads"]
    values = torch.arange(10, dtype=torch.int32)
    host = values.view(U8)  # a user's byte buffer, not a pool block
    assert torch.equal(ops.load(host, [10], [1], torch.int32, CPU, []), values)
    dst = ops.load_start(host, [2, 5], [1, 2], torch.int32, CPU, [])
    ops.load_wait(dst, host, [])
    # The bytes land in dst's span in memory order: column-major here.
    assert dst.stride() == (1, 2) and torch.equal(dst, values.reshape(5, 2).t())
    # A strided byte buffer (every other byte of a larger one) works too.
    wide = torch.zeros(80, dtype=U8)
    wide[::2] = host
    assert torch.equal(ops.load(wide[::2], [10], [1], torch.int32, CPU, []), values)
    assert ops.extra_stats()["generic_loads"] == before + 3


def test_ops_from_another_thread():
    # autograd runs backward on its own thread: offload here, load there.
    src = _sample(torch.float32, (128, 64), seed=5)
    host = _offload(src)
    result = {}

    def worker():
        d = ops.load_start(host, *ops.layout(src), [])
        ops.load_wait(d, host, [])
        result["d"] = d

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    _check_loaded(result["d"], src, src.stride())


# --- statistics and errors --------------------------------------------------------


def test_stats_count_bytes_and_copies():
    a = _sample(torch.bfloat16, (64, 32), seed=1)
    b = _sample(torch.int64, (10, 10), seed=2)
    ops.reset_runtime_stats()
    ha = ops.offload_start(a, ops.contiguous_stride(a), [])
    hb = ops.offload_start(b, ops.contiguous_stride(b), [])
    ops.offload_wait(ha, a, [])
    ops.offload_wait(hb, b, [])
    la = ops.load(ha, *ops.layout(a), [])
    lb = ops.load_start(hb, *ops.layout(b), [la])
    ops.load_wait(lb, hb, [])
    s = ops.runtime_stats()
    assert "sim" in s["backends"]
    assert s["d2h_copies"] == 2 and s["h2d_copies"] == 2
    assert s["d2h_bytes"] == a.nbytes + b.nbytes
    assert s["h2d_bytes"] == a.nbytes + b.nbytes
    assert s["waits"] == 4 and s["host_waits"] == 4
    assert s["pinned_peak_bytes"] >= a.nbytes + b.nbytes
    # None once an earlier test of this process made an (untimed) cuda context.
    assert (s["exposed_wait_seconds"] is None) == (s["untimed_cuda_contexts"] > 0)
    assert s["untimed_cuda_contexts"] > 0 or s["exposed_wait_seconds"] >= 0.0
    assert s["fallbacks"] == 0 and s["sync_fallbacks"] == 0
    assert s["pending_offloads"] == 0 and s["pending_loads"] == 0
    assert s["live_host_blocks"] >= 2
    sim = ops.backend_stats("sim")
    assert sim["d2h_bytes"] == a.nbytes + b.nbytes
    # CPU tensors never touch cuda. Its context exists when an earlier test
    # in this process copied CUDA tensors; the reset above zeroed its counts.
    cuda = ops.backend_stats("cuda")
    assert cuda is None or (cuda["d2h_copies"] == 0 and cuda["h2d_copies"] == 0)
    del ha, hb
    assert ops.runtime_stats()["host_live_bytes"] <= s["host_live_bytes"] - (
        a.nbytes + b.nbytes
    )
    ops.reset_runtime_stats()
    s = ops.runtime_stats()
    assert s["d2h_bytes"] == 0 and s["h2d_copies"] == 0
    assert s["exposed_wait_seconds"] in (0, None)


def test_wait_errors_are_clear():
    src = torch.randn(8)
    host = ops.offload_start(src, [1], [])
    ops.offload_wait(host, src, [])
    with pytest.raises(RuntimeError, match="no pending offload .* already waited for"):
        ops.offload_wait(host, src, [])
    with pytest.raises(RuntimeError, match="no pending offload"):
        ops.offload_wait(torch.empty(32, dtype=U8), src, [])
    with pytest.raises(RuntimeError, match="no pending load"):
        ops.load_wait(torch.empty(8), host, [])
    dst = ops.load_start(host, [8], [1], torch.float32, CPU, [])
    ops.load_wait(dst, host, [])
    with pytest.raises(RuntimeError, match="no pending load"):
        ops.load_wait(dst, host, [])
    with pytest.raises(RuntimeError, match="must be on CUDA .* or CPU"):
        ops.load(host, [8], [1], torch.float32, torch.device("meta"), [])


_BAD_STRIDES = [
    ([8, 16], [0, 1], "overlapping"),  # rows on top of each other
    ([8, 16], [1, 1], "overlapping"),
    ([8, 16], [32, 1], "gapped"),  # a gap after every row
    ([8, 16], [16, 2], "gapped"),
    ([8, 16], [-16, 1], "negative"),
    ([8, 16], [16], "rank"),
]


@pytest.mark.parametrize("size, stride, why", _BAD_STRIDES, ids=[b[2] + str(b[1]) for b in _BAD_STRIDES])
def test_invalid_stride_is_rejected(size, stride, why):
    src = torch.randn(size)
    good = _offload(src, [16, 1])
    msg = "has 1 dims, but size" if why == "rank" else "is not a non-overlapping and dense layout"
    before = ops.extra_stats()
    with pytest.raises(RuntimeError, match=msg):
        ops.offload_start(src, stride, [])
    with pytest.raises(RuntimeError, match=msg):
        ops.load(good, size, stride, torch.float32, CPU, [])
    with pytest.raises(RuntimeError, match=msg):
        ops.load_start(good, size, stride, torch.float32, CPU, [])
    after = ops.extra_stats()
    # Nothing was started.
    assert after["pending_offloads"] == before["pending_offloads"]
    assert after["pending_loads"] == before["pending_loads"]
    # The fake implementations reject it as well (at trace time).
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake_src = torch.empty(size)
        fake_host = torch.empty(src.nbytes, dtype=U8)
        with pytest.raises(RuntimeError, match=msg):
            ops.offload_start(fake_src, stride, [])
        with pytest.raises(RuntimeError, match=msg):
            ops.load(fake_host, size, stride, torch.float32, CPU, [])


def test_wrong_host_buffer_is_rejected():
    src = torch.randn(4, 6)
    host = _offload(src)
    with pytest.raises(RuntimeError, match=r"host has 96 bytes, but size \[4, 6\] of Half needs 48"):
        ops.load(host, [4, 6], [6, 1], torch.float16, CPU, [])
    with pytest.raises(RuntimeError, match=r"host has 96 bytes, but size \[5, 6\] of Float needs 120"):
        ops.load_start(host, [5, 6], [6, 1], torch.float32, CPU, [])
    with pytest.raises(RuntimeError, match="host must be a 1-D torch.uint8 byte buffer"):
        ops.load(src, [4, 6], [6, 1], torch.float32, CPU, [])  # not bytes
    with pytest.raises(RuntimeError, match="host must be a 1-D torch.uint8 byte buffer"):
        ops.load(host.view(8, 12), [4, 6], [6, 1], torch.float32, CPU, [])  # 2-D
    assert ops.extra_stats()["pending_loads"] == 0
    # The right size and dtype (any dense layout) still work.
    _check_loaded(ops.load(host, [4, 6], [6, 1], torch.float32, CPU, []), src, [6, 1])
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake_host = torch.empty(96, dtype=U8)
        with pytest.raises(RuntimeError, match="host has 96 bytes, but size"):
            ops.load(fake_host, [4, 6], [6, 1], torch.float16, CPU, [])


def test_wait_rejects_a_different_source():
    # `src` of offload_wait keeps the copy's source alive; another tensor
    # means the real source was not kept alive: a loud error, not corruption.
    src = torch.randn(64)
    host = ops.offload_start(src, [1], [])
    with pytest.raises(RuntimeError, match="is not the tensor offload_start copied from"):
        ops.offload_wait(host, src.clone(), [])
    assert torch.equal(host.view(torch.float32), src)  # the wait itself happened


def test_host_tensor_dying_before_its_wait_is_harmless():
    before = ops.extra_stats()["pending_offloads"]
    src = torch.randn(1000)
    ops.offload_start(src, [1], [])  # dropped: its deleter discards the token
    assert ops.extra_stats()["pending_offloads"] == before
    host = ops.offload_start(src, [1], [])
    ops.offload_wait(host, src, [])
    assert torch.equal(host.view(torch.float32), src)


# --- fake tensors ----------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_fake_tensor_mode(device):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 6, dtype=torch.bfloat16, device=device)
        h = ops.offload_start(x.t(), ops.dense_stride(x.t()), [])
        # The opaque byte buffer on the CPU, whatever the source's device.
        assert h.device == CPU and h.shape == (48,) and h.dtype == U8
        assert ops.offload_wait(h, x.t(), []) is None
        d = ops.load(h, [6, 4], [1, 6], torch.bfloat16, x.device, [x])
        assert d.device == x.device and d.shape == (6, 4) and d.stride() == (1, 6)
        assert d.dtype == torch.bfloat16
        d2 = ops.load_start(h, *ops.layout(x), [])
        assert d2.device == x.device and d2.dtype == torch.bfloat16
        assert d2.shape == (4, 6) and d2.stride() == (6, 1)
        assert ops.load_wait(d2, h, [d]) is None
        c = torch.empty(2, 3, 4, 2, device=device).to(memory_format=torch.channels_last)
        hc = ops.offload_start(c, ops.contiguous_stride(c), [])
        assert hc.shape == (c.numel() * 4,) and hc.dtype == U8
        dc = ops.load(hc, *ops.layout(c), [])
        assert dc.stride() == c.stride() and dc.is_contiguous(memory_format=torch.channels_last)
    assert ops.extra_stats()["pending_offloads"] >= 0  # nothing ran for real


def test_opcheck():
    # offload_start's result is readable only after offload_wait, so the
    # checks that compare outputs of repeated calls do not apply to it.
    for stride in ([4, 1], [1, 3]):
        torch.library.opcheck(
            ops.offload_start.default,
            (torch.randn(3, 4), stride, []),
            test_utils=("test_schema", "test_faketensor"),
        )
    src = torch.randn(3, 4)
    host = _offload(src)
    torch.library.opcheck(ops.load.default, (host, [3, 4], [4, 1], torch.float32, CPU, []))
    torch.library.opcheck(ops.load.default, (host, [4, 3], [1, 4], torch.float32, CPU, []))


# --- the sim backend's timing: waits block, copies are asynchronous ----------------


def test_sim_latency_waits_block_and_values_stay_right():
    out = _run_child(
        """
        import time, torch
        from offload_mlir import ops
        cpu = torch.device("cpu")
        src = torch.randn(256, 256)
        ref = src.clone()
        t0 = time.perf_counter()
        host = ops.offload_start(src, [256, 1], [])
        t1 = time.perf_counter()
        ops.offload_wait(host, src, [])
        t2 = time.perf_counter()
        src.fill_(7.0)  # after the wait: the copy must not see this
        back = ops.load(host, [256, 256], [256, 1], torch.float32, cpu, [])
        t3 = time.perf_counter()
        dst = ops.load_start(host, [256, 256], [256, 1], torch.float32, cpu, [])
        t4 = time.perf_counter()
        ops.load_wait(dst, host, [])
        t5 = time.perf_counter()
        s = ops.runtime_stats()
        print("start", t1 - t0, "wait", t2 - t1, "load", t3 - t2,
              "load_start", t4 - t3, "load_wait", t5 - t4)
        print("equal", torch.equal(host.view(torch.float32).view(256, 256), ref),
              torch.equal(back, ref), torch.equal(dst, ref))
        print("exposed", s["exposed_wait_seconds"], "copy_ms", s["d2h_ms"], s["h2d_ms"])
        """,
        OFFLOAD_RT_SIM_LATENCY_US=200000,
    ).stdout
    nums = dict(re.findall(r"(\w+) ([0-9.e+-]+)", out.splitlines()[0]))
    assert float(nums["start"]) < 0.15, out  # the start does not wait for the copy
    assert float(nums["load_start"]) < 0.15, out
    assert float(nums["wait"]) >= 0.15, out  # the waits block the thread
    assert float(nums["load"]) >= 0.15, out
    assert float(nums["load_wait"]) >= 0.15, out
    assert "equal True True True" in out, out
    exposed = float(re.search(r"exposed ([0-9.e+-]+)", out).group(1))
    assert exposed >= 0.45, out


def test_poison_shows_before_load_wait_and_data_after():
    out = _run_child(
        """
        import torch
        from offload_mlir import ops
        cpu = torch.device("cpu")
        for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
            src = (torch.arange(64) % 3 == 0) if dtype == torch.bool else torch.arange(64).to(dtype)
            src = src.view(8, 8).t()  # saved column-major: no temporary
            host = ops.offload_start(src, [1, 8], [])
            ops.offload_wait(host, src, [])
            dst = ops.load_start(host, [8, 8], [1, 8], dtype, cpu, [])
            # Read before the wait: the copy has not landed yet (bytes, so a
            # bool's 0xFF is not normalised to 1 by the read).
            early = dst.t().contiguous().view(torch.uint8).clone()
            ops.load_wait(dst, host, [])
            poisoned = bool((early == 255).all())
            if dtype.is_floating_point:  # all-ones bytes are NaN
                poisoned = poisoned and bool(torch.isnan(early.view(dtype)).all())
            print(dtype, "poisoned_before", poisoned, "equal_after",
                  torch.equal(dst, src) and dst.stride() == (1, 8))
            d = ops.load(host, [8, 8], [1, 8], dtype, cpu, [])
            print(dtype, "load_equal", torch.equal(d, src))
        """,
        OFFLOAD_MLIR_POISON=1,
        OFFLOAD_RT_SIM_LATENCY_US=300000,
    ).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 8, out
    for line in lines:
        assert "False" not in line, out


def test_full_pool_falls_back_to_synchronous_copies():
    proc = _run_child(
        """
        import torch
        from offload_mlir import ops
        cpu = torch.device("cpu")
        srcs = [torch.randn(1024) + i for i in range(3)]  # 4 KiB each
        srcs.append((torch.randn(32, 32) + 3).t())  # column-major, saved row-major
        strides = [[1]] * 3 + [[32, 1]]
        hosts = [ops.offload_start(s, st, []) for s, st in zip(srcs, strides)]
        for h, s in zip(hosts, srcs):
            ops.offload_wait(h, s, [])
        ok = all(h.dtype == torch.uint8 and h.shape == (4096,) for h in hosts)
        ok = ok and all(torch.equal(h, s.contiguous().view(-1).view(torch.uint8))
                        for h, s in zip(hosts, srcs))
        loads = [ops.load(h, list(s.shape), st, s.dtype, cpu, [])
                 for h, s, st in zip(hosts, srcs, strides)]
        ok = ok and all(torch.equal(l, s) and list(l.stride()) == st
                        for l, s, st in zip(loads, srcs, strides))
        s = ops.runtime_stats()
        print("ok", ok, "fallbacks", s["fallbacks"], "sync", s["sync_fallbacks"],
              "generic", s["generic_loads"])
        """,
        OFFLOAD_RT_POOL_BYTES="6K",
        OFFLOAD_RT_POOL_GROWABLE=0,
    )
    out = proc.stdout
    nums = dict(re.findall(r"(\w+) (\w+)", out))
    assert nums["ok"] == "True", out
    assert int(nums["fallbacks"]) == 3 and int(nums["sync"]) == 3, out
    assert int(nums["generic"]) == 3, out
    # TORCH_WARN_ONCE (c10's handler: stderr for ops called through torch.ops)
    assert proc.stderr.count("pinned pool is full and cannot grow") == 1, proc.stderr


# --- torch.compile (Inductor, CPU) ---------------------------------------------------


def _call_lines(code: str) -> list[str]:
    body = code[code.index("def call(") :]
    return [line.strip() for line in body.splitlines()]


def _compile_and_run(fn, *args, **config):
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    with inductor_config.patch(force_disable_caches=True, **config):
        compiled = torch.compile(fn, backend="inductor", fullgraph=True)
        out, codes = run_and_get_code(compiled, *args)
    return out, "\n".join(codes)


def _host_buffer_misuse(code: str) -> tuple[set, list[str]]:
    """The host buffers (offload_start results and their aliases) of the
    generated wrapper, and the lines that use one other than the offload ops,
    aliasing, assertions, `del` and `return`: e.g. a kernel reading it or a
    reinterpret_tensor of it (a relayout)."""
    hosts: set = set()
    bad = []
    for line in _call_lines(code):
        m = re.match(r"(\w+) = torch\.ops\.offload\.offload_start\.default\(", line)
        if m:
            hosts.add(m.group(1))
            continue
        used = [h for h in hosts if re.search(rf"\b{h}\b", line)]
        if not used:
            continue
        m = re.match(r"(\w+) = (\w+)(;.*)?$", line)
        if m and m.group(2) in hosts:
            if "# reuse" not in line:  # a reused dead buffer is a new value
                hosts.add(m.group(1))
            continue
        if line.startswith(("del ", "assert_", "return ", "torch.ops.offload.")):
            continue
        if re.match(r"\w+ = torch\.ops\.offload\.\w+\.default\(", line):
            continue
        bad.append(line)
    return hosts, bad


def test_compiled_offload_and_load_match_eager_and_call_the_ops():
    def step(x, w):
        a = torch.relu(x @ w)  # a fused pointwise result: not a buffer of its own
        h = ops.offload_start(a, ops.dense_stride(a), [])
        b = torch.relu(a - 1) * 2  # work that overlaps the copy
        ops.offload_wait(h, a, [b])  # returns nothing: must survive DCE
        c = ops.load(h, *ops.layout(a), [b])
        at = a.t()  # a strided view as source, saved with its own strides
        ht = ops.offload_start(at, ops.dense_stride(at), [c])
        ops.offload_wait(ht, at, [])
        d = ops.load_start(ht, *ops.layout(at), [c])
        e = b + 1
        ops.load_wait(d, ht, [e])
        return c * 3, d + 1, e, d.stride()[0] + 10 * d.stride()[1]

    x = torch.randn(32, 48)
    w = torch.randn(48, 16)
    expected = step(x, w)
    assert expected[3] == 1 + 10 * 16  # d is column-major, as requested
    ops.reset_runtime_stats()
    out, code = _compile_and_run(step, x, w)
    for got, want in zip(out, expected):
        assert torch.equal(torch.as_tensor(got), torch.as_tensor(want))
    s = ops.runtime_stats()
    nbytes = 32 * 16 * 4
    assert (s["d2h_copies"], s["h2d_copies"]) == (2, 2), s
    assert (s["d2h_bytes"], s["h2d_bytes"]) == (2 * nbytes, 2 * nbytes), s
    assert s["host_waits"] == 4 and s["pending_offloads"] == 0 and s["pending_loads"] == 0

    lines = _call_lines(code)
    calls = [l for l in lines if "torch.ops.offload." in l and not l.startswith("assert")]
    kinds = [re.search(r"torch\.ops\.offload\.(\w+)\.default", l).group(1) for l in calls]
    # Nothing was dead-code eliminated, and program order is kept.
    assert kinds == [
        "offload_start", "offload_wait", "load",
        "offload_start", "offload_wait", "load_start", "load_wait",
    ], code
    # The layouts reach the ops as constants.
    assert "offload_start.default(" in code and "[16, 1]" in code and "[1, 16]" in code, code
    hosts, bad = _host_buffer_misuse(code)
    assert len(hosts) >= 2 and not bad, code
    # Run again: same results, copies counted again.
    out2 = torch.compile(step, backend="inductor", fullgraph=True)(x, w)
    assert all(torch.equal(torch.as_tensor(g), torch.as_tensor(w_)) for g, w_ in zip(out2, expected))
    assert ops.runtime_stats()["d2h_copies"] == 4


def test_compiled_ops_share_the_source_buffer():
    """Inductor must pass offload_wait the very buffer offload_start copies
    from (and free it only after offload_wait). Without the flexible_layout
    tag it gives each custom op its own copy of a fused pointwise operand and
    frees offload_start's copy right after the call, while the copy reads it."""

    def f(x):
        a = torch.relu(x) * 3  # unrealised pointwise
        h = ops.offload_start(a, ops.dense_stride(a), [])
        b = (a + 1).sum()
        ops.offload_wait(h, a, [b])
        return ops.load(h, *ops.layout(a), [b]), b

    x = torch.randn(64, 64)
    expected = f(x)
    (got, b), code = _compile_and_run(f, x)
    assert torch.equal(got, expected[0])
    lines = _call_lines(code)
    start = next(l for l in lines if "offload.offload_start.default(" in l)
    wait = next(l for l in lines if "offload.offload_wait.default(" in l)
    src_of_start = re.search(r"offload_start\.default\((\w+)", start).group(1)
    src_of_wait = re.search(r"offload_wait\.default\(\w+, (\w+)", wait).group(1)
    assert src_of_start == src_of_wait, code
    # ... and that buffer is not freed (del) before the wait.
    i_start, i_wait = lines.index(start), lines.index(wait)
    assert f"del {src_of_start}" not in lines[i_start:i_wait], code


def _conv_net(x, w1, w2):
    """A conv net's forward/backward in miniature: a 4-D activation is saved
    (offloaded) and loaded back for later use."""
    F = torch.nn.functional
    y = torch.relu(F.conv2d(x, w1, padding=1))
    h = ops.offload_start(y, ops.dense_stride(y), [])
    z = F.conv2d(y, w2, padding=1)
    ops.offload_wait(h, y, [z])
    y2 = ops.load(h, *ops.layout(y), [z])
    h2 = ops.offload_start(z, ops.dense_stride(z), [y2])
    ops.offload_wait(h2, z, [])
    d = ops.load_start(h2, *ops.layout(z), [y2])
    u = F.conv2d(y2 * 2, w2, padding=1)
    ops.load_wait(d, h2, [u])
    return u + d, y, h, h2


def _check_conv_net(device, **config):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(2, 4, 16, 16, generator=g).to(device)
    w1 = torch.randn(8, 4, 3, 3, generator=g).to(device) * 0.2
    w2 = torch.randn(8, 8, 3, 3, generator=g).to(device) * 0.2
    # No TF32 in cuDNN's convolutions: eager and Inductor pick different
    # algorithms and layouts, and TF32 would hide real differences.
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        expected = _conv_net(x, w1, w2)
        ops.reset_runtime_stats()
        (out, y, h, h2), code = _compile_and_run(_conv_net, x, w1, w2, **config)
        if device != "cpu":
            torch.cuda.synchronize()
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    # Layout optimisation is on: Inductor keeps the activations channels-last
    # (N, C, H, W) = (2, 8, 16, 16) -> strides (2048, 1, 128, 8), while the
    # ops were traced with (and keep) the NCHW strides (2048, 256, 16, 1).
    assert "(2048, 1, 128, 8)" in code, code
    assert "[2048, 256, 16, 1]" in code, code
    # The host buffers are only ever touched by the offload ops: no kernel
    # reads or relayouts them.
    hosts, bad = _host_buffer_misuse(code)
    assert len(hosts) >= 2 and not bad, "\n".join(bad) + "\n\n" + code
    # The host bytes are y's values in the requested (NCHW) order, exactly.
    assert h.dtype == U8 and h.shape == (2 * 8 * 16 * 16 * 4,)
    assert torch.equal(h, _bytes_in_layout(y.cpu(), [2048, 256, 16, 1]))
    # ... and the values match eager (convolution algorithms may differ).
    torch.testing.assert_close(out, expected[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(y, expected[1], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(h.view(torch.float32), expected[2].view(torch.float32), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(h2.view(torch.float32), expected[3].view(torch.float32), rtol=1e-4, atol=1e-4)
    s = ops.runtime_stats()
    assert (s["d2h_copies"], s["h2d_copies"]) == (2, 2), s
    assert s["pending_offloads"] == 0 and s["pending_loads"] == 0
    # z reached offload_start channels-last (Inductor's layout) and was saved
    # NCHW (the traced layout): through a temporary, handed back afterwards.
    h3 = ops.offload_start(torch.ones(1, device=device), [1], [])  # runs callbacks
    assert ops.runtime_stats()["device_releases"] >= 1
    del h3


def test_compiled_conv_net_host_buffers_are_not_relayouted():
    """With layout optimisation (conv nets; always on for CPU convolutions
    with mkldnn), Inductor turns 4-D tensors channels-last. A host value of
    the saved tensor's shape was relayouted too (a CPU kernel reading the
    pinned block while the copy may still write it); the opaque byte buffer
    is not, and the loads still rebuild exactly the traced strides."""
    assert torch.backends.mkldnn.is_available()
    _check_conv_net("cpu")


def test_wait_with_unused_result_survives_fx_dce():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        h = ops.offload_start(x, [1], [])
        ops.offload_wait(h, x, [])
        return x + 1

    gm = make_fx(f)(torch.randn(4))
    gm.graph.eliminate_dead_code()
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.offload_wait.default in targets
    assert ops.offload_start.default in targets


# --- CUDA (run on a GPU machine; skipped here) ---------------------------------------

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@needs_cuda
@pytest.mark.parametrize("order", ["row_major", "column_major"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.int64, torch.bool])
def test_cuda_roundtrip_bit_exact(dtype, order):
    cuda = torch.device("cuda")
    src = _sample(dtype, (513, 257)).to(cuda)
    stride = [1, 513] if order == "column_major" else [257, 1]
    host = ops.offload_start(src, stride, [])
    assert host.device == CPU and host.dtype == U8 and host.shape == (src.nbytes,)
    ops.offload_wait(host, src, [])
    back = ops.load(host, [513, 257], stride, dtype, cuda, [])
    dst = ops.load_start(host, [513, 257], stride, dtype, cuda, [])
    ops.load_wait(dst, host, [])
    # The compute stream waited for the copies; sync it before the CPU reads.
    torch.cuda.current_stream().synchronize()
    assert torch.equal(host, _bytes_in_layout(src.cpu(), stride))
    _check_loaded(back, src, stride, cuda)
    _check_loaded(dst, src, stride, cuda)


@needs_cuda
def test_cuda_ordering_with_compute_and_memory_reuse():
    cuda = torch.device("cuda")
    n = 4096
    a = torch.randn(n, n, device=cuda)
    ops.reset_runtime_stats()
    for _ in range(3):
        src = a @ a  # the offload must see this kernel's result
        ref = src.cpu()
        # strided, saved row-major: a dense temporary
        host = ops.offload_start(src.t(), [n, 1], [])
        host2 = ops.offload_start(src, [n, 1], [])
        junk = torch.empty_like(a).fill_(1.0)  # compute overlapping the copies
        ops.offload_wait(host, src.t(), [junk])
        ops.offload_wait(host2, src, [junk])
        del src  # the caching allocator may now reuse src's memory ...
        over = torch.full((n, n), float("nan"), device=cuda)  # ... right here
        dst = ops.load_start(host2, [n, n], [n, 1], torch.float32, cuda, [over])
        big = over @ over  # more compute while loading
        ops.load_wait(dst, host2, [big])
        out = dst * 2
        torch.cuda.synchronize()
        assert torch.equal(host2.view(torch.float32).view(n, n), ref)
        assert torch.equal(host.view(torch.float32).view(n, n), ref.t())
        assert torch.equal(out.cpu(), ref * 2)
    s = ops.runtime_stats()
    assert "cuda" in s["backends"]
    assert s["d2h_copies"] == 6 and s["h2d_copies"] == 3
    assert s["d2h_bytes"] == 6 * n * n * 4
    assert s["device_releases"] == 3  # the dense temporaries
    assert s["waits"] == 9


@needs_cuda
def test_cuda_source_strides_differ_from_the_requested_layout():
    cuda = torch.device("cuda")
    nchw = _sample(torch.bfloat16, (4, 16, 8, 8), seed=9).to(cuda)
    nhwc = nchw.to(memory_format=torch.channels_last)
    for src, stride in ((nhwc, list(nchw.stride())), (nchw, list(nhwc.stride()))):
        host = ops.offload_start(src, stride, [])
        ops.offload_wait(host, src, [])
        back = ops.load(host, list(src.shape), stride, src.dtype, cuda, [])
        torch.cuda.synchronize()
        assert torch.equal(host, _bytes_in_layout(src.cpu(), stride))
        _check_loaded(back, src, stride, cuda)


@needs_cuda
def test_cuda_poison_before_wait():
    cuda = torch.device("cuda")
    os.environ["OFFLOAD_MLIR_POISON"] = "1"
    try:
        src = torch.arange(1 << 20, device=cuda, dtype=torch.float32)
        host = ops.offload_start(src, [1], [])
        ops.offload_wait(host, src, [])
        dst = ops.load_start(host, [1 << 20], [1], torch.float32, cuda, [])
        ops.load_wait(dst, host, [])
        torch.cuda.synchronize()
        assert torch.equal(dst, src)
    finally:
        del os.environ["OFFLOAD_MLIR_POISON"]


@needs_cuda
def test_cuda_compiled_matches_eager():
    cuda = torch.device("cuda")

    def step(x, w):
        a = torch.relu(x @ w)
        h = ops.offload_start(a, ops.dense_stride(a), [])
        b = torch.relu(a - 1) * 2
        ops.offload_wait(h, a, [b])
        d = ops.load_start(h, *ops.layout(a), [b])
        e = b @ w.t()
        ops.load_wait(d, h, [e])
        return d * 3, e

    x = torch.randn(512, 1024, device=cuda)
    w = torch.randn(1024, 1024, device=cuda)
    expected = step(x, w)
    ops.reset_runtime_stats()
    out, code = _compile_and_run(step, x, w)
    torch.cuda.synchronize()
    assert torch.equal(out[0], expected[0])
    s = ops.runtime_stats()
    assert (s["d2h_copies"], s["h2d_copies"]) == (1, 1)
    assert "torch.ops.offload.offload_wait.default(" in code
    assert "torch.ops.offload.load_wait.default(" in code
    hosts, bad = _host_buffer_misuse(code)
    assert hosts and not bad, code


@needs_cuda
def test_cuda_compiled_conv_net_host_buffers_are_not_relayouted():
    # On CUDA, Inductor's heuristics decide layout optimisation per graph;
    # force it, as a large conv net would get it.
    _check_conv_net("cuda", force_layout_optimization=True)


_TIMING_CHILD = """
import torch
from offload_mlir import ops
cuda = torch.device("cuda")
src = torch.randn(2048, 2048, device=cuda)
host = ops.offload_start(src, [2048, 1], [])
ops.offload_wait(host, src, [])
back = ops.load(host, [2048, 2048], [2048, 1], torch.float32, cuda, [])
assert torch.equal(back, src)
s = ops.runtime_stats()
print(s["untimed_cuda_contexts"], s["exposed_wait_seconds"], s["d2h_ms"], s["waits"])
"""


@needs_cuda
def test_cuda_contexts_time_only_when_asked():
    # Untimed by default: no events around the waits on the compute stream,
    # and no wait time to report (None, not 0).
    untimed, exposed, d2h_ms, waits = _run_child(_TIMING_CHILD).stdout.split()
    assert (untimed, exposed, float(d2h_ms), waits) == ("1", "None", 0.0, "2")
    untimed, exposed, d2h_ms, waits = _run_child(_TIMING_CHILD, OFFLOAD_RT_TIMING=1).stdout.split()
    assert untimed == "0" and float(exposed) >= 0.0 and float(d2h_ms) > 0.0 and waits == "2"
