import os
import shutil
import sys

import pytest

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
        "markers", "slow: an end-to-end or property test that takes minutes on two cores")
