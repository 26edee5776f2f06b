"""AOTAutograd's cache serves a warm process the plan intact: the
partitioner and its options are part of the cache key (its uuid()), so a
second fresh process with the same options hits the cache, moves the same
bytes, gets the same gradients and the same report, and a process with any
option changed misses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# One deterministic AdamW step of a small MLP in a fresh process; prints
# AOTAutograd's cache counters, the bytes moved and the gradients.
_STEP = r"""
import json, sys, torch, torch.nn as nn, torch.nn.functional as F
import offload_mlir
torch.use_deterministic_algorithms(True)
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 10)
    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.gelu(self.fc1(x))), y)
torch.manual_seed(0)
model = MLP()
options = json.loads(sys.argv[1])
backend = "inductor" if options is None else offload_mlir.backend(**options)
step = torch.compile(model, backend=backend)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
offload_mlir.reset_runtime_stats()
step(x, y).backward()
from torch._dynamo.utils import counters
stats = offload_mlir.runtime_stats()
report = offload_mlir.last_report() or {}
print(json.dumps({"offloaded": report.get("offloaded"), "cached": report.get("cached", False),
                  "cache": {k: v for k, v in counters["aot_autograd"].items() if "cache" in k},
                  "d2h": stats["d2h_bytes"], "h2d": stats["h2d_bytes"],
                  "grads": [p.grad.flatten().tolist() for p in model.parameters()]}))
"""

_OPTIONS = {"min_bytes": 0, "plan": "all"}


def _run(cache_dir, options, stdout=None):
    """The step's JSON line; `stdout`, a list, receives what it printed before."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache_dir),
               PYTHONPATH=_PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _STEP, json.dumps(options)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    *printed, last = out.stdout.strip().splitlines()
    if stdout is not None:
        stdout.extend(printed)
    return json.loads(last)


@pytest.fixture(scope="module")
def warm(offload_mlir, tmp_path_factory):
    """A cache directory the first process filled, and that process's run."""
    cache_dir = tmp_path_factory.mktemp("inductor-cache")
    first = _run(cache_dir, _OPTIONS)
    assert first["cache"].get("autograd_cache_miss") == 1, first["cache"]
    assert first["cache"].get("autograd_cache_saved") == 1, first["cache"]
    return cache_dir, first


def test_second_process_hits_the_cache_with_the_plan_intact(warm, tmp_path):
    cache_dir, first = warm
    second = _run(cache_dir, _OPTIONS)
    assert second["cache"] == {"autograd_cache_hit": 1}, second["cache"]
    # The copies are in the cached graphs: the same bytes move both ways.
    assert second["d2h"] == second["h2d"] == first["d2h"] > 0, (first, second)
    assert second["grads"] == first["grads"]
    # last_report() gives the report the first process's compile recorded.
    assert not first["cached"] and second["cached"], (first, second)
    assert second["offloaded"] == first["offloaded"] and first["offloaded"]
    # And the gradients are plain compile's (a fresh cache of its own).
    assert _run(tmp_path, None)["grads"] == first["grads"]


@pytest.mark.parametrize("changed", [
    {"min_bytes": 1},
    {"schedule": False},
    {"partitioner_config": {"ban_recompute_materialized_backward": False}},
])
def test_any_changed_option_misses_the_cache(warm, changed):
    cache_dir, _ = warm
    run = _run(cache_dir, _OPTIONS | changed)
    assert run["cache"].get("autograd_cache_miss") == 1, (changed, run["cache"])


def test_a_cache_hit_prints_the_text_report_again(offload_mlir, tmp_path):
    options = _OPTIONS | {"report": "text"}
    printed = [[], []]
    first = _run(tmp_path, options, printed[0])
    second = _run(tmp_path, options, printed[1])
    assert second["cache"] == {"autograd_cache_hit": 1}, second["cache"]
    header = "offload report: @forward -> @backward"
    assert any(header in line for line in printed[0]), printed[0]
    assert printed[1] == printed[0], (first["cache"], printed)
