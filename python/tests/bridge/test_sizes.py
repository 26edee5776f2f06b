"""Sizes agree across the project (issue 8, item 5): for every dtype the
exporter maps to an MLIR element type, the bytes offload-opt counts for a
tensor of that type (offload::getStorageBytes, through the report) are the
bytes PyTorch stores, which the exporter's summary counts. i1 (torch.bool)
is one byte per element, not one bit."""

import json
import subprocess

import pytest

torch = pytest.importorskip("torch")

from offload_mlir import fx_export  # noqa: E402

N = 256

STEP = """\
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<{n}x{elem}>)
    attributes {{offload.backward = @backward, offload.num_outputs = 1 : i64}} {{
  %s = trace.op "aten.empty.memory_format"() {{args = [[{n} : i64]]}} : () -> tensor<{n}x{elem}>
  return %x, %s : tensor<4xf32>, tensor<{n}x{elem}>
}}
func.func @backward(%s: tensor<{n}x{elem}>) {{
  return
}}
"""


def _pipeline_bytes(offload_opt, tmp_path, elem):
    path = tmp_path / "step.mlir"
    path.write_text(STEP.format(n=N, elem=elem))
    proc = subprocess.run([offload_opt, str(path), "--offload-activations=min-bytes=0 report=json report-file=-",
                           "-o", "/dev/null"], check=True, capture_output=True, text=True)
    (entry,) = json.loads(proc.stdout)["steps"][0]["saved"]
    return entry["bytes"]


@pytest.mark.parametrize("dtype", sorted(fx_export._DTYPES, key=str), ids=str)
def test_pipeline_counts_torch_storage(offload_opt, tmp_path, dtype):
    elem = fx_export.mlir_element_type(dtype)
    torch_bytes = N * torch.empty((), dtype=dtype).element_size()
    assert fx_export._tensor_bytes(torch.empty(N, dtype=dtype, device="meta")) == torch_bytes
    assert _pipeline_bytes(offload_opt, tmp_path, elem) == torch_bytes


def test_bool_is_a_byte_per_element(offload_opt, tmp_path):
    assert fx_export.mlir_element_type(torch.bool) == "i1"
    assert _pipeline_bytes(offload_opt, tmp_path, "i1") == N
