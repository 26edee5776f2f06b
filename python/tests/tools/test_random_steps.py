"""The random training-step generator and the property checker of
python/tools/random_steps.py (the lit test is
test/Transforms/property/random-steps.mlir)."""

import json
import os
import re
import subprocess
import sys

import pytest


from tools import random_steps  # noqa: E402


def test_deterministic():
    for index in range(5):
        assert random_steps.generate(7, index) == random_steps.generate(7, index)
    assert random_steps.generate(7, 0)[0] != random_steps.generate(8, 0)[0]
    assert random_steps.generate(7, 0)[0] != random_steps.generate(7, 1)[0]


def test_shape_of_steps():
    features = set()
    for index in range(30):
        text, stats = random_steps.generate(1, index)
        # 20..390 ops drawn; a consumer's views and loops may add a few.
        assert 20 <= stats["ops"] <= 420
        assert stats["saved"] >= 1
        assert f"offload.num_outputs = {stats['outputs']} : i64" in text
        assert "offload.backward = @backward" in text
        features.update(stats["features"])
    # The mix the property test relies on shows up within a few modules.
    for feature in ("mm", "mutating op", "scf.for", "offload.keep", "dynamic dimension",
                    "saved arg", "saved arg view", "saved duplicate", "saved output",
                    "saved new view", "backward view", "saved value read in a loop",
                    "saved value returned by backward", "dead view of a saved value"):
        assert feature in features, feature


def test_modules_verify(offload_opt, tmp_path):
    """Every generated module is valid input: it parses and verifies, so the
    training-step contract holds (saved types equal backward's)."""
    path = tmp_path / "steps.mlir"
    path.write_text("\n// -----\n".join(random_steps.generate(3, i)[0] for i in range(8)))
    subprocess.run([offload_opt, str(path), "--split-input-file", "-o", os.devnull],
                   check=True)


# What the pipeline makes of a small step (printed by offload-opt), for the
# structural checks; each test below breaks one property.
SYNC = """\
module {
  func.func @forward(%arg0: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32, #offload.host>, tensor<1024xf32> {offload.kept = "function argument"}) attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
    %0 = math.exp %arg0 : tensor<1024xf32>
    %1 = math.exp %0 : tensor<1024xf32>
    %2 = offload.offload_to_cpu %0 : tensor<1024xf32> -> tensor<1024xf32, #offload.host>
    %3 = math.exp %1 : tensor<1024xf32>
    return %3, %2, %arg0 : tensor<1024xf32>, tensor<1024xf32, #offload.host>, tensor<1024xf32>
  }
  func.func @backward(%arg0: tensor<1024xf32, #offload.host>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>) -> tensor<1024xf32> {
    %0 = math.exp %arg2 : tensor<1024xf32>
    %1 = offload.load_to_gpu %arg0 : tensor<1024xf32, #offload.host> -> tensor<1024xf32>
    %2 = arith.mulf %0, %1 : tensor<1024xf32>
    %3 = arith.mulf %2, %arg1 : tensor<1024xf32>
    return %3 : tensor<1024xf32>
  }
}
"""

SCHEDULED = """\
module {
  func.func @forward(%arg0: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32, #offload.host>, tensor<1024xf32> {offload.kept = "function argument"}) attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
    %0 = math.exp %arg0 : tensor<1024xf32>
    %1 = math.exp %0 : tensor<1024xf32>
    %2 = offload.offload_start %0 : tensor<1024xf32> -> !offload.future<tensor<1024xf32, #offload.host>>
    %3 = math.exp %1 : tensor<1024xf32>
    %4 = offload.wait %2 : !offload.future<tensor<1024xf32, #offload.host>>
    return %3, %4, %arg0 : tensor<1024xf32>, tensor<1024xf32, #offload.host>, tensor<1024xf32>
  }
  func.func @backward(%arg0: tensor<1024xf32, #offload.host>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>) -> tensor<1024xf32> {
    %0 = offload.load_start %arg0 : tensor<1024xf32, #offload.host> -> !offload.future<tensor<1024xf32>>
    %1 = math.exp %arg2 : tensor<1024xf32>
    %2 = offload.wait %0 : !offload.future<tensor<1024xf32>>
    %3 = arith.mulf %1, %2 : tensor<1024xf32>
    %4 = arith.mulf %3, %arg1 : tensor<1024xf32>
    return %4 : tensor<1024xf32>
  }
}
"""


