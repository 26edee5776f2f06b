// A static shape whose byte size does not fit in 64 bits is kept with that
// reason, at any min-bytes, and the report prints its size as unknown rather
// than a wrapped-around number.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" | FileCheck %s
// RUN: offload-opt %s -offload-activations="min-bytes=0 report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func @size_overflow_forward
// CHECK-SAME: offload.kept = "size does not fit in 64 bits"
// REPORT-LABEL: offload report: @size_overflow_forward -> @size_overflow_backward
// REPORT: tensor<4611686018427387904x4xf32> ? kept: size does not fit in 64 bits
// REPORT-NOT: EiB
func.func @size_overflow_forward(%x: tensor<4611686018427387904x4xf32>) -> (tensor<4611686018427387904x4xf32>, tensor<4611686018427387904x4xf32>)
    attributes {offload.backward = @size_overflow_backward, offload.num_outputs = 1 : i64} {
  %a = math.exp %x : tensor<4611686018427387904x4xf32>
  %b = math.sin %a : tensor<4611686018427387904x4xf32>
  return %b, %a : tensor<4611686018427387904x4xf32>, tensor<4611686018427387904x4xf32>
}
func.func @size_overflow_backward(%a: tensor<4611686018427387904x4xf32>, %g: tensor<4611686018427387904x4xf32>) -> tensor<4611686018427387904x4xf32> {
  %d = arith.mulf %g, %a : tensor<4611686018427387904x4xf32>
  return %d : tensor<4611686018427387904x4xf32>
}
