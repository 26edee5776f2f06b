"""Every dtype a graph saves travels through the bridge: complex, float8,
integer and bool saved values are offloaded by the planner's rules, and a
model with torchtitan's complex rotary embedding trains through
`torch.compile(model, backend=offload_mlir.backend())` (CPU, the copy ops on
offload_rt's host simulation)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from offload_mlir import models  # noqa: E402
from offload_mlir.ir_plan import read_step, split_top_level  # noqa: E402
from tests.bridge.helpers import (  # noqa: E402
    assert_bit_identical,
    assert_copies_moved,
    no_fallback,
    tiny_llama_config,
    token_batch,
    train_adamw,
)


class SavesEveryDtype(nn.Module):
    """Backward reads a complex64 (`_conj(z)` of `z * z`), a bool (`where`'s
    mask), an int64 (`gather`'s indices) and a float8 (the cast feeding a
    scale's gradient) intermediate."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 32)
        self.c = nn.Linear(32, 10)
        self.scale = nn.Parameter(torch.rand(64))

    def forward(self, x, y):
        h = self.a(x)
        z = torch.view_as_complex(h.reshape(h.shape[0], 32, 2))
        h = torch.view_as_real(z * z).flatten(1)
        mask = h > 0
        h = torch.where(mask, h, 0.1 * h)
        h = torch.gather(h, 1, h.argsort(dim=1))
        h8 = h.to(torch.float8_e4m3fn)
        return F.cross_entropy(self.c(self.b(h8.to(torch.float32) * self.scale)), y)


def _titan_lm():
    return models.TitanLM(tiny_llama_config(), n_layers=2, max_seq=32, vocab=96)


def _mixed_data(step: int):
    g = torch.Generator().manual_seed(2000 + step)
    return torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g)


def _train_offloaded(offload_mlir, make_model, data):
    with no_fallback(offload_mlir):
        result = train_adamw(make_model, data, offload_mlir.backend(min_bytes=0, plan="all"), 3)
    assert_copies_moved(offload_mlir)
    return result


def test_complex_rope_trains_bit_identical_with_copies(offload_mlir):
    baseline = train_adamw(_titan_lm, token_batch, "inductor", 3)
    assert_bit_identical(baseline, train_adamw(_titan_lm, token_batch, "inductor", 3))
    result = _train_offloaded(offload_mlir, _titan_lm, token_batch)
    assert_bit_identical(baseline, result)
    report = offload_mlir.last_report()
    assert report["fallback"] is None and report["offloaded"], report


def test_complex_float8_int_and_bool_saved_values_are_offloaded(offload_mlir):
    baseline = train_adamw(SavesEveryDtype, _mixed_data, "inductor", 3)
    assert_bit_identical(baseline, train_adamw(SavesEveryDtype, _mixed_data, "inductor", 3))
    result = _train_offloaded(offload_mlir, SavesEveryDtype, _mixed_data)
    assert_bit_identical(baseline, result)
    saved = offload_mlir.last_report()["pipeline"]["steps"][0]["saved"]
    offloaded = [e["type"] for e in saved if e.get("offloaded")]
    for element in ("xcomplex<f32>>", "xf8E4M3FN>", "xi1>", "xi64>"):
        assert any(t.endswith(element) for t in offloaded), (element, offloaded)


def test_reader_keeps_nested_types_whole():
    assert split_top_level('%a: tensor<2xcomplex<f32>> {trace.name = "a,b"}, %b: i1') == [
        '%a: tensor<2xcomplex<f32>> {trace.name = "a,b"}', "%b: i1"]
    ir = (
        "module {\n"
        '  func.func @forward(%arg0: tensor<4xcomplex<f32>> {trace.name = "x"}, '
        '%arg1: tensor<8xui8, #offload.host> {trace.name = "h"}) '
        "-> (tensor<4xcomplex<f32>>) attributes {offload.num_outputs = 1 : i64} {\n"
        "    return %arg0 : tensor<4xcomplex<f32>>\n"
        "  }\n"
        "}\n"
    )
    fn = read_step(ir)["forward"]
    assert fn.arg_names == {"%arg0": "x", "%arg1": "h"}
    assert fn.host_args == {"h"}
