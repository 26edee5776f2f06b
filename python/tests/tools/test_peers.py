"""`python -m benchmarks.peers` on the CPU, with the toy configuration:
each row runs in its own process, the rows that can run without a GPU
really train, gradients are checked against the right baseline, and the
outputs (JSON, table, plot, merge) are written. The figures themselves come
from the H100 (docs/benchmarks/peers/README.md)."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from benchmarks.peers import cli, runner, tables, traces  # noqa: E402
from benchmarks.peers import rows as peer_rows  # noqa: E402

_PYTHON = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_peers(*args, timeout=300):
    """`python -m benchmarks.peers` with the tiny configuration on the CPU,
    in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.peers", "--config", "tiny", "--device", "cpu", *args],
        cwd=_PYTHON, capture_output=True, text=True, timeout=timeout)


def _peers_doc(out, *args, timeout=900, returncode=0):
    """Runs `_run_peers(*args)` writing to `out`, checks its exit status, and
    returns the JSON it wrote."""
    proc = _run_peers(*args, "--out", str(out), timeout=timeout)
    assert proc.returncode == returncode, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.with_suffix(".json").read_text())


def _by_row(doc):
    return {r["row"]: r for r in doc["results"]}


def test_parse_rows():
    row = peer_rows.parse_row("offload-mlir:budget=0.75:amb=0.5")
    assert (row.family, row.compiled, row.baseline) == ("offload-mlir", True, "compile")
    assert row.options == {"budget": "0.75", "amb": "0.5"}
    assert row.grad_baseline == "compile:amb=0.5"  # same recompute, no offload
    assert peer_rows.parse_row("offload-mlir").grad_baseline == "compile"
    row = peer_rows.parse_row("layer-group=3")
    assert (row.family, row.options, row.baseline) == ("layer-group", {"layers": "3"}, "eager")
    assert peer_rows.parse_row("torchtune").needs_cuda
    for bad in ("nope", "eager:plan=all", "offload-mlir:budget", "checkpoint:amb=0.5"):
        with pytest.raises(ValueError):
            peer_rows.parse_row(bad)


def test_partition_settings_of_rows():
    """`partition.NAME=` sets torch._functorch.config.NAME for a compiled
    row's partitioner; the gradients compare with compile under the same
    settings."""
    name = "partition.ban_recompute_materialized_backward"
    row = peer_rows.parse_row(f"offload-mlir:budget=0.75:{name}=0:amb=0.9")
    assert row.compiler_options == {name: "0", "amb": "0.9"}
    assert row.grad_baseline == f"compile:{name}=0:amb=0.9"
    assert peer_rows._row_config(row, peer_rows.PARTITION_PREFIX) == {
        "ban_recompute_materialized_backward": False}
    assert peer_rows.parse_row(f"compile:{name}=true").grad_baseline == "compile"
    assert peer_rows.config_setting("partition.activation_memory_budget", "0.5") == 0.5
    for bad, match in ((f"eager:{name}=0", "takes no options"),
                       ("compile:partition.no_such_setting=1", "has no 'no_such_setting'"),
                       (f"compile:{name}=maybe", "not a bool"),
                       ("compile:partition.activation_memory_budget=half", "not a float")):
        with pytest.raises(ValueError, match=match):
            peer_rows.parse_row(bad)


def test_inductor_settings_of_rows():
    """`inductor.NAME=` sets torch._inductor.config.NAME for a compiled
    row's code generation, checked by name and type like the partitioner's;
    the gradients compare with compile under the same settings."""
    row = peer_rows.parse_row("offload-mlir:amb=0.7:inductor.allow_buffer_reuse=0")
    assert row.compiler_options == {"amb": "0.7", "inductor.allow_buffer_reuse": "0"}
    assert row.grad_baseline == "compile:amb=0.7:inductor.allow_buffer_reuse=0"
    assert peer_rows._row_config(row, peer_rows.INDUCTOR_PREFIX) == {"allow_buffer_reuse": False}
    assert peer_rows._row_config(row, peer_rows.PARTITION_PREFIX) == {}
    for bad, match in (("eager:inductor.allow_buffer_reuse=0", "takes no options"),
                       ("compile:inductor.no_such_setting=1",
                        "torch._inductor.config has no 'no_such_setting'"),
                       ("compile:inductor.allow_buffer_reuse=maybe", "not a bool")):
        with pytest.raises(ValueError, match=match):
            peer_rows.parse_row(bad)
    with pytest.raises(ValueError, match="inductor.allow_buffer_reuse= applies to both rows"):
        runner.paired_rows("compile:inductor.allow_buffer_reuse=0,offload-mlir")


def test_exposed_copy_time_is_copy_time_no_kernel_covers():
    copies = [(0, 10), (5, 20), (30, 40)]
    kernels = [(2, 4), (8, 35)]
    # Copies cover 0..20 and 30..40; kernels cover 2..4 and 8..35.
    assert traces._union_length(copies) == 30
    assert traces._uncovered_length(copies, kernels) == (2 + 4) + 5
    assert traces._uncovered_length(copies, []) == 30


