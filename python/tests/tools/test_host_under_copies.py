"""python/benchmarks/host_under_copies.py on a machine without CUDA (its
measurement runs on the GPU machine)."""

import pytest

torch = pytest.importorskip("torch")

from benchmarks import host_under_copies  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_without_cuda_it_says_so_and_exits_2(capsys):
    assert host_under_copies.main([]) == 2
    assert "needs CUDA" in capsys.readouterr().err