def _swap(text: str, first: str, second: str) -> str:
    """`text` with the lines starting with `first` and `second` swapped."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith(first))
    j = next(k for k, line in enumerate(lines) if line.strip().startswith(second))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


def _problems(text: str) -> str:
    return "\n".join(random_steps.check_structure(text))


def test_valid_outputs_pass():
    assert _problems(SYNC) == ""
    assert _problems(SCHEDULED) == ""


def test_offload_before_last_read():
    broken = _swap(SYNC, "%1 = math.exp %0", "%2 = offload.offload_to_cpu")
    assert "read after it" in _problems(broken)


def test_offload_not_right_after_last_read():
    broken = _swap(SYNC, "%2 = offload.offload_to_cpu", "%3 = math.exp %1")
    assert "not right after the last read" in _problems(broken)


def test_saved_result_without_decision():
    broken = SYNC.replace(' {offload.kept = "function argument"}', "")
    assert "neither offloaded nor marked offload.kept" in _problems(broken)
    broken = SYNC.replace(' {offload.kept = "function argument"}', " {offload.selected}")
    assert "still carries offload.selected" in _problems(broken)


def test_load_not_right_before_first_use():
    broken = _swap(SYNC, "%0 = math.exp %arg2", "%1 = offload.load_to_gpu")
    assert "not right before its first use" in _problems(broken)


def test_wait_after_use():
    broken = _swap(SCHEDULED, "%2 = offload.wait %0", "%3 = arith.mulf")
    assert "before its definition" in _problems(broken)


def test_future_waited_twice_or_never():
    twice = SCHEDULED.replace(
        "    %3 = arith.mulf %1, %2",
        "    %9 = offload.wait %0 : !offload.future<tensor<1024xf32>>\n    %3 = arith.mulf %1, %2")
    assert "waited 2 times" in _problems(twice)
    never = re.sub(r"    %4 = offload.wait %2 .*\n", "", SCHEDULED).replace(
        "return %3, %4,", "return %3, %2,")
    assert "waited 0 times" in _problems(never)


def test_check_passes_on_a_few_modules(offload_opt, tmp_path, capsys):
    rc = random_steps.main(["check", "--count", "3", "--seed", "5", "--offload-opt",
                            offload_opt, "--failures-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert re.search(r"random-steps: seed 5, 3 modules \(\d+ ops\), 14 configurations, "
                     r"42 runs, 0 round-trip failures, 0 violations", out)


def test_check_reports_a_failing_tool(tmp_path, capsys):
    """A tool that crashes is a violation, and the module is kept."""
    fake = tmp_path / "fake-opt"
    fake.write_text("#!/bin/sh\necho 'PLEASE submit a bug report' >&2\nexit 1\n")
    fake.chmod(0o755)
    failures = tmp_path / "failures"
    rc = random_steps.main(["check", "--count", "1", "--seed", "5", "--offload-opt", str(fake),
                            "--configs", "sync", "--failures-dir", str(failures)])
    captured = capsys.readouterr()
    assert rc == 1
    assert "VIOLATION: module 0" in captured.err
    assert (failures / "step_5_0.mlir").exists()
    assert "reproduce:" in (failures / "step_5_0.mlir.txt").read_text()


def test_sync_twin_pipeline():
    """The synchronous twin runs the pipeline's passes with the same plan
    options, without offload-schedule-copies, and reports in JSON."""
    twin = random_steps.sync_twin_pipeline(
        "plan=all min-bytes=0 schedule=true max-inflight-bytes=16KiB")
    assert twin == ("builtin.module(offload-find-saved-activations{min-bytes=0},"
                    "offload-insert-offloads,offload-reorder-backward,offload-insert-loads,"
                    "offload-report{format=json output=-})")
    twin = random_steps.sync_twin_pipeline("schedule=true budget=0.75 fuse-memory-bound=true")
    assert ("offload-plan{schedule=true budget=0.75 fuse-memory-bound=true}" in twin
            and "offload-report{fuse-memory-bound=true format=json output=-}" in twin)
    assert "offload-schedule-copies" not in twin
    # With release=at-wait offload waits hold memory: they stay where the
    # scheduled run puts them, and no load is hoisted.
    twin = random_steps.sync_twin_pipeline("schedule=true release=at-wait")
    # use-recorded=false: with a plan, its recorded placements would hoist
    # the loads.
    assert twin.endswith("offload-insert-loads,"
                         "offload-schedule-copies{release=at-wait max-inflight-bytes=1 "
                         "use-recorded=false},"
                         "offload-report{release=at-wait format=json output=-})")
    with pytest.raises(ValueError, match="deny-ops"):
        random_steps.sync_twin_pipeline("schedule=true deny-ops=aten.mm.default")


def _fake_pipeline(tmp_path, before: int, scheduled: int, synchronous: int):
    """An offload-opt stand-in: the pipeline run writes SCHEDULED and reports
    `scheduled` as its peak; the synchronous twin (--pass-pipeline) reports
    `synchronous`; the round trip prints its input back."""
    def report(after):
        return json.dumps({"steps": [{
            "offloaded_values": 1,
            "saved": [{"offloaded": True}, {"offloaded": False}],
            "predicted": {"peak_bytes_before": before, "peak_bytes_after": after,
                          "step_seconds_before": 1e-3, "step_seconds_after": 1e-3}}]})
    fake = tmp_path / "fake-opt"
    fake.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
if any(a.startswith("--pass-pipeline=") for a in args):
    print({report(synchronous)!r})
elif "-o" in args:
    open(args[args.index("-o") + 1], "w").write({SCHEDULED!r})
    print({report(scheduled)!r})
else:
    sys.stdout.write(open(args[0]).read())
""")
    fake.chmod(0o755)
    return fake


