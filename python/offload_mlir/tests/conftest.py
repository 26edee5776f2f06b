import os
import shutil
import sys

import pytest

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
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