def test_gradients_compare_with_the_grad_baseline_wherever_it_ran():
    def row(name, grad_baseline, checksum):
        return {"row": name, "baseline": "compile", "grad_baseline": grad_baseline,
                "losses": [1.0], "grad_checksums": {"w": checksum},
                "step_s_median": 0.1, "peak_allocated_bytes": 1 << 30}

    results = [row("compile", "compile", [1]),
               row("offload-mlir:amb=0.7", "compile:amb=0.7", [2]),
               row("offload-mlir", "compile", [1])]
    tables.compare_all(results)
    assert "vs_baseline" not in results[1]  # its baseline has not run yet
    assert results[2]["vs_baseline"]["grads_identical"]
    results.append(row("compile:amb=0.7", "compile", [2]))
    tables.compare_all(results)
    assert results[1]["vs_baseline"]["grads_identical"]
    assert not results[3]["vs_baseline"]["grads_identical"]  # vs compile
    args = {"config": "tiny", "layers": 1, "dtype": "fp32", "batch": 1, "seq": 8,
            "optimizer": "none", "deterministic": True, "device": "cpu"}
    assert "identical to compile:amb=0.7" in tables.table({"results": results, "args": args})


def test_checksum_sees_order_and_bits():
    a = torch.arange(1000, dtype=torch.float32)
    assert runner._grad_checksum(torch, a) == runner._grad_checksum(torch, a.clone())
    assert runner._grad_checksum(torch, a) != runner._grad_checksum(torch, a.flip(0))
    b = a.clone()
    b[7] = torch.nextafter(b[7], torch.tensor(1e9))
    assert runner._grad_checksum(torch, a)[0] != runner._grad_checksum(torch, b)[0]


@pytest.mark.usefixtures("offload_mlir")
def test_cpu_rows_train_and_compare(tmp_path):
    out = tmp_path / "tiny"
    rows = ("eager,checkpoint,layer-group:min_bytes=0,compile,"
            "offload-mlir:plan=all:min_bytes=0,torchtune")
    doc = _peers_doc(out, "--rows", rows, "--steps", "2", "--warmup", "1")
    rows = _by_row(doc)
    assert rows["torchtune"]["status"] == "skipped"  # needs CUDA
    for name in ("checkpoint", "layer-group:min_bytes=0", "offload-mlir:plan=all:min_bytes=0"):
        r = rows[name]
        assert r["baseline"] == ("compile" if r["compiled"] else "eager")
        assert r["vs_baseline"]["losses_identical"], name
        assert r["vs_baseline"]["grads_identical"], name
        assert r["step_s_median"] > 0 and len(r["losses"]) == 3
    # Bytes really moved, each way, in the two offloading rows.
    for name in ("layer-group:min_bytes=0", "offload-mlir:plan=all:min_bytes=0"):
        moved = rows[name]["runtime_per_step"]
        assert moved["d2h_bytes"] > 0 and moved["h2d_bytes"] > 0, name
    assert rows["offload-mlir:plan=all:min_bytes=0"]["offloaded"] > 0
    assert "step_seconds_after" in rows["offload-mlir:plan=all:min_bytes=0"]["predicted"]
    table = out.with_suffix(".md").read_text()
    assert "| offload-mlir:plan=all:min_bytes=0 |" in table and "identical" in table

    # Merging two runs keeps both and compares each row with its own run's
    # baseline.
    merged = tmp_path / "merged"
    subprocess.run([sys.executable, "-m", "benchmarks.peers", "--merge",
                    str(out.with_suffix(".json")), str(out.with_suffix(".json")),
                    "--out", str(merged)], cwd=_PYTHON, check=True, capture_output=True)
    mdoc = json.loads(merged.with_suffix(".json").read_text())
    assert len(mdoc["results"]) == 2 * len(doc["results"])
    assert {r["run"] for r in mdoc["results"]} == {1, 2}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert merged.with_suffix(".png").stat().st_size > 10_000


def test_per_layer_rows_compare_with_per_layer_compile():
    row = peer_rows.parse_row("offload-mlir:per-layer=1:amb=0.5")
    assert row.grad_baseline == "compile:per-layer=1:amb=0.5"
    assert peer_rows.parse_row("offload-mlir:per-layer=1:across=0").options["across"] == "0"
    for bad in ("compile:per-layer=2", "offload-mlir:across=maybe", "eager:per-layer=1"):
        with pytest.raises(ValueError):
            peer_rows.parse_row(bad)


@pytest.mark.usefixtures("offload_mlir")
def test_per_layer_rows_train_with_loads_started_in_the_layer_after(tmp_path):
    out = tmp_path / "per-layer"
    rows = "compile:per-layer=1,offload-mlir:per-layer=1:plan=all:min_bytes=0"
    doc = _peers_doc(out, "--rows", rows, "--steps", "2", "--warmup", "1")
    r = _by_row(doc)["offload-mlir:per-layer=1:plan=all:min_bytes=0"]
    assert r["grad_baseline"] == "compile:per-layer=1"
    assert r["vs_baseline"]["grads_identical"], r["vs_baseline"]
    moved = r["runtime_per_step"]
    assert moved["d2h_bytes"] > 0 and moved["prefetched_loads"] > 0


@pytest.mark.usefixtures("offload_mlir")
def test_optimizer_runs_measure_forward_and_backward_beside_the_prediction(tmp_path):
    """With AdamW the planner still predicts forward and backward only: the
    row measures them on their own too, and counts the optimizer's state,
    which is resident outside the graphs, so the table can set like beside
    like."""
    out = tmp_path / "adamw"
    doc = _peers_doc(out, "--optimizer", "adamw", "--rows",
                     "compile,offload-mlir:plan=all:min_bytes=0", "--steps", "2", "--warmup", "1")
    rows = _by_row(doc)
    r = rows["offload-mlir:plan=all:min_bytes=0"]
    assert r["vs_baseline"]["grads_identical"] and r["vs_baseline"]["losses_identical"]
    fb = r["forward_backward"]
    assert 0 < fb["step_s_median"] <= r["step_s_median"]
    assert fb["peak_allocated_bytes"] is None  # no allocator statistics on the CPU
    # AdamW keeps two moments per parameter (and a step count each).
    cfg = peer_rows.CONFIGS["tiny"]
    from offload_mlir import models
    model = models.LlamaLM(models.LlamaConfig(hidden=cfg["hidden"], heads=cfg["heads"],
                                              kv_heads=cfg["kv_heads"], ffn=cfg["ffn"]),
                           cfg["layers"], cfg["seq"], cfg["vocab"], device="cpu",
                           dtype=torch.float32)
    params = list(model.parameters())
    moments = 2 * sum(p.numel() * p.element_size() for p in params)
    assert moments <= fb["optimizer_state_bytes"] <= moments + 8 * len(params)
    assert "measured forward and backward:" in out.with_suffix(".md").read_text()


