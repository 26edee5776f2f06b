"""The C API (liboffload_mlir_capi.so) through offload_mlir.capi: the same
output as offload-opt, the report returned instead of printed, located errors,
concurrent calls, and no run-time dependency on libMLIR/libLLVM.

Without the library these tests skip, except under CI=true, where they fail.
"""

import json
import os
import re
import subprocess
import threading

import pytest

from offload_mlir import capi

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TINY_BLOCK = os.path.join(_REPO, "test", "Examples", "tiny_block.mlir")

# A training step whose saved value's type differs from backward's argument:
# the contract check rejects it while parsing.
CONTRACT_VIOLATION = """\
func.func @forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<8xf32>
  return %0, %0 : tensor<8xf32>, tensor<8xf32>
}
func.func @backward(%s: tensor<4xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  return %g : tensor<8xf32>
}
"""


def require_library():
    """The library's path; without it, the test skips, or fails under CI=true
    (called from each test rather than a fixture, so that it is reported as a
    failure, not an error)."""
    try:
        return capi.library_path()
    except FileNotFoundError as error:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(error))
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def tiny_block():
    with open(TINY_BLOCK) as f:
        return f.read()


def run_offload_opt(offload_opt, path, options, tmp_path):
    """(IR, report) as offload-opt prints them: the IR to -o, the report to
    stderr (its default: never mixed with the IR)."""
    out = tmp_path / "out.mlir"
    proc = subprocess.run(
        [offload_opt, str(path), f"--offload-activations={options}", "-o", str(out)],
        check=True, capture_output=True, text=True)
    assert proc.stdout == ""
    return out.read_text(), proc.stderr


@pytest.mark.parametrize("options", [
    "",
    "min-bytes=4096 schedule=true",
    "plan=hidden min-bytes=1024 schedule=true report=text",
    "budget=0.98 min-bytes=1024 schedule=true report=json",
])
def test_same_output_as_offload_opt(offload_opt, tiny_block, options,
                                    tmp_path, capfd):
    require_library()
    capfd.readouterr()
    result = capi.run_pipeline(tiny_block, options)
    captured = capfd.readouterr()
    expected_ir, expected_report = run_offload_opt(
        offload_opt, TINY_BLOCK, options, tmp_path)
    assert result.ir == expected_ir
    assert result.report == expected_report
    if options:  # the default (plan=hidden, 1 MiB) keeps the tiny block's values
        assert "offload.offload_to_cpu" in result.ir or "offload.offload_start" in result.ir
    # Nothing of it reached the process's stdout or stderr.
    assert captured.out == "" and captured.err == ""


def test_report_returned_not_printed(tiny_block, capfd):
    require_library()
    capfd.readouterr()
    text = capi.run_pipeline(tiny_block, "plan=all min-bytes=1024 report=text")
    json_result = capi.run_pipeline(tiny_block, "plan=all min-bytes=1024 report=json")
    none = capi.run_pipeline(tiny_block, "plan=all min-bytes=1024")
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""

    assert text.report.startswith("offload report: @forward -> @backward")
    steps = json.loads(json_result.report)["steps"]
    assert steps[0]["forward"] == "forward" and steps[0]["offloaded_values"] > 0
    assert none.report == ""
    for result in (text, json_result):
        assert "offload report" not in result.ir and '"steps"' not in result.ir
        assert result.ir == none.ir


def test_report_file_is_written(tiny_block, tmp_path, capfd):
    require_library()
    path = tmp_path / "report.json"
    result = capi.run_pipeline(tiny_block, f"report=json report-file={path}")
    assert result.report == ""
    assert '"steps"' in path.read_text()
    assert capfd.readouterr().out == ""


