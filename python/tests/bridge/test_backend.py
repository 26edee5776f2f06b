"""End-to-end: models train through `offload_mlir.backend()` on CPU.

On CPU the copy ops run on offload_rt's host-simulation backend: offloads and
loads really copy through the runtime's pool and copy streams. Each test
trains a model for a few steps with an optimizer twice, from the same seed:
once under plain `torch.compile` (Inductor), once through the bridge, and
asserts the losses and every gradient are bit-identical and that bytes
really moved both ways.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

from offload_mlir import models  # noqa: E402
from tests.bridge.helpers import (  # noqa: E402
    MLP,
    ConvNet,
    assert_bit_identical,
    assert_copies_moved,
    no_fallback,
    tiny_lm,
    token_batch,
    train_adamw,
)

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYTHON_DIR = os.path.dirname(os.path.dirname(_HERE))


def _data(kind: str, step: int):
    g = torch.Generator().manual_seed(1000 + step)
    if kind == "mlp":
        return torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
    if kind == "conv":
        return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)
    return token_batch(step)


_MODELS = {"mlp": MLP, "conv": ConvNet, "lm": tiny_lm}


def _train(kind: str, backend, steps: int = 3):
    return train_adamw(_MODELS[kind], lambda step: _data(kind, step), backend, steps)


@pytest.mark.parametrize("kind", ["mlp", "lm", "conv"])
def test_bit_identical_to_inductor_and_bytes_move(offload_mlir, kind):
    baseline = _train(kind, "inductor")
    with no_fallback(offload_mlir):
        result = _train(kind, offload_mlir.backend(min_bytes=0, plan="all"))
    assert_bit_identical(baseline, result)
    report = offload_mlir.last_report()
    assert report["fallback"] is None and report["offloaded"], report
    stats = assert_copies_moved(offload_mlir)
    assert stats["pinned_peak_bytes"] > 0
    assert "exposed_wait_seconds" in stats


def test_aot_eager_bit_identical_to_plain_aot_eager(offload_mlir):
    baseline = _train("lm", "aot_eager")
    offload_mlir.reset_runtime_stats()
    result = _train("lm", offload_mlir.backend(min_bytes=0, plan="all", compiler="aot_eager"))
    assert_bit_identical(baseline, result)
    assert offload_mlir.runtime_stats()["h2d_bytes"] > 0
    # This partition saves the attention output and views of it: they move
    # as one copy, and the rebuilt backward re-applies the views to its load
    # (one storage, one copy), with the gradients above still bit-identical.
    report = offload_mlir.last_report()
    assert report["fallback"] is None, report
    shared = [e for step in report["pipeline"]["steps"] for e in step["saved"]
              if e.get("rebuilt_views")]
    assert shared, "no saved views shared a copy"


def test_unscheduled_copies_bit_identical(offload_mlir):
    baseline = _train("mlp", "inductor")
    result = _train("mlp", offload_mlir.backend(min_bytes=0, plan="all", schedule=False))
    assert_bit_identical(baseline, result)


def test_report_text_and_last_report(offload_mlir, capfd):
    _train("mlp", offload_mlir.backend(min_bytes=0, plan="all", report="text"), steps=1)
    out = capfd.readouterr().out
    assert "offload report: @forward -> @backward" in out
    report = offload_mlir.last_report()
    assert isinstance(report["pipeline"], dict) and report["offloaded"]


def test_default_plan_predicts_no_slowdown(offload_mlir):
    # The default plan (hidden) keeps what the link cannot hide: on tiny
    # CPU-sized tensors with the H100 profile that is everything.
    _train("mlp", offload_mlir.backend(), steps=1)
    report = offload_mlir.last_report()
    assert report["fallback"] is None


def test_unsupported_graph_falls_back_with_one_warning(offload_mlir):
    class Mutating(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.register_buffer("count", torch.zeros(8))

        def forward(self, x):
            h = self.fc(x)
            self.count.add_(1)  # a buffer mutation inside the step
            return (h * self.count).sum()

    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Mutating()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = torch.compile(m, backend=offload_mlir.backend(min_bytes=0, plan="all"))
        loss = f(torch.randn(4, 8))
        loss.backward()
    torch._dynamo.reset()
    torch.manual_seed(0)
    ref = Mutating()
    ref_loss = torch.compile(ref, backend="inductor")(torch.randn(4, 8))
    ref_loss.backward()
    assert torch.equal(loss, ref_loss)
    assert torch.equal(m.fc.weight.grad, ref.fc.weight.grad)
    bridge = [w for w in caught if issubclass(w.category, offload_mlir.BridgeWarning)]
    assert len(bridge) <= 1


def test_options_are_checked():
    from offload_mlir.bridge import OffloadOptions

    with pytest.raises(ValueError):
        OffloadOptions(plan="most")
    with pytest.raises(ValueError):
        OffloadOptions(budget="lots")
    # Strings go through the pipeline's own byte-size parser.
    assert "budget=64M" in OffloadOptions(plan="budget", budget="64M").pipeline_options()
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        OffloadOptions(plan="budget", budget="1.5")
    with pytest.raises(ValueError):
        OffloadOptions(plan="budget", budget=1.5)
    assert "budget=20GiB" in OffloadOptions(plan="budget", budget="20GiB").pipeline_options()
    assert "budget=0.8" in OffloadOptions(plan="budget", budget=0.8).pipeline_options()
    # The model the planner predicts with is the bridge's: memory comes back
    # at the offload's wait, and Inductor fuses memory-bound ops.
    inductor = OffloadOptions().pipeline_options().split()
    assert "release=at-wait" in inductor and "fuse-memory-bound=true" in inductor
    eager = OffloadOptions(compiler="aot_eager").pipeline_options().split()
    assert "release=at-wait" in eager and "fuse-memory-bound=true" not in eager
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="recompute_budget"):
            OffloadOptions(recompute_budget=bad)
    assert OffloadPartitioner_uuid(recompute_budget=0.5) != OffloadPartitioner_uuid()
    # partitioner_config: torch._functorch.config settings, checked by name and type.
    setting = (("ban_recompute_materialized_backward", False),)
    assert OffloadPartitioner_uuid(partitioner_config=setting) != OffloadPartitioner_uuid()
    for bad, match in (((("no_such_setting", 1),), "has no 'no_such_setting'"),
                       ((("ban_recompute_materialized_backward", 0),), "takes a bool"),
                       ((("activation_memory_budget", True),), "takes a float")):
        with pytest.raises(ValueError, match=match):
            OffloadOptions(partitioner_config=bad)
    OffloadOptions(partitioner_config=(("activation_memory_budget", 1),))
    # load_lead is the pipeline's load-lead; by default the pipeline's own.
    assert "load-lead" not in OffloadOptions().pipeline_options()
    assert "load-lead=1.0" in OffloadOptions(load_lead=1).pipeline_options().split()
    for bad in (-0.1, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="load_lead"):
            OffloadOptions(load_lead=bad)
    assert OffloadPartitioner_uuid(load_lead=1.0) != OffloadPartitioner_uuid()
    # reuse_freed_buffers: the pipeline's reuse-freed-buffers, for Inductor's
    # code only (aot_eager plans no buffers of its own); off by default.
    assert "reuse-freed-buffers=true" not in OffloadOptions().pipeline_options()
    assert "reuse-freed-buffers=true" in OffloadOptions(
        reuse_freed_buffers=True).pipeline_options().split()
    assert "reuse-freed-buffers=true" not in OffloadOptions(
        reuse_freed_buffers=True, compiler="aot_eager").pipeline_options()
    with pytest.raises(ValueError, match="reuse_freed_buffers"):
        OffloadOptions(reuse_freed_buffers=1)
    assert OffloadPartitioner_uuid(reuse_freed_buffers=True) != OffloadPartitioner_uuid()
    # inductor_config: torch._inductor.config settings, checked as the
    # partitioner's are; the backend's own are not the caller's to set.
    setting = (("allow_buffer_reuse", False),)
    assert OffloadPartitioner_uuid(inductor_config=setting) != OffloadPartitioner_uuid()
    for bad, match in (((("no_such_setting", 1),), "has no 'no_such_setting'"),
                       ((("allow_buffer_reuse", 0),), "takes a bool"),
                       ((("reorder_for_peak_memory", True),), "set by offload_mlir's backend"),
                       ((("custom_partitioner_fn", None),), "set by offload_mlir's backend")):
        with pytest.raises(ValueError, match=match):
            OffloadOptions(inductor_config=bad)
    # The backend turns Inductor's buffer reuse off unless reuse_freed_buffers
    # asks for it, which inductor_config must then not turn off; where torch
    # itself has it off, Inductor holds no freed buffer, so neither does the
    # model.
    assert OffloadOptions().resolved_inductor_config() == {"allow_buffer_reuse": False}
    assert OffloadOptions(reuse_freed_buffers=True).resolved_inductor_config() == {}
    assert OffloadOptions(inductor_config=(("allow_buffer_reuse", True),)) \
        .resolved_inductor_config() == {"allow_buffer_reuse": True}
    with pytest.raises(ValueError, match="which inductor_config turns off"):
        OffloadOptions(reuse_freed_buffers=True, inductor_config=setting)
    with torch._inductor.config.patch(allow_buffer_reuse=False):
        assert "reuse-freed-buffers=true" not in OffloadOptions(
            reuse_freed_buffers=True).pipeline_options()


def OffloadPartitioner_uuid(**options):
    from offload_mlir.bridge import OffloadOptions, OffloadPartitioner

    return OffloadPartitioner(OffloadOptions(**options)).uuid()


def test_dump_dir_gets_the_exported_ir(offload_mlir, tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLOAD_MLIR_DUMP_DIR", str(tmp_path))
    _train("mlp", offload_mlir.backend(min_bytes=0, plan="all"), steps=1)
    dumped = sorted(tmp_path.glob("step-*.mlir"))
    assert dumped and "func.func @backward" in dumped[0].read_text()


def test_uuid_changes_with_options(offload_mlir):
    from offload_mlir.bridge import OffloadOptions, OffloadPartitioner

    a = OffloadPartitioner(OffloadOptions()).uuid()
    b = OffloadPartitioner(OffloadOptions(min_bytes=0)).uuid()
    assert a != b and a == OffloadPartitioner(OffloadOptions()).uuid()


_STRESS = r"""
import os, sys
sys.path.insert(0, {pydir!r})
sys.path.insert(0, {testdir!r})
import torch, offload_mlir
import test_backend as t
from tests.bridge.helpers import assert_bit_identical
base = t._train("lm", "inductor", steps=2)
res = t._train("lm", offload_mlir.backend(min_bytes=0, plan="all"), steps=2)
assert_bit_identical(base, res)
s = offload_mlir.runtime_stats()
assert s["h2d_bytes"] > 0 and s["exposed_wait_seconds"] > 0, s
print("stress ok", s["exposed_wait_seconds"])
"""


def test_delayed_copies_and_poisoned_loads_stay_bit_identical(offload_mlir):
    # Every copy takes at least 2 ms and every loaded buffer is filled with
    # NaN before its copy lands: a consumer ordered before its copy, or a
    # source reused while its copy still reads it, changes the gradients.
    env = dict(os.environ, OFFLOAD_RT_SIM_LATENCY_US="2000", OFFLOAD_MLIR_POISON="1")
    code = _STRESS.format(pydir=_PYTHON_DIR, testdir=_HERE)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "stress ok" in out.stdout


_MISSING_WAIT = r"""
import sys
sys.path.insert(0, {pydir!r})
sys.path.insert(0, {testdir!r})
import torch, offload_mlir
import test_backend as t
from tests.bridge.helpers import assert_bit_identical
base = t._train("mlp", "inductor", steps=1)
res = t._train("mlp", offload_mlir.backend(min_bytes=0, plan="all"), steps=1)
try:
    assert_bit_identical(base, res)
    print("identical")