def test_trace_figures_from_a_chrome_trace(tmp_path):
    # A kernel, a D2H copy that outlives it, and the next kernel: the copy is
    # exposed between the two kernels, and the report names both ends.
    events = [
        {"ph": "X", "cat": "kernel", "name": "mm", "ts": 0, "dur": 10},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)",
         "ts": 5, "dur": 20, "args": {"bytes": 2 << 20}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)",
         "ts": 30, "dur": 2, "args": {"bytes": 1 << 20}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 2, "dur": 1,
         "args": {"correlation": 6}},
        {"ph": "X", "cat": "kernel", "name": "add", "ts": 18, "dur": 20,
         "args": {"correlation": 6}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 50},
        # The device then waits 22 us for the host's next launch.
        {"ph": "X", "cat": "cpu_op", "name": "offload::load_start", "ts": 52, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 59, "dur": 2,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "sum", "ts": 60, "dur": 5,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "step", "ts": -4, "dur": 70},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    t = traces._trace_figures(str(path))
    assert (t["d2h_bytes"], t["h2d_bytes"]) == (2 << 20, 1 << 20)
    assert t["copy_seconds"] == pytest.approx(22e-6)
    assert t["exposed_copy_seconds"] == pytest.approx(8e-6)
    assert t["kernel_busy_ms"] == pytest.approx(0.035)
    # Device idle with no copy under it: the host was behind, in load_start.
    assert t["device_idle_ms"] == pytest.approx(0.022)
    assert t["device_idle_worst"] == [{"at_ms": 0.038, "ms": 0.022, "host_ops": [
        "cudaLaunchKernel", "offload::load_start", "step"]}]
    # No kernel from 38 to 60 us: the launch of `sum` returned at 61, so
    # all of it was the host's. From 10 to 18 `add` was launched already.
    assert t["kernel_idle_ms"] == {"host_late": pytest.approx(0.022),
                                   "queued": pytest.approx(0.008), "unknown": 0.0,
                                   "queued_at_stream_wait": 0.0,
                                   "queued_until_copy_end": 0.0}
    assert t["host_before_ms"] == pytest.approx(0.004)
    assert t["host_after_ms"] == pytest.approx(0.001)
    assert t["worst_exposed"] == [{"at_ms": pytest.approx(0.01), "ms": pytest.approx(0.008),
                                   "copies": ["D2H 2 MiB"], "next_kernel": "add"}]
    # Per copy, in issue order, with its own exposed part.
    assert t["copies"] == [
        {"dir": "D2H", "mib": 2.0, "start_ms": 0.005, "end_ms": 0.025, "exposed_ms": 0.008},
        {"dir": "H2D", "mib": 1.0, "start_ms": 0.03, "end_ms": 0.032, "exposed_ms": 0.0}]


