"""ctypes binding of the C API (include/offload-c/Pipeline.h): runs the
`offload-activations` pipeline in-process, without MLIR installed.

    from offload_mlir import capi
    result = capi.run_pipeline(ir_text, "plan=hidden schedule=true report=json")
    result.ir, result.report

The library, liboffload_mlir_capi.so, links MLIR statically (docs/c-api.md).
It is looked for in $OFFLOAD_MLIR_LIB_DIR, then in this package's `_lib/`
folder (where a staged copy goes), then, in a repository checkout, in its
`build/lib/`.
Torch-free: importing this module loads nothing; the library is loaded on
first use.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass, field
from typing import List, Optional

__all__ = [
    "LIBRARY_NAME",
    "PipelineError",
    "PipelineResult",
    "library_path",
    "run_pipeline",
    "search_dirs",
    "version",
]

LIBRARY_NAME = "liboffload_mlir_capi.so"
ENV_VAR = "OFFLOAD_MLIR_LIB_DIR"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def repo_build_dir() -> Optional[str]:
    """The build folder of the repository this package sits in (its
    python/offload_mlir), or None for an installed package."""
    repo = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
    if os.path.basename(os.path.dirname(_PACKAGE_DIR)) != "python" or not os.path.isfile(
            os.path.join(repo, "CMakeLists.txt")):
        return None
    return os.path.join(repo, "build")


class PipelineError(RuntimeError):
    """The pipeline failed; the message holds every diagnostic, each located
    (`<input>:LINE:COL: error: ...`, `<options>:1:COL: error: ...`)."""


@dataclass
class PipelineResult:
    """What the pipeline made of a module: the IR offload-opt would print and
    the report (empty unless report=text|json). `diagnostics` holds warnings
    and remarks, if any."""

    ir: str
    report: str
    diagnostics: str = field(default="", repr=False)


def search_dirs() -> List[str]:
    """Where the library is looked for, in order."""
    dirs = []
    env = os.environ.get(ENV_VAR)
    if env:
        dirs.append(env)
    dirs.append(os.path.join(_PACKAGE_DIR, "_lib"))
    build = repo_build_dir()
    if build:
        dirs.append(os.path.join(build, "lib"))
    return dirs


def library_path() -> str:
    """The path of the library that would be loaded; FileNotFoundError with
    every place looked at if there is none."""
    dirs = search_dirs()
    for directory in dirs:
        candidate = os.path.join(directory, LIBRARY_NAME)
        if os.path.isfile(candidate):
            return candidate
    looked = "\n".join(f"  {os.path.join(d, LIBRARY_NAME)}" for d in dirs)
    raise FileNotFoundError(
        f"{LIBRARY_NAME} not found; looked in:\n{looked}\n"
        f"Build it (ninja -C build OffloadMLIRCAPI), or set {ENV_VAR} to the "
        "folder that holds it."
    )


_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()


def _load() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            # RTLD_LOCAL (the default): nothing of it joins the global scope.
            lib = ctypes.CDLL(library_path())
            char_pp = ctypes.POINTER(ctypes.c_void_p)
            lib.offload_mlir_run_pipeline.argtypes = [
                ctypes.c_char_p, ctypes.c_char_p, char_pp, char_pp, char_pp]
            lib.offload_mlir_run_pipeline.restype = ctypes.c_int
            lib.offload_mlir_free.argtypes = [ctypes.c_void_p]
            lib.offload_mlir_free.restype = None
            lib.offload_mlir_version.argtypes = []
            lib.offload_mlir_version.restype = ctypes.c_char_p
            _lib = lib
        return _lib


def _take(lib: ctypes.CDLL, pointer: ctypes.c_void_p) -> str:
    """The string at `pointer` (freed here); "" for NULL."""
    if not pointer.value:
        return ""
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", errors="replace")
    finally:
        lib.offload_mlir_free(pointer.value)


def run_pipeline(ir: str, options: str = "") -> PipelineResult:
    """Runs `offload-opt --offload-activations="<options>"` on the module text
    `ir` in-process. Raises PipelineError with the diagnostics on failure."""
    lib = _load()
    out_ir, out_report, out_error = (ctypes.c_void_p() for _ in range(3))
    rc = lib.offload_mlir_run_pipeline(
        ir.encode("utf-8"), (options or "").encode("utf-8"),
        ctypes.byref(out_ir), ctypes.byref(out_report), ctypes.byref(out_error))
    # Take (and free) all three before raising.
    text, report, diagnostics = (
        _take(lib, out_ir), _take(lib, out_report), _take(lib, out_error))
    if rc != 0:
        raise PipelineError(
            diagnostics.rstrip("\n") or f"offload-activations failed (code {rc})")
    return PipelineResult(ir=text, report=report, diagnostics=diagnostics)


def version() -> str:
    """The library's version, e.g. "offload-mlir 0.1.0 (MLIR 22.1.8)"."""
    return _load().offload_mlir_version().decode("utf-8")
