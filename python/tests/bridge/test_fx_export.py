import os
import re
import subprocess

import pytest

torch = pytest.importorskip("torch")

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from offload_mlir import fx_export, models  # noqa: E402
from offload_mlir.fx_export import TracedStep, emit_mlir, is_view_op  # noqa: E402

aten = torch.ops.aten


def _func(text, name):
    m = re.search(r"func\.func @%s\((.*?)\)\n\s*-> \((.*?)\)" % name, text, re.S)
    assert m, name
    args = re.findall(r"%\w+: (tensor<[^>]*>|index)", m.group(1))
    results = [r.strip() for r in m.group(2).split(", ")] if m.group(2) else []
    return args, results


def _check_contract(text):
    n = int(re.search(r"offload\.num_outputs = (\d+) : i64", text).group(1))
    _, fw_results = _func(text, "forward")
    bw_args, _ = _func(text, "backward")
    saved = fw_results[n:]
    assert saved == bw_args[: len(saved)]
    return n, saved


def test_view_classification():
    assert is_view_op(aten.view.default)
    assert is_view_op(aten.t.default)
    assert is_view_op(aten.transpose.int)
    assert is_view_op(aten.expand.default)
    assert is_view_op(aten.slice.Tensor)
    assert is_view_op(aten._unsafe_view.default)
    assert not is_view_op(aten.split.Tensor)  # Tensor[] result: multi-result op
    assert not is_view_op(aten.add_.Tensor)  # writes its argument
    assert not is_view_op(aten.mm.default)
    assert not is_view_op(aten.clone.default)


def test_tiny_block_cpu(tmp_path, offload_opt):
    out = tmp_path / "tiny.mlir"
    rc = fx_export.main(
        ["--model", "tiny-block", "--device", "cpu", "--lit", "-o", str(out)]
    )
    assert rc == 0
    text = out.read_text()
    assert text.startswith("// RUN: offload-opt %s")
    n, saved = _check_contract(text)
    assert n == 1 and len(saved) > 10
    assert 'trace.view "aten.t.default"' in text
    assert "#trace.operand<0>" in text
    subprocess.run([offload_opt, str(out), "-o", os.devnull], check=True)


def test_export_api_loss_two_layers():
    cfg = models.preset("tiny-block")
    with FakeTensorMode():
        m = models.LlamaStack(cfg, 2, 8, device="cpu", dtype=torch.float32, loss=True)
        x = torch.empty(1, 8, cfg.hidden, requires_grad=True)
    text = fx_export.export_training_step(m, [x])
    n, _ = _check_contract(text)
    assert n == 1
    _, fw_results = _func(text, "forward")
    assert fw_results[0] == "tensor<f32>"  # scalar loss


def test_mutation_multi_result_and_kwargs(offload_opt, tmp_path):
    def f(x, y):
        z = x * 2
        z.add_(y)
        w = z.view(-1)
        a, b = aten.var_mean.correction(w, [0], correction=1, keepdim=False)
        return w.sin(), a, b

    def g(s, t):
        return (s * t,)

    fw = make_fx(f, tracing_mode="fake")(torch.randn(4, 4), torch.randn(4))
    bw = make_fx(g, tracing_mode="fake")(torch.randn(()), torch.randn(()))
    outs = list(fw.graph.output_node().args[0])
    for p, o in zip([n for n in bw.graph.nodes if n.op == "placeholder"], outs[1:]):
        p._rename(o.name)
    text = emit_mlir(TracedStep(fw, bw, 1))
    assert re.search(r'trace\.op "aten\.add_\.Tensor".*mutates = array<i64: 0>', text)
    assert re.search(r'%var_mean:2 = trace\.op "aten\.var_mean\.correction"', text)
    assert 'kwargs = {correction = 1 : i64}' in text
    assert 'result_names = ["getitem", "getitem_1"]' in text
    f_ = tmp_path / "m.mlir"
    f_.write_text(text)
    subprocess.run([offload_opt, str(f_), "-o", os.devnull], check=True)


def test_non_tensor_results_get_result_indices():
    def f(q, k, v):
        out = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)
        return (out[0], out[1])

    # Forward-only graph on purpose: check op emission via a fake step.
    args = [torch.randn(1, 2, 4, 8) for _ in range(3)]
    fw = make_fx(f, tracing_mode="fake")(*args)

    def g(a):
        return (a * 2,)

    bw = make_fx(g, tracing_mode="fake")(torch.randn(1, 2, 4))
    ph = [n for n in bw.graph.nodes if n.op == "placeholder"]
    ph[0]._rename(list(fw.graph.output_node().args[0])[1].name)
    text = emit_mlir(TracedStep(fw, bw, 1))
    assert "result_names" in text


def test_backward_without_gradients_exports_an_empty_index_array(offload_opt, tmp_path):
    # A backward whose every gradient is None (nothing upstream needs one)
    # still records where its results sit in FX's output, as `array<i64>`.
    fw = make_fx(lambda x: (x.sin(),), tracing_mode="fake")(torch.randn(4))
    bw = make_fx(lambda t: (None,), tracing_mode="fake")(torch.randn(4))
    text = emit_mlir(TracedStep(fw, bw, 1))
    assert "trace.result_indices = array<i64>," in text
    f_ = tmp_path / "m.mlir"
    f_.write_text(text)
    subprocess.run([offload_opt, str(f_), "-o", os.devnull], check=True)
