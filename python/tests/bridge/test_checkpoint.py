"""Models that already checkpoint train through `offload_mlir.backend()`.

AOTAutograd's partitioner recomputes what a checkpointed region computed,
and wraps each random op it recomputes (dropout, and the fused attention
kernels, which PyTorch tags `nondeterministic_seeded`) in an rng
higher-order op, so backward draws the numbers forward drew: on CPU
`run_and_save_rng_state` in forward (which also saves the generator's state)
and `run_with_rng_state` in backward; on CUDA `graphsafe_run_with_rng_state`
in both, reading a `torch.Generator` placeholder. The bridge carries those
ops through the IR (marked `rng`, with the generators typed
`!trace.generator`), so no graph falls back: the regions stay recomputed,
and what the checkpoints still save (their inputs) is offloaded as usual.

Each end-to-end test trains a checkpointed model under plain `torch.compile`
(Inductor) and through the bridge from the same seed, and asserts that no
graph fell back, that bytes moved both ways, and that losses and gradients
are bit-identical. A control first shows plain Inductor reproduces itself
on the same model. CPU never produces the CUDA form, so a unit test obtains
it from the partitioner's own CUDA rewrite applied on CPU and checks the
round trip (export, pipeline, rebuild) and that the rebuilt graphs compute
the same bits.
"""

from __future__ import annotations

import functools
import re
import types
import warnings

import pytest

torch = pytest.importorskip("torch")

import torch._functorch.config  # noqa: E402,F401  (its own module: torch does not import it)
import torch.fx as fx  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from tests.bridge.helpers import (  # noqa: E402
    assert_bit_identical,
    assert_copies_moved,
    checkpointed_lm,
    no_fallback,
    tiny_lm,
    token_batch,
    train_adamw,
)

aten = torch.ops.aten


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class DropoutBlocks(nn.Module):
    """Residual attention + MLP blocks, each run under non-reentrant
    `torch.utils.checkpoint`, with dropout and fused attention (a random op
    by its tag) inside the region: backward must draw the same numbers
    again."""

    def __init__(self, preserve_rng_state: bool, width: int = 64, heads: int = 4,
                 blocks: int = 2):
        super().__init__()
        self.inp = nn.Linear(32, width)
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.qkv = nn.ModuleList(nn.Linear(width, 3 * width) for _ in range(blocks))
        self.up = nn.ModuleList(nn.Linear(width, 4 * width) for _ in range(blocks))
        self.down = nn.ModuleList(nn.Linear(4 * width, width) for _ in range(blocks))
        self.head = nn.Linear(width, 10)
        self.heads = heads
        self.preserve_rng_state = preserve_rng_state

    def _block(self, i: int, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = self.qkv[i](self.norms[i](x)).view(b, s, 3, self.heads, -1).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        x = x + a.transpose(1, 2).reshape(b, s, w)
        h = F.dropout(F.gelu(self.up[i](x)), p=0.25, training=True)
        return x + self.down[i](h)

    def forward(self, x, y):
        h = self.inp(x)
        for i in range(len(self.up)):
            h = checkpoint(functools.partial(self._block, i), h, use_reentrant=False,
                           preserve_rng_state=self.preserve_rng_state)
        return F.cross_entropy(self.head(h).flatten(0, 1), y.flatten())


class _HFLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return self.model(input_ids=x, labels=y).loss


def _hf_llama() -> nn.Module:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        tie_word_embeddings=True)
    cfg._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(cfg)
    with warnings.catch_warnings():
        # transformers 5 renames it activation_checkpointing_enable; the old
        # name, which 4.x has too, still works.
        warnings.simplefilter("ignore", FutureWarning)
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return _HFLoss(model)


_MODELS = {
    "checkpoint-preserve-rng": lambda: DropoutBlocks(preserve_rng_state=True),
    "checkpoint-no-preserve-rng": lambda: DropoutBlocks(preserve_rng_state=False),
    "per-layer-lm": checkpointed_lm,
    "selective-lm": lambda: checkpointed_lm(selective=True),
    "hf-llama": _hf_llama,
}


