"""The trace arithmetic of python/benchmarks/kernel_interference.py (the
profiling itself needs CUDA and runs on the H100)."""

import pytest


from benchmarks import kernel_interference as ki  # noqa: E402


def test_kernel_classes_and_names():
    assert ki.kernel_class("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == "gemm"
    assert ki.kernel_class("void pytorch_flash::flash_bwd_dq_dk_dv_loop") == "attention"
    assert ki.kernel_class("triton_poi_fused_add_mul_3") == "other"
    # Inductor numbers its kernels per graph: the same kernel of two graphs
    # may differ only in that number.
    assert ki.matching_name("triton_poi_fused_add_12") == "triton_poi_fused_add"
    assert ki.matching_name("sm90_xmma_gemm_bf16") == "sm90_xmma_gemm_bf16"


def test_kept_trace_names_are_distinct_and_plain():
    # Two rows of one name keep two files; a row's options become '_'.
    assert ki.trace_file_name(0, "compile") == "a-compile.json.gz"
    assert ki.trace_file_name(1, "compile") == "b-compile.json.gz"
    assert (ki.trace_file_name(1, "offload-mlir:budget=15800000000:load_lead=3.0")
            == "b-offload-mlir_budget_15800000000_load_lead_3.0.json.gz")


def test_compare_aligns_kernels_and_charges_copy_overlap():
    # Base: a GEMM, a fused kernel, attention. Other: the same three, the
    # fused kernel 2 us longer while a copy ran beside it, one extra kernel
    # (a fill), and a 2 us gap with a copy running.
    base = ([(0, 10, "nvjet_a"), (10, 20, "triton_poi_x_1"), (20, 30, "flash_fwd")], [],
            [None] * 3, [])
    # flash_fwd's launch returned at 24, after a stream wait at 23: 1 us of
    # its 2 us gap was the host's, the other at the wait.
    other = ([(0, 10, "nvjet_a"), (10, 22, "triton_poi_x_3"), (22, 23, "fill"),
              (25, 35, "flash_fwd")], [(5, 15), (23, 25)], [None, None, 1.0, 24.0], [23.0])
    r = ki.compare(base, other)
    assert r["matched"] == 3 and r["kernels"] == [3, 4]
    gemm, other_class = r["classes"]["gemm"], r["classes"]["other"]
    assert gemm["added_us"] == 0 and gemm["overlap_us"] == 5
    assert other_class["added_us"] == 2 and other_class["overlap_us"] == 5
    assert other_class["added_under_copy_us"] == 2 and other_class["added_clear_us"] == 0
    assert r["unmatched_other"] == {"fill": [1, 1.0]} and r["unmatched_base"] == {}
    assert r["class_totals_us"]["other"] == [10, 13]
    assert r["span_us"] == [30, 35]
    # 2 us without a kernel, all of it with a copy running.
    assert r["idle_us"] == {"base": 0.0, "other": 2.0, "other_without_copy": 0.0}
    # The copy (23, 25) ended as flash_fwd started: its queued 1 us waited for it.
    assert r["idle_causes_us"]["other"] == {"host_late_us": 1.0, "queued_us": 1.0,
                                            "unknown_us": 0.0, "queued_at_stream_wait_us": 1.0,
                                            "queued_until_copy_end_us": 1.0}
    s = ki.summarize([r, r])
    assert s["other"]["added_per_copy_second"] == pytest.approx(0.4)
    assert s["other"]["all_added_us"] == 3 and s["span_added_us"] == 5
    assert s["idle_other_host_late_us"] == 1.0 and s["idle_base_queued_us"] == 0.0


def test_compare_splits_queued_idle_by_the_calls_before_it():
    base = ([(0, 10, "nvjet_a"), (10, 20, "flash_fwd")], [], [1.0, 2.0], [])
    # The other step's flash_fwd waited 3 us behind one stream wait; without
    # a fifth element (no calls traced) everything queued is "none".
    # It ended as an H2D copy did: a load's wait that stalled.
    other = ([(0, 10, "nvjet_a"), (13, 23, "flash_fwd")], [(2.0, 12.5, "H2D", 4096)],
             [1.0, 2.0], [1.5], [(1.5, "cudaStreamWaitEvent")])
    r = ki.compare(base, other)
    stall = "cudaStreamWaitEvent, until a H2D copy ended"
    assert r["queued_by_calls"] == {"base": {}, "other": {stall: [3.0, 1]}}
    assert r["copy_us"] == 10.5
    s = ki.summarize([r, r, ki.compare(base, other[:4])])
    assert s["queued_by_calls_other"] == {stall: [3.0, 1],
                                          "none, until a H2D copy ended": [0.0, 0]}


@pytest.mark.parametrize("rows, message", [
    ("compile", "takes two rows"),
    ("compile,eager", "compile and offload-mlir rows"),
    # A compile row's amb= is torch's process-wide budget: the offload-mlir
    # row would be profiled under it without saying so.
    ("compile:amb=0.7,offload-mlir", "applies to both rows"),
])
def test_rows_are_checked_as_paired_rows_before_any_cuda(rows, message, capsys):
    pytest.importorskip("torch")
    with pytest.raises(SystemExit) as e:
        ki.main(["--rows", rows])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "--rows" in err and "--paired" not in err
