import os
import shutil
import sys

import pytest

# Each pytest-xdist worker compiles into an Inductor cache of its own (one
# per checkout and worker, kept across runs): workers sharing one cache can
# load a kernel library another is still writing.
if os.environ.get("PYTEST_XDIST_WORKER") and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    import getpass
    import hashlib
    import tempfile

    _checkout = hashlib.sha256(os.path.abspath(__file__).encode()).hexdigest()[:12]
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
        tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}",
        f"{_checkout}-{os.environ['PYTEST_XDIST_WORKER']}")

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REPO = os.path.dirname(_PYTHON_DIR)
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)


@pytest.fixture(scope="session")
def offload_opt():
    """Path of offload-opt ($OFFLOAD_OPT, build/bin, or PATH); skips if none."""
    for cand in (
        os.environ.get("OFFLOAD_OPT"),
        os.path.join(_REPO, "build", "bin", "offload-opt"),
        shutil.which("offload-opt"),
    ):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    pytest.skip("offload-opt not built")


@pytest.fixture(scope="session")
def offload_mlir():
    """The package with the bridge's libraries loaded (the copy ops and the
    pipeline's C API); skips without them, except under CI."""
    try:
        import offload_mlir
        from offload_mlir import capi, ops

        ops.load_library()
        capi.version()
    except (OSError, FileNotFoundError, ImportError) as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"bridge libraries not built: {e}")
    return offload_mlir


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: an end-to-end or property test that takes minutes on two cores; "
                   "scripts/test.sh leaves these out unless given --all (CI runs them)")


# The slow tests, by file (every test in it), by file::test (every case of
# it) or by file::test[case]: end-to-end training in subprocesses, timed fuzz and property runs, the
# wheel build. Marked here, in one place, rather than in each file.
SLOW = (
    "tools/test_peers.py::test_cpu_rows_train_and_compare",
    "tools/test_peers.py::test_per_layer_rows_train_with_loads_started_in_the_layer_after",
    "tools/test_peers.py::test_optimizer_runs_measure_forward_and_backward_beside_the_prediction",
    "tools/test_peers.py::test_paired_rows_interleave_in_one_process",
    "tools/test_peers.py::test_paired_repeat_pools_processes",
    "tools/test_peers.py::test_frontier_rows_train_on_cpu",
    "tools/test_peers.py::test_peer_rows_run_or_say_why",
    "tools/test_fuzz_steps.py::test_bounded_run",
    "tools/test_distributed.py",
    "tools/test_csan_plan.py",
    "bridge/test_backend.py::test_delayed_copies_and_poisoned_loads_stay_bit_identical",
    # End-to-end compiles of 40 s and more each on two cores; the inner loop
    # keeps the MLP's and the options' end-to-end runs.
    "bridge/test_torch_ops.py::test_compiled_offload_and_load_match_eager_and_call_the_ops",
    "bridge/test_backend.py::test_inductor_config_reaches_the_generated_code",
    "bridge/test_backend.py::test_bit_identical_with_a_recompute_budget",
    "bridge/test_backend.py::test_recompute_budget_option_and_recomputed_ops_in_the_report",
    "bridge/test_backend.py::test_bit_identical_to_inductor_and_bytes_move[lm]",
    "bridge/test_backend.py::test_bit_identical_to_inductor_and_bytes_move[conv]",
    "bridge/test_backend.py::test_generated_code_issues_copies_where_the_ir_put_them",
    "bridge/test_options.py::test_torch_compile_mode_is_applied_or_refused",
    "bridge/test_prefetch.py::test_per_layer_compile_offloads_each_layers_input_when_donated",
    "bridge/test_prefetch.py::test_per_layer_compile_starts_loads_in_the_graph_before_with_compiles_gradients",
    "bridge/test_backend.py::test_stress_run_catches_a_missing_wait",
    "bridge/test_aot_cache.py",
    "bridge/test_checkpoint.py",
    "bridge/test_dynamic.py",
    "bridge/test_replan.py::test_a_far_length_is_planned_again_within_the_bound",
    "bridge/test_replan.py::test_a_replan_runs_only_the_calls_its_guards_admit",
    "bridge/test_joint_plan.py",
    "bridge/test_wheel.py",
)


def pytest_collection_modifyitems(config, items):
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        rel = os.path.relpath(str(item.path), tests_dir).replace(os.sep, "/")
        name = item.originalname if hasattr(item, "originalname") else item.name
        if rel in SLOW or f"{rel}::{name}" in SLOW or f"{rel}::{item.name}" in SLOW:
            item.add_marker(pytest.mark.slow)