except AssertionError as e:
    print("differs:", e)
"""


def test_stress_run_catches_a_missing_wait(offload_mlir):
    # The control for the stress test above: with the loads' waits dropped
    # (OFFLOAD_MLIR_SKIP_WAITS), consumers read the poison before the
    # delayed copies land, and the same check must not pass. The MLP saves only
    # floating-point values: poisoned integer indices (the LM's) would make
    # a gather read out of bounds instead.
    env = dict(os.environ, OFFLOAD_RT_SIM_LATENCY_US="2000", OFFLOAD_MLIR_POISON="1",
               OFFLOAD_MLIR_SKIP_WAITS="load_wait")
    code = _MISSING_WAIT.format(pydir=_PYTHON_DIR, testdir=_HERE)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=900)
    # On the sim backend a late copy also writes into a destination that
    # Inductor already freed, which corrupts the heap: a crash (killed by a
    # signal) is the other way the missing wait shows.
    crashed = out.returncode < 0
    assert crashed or "differs:" in out.stdout, out.stdout[-2000:] + out.stderr[-4000:]


def _copies_between_matmuls(target_of, nodes):
    """Each copy op as (name, number of matrix products before it)."""
    copies, k = [], 0
    for target in map(target_of, nodes):
        if target is None:
            continue
        namespace, name = target
        if namespace == "offload":
            copies.append((name, k))
        elif name in ("mm", "addmm", "bmm"):
            k += 1
    return copies, k


def _one_step_code(backend):
    """One step of the tiny LM under torch.compile with `backend`, the
    caches off (a hit would skip the partitioner and code generation): the
    generated code of forward and backward, and the gradients."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = tiny_lm()
    step = torch.compile(model, backend=backend, dynamic=False)

    def one_step():
        step(*_data("lm", 0)).backward()

    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        _, codes = run_and_get_code(one_step)
    return codes, [p.grad for p in model.parameters()]


