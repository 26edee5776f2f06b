// Sizes count the bytes a value really occupies: i1 and other sub-byte
// element types take one byte per element (as PyTorch's bool and the LLVM
// lowering store them), the same in the selection, the report and the cost
// model's memory.
// RUN: offload-opt %s -offload-find-saved-activations | FileCheck %s
// RUN: offload-opt %s -offload-activations="plan=all min-bytes=1024 report=json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON

// 1024 elements of i1 or i4 are 1024 bytes, not 128 or 512: at min-bytes=1024
// both are offloaded. 512 of f8E4M3FN are 512 bytes and stay.
// CHECK-LABEL: func @sizes_forward
// CHECK-SAME: tensor<1024xi1> {offload.selected}
// CHECK-SAME: tensor<1024xi4> {offload.selected}
// CHECK-SAME: tensor<512xf8E4M3FN> {offload.kept = "below min-bytes (512 < 1024)"}
// CHECK-SAME: tensor<128xcomplex<f32>> {offload.selected}

// JSON-LABEL: "backward": "sizes_backward",
// JSON: "offloaded_bytes": 3072,
// JSON: "peak_bytes_before": 15872,
// JSON: "bytes": 1024,
// JSON: "type": "tensor<1024xi1>"
// JSON: "bytes": 1024,
// JSON: "type": "tensor<1024xi4>"
// JSON: "bytes": 512,
// JSON: "type": "tensor<512xf8E4M3FN>"
// JSON: "bytes": 1024,
// JSON: "type": "tensor<128xcomplex<f32>>"
func.func @sizes_forward(%x: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xi1>, tensor<1024xi4>, tensor<512xf8E4M3FN>, tensor<128xcomplex<f32>>)
    attributes {offload.backward = @sizes_backward, offload.num_outputs = 1 : i64} {
  %m = trace.op "aten.gt.Scalar"(%x) {args = [#trace.operand<0>, 0.0 : f64]} : (tensor<1024xf32>) -> tensor<1024xi1>
  %q = trace.op "quant.pack"(%x) {args = [#trace.operand<0>]} : (tensor<1024xf32>) -> tensor<1024xi4>
  %f = trace.op "aten.slice_to_f8"(%x) {args = [#trace.operand<0>]} : (tensor<1024xf32>) -> tensor<512xf8E4M3FN>
  %c = trace.op "aten.view_as_complex"(%x) {args = [#trace.operand<0>]} : (tensor<1024xf32>) -> tensor<128xcomplex<f32>>
  %y = trace.op "aten.neg.default"(%x) {args = [#trace.operand<0>]} : (tensor<1024xf32>) -> tensor<1024xf32>
  return %y, %m, %q, %f, %c : tensor<1024xf32>, tensor<1024xi1>, tensor<1024xi4>, tensor<512xf8E4M3FN>, tensor<128xcomplex<f32>>
}
func.func @sizes_backward(%m: tensor<1024xi1>, %q: tensor<1024xi4>, %f: tensor<512xf8E4M3FN>,
                    %c: tensor<128xcomplex<f32>>, %g: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = trace.op "aten.where.self"(%m, %g, %g) {args = [#trace.operand<0>, #trace.operand<1>, #trace.operand<2>]} : (tensor<1024xi1>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %1 = trace.op "quant.use"(%q, %f, %c, %0) {args = [#trace.operand<0>, #trace.operand<1>, #trace.operand<2>, #trace.operand<3>]} : (tensor<1024xi4>,
      tensor<512xf8E4M3FN>, tensor<128xcomplex<f32>>, tensor<1024xf32>) -> tensor<1024xf32>
  return %1 : tensor<1024xf32>
}
