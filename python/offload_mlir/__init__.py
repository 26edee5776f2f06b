"""offload_mlir: the PyTorch side of the activation-offloading compiler.

`offload_mlir.fx_export` turns a model's AOTAutograd forward and backward
graphs into trace-dialect MLIR (needs torch). `offload_mlir.mlir_text` holds
the torch-free attribute spelling helpers. Importing this package does not
import torch; the torch-dependent names below load on first use.
"""

from __future__ import annotations

__all__ = ["export_training_step", "trace_training_step", "emit_mlir"]


def __getattr__(name: str):
    if name in __all__:
        from . import fx_export

        return getattr(fx_export, name)
    raise AttributeError(f"module 'offload_mlir' has no attribute {name!r}")