def test_read_trace_counts_memsets_as_stream_work(tmp_path):
    # A memset occupies the compute stream as a kernel does: the device is
    # busy from 0 to 25, not idle while it zeroes a buffer.
    events = [
        {"ph": "X", "cat": "kernel", "name": "mm", "ts": 0, "dur": 10},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 10, "dur": 5,
         "args": {"correlation": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "ts": 1, "dur": 1,
         "args": {"correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "add", "ts": 15, "dur": 10},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    t = traces.read_trace(str(path))
    assert t.kernels == [(0, 10, "mm"), (10, 15, "Memset (Device)"), (15, 25, "add")]
    assert t.launched == [None, 2.0, None]
    assert traces._trace_figures(str(path))["kernel_busy_ms"] == pytest.approx(0.025)


def test_idle_causes_split_host_late_from_queued():
    kernels = [(0, 10, "a"), (15, 20, "b"), (30, 40, "c"), (45, 50, "d"), (48, 60, "e")]
    # b's launch returned at 12: 2 us of its gap the host's, 3 us queued;
    # c was launched long before its gap (10 us queued); d's launch is not
    # in the trace; e overlaps d.
    launched = [1.0, 12.0, 13.0, None, 47.0]
    none = traces.idle_causes(kernels, launched)
    assert none == {"host_late_us": 2.0, "queued_us": 13.0, "unknown_us": 5.0,
                    "queued_at_stream_wait_us": 0.0, "queued_until_copy_end_us": 0.0}
    # A stream wait issued between b's launch and c's: c's gap was at it.
    at_wait = traces.idle_causes(kernels, launched, wait_calls=[12.5])
    assert at_wait == none | {"queued_at_stream_wait_us": 10.0}
    # A copy that ended at 25 (c starts 5 us later) held c; one ending at 12
    # (b starts 3 us later) held b's queued part; one ending 25 us before a
    # kernel, or before its gap began, held nothing.
    held = traces.idle_causes(kernels, launched, copy_ends=[25.0])
    assert held["queued_until_copy_end_us"] == 10.0
    assert traces.idle_causes(kernels, launched, copy_ends=[12.0])[
        "queued_until_copy_end_us"] == 3.0
    assert traces.idle_causes(kernels, launched, copy_ends=[5.0, 9.0])[
        "queued_until_copy_end_us"] == 0.0
    assert traces.stream_waits([(1, 2, "cudaLaunchKernel"), (12.5, 13, "cudaStreamWaitEvent")]) \
        == [12.5]
    assert all(v == 0.0 for v in traces.idle_causes([], []).values())


def test_predicted_copies_in_forward_order():
    step = {"saved": [
        {"bytes": 2 << 20, "offloaded": True, "exposed_seconds": 0.0005,
         "offload_after": {"index": 9, "op": 'aten.mm.default "mm_1"'},
         "load_start": {"index": 3, "op": 'aten.mm.default "mm_7"'},
         "load_before": {"index": 5, "op": 'aten.mul.Tensor "mul_4"'}},
        {"bytes": 1 << 20, "offloaded": False, "kept_reason": "below min-bytes"},
        {"bytes": 4 << 20, "offloaded": True, "exposed_seconds": 0.0,
         "offload_after": {"index": 2, "op": 'aten.mm.default "mm"'},
         "load_start": {"index": 7, "op": 'aten.mm.default "mm_9"'},
         "load_before": {"index": 8, "op": 'aten.mul.Tensor "mul_6"'}},
    ]}
    assert traces.predicted_copies(step) == [
        {"mib": 4.0, "exposed_ms": 0.0, "offload_after": 'aten.mm.default "mm"',
         "load_start": 'aten.mm.default "mm_9"', "load_before": 'aten.mul.Tensor "mul_6"'},
        {"mib": 2.0, "exposed_ms": 0.5, "offload_after": 'aten.mm.default "mm_1"',
         "load_start": 'aten.mm.default "mm_7"', "load_before": 'aten.mul.Tensor "mul_4"'}]


def test_repeated_rows_give_the_ratio_per_run_and_its_spread():
    # --repeat runs the rows in turn, each round a run of its own: a row is
    # compared with the baseline of its own round, and the table gives the
    # spread of those ratios.
    def row(name, run, ms):
        return {"row": name, "baseline": "compile", "run": run, "step_s_median": ms / 1e3,
                "peak_allocated_bytes": 1 << 30}
    results = [row("compile", 1, 100.0), row("offload-mlir", 1, 102.0),
               row("compile", 2, 104.0), row("offload-mlir", 2, 104.0),
               row("compile", 3, 100.0), row("offload-mlir", 3, 103.0)]
    spread = tables.ratio_spread(results)
    assert list(spread) == ["offload-mlir"]
    assert spread["offload-mlir"] == pytest.approx([1.02, 1.0, 1.03])
    doc = {"args": {"config": "tiny", "layers": 3, "dtype": "f32", "batch": 2, "seq": 32,
                    "optimizer": "none", "deterministic": True, "device": "cpu"},
           "repeat": 3, "results": results}
    text = tables.table(doc)
    assert "| offload-mlir | 3 | 1.020x | 1.000x | 1.030x |" in text
    # Each row against its own round's baseline, with the round shown.
    assert "| offload-mlir | 104.0 ms | 1.000x |" in text and text.count(" 2 |") >= 2


def test_merge_keeps_the_rounds_of_a_repeated_run_apart(tmp_path):
    def row(name, run, ms):
        r = {"row": name, "baseline": "compile", "step_s_median": ms / 1e3,
             "peak_allocated_bytes": 1 << 30, "losses": [1.0], "grad_checksums": {"w": 7},
             "family": name, "compiled": True}
        return dict(r, run=run) if run else r
    args = {"config": "tiny", "layers": 3, "dtype": "f32", "batch": 2, "seq": 32,
            "optimizer": "none", "deterministic": True, "device": "cpu"}
    single = {"args": args, "results": [row("compile", None, 100.0),
                                        row("offload-mlir", None, 101.0)]}
    repeated = {"args": args, "repeat": 2, "results": [
        row("compile", 1, 100.0), row("offload-mlir", 1, 102.0),
        row("compile", 2, 110.0), row("offload-mlir", 2, 110.0)]}
    paths = []
    for i, d in enumerate((single, repeated)):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(d))
    out = tmp_path / "merged"
    cli.main(["--merge", *map(str, paths), "--out", str(out)])
    merged = json.loads(out.with_suffix(".json").read_text())
    assert [r["run"] for r in merged["results"]] == [1, 1, "2.1", "2.1", "2.2", "2.2"]
    assert tables.ratio_spread(merged["results"])["offload-mlir"] == pytest.approx(
        [1.01, 1.02, 1.0])


@pytest.mark.usefixtures("offload_mlir")
def test_paired_rows_interleave_in_one_process(tmp_path):
    out = tmp_path / "paired"
    r = _peers_doc(out, "--paired", "compile,offload-mlir:plan=all:min_bytes=0",
                   "--steps", "4", "--warmup", "1")["paired"]
    assert r["rows"] == ["compile", "offload-mlir:plan=all:min_bytes=0"]
    assert [len(t) for t in r["step_s_all"]] == [4, 4] and len(r["ratio_all"]) == 4
    # Each ratio is the B step over the A step of its pair.
    assert r["ratio_all"][1] == pytest.approx(r["step_s_all"][1][1] / r["step_s_all"][0][1])
    assert r["ratio_q1"] <= r["ratio_median"] <= r["ratio_q3"]
    assert "| 4 pairs |" in out.with_suffix(".md").read_text()
    # Eager rows cannot be paired.
    bad = _run_peers("--paired", "eager,compile")
    assert bad.returncode != 0 and "--paired takes compile and offload-mlir rows" in bad.stderr
    # A compile row's recompute budget is process-wide: the other row must
    # name the same one, not inherit it silently.
    bad = _run_peers("--paired", "compile:amb=0.5,offload-mlir")
    assert bad.returncode != 0 and "a compile row's amb= applies to both rows" in bad.stderr
    # So are its partitioner settings.
    with pytest.raises(ValueError, match="partition.ban_recompute_materialized_backward= "
                                         "applies to both rows"):
        runner.paired_rows("compile:partition.ban_recompute_materialized_backward=0,offload-mlir")
    runner.paired_rows("compile:partition.ban_recompute_materialized_backward=0,"
                      "offload-mlir:partition.ban_recompute_materialized_backward=0")


@pytest.mark.usefixtures("offload_mlir")
def test_paired_repeat_pools_processes(tmp_path):
    out = tmp_path / "pooled"
    doc = _peers_doc(out, "--paired", "compile,compile", "--steps", "2", "--warmup", "1",
                     "--repeat", "2")
    runs, pooled = doc["paired_runs"], doc["paired"]
    assert len(runs) == 2 and pooled["processes"] == 2 and pooled["steps"] == 4
    assert pooled["process_ratio_medians"] == [r["ratio_median"] for r in runs]
    text = out.with_suffix(".md").read_text()
    assert "| process 2, 2 pairs |" in text and "| all 4 pairs of 2 processes |" in text
    # Rows that cannot be paired are refused before any process starts.
    bad = _run_peers("--paired", "compile,eager", "--repeat", "2")
    assert bad.returncode != 0 and "--paired takes compile and offload-mlir rows" in bad.stderr
    assert "process 1" not in bad.stdout


def test_pool_paired_takes_every_pair_and_each_process_median():
    runs = [{"rows": ["a", "b"], "ratio_all": [1.0, 1.02, 1.04], "ratio_median": 1.02},
            {"rows": ["a", "b"], "ratio_all": [0.99, 1.0, 1.01], "ratio_median": 1.0}]
    pooled = runner.pool_paired(runs)
    assert pooled["steps"] == 6 and pooled["processes"] == 2
    assert pooled["ratio_median"] == pytest.approx(1.005)
    assert pooled["process_ratio_medians"] == [1.02, 1.0]
    assert pooled["median_of_process_medians"] == pytest.approx(1.01)
    assert pooled["pairs_b_not_slower"] == 3
    with pytest.raises(ValueError, match="two rows"):
        runner.paired_rows("compile,offload-mlir,compile")


def test_paired_table_shows_device_time_per_stretch():
    r = {"rows": ["compile", "offload-mlir"], "steps": 2, "step_s_median": [0.1, 0.11],
         "ratio_median": 1.1, "ratio_q1": 1.05, "ratio_q3": 1.15, "ratio_of_medians": 1.1,
         "pairs_b_not_slower": 0, "device": None}
    assert "CUDA events" not in tables.paired_table({"paired": r})  # CPU: not measured
    r["device"] = {name: {"median_s": [a, b], "ratio_median": b / a,
                          "host_median_s": [a / 4, b / 2]}
                   for name, a, b in (("forward", 0.04, 0.041), ("backward", 0.06, 0.069),
                                      ("step", 0.1, 0.11))}
    text = tables.paired_table({"paired": r})
    assert "| forward | 40.0 ms | 41.0 ms | 1.0250x | 10.0 / 20.5 ms |" in text
    assert "| backward | 60.0 ms | 69.0 ms | 1.1500x | 15.0 / 34.5 ms |" in text


@pytest.mark.usefixtures("offload_mlir")
def test_offload_mlir_rows_give_their_recompute_budget_to_the_backend():
    """Not torch's process-wide setting: so a paired compile row without a
    budget runs without one."""
    backend = peer_rows._offload_mlir_backend(peer_rows.parse_row("offload-mlir:amb=0.7:plan=all"))
    assert backend.options.recompute_budget == 0.7 and backend.options.plan == "all"
    assert peer_rows._offload_mlir_backend(peer_rows.parse_row("offload-mlir")).options \
        .recompute_budget is None
    backend = peer_rows._offload_mlir_backend(peer_rows.parse_row(
        "offload-mlir:partition.ban_recompute_materialized_backward=0"))
    assert backend.options.partitioner_config == (("ban_recompute_materialized_backward", False),)
    assert peer_rows._offload_mlir_backend(peer_rows.parse_row(
        "offload-mlir:reuse_freed_buffers=1")).options.reuse_freed_buffers is True
    assert peer_rows._offload_mlir_backend(peer_rows.parse_row("offload-mlir")).options \
        .reuse_freed_buffers is False
    backend = peer_rows._offload_mlir_backend(peer_rows.parse_row(
        "offload-mlir:inductor.allow_buffer_reuse=0"))
    assert backend.options.inductor_config == (("allow_buffer_reuse", False),)
    # drop_peak_neutral=0|1 is the backend's; left out, each graph decides.
    for spec, value in (("offload-mlir", None), ("offload-mlir:drop_peak_neutral=0", False),
                        ("offload-mlir:drop_peak_neutral=1", True)):
        assert peer_rows._offload_mlir_backend(
            peer_rows.parse_row(spec)).options.drop_peak_neutral is value
    with pytest.raises(ValueError, match="drop_peak_neutral= takes 0 or 1"):
        peer_rows.parse_row("offload-mlir:drop_peak_neutral=auto")


@pytest.mark.usefixtures("offload_mlir")
def test_offload_mlir_rows_plan_with_the_profile_they_name(tmp_path):
    """`profile=PATH` is the backend's device_profile, so two profiles'
    plans can run paired in one process; a missing file is refused when
    the row is parsed, not after the baseline has compiled."""
    profile = tmp_path / "other.json"
    profile.write_text("{}")
    row = peer_rows.parse_row(f"offload-mlir:profile={profile}:budget=0.9")
    assert row.grad_baseline == "compile"  # the profile changes the plan, not the partition
    backend = peer_rows._offload_mlir_backend(row)
    assert backend.options.device_profile == str(profile)
    assert backend.options.resolved_device_profile() == str(profile)
    with pytest.raises(ValueError, match="no device profile at"):
        peer_rows.parse_row(f"offload-mlir:profile={tmp_path / 'missing.json'}")


def test_queued_by_calls_names_the_stream_work_before_each_gap():
    kernels = [(0, 10, "a"), (15, 20, "b"), (30, 40, "c"), (45, 50, "d")]
    launched = [1.0, 12.0, 13.0, 14.0]
    host = [(1, 2, "cudaLaunchKernel"),
            # before b's launch: an offload's event, wait, copy and event
            (5, 6, "cudaEventRecord"), (6, 7, "cudaStreamWaitEvent"),
            (7, 8, "cudaMemcpyAsync"), (8, 9, "cudaEventRecord"), (9, 9.5, "cudaEventQuery"),
            (12, 12.2, "cudaLaunchKernel"),
            # before c's launch: one wait; d's launch follows c's with nothing between
            (12.5, 12.8, "cudaStreamWaitEvent")]
    calls = traces.stream_calls(host)
    assert [n for _, n in calls] == ["cudaEventRecord", "cudaStreamWaitEvent",
                                     "cudaMemcpyAsync", "cudaEventRecord",
                                     "cudaStreamWaitEvent"]
    # c's gap ended 2 us after a D2H copy ended at 28: a stall on it. A copy
    # that ended before b's gap began held nothing.
    copies = [(20.0, 28.0, "D2H", 1 << 20), (1.0, 9.0, "H2D", 1 << 20)]
    r = traces.queued_by_calls(kernels, launched, calls, copies)
    assert r == {"cudaEventRecord x2 + cudaMemcpyAsync + cudaStreamWaitEvent": [3.0, 1],
                 "cudaStreamWaitEvent, until a D2H copy ended": [10.0, 1], "none": [5.0, 1]}
    # Spans without a direction: "a copy".
    assert "cudaStreamWaitEvent, until a copy ended" in traces.queued_by_calls(
        kernels, launched, calls, [(20.0, 28.0)])
    # The keys split the queued time idle_causes counts, not the host's part.
    total = traces.idle_causes(kernels, launched)["queued_us"]
    assert sum(v[0] for v in r.values()) == total
    assert traces.queued_by_calls([], [], calls) == {}


# ---------------------------------------------------------------------------
# The frontier of issue 30: recompute rows, checkpointed models through
# offload-mlir, the peers from their own packages, and the plot of them all
# ---------------------------------------------------------------------------


def test_frontier_rows_parse_and_name_their_gradient_baselines():
    frontier = peer_rows.expand_rows("frontier")
    assert frontier == ["compile", "compile:amb=0.8", "compile:amb=0.6", "compile:amb=0.4",
                        "compile:amb=0.2", "checkpoint-compile", "sac-compile", "offload-mlir",
                        "offload-mlir:budget=0.9", "offload-mlir:budget=0.75",
                        "offload-mlir:budget=0.6", "offload-mlir:checkpoint=1"]
    # Named sets expand where they stand, beside plain rows.
    assert peer_rows.expand_rows("eager, frontier,peers") == (
        ["eager"] + frontier + peer_rows.expand_rows(peer_rows.ROW_SETS["peers"]))
    rows = {s: peer_rows.parse_row(s) for s in frontier + peer_rows.expand_rows("peers")}
    assert all(r.compiled for s, r in rows.items() if s in frontier)
    for amb in ("0.8", "0.6", "0.4", "0.2"):
        row = rows[f"compile:amb={amb}"]
        assert row.compiler_options == {"amb": amb} and row.grad_baseline == "compile"
    assert rows["sac-compile"].checkpointing == "sac"
    assert rows["checkpoint-compile"].checkpointing == "layer"
    assert rows["compile"].checkpointing is None
    # A checkpointed model through offload-mlir: its gradients compare with
    # Inductor's on the same checkpointed model, its step time with compile.
    row = rows["offload-mlir:checkpoint=1"]
    assert (row.checkpointing, row.grad_baseline, row.baseline) == (
        "layer", "checkpoint-compile", "compile")
    row = peer_rows.parse_row("offload-mlir:checkpoint=sac:budget=0.75:amb=0.5")
    assert (row.checkpointing, row.grad_baseline) == ("sac", "sac-compile:amb=0.5")
    assert peer_rows.parse_row("offload-mlir:checkpoint=0").grad_baseline == "compile"
    # Inductor's settings on a checkpointed model are its process-wide ones.
    row = peer_rows.parse_row("checkpoint-compile:amb=0.5:inductor.allow_buffer_reuse=0")
    assert row.compiler_options == {"amb": "0.5", "inductor.allow_buffer_reuse": "0"}
    with pytest.raises(ValueError, match="applies to both rows"):
        runner.paired_rows("sac-compile:amb=0.5,offload-mlir:checkpoint=sac")
    runner.paired_rows("checkpoint-compile,offload-mlir:checkpoint=1")
    # The peers: eager rows but Thunder's (a compiler); DeepSpeed partitions on request.
    assert [rows[s].compiled for s in ("deepspeed-cpu-ckpt", "megatron-offload",
                                       "thunder-offload")] == [False, False, True]
    assert peer_rows.parse_row("deepspeed-cpu-ckpt:partition=1").options == {"partition": "1"}
    for bad, match in (("offload-mlir:checkpoint=2", "checkpoint= takes"),
                       ("deepspeed-cpu-ckpt:partition=yes", "partition= takes"),
                       ("compile:checkpoint=1", "compile takes amb="),
                       ("megatron-offload:layers=2", "takes no options"),
                       ("sac-compile:plan=all", "sac-compile takes amb=")):
        with pytest.raises(ValueError, match=match):
            peer_rows.parse_row(bad)
    with pytest.raises(ValueError, match="unknown row 'frontierx'"):
        peer_rows.parse_row(peer_rows.expand_rows("frontierx")[0])


def test_selective_checkpointing_saves_matmuls_and_recomputes_the_rest(monkeypatch):
    """The sac rows' policy: matrix products and attention saved, every other
    op recomputed in backward; the model so checkpointed trains to the same
    bits as without checkpointing (eager, on the CPU)."""
    from torch.utils.checkpoint import CheckpointPolicy

    from offload_mlir import models

    aten = torch.ops.aten
    policy = peer_rows.sac_policy()
    for op in (aten.mm.default, aten.addmm.default, aten.bmm.default,
               aten._scaled_dot_product_flash_attention_for_cpu.default,
               aten._scaled_dot_product_efficient_attention.default):
        assert policy(None, op) == CheckpointPolicy.MUST_SAVE, op
    for op in (aten.mul.Tensor, aten.silu.default, aten.rsqrt.default, aten.add.Tensor):
        assert policy(None, op) == CheckpointPolicy.PREFER_RECOMPUTE, op

    # What backward asks the policy again: the ops of each layer's replay.
    recomputed = []
    real_policy = peer_rows.sac_policy

    def recording_policy():
        decide = real_policy()

        def policy(ctx, op, *args, **kwargs):
            if ctx.is_recompute:
                recomputed.append((op.overloadpacket, decide(ctx, op)))
            return decide(ctx, op, *args, **kwargs)
        return policy

    monkeypatch.setattr(peer_rows, "sac_policy", recording_policy)
    cfg = peer_rows.CONFIGS["tiny"]

    def grads(how):
        torch.manual_seed(0)
        model = models.LlamaLM(models.LlamaConfig(hidden=cfg["hidden"], heads=cfg["heads"],
                                                  kv_heads=cfg["kv_heads"], ffn=cfg["ffn"]),
                               cfg["layers"], cfg["seq"], cfg["vocab"])
        peer_rows.checkpoint_layers(model, how)
        tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1),
                               generator=torch.Generator().manual_seed(1))
        model(tokens[:, :-1], tokens[:, 1:]).backward()
        return [p.grad for p in model.parameters()]

    plain = grads(None)
    assert not recomputed
    sac = grads("sac")
    assert all(torch.equal(a, b) for a, b in zip(plain, sac))
    # Backward replays each layer's forward up to the last op whose saved
    # values it needs (torch's checkpoint stops there: before down_proj, whose
    # output nothing saves): six of the seven products (q, k, v, o, gate, up)
    # and the attention come from what forward saved, the cheap ops between
    # them run again.
    decisions = dict(recomputed)
    assert [op for op, _ in recomputed].count(aten.mm) == cfg["layers"] * 6
    assert decisions[aten.mm] == CheckpointPolicy.MUST_SAVE
    assert decisions[aten._scaled_dot_product_flash_attention_for_cpu] == \
        CheckpointPolicy.MUST_SAVE
    for op in (aten.silu, aten.rsqrt, aten.mul):
        assert decisions[op] == CheckpointPolicy.PREFER_RECOMPUTE, op


