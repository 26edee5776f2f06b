"""benchmarks.host_overhead's rows, on the CPU (the timing needs CUDA)."""

import pytest

from benchmarks import host_overhead


@pytest.mark.usefixtures("offload_mlir")
def test_each_row_is_a_backend_the_bridge_accepts():
    import offload_mlir

    for name, options in host_overhead.ROWS.items():
        if options is not None:
            assert callable(offload_mlir.backend(**options)), name
    assert host_overhead.ROWS["compile"] is None


def test_an_unknown_row_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        host_overhead.main(["--rows", "compile,fastest"])
    assert exit_info.value.code == 2
    assert "unknown row 'fastest'" in capsys.readouterr().err
