"""ir_plan.read_step on the pipeline's output: what the bridge reads back.

Needs only offload-opt (skips without it). The step saves q, k and v, three
views of one fused projection, so the pipeline moves them as one copy (one
storage, one copy): forward returns one host value instead of three, backward
has one saved argument, and the views it re-applies are marked as rebuilt.
"""

import subprocess

from offload_mlir.ir_plan import read_step

QKV_STEP = """\
func.func @forward(%x: tensor<4x8xf32> {trace.name = "x"}, %w: tensor<8x24xf32> {trace.name = "w"})
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %qkv = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  %q = trace.view "aten.slice.Tensor"(%qkv) {node = "q"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %k = trace.view "aten.slice.Tensor"(%qkv) {node = "k"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %v = trace.view "aten.slice.Tensor"(%qkv) {node = "v"} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %s = trace.op "aten.add.Tensor"(%q, %k) {node = "s"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = trace.op "aten.mul.Tensor"(%s, %v) {node = "o"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o, %q, %k, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @backward(%q: tensor<4x8xf32> {trace.name = "q"}, %k: tensor<4x8xf32> {trace.name = "k"},
                    %v: tensor<4x8xf32> {trace.name = "v"}, %g: tensor<4x8xf32> {trace.name = "tangents_1"})
    -> tensor<4x8xf32> {
  %a = trace.op "aten.mul.Tensor"(%g, %v) {node = "a"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = trace.op "aten.mul.Tensor"(%a, %q) {node = "b"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = trace.op "aten.mul.Tensor"(%b, %k) {node = "c"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}
"""


def test_shared_copy_reads_back(offload_opt, tmp_path):
    src = tmp_path / "qkv.mlir"
    src.write_text(QKV_STEP)
    out = subprocess.run(
        [offload_opt, str(src), "--offload-activations=plan=all min-bytes=0 schedule=true"],
        check=True, capture_output=True, text=True).stdout
    functions = read_step(out)
    fw, bw = functions["forward"], functions["backward"]
    # One saved slot, the first member's; the others left the interface.
    ret = next(op for op in fw.ops if op.kind == "return")
    assert len(ret.operands) == 2
    assert list(bw.arg_names.values()) == ["q", "tangents_1"]
    assert bw.host_args == {"q"}
    starts = [op for op in fw.ops if op.kind == "offload_start"]
    assert len(starts) == 1
    # Backward: one load, then each view, marked, right before its consumer.
    kinds = [(op.kind, op.node, op.rebuilt) for op in bw.ops if op.kind != "wait"]
    assert kinds == [
        ("load_start", None, False),
        ("trace", "v", True), ("trace", "a", False),
        ("trace", "q", True), ("trace", "b", False),
        ("trace", "k", True), ("trace", "c", False),
        ("return", None, False),
    ]
