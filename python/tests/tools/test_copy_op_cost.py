"""python/benchmarks/copy_op_cost.py's host part, on the ops' simulated
backend (its device part needs CUDA and runs on the H100)."""

import pytest

from tests.helpers import import_ops_or_skip

torch = pytest.importorskip("torch")
ops = import_ops_or_skip()

from benchmarks import copy_op_cost  # noqa: E402


def test_host_cost_times_each_op_in_order():
    cost = copy_op_cost.host_cost(torch, mib=1, calls=4, device="cpu")
    assert list(cost) == ["offload_start", "offload_wait", "load_start", "load_wait"]
    for op, (median, p90) in cost.items():
        assert 0 < median <= p90, op
    # Every round's copies were waited and their host blocks freed.
    assert ops.runtime_stats()["host_live_bytes"] == 0
