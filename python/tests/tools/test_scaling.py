import os
import re
import subprocess


from benchmarks import scaling  # noqa: E402


def test_counts():
    text, st = scaling.generate(5)
    assert st["ops"] == 5 * scaling.OPS_PER_LAYER
    assert st["saved"] == 5 * scaling.SAVED_PER_LAYER
    assert len(re.findall(r"= trace\.(op|view) ", text)) == st["ops"]
    assert "offload.num_outputs = 1 : i64" in text


def test_parses(offload_opt, tmp_path):
    text, _ = scaling.generate(4)
    f = tmp_path / "s.mlir"
    f.write_text(text)
    subprocess.run([offload_opt, str(f), "-o", os.devnull], check=True)


def test_several_pipelines(offload_opt, capsys):
    # One table per --pipeline, each with a row per size and a time in it.
    status = scaling.main(["--offload-opt", offload_opt, "--sizes", "100,300", "--repeat", "1",
                           "--pipeline=--offload-activations",
                           "--pipeline=--offload-activations=plan=hidden"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("pipeline: --offload-activations") == 2
    assert "pipeline: --offload-activations=plan=hidden" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s+\d+\s+\d+", line)]
    assert [int(r[0]) for r in rows] == [98, 294, 98, 294]
    assert all(float(r[4]) > 0 for r in rows)


def test_timeout_reported(offload_opt, capsys):
    # A run past --timeout is reported as stopped, not as a failure.
    status = scaling.main(["--offload-opt", offload_opt, "--sizes", "3000", "--repeat", "1",
                           "--timeout", "0.001"])
    out = capsys.readouterr().out
    assert status == 0
    assert "(stopped)" in out
