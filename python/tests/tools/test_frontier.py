import json
import os

from benchmarks import frontier

_HERE = os.path.dirname(__file__)
_BLOCK = os.path.join(_HERE, "..", "..", "..", "test", "Examples", "llama_block.mlir")


def test_sweep_writes_figures_and_checks(offload_opt, tmp_path, capsys):
    out = tmp_path / "f"
    status = frontier.main([_BLOCK, "--offload-opt", offload_opt,
                            "--budgets", "0.95,0.9,0.5", "--out", str(out)])
    text = capsys.readouterr().out
    assert status == 0, text
    data = json.loads((out.with_suffix(".json")).read_text())
    rows = data["steps"][_BLOCK]
    # 0.5 is below what any plan reaches on this block (synchronous copies
    # reach 0.62): an error, not a plan.
    assert "smallest predicted peak" in rows["budget=0.5"]["error"]
    for key in ("hidden", "budget=0.95", "budget=0.9"):
        assert rows[key]["peak_bytes"] <= rows[key]["peak_bytes_before"]
    assert rows["budget=0.9"]["peak_bytes"] <= 0.9 * rows["budget=0.9"]["peak_bytes_before"]
    assert (out.with_suffix(".png")).stat().st_size > 0
    assert "| budget=0.5 | out of reach (smallest peak" in text
    assert "0 violations" in text


def test_check_names_each_violation():
    base = {"peak_bytes_before": 100, "step_seconds_before": 1.0}
    rows = {
        "all": dict(base, peak_bytes=120, step_seconds=3.0, offloaded_values=1,
                    offloaded_bytes=1, exposed_seconds=2.0),
        "hidden": dict(base, peak_bytes=85, step_seconds=1.02, offloaded_values=1,
                       offloaded_bytes=1, exposed_seconds=0.02),
        "budget=0.95": dict(base, peak_bytes=95, step_seconds=1.2, offloaded_values=1,
                            offloaded_bytes=1, exposed_seconds=0.2),
        "budget=0.9": dict(base, peak_bytes=90, step_seconds=1.1, offloaded_values=1,
                           offloaded_bytes=1, exposed_seconds=0.1),
    }
    found = frontier.check("s", rows, [0.95, 0.9])
    assert any("[all]: predicted peak 120 above 100" in v for v in found)
    assert any("[hidden]: step" in v and "1% above" in v for v in found)
    assert any("[budget=0.9]: step" in v and "5% above" in v for v in found)
    assert any("budget=0.95 predicts a slower step" in v for v in found)
    assert any("budget=0.95 predicts" in v and "plan=hidden" in v for v in found)
