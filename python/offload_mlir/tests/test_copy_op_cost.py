"""python/benchmarks/copy_op_cost.py's host part, on the ops' simulated
backend (its device part needs CUDA and runs on the H100)."""

import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
try:
    from offload_mlir import ops  # noqa: F401
except OSError as e:  # the .so is not built
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip(f"liboffload_torch_ops.so not built: {e}", allow_module_level=True)

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = os.path.join(_HERE, "..", "..", "benchmarks", "copy_op_cost.py")
_spec = importlib.util.spec_from_file_location("copy_op_cost", _PATH)
copy_op_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(copy_op_cost)


def test_host_cost_times_each_op_in_order():
    cost = copy_op_cost.host_cost(torch, mib=1, calls=4, device="cpu")
    assert list(cost) == ["offload_start", "offload_wait", "load_start", "load_wait"]
    for op, (median, p90) in cost.items():
        assert 0 < median <= p90, op
    # Every round's copies were waited and their host blocks freed.
    assert ops.runtime_stats()["host_live_bytes"] == 0