def _data(kind: str, step: int):
    g = torch.Generator().manual_seed(1000 + step)
    if kind.startswith("checkpoint-"):
        return torch.randn(2, 16, 32, generator=g), torch.randint(0, 10, (2, 16), generator=g)
    x, y = token_batch(step)
    if kind == "hf-llama":  # HF shifts the labels itself
        return x, x.clone()
    return x, y


def _train(kind: str, backend, steps: int = 2):
    """Losses and gradients of `steps` AdamW steps of model `kind` under
    torch.compile with `backend`, from seed 0 (so the dropout masks too),
    with AOTAutograd's and Inductor's caches off."""
    with torch._functorch.config.patch(enable_autograd_cache=False), \
            torch._inductor.config.patch(fx_graph_cache=False):
        return train_adamw(_MODELS[kind], lambda step: _data(kind, step), backend, steps)


@pytest.fixture
def reports(monkeypatch):
    """Every report the bridge records (one per compiled training graph)."""
    from offload_mlir import bridge

    seen = []
    real = bridge._record

    def record(report):
        seen.append(report)
        real(report)

    monkeypatch.setattr(bridge, "_record", record)
    return seen


KINDS = list(_MODELS)


@pytest.mark.parametrize("kind", KINDS)
def test_plain_inductor_reproduces_itself(kind):
    """The control: plain torch.compile gives the same bits twice on each
    checkpointed model (dropout masks included), so the comparison below is
    well defined."""
    assert_bit_identical(_train(kind, "inductor"), _train(kind, "inductor"))


def _saved(report):
    return [e for step in report["pipeline"]["steps"] for e in step["saved"]]


def _recomputed_ops(report):
    return [e["op"].split(" ")[0] for step in report["pipeline"]["steps"]
            for e in step["recomputed"]]


@pytest.mark.parametrize("kind", KINDS)
def test_checkpointed_model_trains_through_the_backend(offload_mlir, reports, kind):
    baseline = _train(kind, "inductor")
    with no_fallback(offload_mlir):
        result = _train(kind, offload_mlir.backend(min_bytes=0, plan="all"))
    assert_bit_identical(baseline, result)

    # No graph fell back (BridgeWarning is an error above, and every report says so).
    assert reports, "the bridge planned no graph"
    assert all(r["fallback"] is None for r in reports), [r["fallback"] for r in reports]
    recomputed = [op for r in reports for op in _recomputed_ops(r)]
    # The user's regions stay recomputed: backward runs their random ops
    # again, wrapped as the partitioner wrapped them, and their other ops
    # (under the selective policy, all but the matrix products).
    assert "higher_order.run_with_rng_state" in recomputed, recomputed
    matmuls = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default"}
    if kind == "selective-lm":
        assert not matmuls & set(recomputed), recomputed
        assert "aten.mul.Tensor" in recomputed, recomputed
    else:
        assert matmuls & set(recomputed), recomputed
    # What the checkpoints save is offloaded, and the copies really ran.
    offloaded = [name for r in reports for name in r["offloaded"]]
    assert offloaded
    assert_copies_moved(offload_mlir)
    # The generator states forward saves for the random ops stay where they
    # are (host data of the generator): the exporter marks their producer.
    states = [e for r in reports for e in _saved(r) if e["producer"].startswith(
        "higher_order.run_and_save_rng_state")]
    assert states and all(not e["offloaded"] and e["kept_reason"] == "opted out (offload.keep)"
                          for e in states), states


@pytest.mark.parametrize("kind", ["checkpoint-preserve-rng", "checkpoint-no-preserve-rng"])
def test_dropout_drawn_again_in_backward_under_aot_eager(offload_mlir, reports, kind,
                                                         tmp_path, monkeypatch):
    """Without Inductor's decompositions the dropout itself (ATen's
    native_dropout, drawing from the global generator) is what the
    partitioner wraps: forward saves the generator's state before the
    mask, backward draws the mask again from it. Plain aot_eager
    reproduces itself, and the bridge under aot_eager gives its bits."""
    baseline = _train(kind, "aot_eager")
    assert_bit_identical(baseline, _train(kind, "aot_eager"))
    monkeypatch.setenv("OFFLOAD_MLIR_DUMP_DIR", str(tmp_path))
    with no_fallback(offload_mlir):
        result = _train(kind, offload_mlir.backend(min_bytes=0, plan="all",
                                                   compiler="aot_eager"))
    assert_bit_identical(baseline, result)
    assert reports and all(r["fallback"] is None for r in reports)
    assert offload_mlir.runtime_stats()["h2d_bytes"] > 0
    # Each block's dropout and attention, wrapped in both graphs.
    ir = "".join(f.read_text() for f in tmp_path.glob("step-*.mlir"))
    for hop in ("run_and_save_rng_state", "run_with_rng_state"):
        for op in ("native_dropout", "_scaled_dot_product_flash_attention_for_cpu"):
            calls = re.findall(rf'trace.op "higher_order.{hop}".*torch.ops.aten.{op}.default',
                               ir)
            assert len(calls) == 2, (hop, op, len(calls))