def test_syntax_error(capfd):
    require_library()
    with pytest.raises(capi.PipelineError) as info:
        capi.run_pipeline("func.func @f(%x: tensor<4xf32>) {\n  return %y\n}\n")
    assert re.search(r"<input>:2:\d+: error: ", str(info.value)), str(info.value)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("options, column, message", [
    ("min-bytes=abc", 1, "option 'min-bytes': 'abc' is not a byte size"),
    ("report=text frobnicate=1", 13, "no such option 'frobnicate'"),
    ("schedule=maybe", 1, "is not a boolean"),
    ("max-slowdown=fast", 1, "is not a number"),
    # Enum-valued options: the values they take, not a pass failure.
    ("report=xml", 1, "option 'report': 'xml' is not one of none, text, json"),
    ("min-bytes=0 plan=zzz", 13, "option 'plan': 'zzz' is not one of all, hidden, budget"),
    ("release=later", 1, "option 'release': 'later' is not one of after-copy, at-wait"),
    # Byte sizes and budgets are parsed with the option, even where no pass
    # reads it.
    ("max-inflight-bytes=lots", 1, "option 'max-inflight-bytes': 'lots' is not a byte size"),
    ("min-bytes=0 budget=lots", 13, "option 'budget': 'lots' is not a byte size"),
])
def test_invalid_option_string(tiny_block, options, column, message, capfd):
    require_library()
    with pytest.raises(capi.PipelineError) as info:
        capi.run_pipeline(tiny_block, options)
    text = str(info.value)
    assert f"<options>:1:{column}: error: " in text, text
    assert message in text, text
    assert capfd.readouterr().err == ""


def test_contract_violation(capfd):
    require_library()
    with pytest.raises(capi.PipelineError) as info:
        capi.run_pipeline(CONTRACT_VIOLATION, "report=text")
    text = str(info.value)
    assert "<input>:1:1: error: saved result #1 has type 'tensor<8xf32>' but backward " \
           "argument #0 of @backward has type 'tensor<4xf32>'" in text, text
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


def test_concurrent_calls(tiny_block):
    require_library()
    expected = {opts: capi.run_pipeline(tiny_block, opts)
                for opts in ("report=text", "plan=hidden schedule=true report=json")}
    errors, results = [], []

    def work(options):
        try:
            for _ in range(3):
                results.append((options, capi.run_pipeline(tiny_block, options)))
                with pytest.raises(capi.PipelineError):
                    capi.run_pipeline(CONTRACT_VIOLATION, options)
        except BaseException as error:  # reported below, on the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(opts,))
               for opts in list(expected) * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(results) == 12
    for options, result in results:
        assert result.ir == expected[options].ir
        assert result.report == expected[options].report


def test_version():
    require_library()
    assert re.match(r"offload-mlir \d+\.\d+\.\d+ \(MLIR 22\.", capi.version())


# System libraries, the only ones the library may need at run time.
_SYSTEM_LIBS = re.compile(r"(libc|libm|libdl|libpthread|librt)\.so\.\d+$|ld-linux[-\w.]*\.so\.\d+$")


def test_no_mlir_or_llvm_at_run_time():
    lib_path = require_library()
    try:
        dynamic = subprocess.run(["readelf", "-d", lib_path], check=True,
                                 capture_output=True, text=True).stdout
        symbols = subprocess.run(["nm", "-D", "--defined-only", lib_path], check=True,
                                 capture_output=True, text=True).stdout
    except FileNotFoundError:
        pytest.skip("readelf/nm (binutils) not installed")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert "libc.so.6" in needed, dynamic
    assert all(_SYSTEM_LIBS.match(name) for name in needed), needed
    exported = sorted(line.split()[-1] for line in symbols.splitlines() if line.strip())
    assert exported == ["offload_mlir_free", "offload_mlir_run_pipeline",
                        "offload_mlir_version"], exported


def test_missing_library_message(monkeypatch, tmp_path):
    monkeypatch.setenv(capi.ENV_VAR, str(tmp_path))
    # A package outside a repository checkout (installed) looks in no build folder.
    monkeypatch.setattr(capi, "_PACKAGE_DIR", str(tmp_path / "site-packages" / "offload_mlir"))
    assert capi.repo_build_dir() is None
    with pytest.raises(FileNotFoundError) as info:
        capi.library_path()
    text = str(info.value)
    assert str(tmp_path / capi.LIBRARY_NAME) in text
    assert os.path.join(capi._PACKAGE_DIR, "_lib", capi.LIBRARY_NAME) in text
    assert capi.search_dirs() == [str(tmp_path), os.path.join(capi._PACKAGE_DIR, "_lib")]
    assert capi.ENV_VAR in text
