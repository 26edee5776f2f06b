"""Offload and recompute planned together, through the bridge, on CPU.

The pipeline's planner may decide to compute cheap saved values again in
backward (offload.recompute in the IR); the bridge carries that out by
tagging the forward nodes must-recompute for Inductor's min-cut partitioner
and plans the copies on its partition. The reference is plain Inductor with
the same tags and no offloading (offload_mlir.recompute_reference_backend),
in deterministic mode, after a control shows plain Inductor reproduces
itself; where the plan recomputes nothing new, plain Inductor. The models:
the small Llama-style LM, the MLP and the conv net of test_backend.py, and
the per-layer checkpointed LM of test_checkpoint.py (tests/bridge/helpers.py).
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from tests.bridge.helpers import (  # noqa: E402
    MLP,
    ConvNet,
    assert_bit_identical,
    assert_copies_moved,
    checkpointed_lm,
    no_fallback,
    tiny_lm,
    token_batch,
    train_adamw,
)


def _train_lm(backend):
    """One step of a 2-layer LlamaLM whose activations (8 x 128 tokens)
    outweigh its parameters, so that a budget needs them moved."""
    with torch._inductor.config.patch(fx_graph_cache=False):
        return train_adamw(functools.partial(tiny_lm, seq=128),
                           lambda step: token_batch(0, batch=8, seq=128, seed=1), backend, 1)


def test_plain_inductor_reproduces_itself():
    assert_bit_identical(_train_lm("inductor"), _train_lm("inductor"))


def test_joint_plan_recomputes_offloads_and_matches_the_tagged_reference(offload_mlir):
    with no_fallback(offload_mlir):
        result = _train_lm(offload_mlir.backend(min_bytes=0, budget=0.7))
    report = offload_mlir.last_report()
    assert report["fallback"] is None, report
    recomputed = report["recomputed"]
    # The RMSNorm outputs and the SwiGLU products are among the values the
    # plan computes again; each names the forward nodes it repeats.
    assert recomputed and all(nodes for nodes in recomputed.values()), recomputed
    assert any(name.startswith("view") for name in recomputed)
    # The copies were planned on the recomputed partition and really ran.
    assert report["offloaded"]
    assert not set(report["offloaded"]) & set(recomputed)
    assert_copies_moved(offload_mlir)
    # The first plan predicted the joint step; it is kept beside the report.
    planned = report["joint_plan"]["steps"][0]["planned"]
    assert planned["unplanned_peak_bytes"] > planned["peak_bytes"]
    reference = _train_lm(offload_mlir.recompute_reference_backend(recomputed))
    assert_bit_identical(result, reference)


def test_recompute_off_plans_copies_only(offload_mlir):
    _train_lm(offload_mlir.backend(min_bytes=0, budget=0.8, recompute=False))
    report = offload_mlir.last_report()
    assert report["fallback"] is None and report["offloaded"]
    assert "recomputed" not in report
    steps = report["pipeline"]["steps"]
    assert not any(r.get("planned") for s in steps for r in s.get("recomputed", []))


def test_recompute_option_is_checked(offload_mlir):
    with pytest.raises(ValueError, match="recompute must be True or False"):
        offload_mlir.backend(recompute="yes")


def _mlp_batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(1024, 64, generator=g), torch.randint(0, 10, (1024,), generator=g)


def _conv_batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)


# Each model with the plan that moves or recomputes something on it: the
# MLP's saved values are matrix products (Inductor's partition already
# recomputes its pointwise ops), so its plan only copies; the conv net's
# joint plan recomputes pooling and softmax statistics; the checkpointed
# LM keeps its layers recomputed and its joint plan recomputes the
# embedding and loss statistics outside them, and offloads the checkpoint
# inputs.
_JOINT_CASES = {
    "mlp": (MLP, _mlp_batch, {"budget": 0.9}, False),
    "conv": (ConvNet, _conv_batch, {"budget": 0.8}, True),
    "checkpointed-lm": (functools.partial(checkpointed_lm, seq=128, layers=6),
                        functools.partial(token_batch, batch=8, seq=128), {}, True),
}


@pytest.mark.parametrize("kind", sorted(_JOINT_CASES))
def test_joint_plans_train_bit_identical_to_inductor_with_the_same_recomputation(
        offload_mlir, kind):
    make_model, batch, options, recomputes = _JOINT_CASES[kind]
    backend = offload_mlir.backend(min_bytes=0, **options)
    with no_fallback(offload_mlir):
        result = train_adamw(make_model, batch, backend, steps=2)
    report = offload_mlir.last_report()
    assert report["fallback"] is None, report
    recomputed = report.get("recomputed", {})
    assert bool(recomputed) == recomputes, recomputed
    assert_copies_moved(offload_mlir)
    # With nothing recomputed the reference is plain Inductor itself.
    reference_backend = (offload_mlir.recompute_reference_backend(recomputed)
                         if recomputed else "inductor")
    reference = train_adamw(make_model, batch, reference_backend, steps=2)
    assert_bit_identical(reference, result)
