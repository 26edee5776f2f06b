"""The seeded fuzz driver (python/tools/fuzz_steps.py, issue 8 item 7):
its checker catches each kind of failure, its inputs are reproducible, and a
short bounded run over mutated steps finds no crash, hang, undiagnosed
failure or output that does not re-verify. Longer runs are by hand:

    python3 python/tools/fuzz_steps.py --seed N --minutes M \\
        --offload-opt build/bin/offload-opt --failures-dir fuzz-failures
"""

import collections
import os
import stat
import time

import pytest

from tools import fuzz_steps


def _fake_tool(tmp_path, body):
    """An executable standing in for offload-opt."""
    path = tmp_path / "fake-opt"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def step(tmp_path):
    path = tmp_path / "in.mlir"
    path.write_text(fuzz_steps.mutate_step(1, 0)[0])
    return str(path)


@pytest.mark.parametrize("body, expected", [
    ("kill -SEGV $$", "crash: killed by signal 11"),
    ("echo 'PLEASE submit a bug report' >&2; exit 1", "crash: 'PLEASE submit a bug report'"),
    ("exec sleep 30", "hang: no exit within 1 s"),
    ("exit 3", "exit 3 without an error diagnostic"),
    # Success, but what it printed does not parse again.
    ('case "$*" in *offload-activations*) echo "module {" ;; *) echo "error: bad" >&2; exit 1 ;; esac',
     "output does not re-verify: error: bad"),
    # Success, and the output parses, but prints differently the second time.
    ('case "$*" in *offload-activations*) echo "module {}" ;; *) echo "module { }" ;; esac',
     "output prints differently after a round trip"),
])
def test_checker_catches(tmp_path, step, body, expected):
    outcome, problem = fuzz_steps.check_run(_fake_tool(tmp_path, body), step,
                                            ["--offload-activations"], timeout=1)
    assert outcome == "broken"
    assert problem.startswith(expected), problem


def test_checker_accepts(tmp_path, step):
    diagnosed = _fake_tool(tmp_path, "echo 'x.mlir:1:1: error: no' >&2; exit 1")
    assert fuzz_steps.check_run(diagnosed, step, [], timeout=5) == ("diagnosed", None)
    ok = _fake_tool(tmp_path, 'echo "module {}"')
    assert fuzz_steps.check_run(ok, step, [], timeout=5) == ("transformed", None)


def test_inputs_are_seeded_and_mutated():
    for index in range(12):
        assert fuzz_steps.mutate_step(5, index) == fuzz_steps.mutate_step(5, index)
        assert fuzz_steps.buffer_module(5, index) == fuzz_steps.buffer_module(5, index)
    assert fuzz_steps.mutate_step(5, 0) != fuzz_steps.mutate_step(6, 0)
    # Every mutation changes the step it is applied to.
    import random
    base = fuzz_steps.random_steps.generate(5, 1)[0].split("\n")
    for name, mutation in fuzz_steps.MUTATIONS.items():
        lines = list(base)
        mutation(random.Random(name), lines)
        assert lines != base, name


def test_mutations_compose():
    """Any mutation applies after any other (graph-region removes func.func
    and func.return, delete removes ops, ...) without failing the driver."""
    import random
    base = fuzz_steps.random_steps.generate(5, 2)[0].split("\n")
    for first in fuzz_steps.MUTATIONS.values():
        for second in fuzz_steps.MUTATIONS.values():
            lines = list(base)
            rng = random.Random(0)
            first(rng, lines)
            second(rng, lines)


def test_bounded_run(offload_opt):
    """About 40 s of fuzzing on 2 cores; the same inputs on every run."""
    outcomes = collections.Counter()
    start = time.monotonic()
    done, problems = fuzz_steps.fuzz(offload_opt, seed=1, count=None, seconds=40, timeout=60,
                                     jobs=2, failures=None, log=lambda _: None,
                                     outcomes=outcomes)
    assert problems == [], "\n".join(problems)
    assert done >= 8, (done, time.monotonic() - start)
    # The passes got deep, and broken inputs were diagnosed.
    assert outcomes["transformed"] > 0 and outcomes["diagnosed"] > 0, outcomes


def test_inputs_cover_the_ir_contract():
    """The driver generates what the IR contract is about (issue 32):
    offload-plan's placements before random ops, copy groups of one buffer
    twice or of two views of one base, views as consumed sources (with and
    without release_source, with the base used after), and runs the passes
    with cleanups between them, out of order and twice."""
    applied = set()
    storage = set()
    for index in range(200):
        applied.update(fuzz_steps.mutate_step(7, index)[1])
        description = fuzz_steps.buffer_module(7, index)[1][0]
        if description.startswith("storage"):
            storage.add(description.split()[1])
    assert "placement" in applied
    # The first round's cases: drivers that call the step (reading a saved
    # value, or passing backward another), func.constant of a step function,
    # saved values of mixed encodings, a step in a nested module.
    assert {"driver", "func-constant", "encoding", "nested-module"} <= applied
    assert storage == {"same-twice", "two-views", "view-source"}
    flat = [" ".join(args) for args in fuzz_steps.STEP_PIPELINES]
    assert any("--offload-plan" in p and "--canonicalize --cse" in p for p in flat)
    assert any(p.count("--offload-plan") == 2 for p in flat)
    assert any(p.count("--offload-activations") == 2 for p in flat)
    assert any(p.startswith("--offload-insert-loads --offload-insert-offloads") for p in flat)
