"""The replay of python/benchmarks/peak_snapshot.py (the recording itself
needs CUDA and runs on the GPU machine)."""


from benchmarks import peak_snapshot as ps  # noqa: E402


def _alloc(addr, size, line=1):
    return {"action": "alloc", "addr": addr, "size": size,
            "frames": [{"filename": "/tmp/torchinductor_root/ab/cabc.py", "line": line,
                        "name": "call"}]}


def test_peak_is_where_the_live_bytes_are_highest_and_names_what_is_live():
    trace = [_alloc(1, 100, 10), _alloc(2, 50, 11),
             {"action": "free_requested", "addr": 1, "size": 100},
             {"action": "free_completed", "addr": 1, "size": 100},
             _alloc(3, 120, 12),  # 170 live: the peak
             {"action": "free_completed", "addr": 2, "size": 50},
             _alloc(4, 40, 13)]  # 160
    found = ps.peak_of_trace(trace, top=5)
    assert (found["peak_bytes"], found["peak_index"], found["events"]) == (170, 4, 7)
    assert [e["addr"] for e in found["live_at_peak"]] == [3, 2]  # largest first


def test_a_trace_without_completions_frees_at_the_request():
    trace = [_alloc(1, 100), {"action": "free_requested", "addr": 1, "size": 100},
             _alloc(2, 80)]
    assert ps.peak_of_trace(trace)["peak_bytes"] == 100


def test_frames_name_generated_code_first():
    frames = [{"filename": "/usr/lib/python3/site-packages/torch/autograd/graph.py",
               "line": 3, "name": "backward"},
              {"filename": "/tmp/torchinductor_root/ab/cabc.py", "line": 7, "name": "call"}]
    label = ps.frame_label(frames)
    assert label["where"] == "cabc.py:7 call"
    assert ps.frame_label([])["where"] == "no Python frame"


def test_live_allocations_are_summed_by_the_line_that_made_them():
    trace = [_alloc(1, 100, 10), _alloc(2, 30, 11), _alloc(3, 40, 10)]
    groups = ps.live_by_where(ps.peak_of_trace(trace, top=1)["all_live_at_peak"])
    assert [(g["where"], g["bytes"], g["count"]) for g in groups] == [
        ("cabc.py:10 call", 140, 2), ("cabc.py:11 call", 30, 1)]
