"""`python -m offload_mlir.calibrate`: the plumbing, on the CPU (--device cpu
--quick), the CUDA-unavailable error, the latency fit and the FLOP counts,
and that the compiler's profile loader accepts what it writes.

The GPU measurements themselves are not tested here (no GPU in CI); the
CPU run goes through the same code with a host memcpy for the link.
"""

import json
import math
import os
import subprocess
import sys

import pytest

from offload_mlir import calibrate, capi

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_REPO = os.path.dirname(_PYTHON_DIR)
TINY_BLOCK = os.path.join(_REPO, "test", "Examples", "tiny_block.mlir")

# The key the C++ loader learns in the same change as this tool; a library or
# offload-opt built before it rejects the key (expected until rebuilt).
NEW_KEY = "attention_TFLOPs"


def run_calibrate(*args, env=None, timeout=120):
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PYTHON_DIR, environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "offload_mlir.calibrate", *args],
        capture_output=True, text=True, env=environ, timeout=timeout, cwd=_PYTHON_DIR)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """(profile path, completed process) of one quick CPU run."""
    out = tmp_path_factory.mktemp("calibrate") / "profile.json"
    proc = run_calibrate("--device", "cpu", "--quick", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_profile_has_only_loader_keys(cpu_run):
    path, _ = cpu_run
    profile = json.loads(path.read_text())
    assert set(profile) <= set(calibrate.PROFILE_KEYS), set(profile) - set(calibrate.PROFILE_KEYS)
    assert isinstance(profile["name"], str) and profile["name"]
    # The CPU run says what it is in the name, which the compiler's report shows.
    assert "CPU" in profile["name"] and "not a GPU" in profile["name"]
    numbers = {k: v for k, v in profile.items() if k != "name"}
    for key, value in numbers.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), key
        assert math.isfinite(value) and value > 0, (key, value)
    # Everything this run can measure on a CPU was measured; f8 and attention
    # only if torch supports them there, and then the details say why not.
    for key in ("d2h_GBps", "h2d_GBps", "both_ways_GBps", "copy_latency_us",
                "bf16_TFLOPs", "f16_TFLOPs", "f32_TFLOPs", "f64_TFLOPs",
                "hbm_GBps", "op_overhead_us"):
        assert key in profile, key


def test_details_file_beside_profile(cpu_run):
    path, _ = cpu_run
    details_path = path.with_name("profile.details.json")
    assert details_path.exists()
    details = json.loads(details_path.read_text())
    profile = json.loads(path.read_text())
    assert details["profile"] == profile
    assert details["environment"]["torch"]
    assert details["environment"]["device"]["type"] == "cpu"
    assert "not a device profile" in details["note"]
    assert details["date_utc"] and details["mode"] == "quick"
    assert "matmul_allow_tf32" in details["environment"]
    measured = details["measurements"]
    for label in ("link", "copy_latency", "gemm_bf16", "gemm_f32", "hbm", "op_overhead"):
        assert label in measured, label
    # Every key that is neither written nor measured is explained.
    for key in ("f8_TFLOPs", "attention_TFLOPs"):
        assert key in profile or key in details["skipped"], key


def test_table_on_stderr_json_only_on_stdout(cpu_run):
    _, proc = cpu_run
    assert proc.stdout == ""  # -o given: nothing on stdout
    assert "d2h_GBps" in proc.stderr and "wrote" in proc.stderr


def test_stdout_when_no_output(tmp_path):
    proc = run_calibrate("--device", "cpu", "--quick", "--name", "plumbing")
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)
    assert profile["name"].startswith("plumbing")
    assert "CPU" in profile["name"]


def test_cuda_unavailable_is_an_error():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = run_calibrate("--device", "cuda", "--quick", env=env)
    assert proc.returncode != 0
    assert "CUDA is not available" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_details_path_for():
    assert calibrate.details_path_for("a/h100.json") == "a/h100.details.json"
    assert calibrate.details_path_for("profile") == "profile.details.json"


def test_latency_fit_recovers_line():
    latency, bandwidth = 8e-6, 50e9
    sizes = [4096 * 4**i for i in range(8)]
    times = [latency + s / bandwidth for s in sizes]
    intercept, slope = calibrate.fit_latency(sizes, times)
    assert intercept == pytest.approx(latency, rel=1e-6)
    assert 1 / slope == pytest.approx(bandwidth, rel=1e-6)


def test_attention_flops_as_the_model_counts():
    # forward 4*B*H*Sq*Sk*D, backward 2.5x, causal halves both.
    fwd, bwd = calibrate.attention_flops(8, 32, 1024, 1024, 128, causal=False)
    assert fwd == 4 * 8 * 32 * 1024 * 1024 * 128
    assert bwd == 2.5 * fwd
    cfwd, cbwd = calibrate.attention_flops(8, 32, 1024, 1024, 128, causal=True)
    assert (cfwd, cbwd) == (fwd / 2, bwd / 2)


def _accepted_or_xfail(error_text):
    """A loader that predates attention_TFLOPs rejects it: reported as an
    expected failure naming the fix, not hidden by leaving the key out."""
    if f"unknown key '{NEW_KEY}'" in error_text:
        pytest.xfail(f"the compiler was built before the loader accepted "
                     f"'{NEW_KEY}': rebuild it (ninja -C build) — {error_text.strip()}")
    pytest.fail(error_text)