@pytest.mark.usefixtures("offload_mlir")
def test_frontier_rows_train_on_cpu(tmp_path):
    """The frontier's recompute rows train (the lowest budget; the others
    differ only in the number), the checkpointed models under Inductor too,
    and a checkpointed model through offload-mlir matches Inductor on the
    same checkpointed model bit for bit (plan=all, so something is offloaded
    on the toy model). Each row compiles for tens of seconds on the CPU."""
    out = tmp_path / "frontier"
    rows = ("compile,compile:amb=0.2,checkpoint-compile,sac-compile,"
            "offload-mlir:checkpoint=1:plan=all:min_bytes=0,"
            "offload-mlir:checkpoint=sac:plan=all:min_bytes=0")
    doc = _peers_doc(out, "--rows", rows, "--steps", "2", "--warmup", "1", timeout=1500)
    got = _by_row(doc)
    assert list(got) == rows.split(",")
    for name, r in got.items():
        assert "error" not in r and r["step_s_median"] > 0 and len(r["losses"]) == 3, name
        if name != "compile":
            assert r["vs_baseline"]["losses_identical"], name
    for how, base in (("1", "checkpoint-compile"), ("sac", "sac-compile")):
        r = got[f"offload-mlir:checkpoint={how}:plan=all:min_bytes=0"]
        assert r["grad_baseline"] == base and r["baseline"] == "compile"
        assert r["vs_baseline"]["grads_identical"], how
        assert r["offloaded"] > 0 and not r["fallback"], how
    table = out.with_suffix(".md").read_text()
    assert "identical to checkpoint-compile" in table and "identical to sac-compile" in table


