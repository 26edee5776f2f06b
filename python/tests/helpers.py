"""What test files of both folders need: the PyTorch copy ops or a skip.
(The bridge tests' models and training loop are in tests/bridge/helpers.py.)"""

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

