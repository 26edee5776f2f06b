"""offload_mlir: the PyTorch side of the activation-offloading compiler.

    import offload_mlir
    model = torch.compile(model, backend=offload_mlir.backend())
    ...train...
    offload_mlir.runtime_stats()   # bytes moved, exposed wait, pinned peak
    offload_mlir.last_report()     # the plan of the last compiled graph

`offload_mlir.backend` is the torch.compile backend (Inductor with the
pipeline as its partitioner), `offload_mlir.fx_export` turns AOTAutograd
graphs into trace-dialect MLIR, `offload_mlir.capi` runs the pipeline
in-process, and `offload_mlir.ops` holds the `torch.ops.offload` copy ops.
Importing this package does not import torch; the names below load on
first use.
"""

from __future__ import annotations

_LAZY = {
    "export_training_step": "fx_export",
    "trace_training_step": "fx_export",
    "emit_mlir": "fx_export",
    "backend": "bridge",
    "recompute_reference_backend": "bridge",
    "last_report": "bridge",
    "reports": "bridge",
    "OffloadOptions": "bridge",
    "BridgeWarning": "bridge",
    "NothingOffloadedWarning": "bridge",
    "PlanFarFromHintWarning": "bridge",
    "SavedInstancesWarning": "bridge",
    "runtime_stats": "ops",
    "reset_runtime_stats": "ops",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'offload_mlir' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