def _peers_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("deepspeed", "megatron", "thunder"))


def test_peer_rows_run_or_say_why(tmp_path):
    """The peers from their own packages. With them installed (the wheels of
    python/benchmarks/peer_wheels.sh, on PYTHONPATH): DeepSpeed's CPU
    checkpointing trains to eager's bits (partitioned; unpartitioned it
    needs CUDA, and says so), Megatron-Core's offloading fails for want of
    Transformer Engine, Thunder 0.2.6 for want of a CPUOffloading transform,
    each saying so. Without them, each row fails saying how to install it."""
    out = tmp_path / "peers"
    doc = _peers_doc(out, "--rows", "peers", "--steps", "2", "--warmup", "1",
                     returncode=1)  # rows failed
    got = _by_row(doc)
    assert got["checkpoint"]["vs_baseline"]["grads_identical"]
    failed = {name: r["reason"] for name, r in got.items() if r.get("status") == "failed"}
    table = out.with_suffix(".md").read_text()
    if not _peers_installed():
        assert set(failed) == {"deepspeed-cpu-ckpt", "deepspeed-cpu-ckpt:partition=1",
                               "megatron-offload", "thunder-offload"}
        for name, reason in failed.items():
            assert "is not installed" in reason and "peer_wheels.sh" in reason, name
        return
    ds = got["deepspeed-cpu-ckpt:partition=1"]
    assert ds["vs_baseline"]["grads_identical"] and ds["vs_baseline"]["losses_identical"]
    assert ds["peer"] == {"package": "deepspeed 0.19.8", "cpu_checkpointing": True,
                          "partition_activations": True, "offload_engine": None}
    assert set(failed) == {"deepspeed-cpu-ckpt", "megatron-offload", "thunder-offload"}
    assert "on a CPU device DeepSpeed's checkpoint_in_cpu" in failed["deepspeed-cpu-ckpt"]
    assert ("megatron-core 0.19.2's fine-grained activation offloading needs Transformer "
            "Engine" in failed["megatron-offload"])
    assert ("lightning-thunder 0.2.6 has no CPUOffloading transform"
            in failed["thunder-offload"])
    assert "| megatron-offload | failed: RuntimeError: megatron-offload: megatron-core" in table