def test_selective_checkpointing_saves_and_offloads_the_matmuls(offload_mlir, reports):
    """With a policy that saves the matrix products, the partition saves
    them, the bridge offloads them (min_bytes=0, plan=all), and backward
    recomputes no matrix product."""
    _train("selective-lm", offload_mlir.backend(min_bytes=0, plan="all"), steps=1)
    (report,) = reports
    mm = [e for e in _saved(report) if e["producer"].startswith("aten.mm.default")]
    assert mm and all(e["offloaded"] for e in mm), _saved(report)
    assert "aten.mm.default" not in _recomputed_ops(report)


def test_checkpoint_inputs_are_what_is_offloaded(offload_mlir, reports, monkeypatch):
    """Per-layer checkpointing saves little beyond the layers' inputs: the
    embedding's output (layer 0's input) is offloaded, and the layers'
    inner activations, which the same model without checkpointing saves
    (and offloads), are not saved at all."""
    monkeypatch.setitem(_MODELS, "plain-lm", tiny_lm)
    offloaded = {}
    for kind in ("per-layer-lm", "plain-lm"):
        reports.clear()
        _train(kind, offload_mlir.backend(min_bytes=0, plan="all"), steps=1)
        (report,) = reports
        assert report["fallback"] is None
        offloaded[kind] = report["offloaded"]
    assert "embedding" in offloaded["per-layer-lm"]
    assert len(offloaded["per-layer-lm"]) < len(offloaded["plain-lm"]), offloaded


# ---------------------------------------------------------------------------
# The graph-safe (CUDA) form, obtained on CPU
# ---------------------------------------------------------------------------

def _dropout_step(x, w0, w1, w2):
    def block(h):
        return F.dropout(torch.tanh(h @ w1), p=0.5, training=True) @ w2

    # The checkpoint's input is an intermediate, saved for backward.
    h = checkpoint(block, torch.relu(x @ w0), use_reentrant=False)
    return (h * h).sum()


