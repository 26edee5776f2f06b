"""What several test files need: the PyTorch copy ops or a skip, and a few
compiled training steps."""

import os
import types

import pytest

def import_ops_or_skip() -> types.ModuleType:
    """offload_mlir.ops (which registers torch.ops.offload); skips the
    calling test module if liboffload_torch_ops.so is not built, except
    under CI, where a missing library is an error."""
    try:
        from offload_mlir import ops
    except OSError as e:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"liboffload_torch_ops.so not built: {e}", allow_module_level=True)
    return ops


def train_adamw(make_model, data, backend, steps: int):
    """Losses and gradients of `steps` AdamW steps of `make_model()` under
    torch.compile with `backend`, `data(step)` giving each step's inputs,
    from seed 0. Inductor's CPU scatter-add (the embedding's backward)
    accumulates with atomics, whose order depends on thread timing;
    deterministic mode makes it a fixed-order fallback, so "bit-identical"
    is well defined."""
    import torch

    torch.use_deterministic_algorithms(True)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_fn = torch.compile(model, backend=backend, dynamic=False)
    losses, grads = [], []
    for step in range(steps):
        loss = step_fn(*data(step))
        loss.backward()
        losses.append(loss.detach().clone())
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
        opt.zero_grad(set_to_none=True)
    return losses, grads
