"""What pyproject.toml cannot say statically about the wheel.

The wheel carries native libraries (offload_mlir/_lib, staged by
scripts/stage-python.sh): it is tagged for this platform (py3-none-<platform>),
not as pure Python. liboffload_torch_ops.so links LibTorch's C++ API, whose
ABI holds within one torch release series only, so the wheel requires the
series the library was built against (_lib/torch_version.txt): torch 2.11.x
for a build against 2.11.0, nothing tighter.
"""

import os

from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools older than 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_VERSION_FILE = os.path.join(HERE, "offload_mlir", "_lib", "torch_version.txt")


def torch_requirement() -> str:
    try:
        with open(TORCH_VERSION_FILE) as f:
            version = f.read().strip()
    except OSError:
        raise SystemExit(f"{TORCH_VERSION_FILE} is missing: build the libraries "
                         "(scripts/setup.sh) and stage them (scripts/stage-python.sh) first")
    major, minor = version.split("+")[0].split(".")[:2]
    return f"torch>={major}.{minor},<{major}.{int(minor) + 1}"


class NativeLibraries(Distribution):
    """Installs into platlib, as a distribution with native code."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(install_requires=[torch_requirement()], distclass=NativeLibraries,
      cmdclass={"bdist_wheel": PlatformWheel})