def _frontier_doc(config: str) -> dict:
    """A benchmark result of the frontier and the peers, as a GPU run writes
    it: figures made up, in the shape of the real ones (one fallback, four
    rows that could not run)."""
    args = {"config": config, "layers": peer_rows.CONFIGS[config]["layers"],
            "dtype": peer_rows.CONFIGS[config]["dtype"], "batch": 8, "seq": 1024,
            "optimizer": "none", "deterministic": True, "device": "cuda"}
    results = []
    for i, spec in enumerate(peer_rows.expand_rows("frontier,peers")):
        row = peer_rows.parse_row(spec)
        if spec in ("megatron-offload", "thunder-offload"):
            why = f"RuntimeError: {spec}: cannot run here, for a reason told at length"
            results.append({"row": spec, "error": True, "status": "failed", "reason": why,
                            "stderr_tail": f"Traceback (most recent call last):\n{why}\n"})
            continue
        results.append({
            "row": spec, "family": row.family, "compiled": row.compiled,
            "baseline": row.baseline, "grad_baseline": row.grad_baseline,
            "step_s_median": (0.184 if row.compiled else 0.25) * (1 + 0.04 * (i % 7)),
            "peak_allocated_bytes": int((17.6 - 0.6 * (i % 9)) * peer_rows.GiB),
            "losses": [1.0], "grad_checksums": {"w": [i % 2, 0.0]},
            "fallback": ("error: graphsafe_run_with_rng_state is a higher-order op"
                         if spec == "offload-mlir:checkpoint=1" else None)})
    return {"args": args, "device_name": "NVIDIA H100 80GB HBM3", "results": results}


