import importlib.util
import os
import re
import subprocess

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "scaling.py")
_spec = importlib.util.spec_from_file_location("scaling", _PATH)
scaling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scaling)


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
