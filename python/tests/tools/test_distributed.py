"""FSDP2 and DDP through the bridge on two CPU ranks over gloo
(python/benchmarks/distributed.py, whose GPU run uses NCCL): copies happen on
every rank, and the gradients are bit-identical to plain Inductor's under the
same sharding, after a control run shows Inductor reproduces its own."""

import argparse
import json

import pytest

from benchmarks import distributed


def _args(mode: str) -> argparse.Namespace:
    cfg = dict(distributed.peer_rows.MODEL_DEFAULTS, **distributed.peer_rows.CONFIGS["tiny"])
    cfg["layers"] = 2
    return argparse.Namespace(mode=mode, nproc=2, device="cpu", steps=1, warmup=1,
                              no_profile=True, **cfg)


# FSDP2 over per-layer compile runs with loads started in the layer after.
OFFLOAD_ROW = {"fsdp2": "offload-mlir:min_bytes=0:prefetch=1",
               "fsdp2-whole": "offload-mlir:min_bytes=0", "ddp": "offload-mlir:min_bytes=0"}


@pytest.mark.parametrize("mode", distributed.MODES)
def test_sharded_training_offloads_on_every_rank_with_compiles_gradients(
        mode, offload_mlir, tmp_path):
    row = OFFLOAD_ROW[mode]
    results = distributed.run_rows(_args(mode), ["compile", "compile-again", row],
                                   str(tmp_path))
    compare = distributed.compare(results)
    # The control: plain Inductor reproduces itself under this sharding.
    assert compare["compile-again"]["grads_identical"]
    assert compare[row]["grads_identical"]
    for rank in results[row]:
        assert rank["fallbacks"] == []
        assert rank["offloaded"] > 0
        moved = rank["runtime_per_step"]
        assert moved["d2h_bytes"] > 0 and moved["d2h_bytes"] == moved["h2d_bytes"]
        assert rank["grad_checksums"]


def test_rows_and_their_options_are_checked():
    assert distributed.parse_row("compile") is None
    assert distributed.parse_row("offload-mlir:min_bytes=0:prefetch=1") == {
        "min_bytes": 0, "prefetch": True}
    assert distributed.parse_row("offload-mlir:instances=8:max_recompute=0.025") == {
        "saved_instances": 8, "max_recompute": 0.025}
    for bad in ("eager", "compile:amb=0.5", "offload-mlir:plan=all", "offload-mlir:min_bytes=x",
                "offload-mlir:instances=0", "offload-mlir:max_recompute=2"):
        with pytest.raises(ValueError):
            distributed.parse_row(bad)


def test_collectives_are_timed_against_the_copies_beside_them(tmp_path):
    # Two NCCL kernels, 100 and 50 us; a copy overlaps the first by 40 us;
    # the second starts 30 us after its launch returned.
    events = [
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather", "ts": 0, "dur": 100,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter", "ts": 200,
         "dur": 50, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_0", "ts": 100, "dur": 100,
         "args": {"correlation": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 160, "dur": 10,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 60,
         "dur": 80, "args": {"bytes": 1 << 20}},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    figures = distributed.collective_figures(str(path))
    assert figures["collectives"] == 2
    assert figures["collective_ms"] == pytest.approx(0.150)
    assert figures["collective_ms_beside_copies"] == pytest.approx(0.040)
    assert figures["collective_launch_wait_median_us"] == pytest.approx(30)
    assert figures["copy_ms"] == pytest.approx(0.080)