def _plan_and_code(offload_mlir, monkeypatch):
    """The copies in the rebuilt graphs (the plan) and in Inductor's
    generated code, for one step of the tiny LM with plan=all."""
    import re

    from offload_mlir import bridge

    def fx_target(n):
        if n.op != "call_function" or not hasattr(n.target, "_opname"):
            return None
        return getattr(n.target, "namespace", None), n.target._opname

    plans = []
    real = bridge.transform_step

    def recording(*args, **kwargs):
        out = real(*args, **kwargs)
        # Now: Inductor's post-grad passes rewrite these graphs in place.
        plans.extend(_copies_between_matmuls(fx_target, gm.graph.nodes) for gm in out[:2])
        return out

    monkeypatch.setattr(bridge, "transform_step", recording)
    codes, _ = _one_step_code(offload_mlir.backend(min_bytes=0, plan="all"))
    assert len(plans) == 2 and len(codes) == 2
    pattern = r"torch\.ops\.(offload)\.(\w+)\.default\(|extern_kernels\.()(\w+)\("
    issued = [_copies_between_matmuls(
        lambda m: (m.group(1) or "aten", m.group(2) or m.group(4)),
        re.finditer(pattern, code)) for code in codes]
    return plans, issued


def test_generated_code_issues_copies_where_the_ir_put_them(offload_mlir, monkeypatch):
    """Inductor's generated code calls the copy ops in the rebuilt graphs'
    order, and between the same matrix products (the extern kernels that
    dominate a step's time), so each copy overlaps what the plan said."""
    ((fw_plan, fw_mm), (bw_plan, bw_mm)), ((fw_code, fw_mm_code), (bw_code, bw_mm_code)) = \
        _plan_and_code(offload_mlir, monkeypatch)
    assert fw_mm == fw_mm_code and fw_plan, "no copies, or matmuls lowered otherwise"
    # Forward: every copy sits between the same two matrix products.
    assert sorted(fw_plan) == sorted(fw_code)
    # Backward: Inductor's scheduler moves some copies across a matrix
    # product or two: a fused kernel takes the place of its first member and
    # pulls up what its later ones read, a load's wait included (and with
    # pin_order, the load's start before the products of its window;
    # test_pin_order.py tests that guarantee on its own).
    assert bw_mm == bw_mm_code
    for kind in ("load_start", "load_wait"):
        planned = [k for o, k in bw_plan if o == kind]
        issued = [k for o, k in bw_code if o == kind]
        assert len(planned) == len(issued) > 0
        moves = [abs(p - i) for p, i in zip(planned, issued)]
        assert max(moves) <= 4 and sum(moves) <= len(moves) * 1.5, (kind, moves)