@pytest.mark.parametrize("config", ["bf16x8", "fp32x9"])
def test_plot_shows_every_row_of_the_frontier(tmp_path, config):
    pytest.importorskip("matplotlib")
    doc = _frontier_doc(config)
    numbered, failed = tables.plot_rows(doc)
    names = [r["row"] for r in doc["results"]]
    # Every row: a numbered point, or a line of the key saying why it has none.
    assert [r["row"] for _, r in numbered] + [n for n, _ in failed] == [
        n for n in names if n not in ("megatron-offload", "thunder-offload")] + [
        "megatron-offload", "thunder-offload"]
    fig = tables.plot_figure(doc)
    ax_all, ax_near, ax_key = fig.axes[:3]
    assert len(ax_all.collections) == len(numbered)  # one scatter point per measured row
    key = "\n".join(t.get_text() for t in ax_key.texts)
    for i, r in numbered:
        assert f"{i:>2}  {r['row']}" in key
    assert "\n12  offload-mlir:checkpoint=1  (fallback, untransformed)\n" in key
    assert ("\n  megatron-offload: failed\n      cannot run here, for a reason told at length"
            in key)
    legend = [t.get_text() for t in ax_key.get_legend().get_texts()]
    assert legend == [k for k, _ in tables.PLOT_KINDS]
    dtype = peer_rows.CONFIGS[config]["dtype"]
    assert fig._suptitle.get_text().startswith(f"{config} (")
    assert dtype in fig._suptitle.get_text()
    # The same through --plot-from, as a GPU run's JSON is drawn here.
    path = tmp_path / f"{config}.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["--plot-from", str(path)]) == 0
    assert path.with_suffix(".png").stat().st_size > 10_000
    assert "| megatron-offload | failed:" in path.with_suffix(".md").read_text()