def _graphsafe_graphs(monkeypatch):
    """Forward and backward graphs of `_dropout_step` as the partitioner
    makes them on CUDA: each recomputed random op wrapped in
    `graphsafe_run_with_rng_state` reading a `torch.Generator` placeholder
    (`fwd_rng_state_<k>`, `bwd_rng_state_<k>`). The partitioner only takes
    that path for CUDA tensors; here its own rewrite
    (`apply_graphsafe_rng_functionalization`) is applied to the CPU graphs,
    with CPU generators as the placeholders' values. Returns the graphs,
    num_fwd_outputs and the step's real inputs."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch import partitioners

    def random(node):
        return node.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(
            node.target, "tags", ())

    def graphsafe_everywhere(joint, fw, bw, num_sym_nodes):
        fw_ops = {n.name: n for n in fw.graph.nodes if random(n)}
        bw_ops = {n.name: n for n in bw.graph.nodes if random(n)}
        last_fw = list(fw.graph.find_nodes(op="placeholder"))[-1]
        last_bw = list(bw.graph.find_nodes(op="placeholder"))[-1]
        pairs = [n.name for n in joint.graph.nodes if partitioners.must_recompute(n)
                 and random(n) and n.name in fw_ops and n.name in bw_ops]
        for k, name in enumerate(pairs):
            last_fw, last_bw = partitioners.apply_graphsafe_rng_functionalization(
                fw, bw, fw_ops[name], bw_ops[name], torch.device("cuda", 0), k,
                last_fw, last_bw)
        fw.recompile()
        bw.recompile()
        return fw, bw

    monkeypatch.setattr(partitioners, "functionalize_rng_ops", graphsafe_everywhere)
    monkeypatch.setattr(partitioners, "get_cuda_generator_meta_val",
                        lambda index: torch.Generator().clone_state())
    captured = {}

    class Partitioned(Exception):
        pass

    def partition(joint, joint_inputs, **kwargs):
        fw, bw = partitioners.min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
        captured.update(fw=fw, bw=bw, num_fwd_outputs=kwargs["num_fwd_outputs"])
        raise Partitioned

    def capture_only(gm, example_inputs):
        # Trace and partition, then run the step eagerly: AOTAutograd would
        # go on to hand these graphs CUDA generators.
        captured["inputs"] = list(example_inputs)
        with pytest.raises(Partitioned):
            aot_autograd(fw_compiler=lambda g, _: g, bw_compiler=lambda g, _: g,
                         partition_fn=partition)(gm, example_inputs)
        return gm.forward

    torch._dynamo.reset()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 32, generator=g)
    w0 = torch.randn(32, 32, generator=g, requires_grad=True)
    w1 = torch.randn(32, 64, generator=g, requires_grad=True)
    w2 = torch.randn(64, 16, generator=g, requires_grad=True)
    with torch._functorch.config.patch(enable_autograd_cache=False):
        torch.compile(_dropout_step, backend=capture_only, dynamic=False)(x, w0, w1, w2)
    return captured["fw"], captured["bw"], captured["num_fwd_outputs"], captured["inputs"]


def _emulate_graphsafe_on_cpu(monkeypatch):
    """`graphsafe_run_with_rng_state`'s CUDA semantics with CPU generators:
    the op draws from `rng_state` (which advances), and the default
    generator is left as it was. (Its own kernel asserts CUDA.)"""
    from torch._C import DispatchKey

    hop = torch.ops.higher_order.graphsafe_run_with_rng_state

    def run(op, *args, rng_state=None, **kwargs):
        saved = torch.default_generator.get_state()
        torch.default_generator.set_state(rng_state.get_state())
        try:
            out = op(*args, **kwargs)
            rng_state.set_state(torch.default_generator.get_state())
        finally:
            torch.default_generator.set_state(saved)
        return out

    monkeypatch.setitem(hop.py_kernels, DispatchKey.BackendSelect, run)
    monkeypatch.setattr(hop, "_dispatch_cache", {})


def _run_step(fw, bw, num_fwd_outputs, inputs, seed):
    """One forward and backward of the graphs, the generator placeholders
    given generators seeded with `seed` (backward's starting where
    forward's did, as AOTAutograd's runtime keeps them): the outputs, the
    gradients and the generators' final states."""
    num_gens = len([p for p in fw.graph.find_nodes(op="placeholder")
                    if p.name.startswith("fwd_rng_state")])
    fw_gens = [torch.Generator().manual_seed(seed + k) for k in range(num_gens)]
    bw_gens = [g.clone_state() for g in fw_gens]
    primals = [p for p in fw.graph.find_nodes(op="placeholder")
               if not p.name.startswith("fwd_rng_state")]
    assert len(primals) == len(inputs)
    outs = fw(*[t.detach() for t in inputs], *fw_gens)
    user, saved = list(outs[:num_fwd_outputs]), list(outs[num_fwd_outputs:])
    args, tangents = [], iter(torch.ones_like(u) for u in user)
    bw_gen = iter(bw_gens)
    for p in bw.graph.find_nodes(op="placeholder"):
        if p.name.startswith("tangents"):
            args.append(next(tangents))
        elif p.name.startswith("bwd_rng_state"):
            args.append(next(bw_gen))
        else:
            args.append(saved.pop(0))
    assert not saved
    grads = bw(*args)
    return user, [g for g in grads if g is not None], [g.get_state() for g in fw_gens + bw_gens]


