"""python/benchmarks/csan_plan.py on CPU: the plumbing of the sanitizer run.

On CPU no sanitizer runs and the stand-in copies are synchronous; what this
checks is the part the GPU run relies on: the bridge's partitioner transforms
the step under aot_function (no Dynamo), every copy op of the rebuilt graphs
is swapped for the stream copy that the sanitizer can see, bytes move both
ways, and the loss and every gradient match the same graphs without
offloading bit for bit.
"""

import json

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def csan_plan(offload_mlir):
    from benchmarks import csan_plan

    return csan_plan


def test_stream_copies_replace_every_copy_op_and_gradients_match(csan_plan, tmp_path):
    out = tmp_path / "csan.json"
    rc = csan_plan.main(["--device", "cpu", "--dtype", "f32", "--hidden", "64", "--heads", "4",
                         "--kv-heads", "2", "--ffn", "128", "--vocab", "96", "--seq", "16",
                         "--batch", "2", "--steps", "2", "--out", str(out),
                         "--work", str(tmp_path)])
    assert rc == 0
    variants = json.loads(out.read_text())["variants"]
    base, off = variants["no offload"]["result"], variants["offload"]["result"]
    assert base["copy_ops"] == {"forward": 0, "backward": 0}
    # Every copy op of both rebuilt graphs became a stream copy, each
    # offload has its load, and the same bytes moved each way.
    assert off["copy_ops"]["forward"] > 0 and off["copy_ops"]["backward"] > 0
    moved = off["moved"]
    assert moved["offloads"] == moved["loads"] > 0
    assert moved["d2h_bytes"] == moved["h2d_bytes"] > 0
    assert off["offloaded"], "the bridge offloaded nothing"
    assert variants["offload"]["same_as_no_offload"] is True
    assert off["losses"] == base["losses"]
    assert off["grad_digests"] == base["grad_digests"]
