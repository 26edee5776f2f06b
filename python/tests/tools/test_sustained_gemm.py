"""The spans python/benchmarks/sustained_gemm.py summarises (its load needs
CUDA and runs on the GPU machine)."""


from benchmarks import sustained_gemm as sg  # noqa: E402


def test_spans_end_at_the_load_and_none_is_empty():
    assert sg.spans(10) == [(0, 0.1), (0.1, 0.5), (0.5, 1), (1, 2), (2, 5), (5, 10)]
    assert sg.spans(20)[-2:] == [(5, 10), (10, 20)]
    assert sg.spans(3) == [(0, 0.1), (0.1, 0.5), (0.5, 1), (1, 2), (2, 3)]
    assert sg.spans(0.05) == [(0, 0.05)]