def test_graphsafe_rng_ops_round_trip(offload_mlir, monkeypatch):
    from offload_mlir.bridge import OffloadOptions, transform_step
    from offload_mlir.fx_export import TracedStep, emit_mlir

    fw, bw, nout, inputs = _graphsafe_graphs(monkeypatch)
    hop = torch.ops.higher_order.graphsafe_run_with_rng_state
    for gm, prefix in ((fw, "fwd_rng_state"), (bw, "bwd_rng_state")):
        gens = [p for p in gm.graph.find_nodes(op="placeholder") if p.name.startswith(prefix)]
        assert gens and all(isinstance(p.meta["val"], torch.Generator) for p in gens)
        assert gm.graph.find_nodes(op="call_function", target=hop)

    # The IR has the generators as !trace.generator arguments and the
    # wrapped random ops as rng trace ops reading them.
    ir = emit_mlir(TracedStep(fw, bw, nout))
    assert '!trace.generator {trace.name = "fwd_rng_state_0"}' in ir
    assert '!trace.generator {trace.name = "bwd_rng_state_0"}' in ir
    wrapped = [line for line in ir.splitlines()
               if 'trace.op "higher_order.graphsafe_run_with_rng_state"' in line]
    assert len(wrapped) == 2, wrapped
    for line in wrapped:
        assert re.search(r"[{,] rng[,}]", line), line
        assert '#trace.py<"torch.ops.aten.' in line and "rng_state = #trace.operand<" in line
    assert "recomputed" in wrapped[1]

    # Export, pipeline, rebuild: nothing falls back, the copies are in the
    # rebuilt graphs, and the rng ops read the same generator placeholders.
    offload_mlir.reset_runtime_stats()
    new_fw, new_bw, report = transform_step(fw, bw, nout,
                                            OffloadOptions(min_bytes=0, plan="all"))
    assert report["fallback"] is None and report["offloaded"], report
    for old, new in ((fw, new_fw), (bw, new_bw)):
        calls = [(n.name, n.kwargs["rng_state"].name)
                 for n in new.graph.find_nodes(op="call_function", target=hop)]
        assert calls == [(n.name, n.kwargs["rng_state"].name)
                         for n in old.graph.find_nodes(op="call_function", target=hop)]
    copies = [n.target.__name__ for n in new_fw.graph.nodes if n.op == "call_function"
              and getattr(n.target, "namespace", None) == "offload"]
    assert copies, "no copy in the rebuilt forward"

    # Both pairs of graphs run (the CUDA kernel emulated with CPU
    # generators) and compute the same bits; the dropout masks really
    # depend on the generators.
    _emulate_graphsafe_on_cpu(monkeypatch)
    ref = _run_step(fw, bw, nout, inputs, seed=7)
    got = _run_step(new_fw, new_bw, nout, inputs, seed=7)
    other = _run_step(fw, bw, nout, inputs, seed=8)
    for a, b in zip(ref[0] + ref[1], got[0] + got[1]):
        assert torch.equal(a, b)
    for a, b in zip(ref[2], got[2]):
        assert torch.equal(a, b)
    assert not torch.equal(ref[0][0], other[0][0])
    assert offload_mlir.runtime_stats()["h2d_bytes"] > 0


# ---------------------------------------------------------------------------
# What still falls back
# ---------------------------------------------------------------------------

def _graph_calling(target, *args, **kwargs):
    """A graph of one call, `target(*args, x)`, as _check_supported reads it."""
    g = fx.Graph()
    x = g.placeholder("x")
    x.meta["val"] = torch.empty(4)
    out = g.call_function(target, (*args, x), kwargs)
    g.output((out,))
    return types.SimpleNamespace(graph=g)


def test_other_higher_order_ops_still_fall_back():
    from offload_mlir.bridge import _check_supported, _Fallback

    def body(x):
        return x

    other = _graph_calling(torch.ops.higher_order.wrap, body)
    with pytest.raises(_Fallback, match="calls wrap, a higher-order op"):
        _check_supported(other, other)
    # An rng op wrapping something that writes in place is refused too.
    inplace = _graph_calling(torch.ops.higher_order.run_and_save_rng_state,
                             aten.bernoulli_.float)
    with pytest.raises(_Fallback, match="writes in place"):
        _check_supported(inplace, inplace)
    # The rng ops of activation checkpointing pass.
    ok = _graph_calling(torch.ops.higher_order.run_and_save_rng_state, aten.rand_like.default)
    _check_supported(ok, ok)
