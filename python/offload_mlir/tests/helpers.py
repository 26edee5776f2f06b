"""What several test files need: a benchmark script as a module, and the
PyTorch copy ops or a skip."""

import importlib.util
import os
import types

import pytest

_BENCHMARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                           "benchmarks")


def load_benchmark(name: str) -> types.ModuleType:
    """python/benchmarks/<name>.py, imported as the module `name` (the
    scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_BENCHMARKS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
