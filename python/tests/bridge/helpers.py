"""What the end-to-end bridge tests share: the small models they train, a
compiled AdamW training loop, and the bit-identity check of its losses and
gradients against a reference trained the same way.

Bit-identity is only checked against a deterministic reference:
`train_adamw` turns on `torch.use_deterministic_algorithms`, and each test
shows plain Inductor reproduces itself (a control) or compares with a
reference that does."""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from offload_mlir import models

aten = torch.ops.aten


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x, y):
        h = F.gelu(self.fc1(x))
        h = torch.tanh(self.fc2(h)) * h
        return F.cross_entropy(self.fc3(h), y)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.bn(self.c1(x))), 2)
        h = F.max_pool2d(F.silu(self.c2(h)), 2)
        return F.cross_entropy(self.fc(h.flatten(1)), y)


VOCAB = 96


def tiny_llama_config() -> models.LlamaConfig:
    """The Llama-style layer the LM tests train: 64 wide, 4 heads over 2 KV
    heads."""
    return models.LlamaConfig(hidden=64, heads=4, kv_heads=2, ffn=128, rope_theta=10000.0)


def tiny_lm(seq: int = 16, layers: int = 2) -> models.LlamaLM:
    """A small Llama-style LM (`layers` layers over `seq` tokens, tied
    embeddings)."""
    return models.LlamaLM(tiny_llama_config(), n_layers=layers, seq=seq, vocab=VOCAB,
                          tie_embeddings=True)


def _save_matmuls(ctx, op, *args, **kwargs):
    """Selective checkpointing policy: keep matrix products, recompute the
    rest."""
    from torch.utils.checkpoint import CheckpointPolicy

    if op in (aten.mm.default, aten.addmm.default, aten.bmm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def checkpointed_lm(selective: bool = False, seq: int = 16, layers: int = 2) -> nn.Module:
    """`tiny_lm(seq, layers)` with each layer of its stack checkpointed
    (non-reentrant), or, with `selective`, checkpointed with a policy that
    saves the matrix products."""
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    lm = tiny_lm(seq=seq, layers=layers)
    stack = lm.stack
    extra = {}
    if selective:
        extra["context_fn"] = functools.partial(create_selective_checkpoint_contexts,
                                                _save_matmuls)

    def forward(x):
        for layer in stack.layers:
            x = checkpoint(layer, x, stack.rope_cos, stack.rope_sin,
                           use_reentrant=False, **extra)
        return x

    stack.forward = forward
    return lm


def token_batch(step: int, batch: int = 2, seq: int = 16, seed: int = 1000):
    """Inputs and next-token targets of `batch` sequences of `seq` tokens,
    drawn from generator seed `seed + step`."""
    g = torch.Generator().manual_seed(seed + step)
    tokens = torch.randint(0, VOCAB, (batch, seq + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


# torch.compile's `dynamic=` for each way a size becomes dynamic: after the
# automatic recompile (None), from the start (True), or by mark_dynamic on the
# inputs (False, with variable_length_batch(..., mark=True)).
DYNAMIC_MODES = {"none": None, "true": True, "mark_dynamic": False}


def tiny_titan_lm() -> models.TitanLM:
    """One torchtitan-style layer (complex rotary embedding) for sequences of
    up to 64 tokens, over a vocabulary of 96."""
    return models.TitanLM(tiny_llama_config(), n_layers=1, max_seq=64, vocab=96)


def variable_length_batch(length: int, mark: bool = False):
    """Inputs and targets of 2 sequences of `length` tokens for tiny_titan_lm,
    drawn from generator seed `length`; `mark`: their length is marked
    dynamic (torch._dynamo.mark_dynamic)."""
    g = torch.Generator().manual_seed(length)
    tokens = torch.randint(0, 96, (2, length + 1), generator=g)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    if mark:
        torch._dynamo.mark_dynamic(x, 1)
        torch._dynamo.mark_dynamic(y, 1)
    return x, y


# ---------------------------------------------------------------------------
# Training and comparing
# ---------------------------------------------------------------------------

def train_adamw(make_model, data, backend, steps: int, dynamic: Optional[bool] = False,
                on_step: Optional[Callable[[int], None]] = None):
    """Losses and gradients of `steps` AdamW steps of `make_model()` under
    torch.compile with `backend` and `dynamic`, `data(step)` giving each
    step's inputs, from seed 0; `on_step(step)` runs after each backward.
    Inductor's CPU scatter-add (the embedding's backward) accumulates with
    atomics, whose order depends on thread timing; deterministic mode makes
    it a fixed-order fallback, so "bit-identical" is well defined."""
    torch.use_deterministic_algorithms(True)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_fn = torch.compile(model, backend=backend, dynamic=dynamic)
    losses, grads = [], []
    for step in range(steps):
        loss = step_fn(*data(step))
        loss.backward()
        if on_step is not None:
            on_step(step)
        losses.append(loss.detach().clone())
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
        opt.zero_grad(set_to_none=True)
    return losses, grads


def assert_bit_identical(a, b, steps: Optional[Sequence[str]] = None):
    """Two `train_adamw` results have the same losses and gradients, bit
    for bit; `steps` names each step in the messages (default "step i")."""
    (la, ga), (lb, gb) = a, b
    assert len(la) == len(lb) and len(ga) == len(gb), (len(la), len(lb))
    names = steps if steps is not None else [f"step {i}" for i in range(len(la))]
    for name, x, y in zip(names, la, lb):
        assert torch.equal(x, y), f"loss differs at {name}: {x} vs {y}"
    for name, xs, ys in zip(names, ga, gb):
        assert len(xs) == len(ys)
        for i, (x, y) in enumerate(zip(xs, ys)):
            assert torch.equal(x, y), f"gradient {i} differs at {name}"


@contextlib.contextmanager
def no_fallback(offload_mlir):
    """The runtime's statistics from zero, and a BridgeWarning (a graph
    falling back to plain Inductor) an error, for the block."""
    import warnings

    offload_mlir.reset_runtime_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", offload_mlir.BridgeWarning)
        yield


def assert_copies_moved(offload_mlir) -> dict:
    """Bytes went to the host and all of them came back; the runtime's
    statistics."""
    stats = offload_mlir.runtime_stats()
    assert stats["d2h_bytes"] > 0 and stats["d2h_bytes"] == stats["h2d_bytes"], stats
    return stats