def test_profile_accepted_by_compiler_capi(cpu_run):
    try:
        capi.library_path()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    path, _ = cpu_run
    profile = json.loads(path.read_text())
    with open(TINY_BLOCK) as f:
        ir = f.read()
    try:
        result = capi.run_pipeline(ir, f"plan=hidden device-profile={path} report=json")
    except capi.PipelineError as error:
        _accepted_or_xfail(str(error))
    report = json.loads(result.report)
    assert report["steps"][0]["predicted"]["device"] == profile["name"]


def test_profile_accepted_by_offload_opt(cpu_run, offload_opt, tmp_path):
    path, _ = cpu_run
    profile = json.loads(path.read_text())
    proc = subprocess.run(
        [offload_opt, TINY_BLOCK,
         f"--offload-activations=plan=hidden device-profile={path} report=json report-file=-",
         "-o", str(tmp_path / "out.mlir")],
        capture_output=True, text=True)
    if proc.returncode != 0:
        _accepted_or_xfail(proc.stderr)
    report = json.loads(proc.stdout)
    assert report["steps"][0]["predicted"]["device"] == profile["name"]


def test_every_profile_key_is_one_the_compiler_reads(offload_opt, tmp_path):
    # The GPU-only measurements (link under compute, copy interference) never
    # run here; their keys must still be ones the loader takes.
    profile = {k: 1.0 for k in calibrate.PROFILE_KEYS if k != "name"}
    profile.update(name="all-keys", copy_interference=0.5)
    path = tmp_path / "all-keys.json"
    path.write_text(json.dumps(profile))
    proc = subprocess.run(
        [offload_opt, TINY_BLOCK,
         f"--offload-activations=plan=all min-bytes=1024 device-profile={path} report=json "
         "report-file=-",
         "-o", os.devnull], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    predicted = json.loads(proc.stdout)["steps"][0]["predicted"]
    assert predicted["device"] == "all-keys"
    assert predicted["interference_seconds_after"] > 0


class FakeGpu:
    """A GPU whose device time is `ms`, which the fake products advance, and
    whose events read it; `calls` counts the products run."""

    is_cuda = True

    def __init__(self):
        self.ms, self.calls = 0.0, 0

    def event(self):
        gpu = self

        class Event:
            def record(self):
                self.at = gpu.ms

            def synchronize(self):
                pass

            def elapsed_time(self, later):
                return later.at - self.at

        return Event()

    def _time_calls(self, fn, count, issue_s):
        return [2e-3] * count  # what a call takes with the clocks up


def test_sustain_queues_calls_for_the_time_asked():
    """Before the attention's samples, `sustain` queues it back to back for
    about the time asked (one timed call after a first one sets the count),
    and on the CPU queues nothing: there are no clocks to settle there."""
    gpu = FakeGpu()

    def product():  # 2 ms of device time each
        gpu.ms += 2.0
        gpu.calls += 1

    assert calibrate.sustain(gpu, product, 0.1) == 50
    assert gpu.calls == 52  # a first call, the timed one, then the 50 queued
    assert calibrate.sustain(gpu, product, 0.0) == 0

    class Cpu:
        is_cuda = False

    assert calibrate.sustain(Cpu(), product, 1.0) == 0
    assert gpu.calls == 52


def test_time_sustained_keeps_the_windows_after_the_clocks_settle():
    """GEMMs are timed under sustained load: calls back to back for the time
    asked, an event every ~10 ms of calls, and only the second half's
    windows kept. Here the device slows after its first 40 ms, as a GPU at
    its power limit does: the samples are the slow rate."""
    gpu = FakeGpu()

    def product():
        gpu.ms += 2.0 if gpu.ms < 40 else 2.2
        gpu.calls += 1

    samples = calibrate.Device.time_sustained(gpu, product, 0.2)
    assert len(samples) == 10  # 20 windows of 5 calls, the second half
    assert samples == pytest.approx([2.2e-3] * 10)
    assert gpu.calls == 1 + 100


def test_copy_interference_is_kernel_time_added_per_second_of_copy():
    """The median over rounds with copies of (kernel time - the median round
    without) / copy time, over every direction or one; never below 0, as a
    copy cannot speed kernels up."""
    rounds = calibrate.CopyRounds(
        bytes_per_direction=4 << 30,
        spans={"d2h": [0.02], "h2d": [0.02], "both_ways": [0.025]},
        alone=[0.100, 0.101, 0.099],
        beside={"d2h": [(0.1004, 0.020)], "h2d": [(0.1002, 0.020)],
                "both_ways": [(0.1010, 0.040)]})
    # (0.0004/0.02, 0.0002/0.02, 0.0010/0.04) = (0.02, 0.01, 0.025)
    assert rounds.interference() == pytest.approx(0.02)
    assert rounds.interference("h2d") == pytest.approx(0.01)
    assert rounds.interference("both_ways") == pytest.approx(0.025)
    faster = calibrate.CopyRounds(bytes_per_direction=0, spans={}, alone=[0.1],
                                  beside={"d2h": [(0.099, 0.02)]})
    assert faster.interference() == 0.0
    assert calibrate.CopyRounds(bytes_per_direction=0, spans={}, alone=[0.1],
                                beside={}).interference() == 0.0


def test_copy_rate_is_a_rounds_bytes_over_its_median_span():
    rounds = calibrate.CopyRounds(
        bytes_per_direction=1_000_000_000,
        spans={"d2h": [0.02, 0.025, 0.018], "h2d": [0.02], "both_ways": [0.025]},
        alone=[0.1], beside={})
    assert rounds.rate_GBps("d2h") == pytest.approx(50.0)
    assert rounds.rate_GBps("h2d") == pytest.approx(50.0)
    assert rounds.rate_GBps("both_ways") == pytest.approx(80.0)  # both directions' bytes