def _check_schedule(fake, tmp_path, capsys):
    rc = random_steps.main(["check", "--count", "1", "--seed", "5", "--offload-opt", str(fake),
                            "--configs", "schedule", "--no-poison",
                            "--failures-dir", str(tmp_path / "failures")])
    return rc, capsys.readouterr()


def test_check_flags_a_scheduled_peak_above_the_synchronous_one(tmp_path, capsys):
    rc, out = _check_schedule(_fake_pipeline(tmp_path, 1000, 900, 800), tmp_path, capsys)
    assert rc == 1
    assert ("schedule=true: predicted peak 900 is above 800, the peak of the same plan "
            "with synchronous loads") in out.err
    assert "the peak without offload" not in out.err


def test_check_flags_a_scheduled_peak_above_no_offload(tmp_path, capsys):
    rc, out = _check_schedule(_fake_pipeline(tmp_path, 1000, 1100, 1000), tmp_path, capsys)
    assert rc == 1
    assert ("schedule=true: predicted peak 1100 is above 1000, the peak without offload, "
            "which the same plan with synchronous loads keeps to") in out.err


def test_check_counts_a_synchronous_plan_above_no_offload(tmp_path, capsys):
    """A plan whose synchronous copies already raise the peak (plan=all can)
    is information, not a violation, if scheduling does not raise it more."""
    rc, out = _check_schedule(_fake_pipeline(tmp_path, 1000, 1150, 1200), tmp_path, capsys)
    assert rc == 0, out.err
    assert ("config schedule: 1 modules, 1 transformed, 0 violations; offloaded 1 of 2 saved "
            "values; peak checked against the synchronous plan in 1; info: predicted peak grew "
            "in 1, the synchronous plan's too in 1") in out.out
