"""The table of python/benchmarks/copy_interference.py (its rounds need
CUDA and run on the GPU machine; their arithmetic is test_calibrate's)."""

from offload_mlir import calibrate


from benchmarks import copy_interference as ci  # noqa: E402


def test_table_row_gives_each_direction_and_flags_host_paced_loads():
    rounds = calibrate.CopyRounds(
        bytes_per_direction=4 << 30,
        spans={"d2h": [0.0195], "h2d": [0.0194], "both_ways": [0.0210]},
        alone=[0.0600],
        beside={"d2h": [(0.06036, 0.0196)], "h2d": [(0.06096, 0.0194)],
                "both_ways": [(0.06128, 0.0419)]})
    result = {"load": "add, 64 MiB operands", "call_s": 48.7e-6, "host_call_s": 6.4e-6,
              "host_paced": False, "calls_per_round": 1231,
              "interference": rounds.interference(),
              "interference_by_direction": {d: rounds.interference(d)
                                            for d in calibrate.COPY_DIRECTIONS},
              "GBps": {"d2h": 55.04, "h2d": 55.36, "both_ways": 102.3}}
    assert ci.table_row(result) == (
        "| add, 64 MiB operands | 0.049 ms (0.006 ms) | 1231 | 0.0305 | 0.0184 | 0.0495 "
        "| 0.0305 | 55.0 / 55.4 / 102.3 |")
    result.update(host_paced=True, load="add, 8 MiB operands")
    assert ci.table_row(result).startswith("| add, 8 MiB operands (host-paced) |")