def test_inductor_config_reaches_the_generated_code(offload_mlir):
    """The backend's Inductor settings, and `inductor_config` over them,
    patch Inductor's config for these graphs only: with buffer reuse off
    (the default), the generated code takes fewer buffers from the ones it
    freed than with it on (Inductor writes `# reuse` where it does; the ones
    left are kernels written in place of their input, which the setting
    leaves on), and training is bit-identical either way."""
    def reuses(codes):
        return [code.count("# reuse") for code in codes]

    reusing, ref = _one_step_code(offload_mlir.backend(
        min_bytes=0, plan="all", inductor_config={"allow_buffer_reuse": True}))
    codes, grads = _one_step_code(offload_mlir.backend(min_bytes=0, plan="all"))
    (fw_on, bw_on), (fw_off, bw_off) = reuses(reusing), reuses(codes)
    assert fw_off <= fw_on and bw_off < bw_on, (reuses(reusing), reuses(codes))
    assert torch._inductor.config.allow_buffer_reuse  # torch's own setting untouched
    for a, b in zip(ref, grads):
        assert torch.equal(a, b)


def _train_small_llama(backend, recompute_budget=None):
    """One step of a 2-layer bf16 LlamaLM on CPU under torch.compile with
    `backend`, Inductor's recompute budget set to `recompute_budget` if
    given: the loss and the gradients."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    cfg = models.LlamaConfig(hidden=128, heads=4, kv_heads=2, ffn=384)
    model = models.LlamaLM(cfg, 2, 32, 512, device="cpu", dtype=torch.bfloat16)
    tokens = torch.randint(0, 512, (2, 33), generator=torch.Generator().manual_seed(1))
    step = torch.compile(model, backend=backend, dynamic=False)
    patch = {"enable_autograd_cache": False}
    if recompute_budget is not None:
        patch["activation_memory_budget"] = recompute_budget
    with torch._functorch.config.patch(**patch), \
            torch._inductor.config.patch(fx_graph_cache=False):
        loss = step(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}


def test_bit_identical_with_a_recompute_budget(offload_mlir):
    """With Inductor's recompute budget the partition saves cheap pointwise
    values (RMSNorm inputs, the embedding's output). Offloaded, such a value
    is an operand of offload_start instead of a forward output; unless the
    rebuild has Inductor realize it in place as it does an output, Inductor
    recomputes it inside its other consumers and the loss changes in the
    last bits (found on the H100 at budget 0.7, reproduced here in bf16)."""

    offload_mlir.reset_runtime_stats()
    ref_loss, ref_grads = _train_small_llama("inductor", recompute_budget=0.7)
    loss, grads = _train_small_llama(offload_mlir.backend(plan="all", min_bytes=0),
                                     recompute_budget=0.7)
    assert offload_mlir.runtime_stats()["d2h_bytes"] > 0
    assert torch.equal(loss, ref_loss)
    for name, g in ref_grads.items():
        assert torch.equal(grads[name], g), name


def test_recompute_budget_option_and_recomputed_ops_in_the_report(offload_mlir):
    """`recompute_budget` is Inductor's activation_memory_budget for the
    backend's partitions: the same bits as Inductor under that budget, and
    the report names the ops backward computes again, with their predicted
    time."""

    def recomputed():
        (step,) = offload_mlir.last_report()["pipeline"]["steps"]
        return step["recomputed"], step["recompute_seconds"]

    _train_small_llama(offload_mlir.backend(plan="all", min_bytes=0))
    ops_default, _ = recomputed()
    ref_loss, ref_grads = _train_small_llama("inductor", recompute_budget=0.3)
    loss, grads = _train_small_llama(
        offload_mlir.backend(plan="all", min_bytes=0, recompute_budget=0.3))
    ops_budget, seconds = recomputed()
    assert torch.equal(loss, ref_loss)
    for name, g in ref_grads.items():
        assert torch.equal(grads[name], g), name
    # A lower budget recomputes more; each entry names its FX node and the
    # backward op it is, and the total is the sum of the predicted times.
    assert len(ops_budget) > len(ops_default)
    assert all(op["node"] and op["index"] >= 0 and op["seconds"] >= 0 for op in ops_budget)
    assert seconds == pytest.approx(sum(op["seconds"] for op in ops_budget)) and seconds > 0


def test_default_device_profile_is_the_one_measured_on_this_gpu(monkeypatch, tmp_path):
    """By a part of the GPU's name, where that profile is packaged; else the
    compiler's defaults, with one warning per GPU name."""
    from offload_mlir import bridge

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bridge, "_warned_unprofiled", set())
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 80GB HBM3")
    assert bridge.default_device_profile().endswith(os.path.join("profiles", "h100.json"))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    assert bridge.default_device_profile().endswith(os.path.join("profiles", "h200.json"))
    monkeypatch.setattr(bridge, "_PACKAGED_PROFILES",
                        {"H100": "h100.json", "Z9": "no-such-profile.json"})
    for name in ("NVIDIA Z9", "Some GPU"):
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, n=name: n)
        with pytest.warns(UserWarning, match=f"no device profile was measured on {name}"):
            assert bridge.default_device_profile() is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert bridge.default_device_profile() is None  # warned once
