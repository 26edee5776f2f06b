"""Tests of pin_order.PinCopyOrder: Inductor runs the matrix products of a
copy's window after the copy's start, with the same kernels as without the
pass.

The case reproduces on CPU what the H100 showed in backward: two reductions
over the same input fuse, the fused kernel takes the place of the first, and
the topological sort pulls the matrix products the second one reads above
the load start that sat between them in the graph.
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import import_ops_or_skip

torch = pytest.importorskip("torch")

import_ops_or_skip()  # registers torch.ops.offload

from offload_mlir.pin_order import PinCopyOrder, copy_windows, installed_pass

N = 64


def _step(host, x, w, v):
    a = (x * 2).sum(1)  # fuses with b below: both reduce rows of x
    d = torch.ops.offload.load_start(host, [N, N], [N, 1], torch.float32,
                                     torch.device("cpu"), [])
    m = (x @ w) @ v  # the window's compute
    b = (m * x).sum(1)
    torch.ops.offload.load_wait(d, host, [])
    return a, b, d * 3


def _inputs():
    g = torch.Generator().manual_seed(0)
    x, w, v, saved = (torch.randn(N, N, generator=g) for _ in range(4))
    host = torch.ops.offload.offload_start(saved, [N, 1], [])
    torch.ops.offload.offload_wait(host, saved, [])
    return (host, x, w, v), saved


def _compile(post_pass):
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    args, saved = _inputs()
    # reorder_for_locality moves nodes next to their users, in inference
    # graphs only; the bridge's graphs are training graphs.
    patches = {"post_grad_custom_post_pass": post_pass, "fx_graph_cache": False,
               "reorder_for_peak_memory": False, "reorder_for_locality": False}
    with torch.no_grad(), torch._inductor.config.patch(patches):
        out, (code,) = run_and_get_code(torch.compile(_step, fullgraph=True), *args)
    assert torch.equal(out[2], saved * 3)
    calls = re.findall(r"torch\.ops\.offload\.(\w+)\.default\(|extern_kernels\.(\w+)\(|(cpp_fused_\w+)\(", code)
    order = [a or b or re.sub(r"_\d+$", "", c) for a, b, c in calls]
    return out, order


def test_fusion_hoists_the_window_without_the_pass():
    _, order = _compile(None)
    assert order.index("load_start") > order.index("mm"), order


def test_pass_keeps_the_window_after_the_start_with_the_same_kernels():
    plain, plain_order = _compile(None)
    pin = PinCopyOrder()
    pinned, order = _compile(pin)
    assert pin.pinned == 2  # the two matrix products
    start, wait = order.index("load_start"), order.index("load_wait")
    assert all(start < i < wait for i, k in enumerate(order) if k == "mm"), order
    assert sorted(order) == sorted(plain_order)  # the same kernels, reordered
    for a, b in zip(plain, pinned):
        assert torch.equal(a, b)


def test_copy_windows_lists_only_extern_kernels():
    args, _ = _inputs()
    aten_gm = torch.fx.experimental.proxy_tensor.make_fx(_step)(*args)
    ((start, wait, kernels),) = copy_windows(aten_gm.graph)
    assert start.target is torch.ops.offload.load_start.default
    assert wait.target is torch.ops.offload.load_wait.default
    assert [k.target for k in kernels] == [torch.ops.aten.mm.default] * 2


def test_a_configured_post_pass_still_runs_first():
    seen = []

    class UserPass:
        def __call__(self, graph):
            seen.append(len(graph.nodes))

        def uuid(self):
            return "user-pass-v1"

    class Config:
        post_grad_custom_post_pass = UserPass()

    pin = installed_pass(Config)
    assert pin.then is Config.post_grad_custom_post_pass
    _compile(pin)
    assert seen and pin.pinned == 2
    # Its identity is part of ours, so Inductor's cache tells them apart.
    assert pin.uuid() != PinCopyOrder().uuid()
    Config.post_grad_custom_post_pass = pin
    assert installed_pass(Config) is pin  # not wrapped twice
