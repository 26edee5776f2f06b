// `recomputed` marks backward ops; on a forward op the report fails with a
// diagnostic at the op.
// RUN: offload-opt %s -offload-report -verify-diagnostics -o /dev/null

func.func @report_recomputed_invalid_forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {offload.backward = @report_recomputed_invalid_backward, offload.num_outputs = 1 : i64} {
  // expected-error @below {{'recomputed' marks a backward op that computes a forward value again; this op is in forward @report_recomputed_invalid_forward}}
  %0 = trace.op "aten.relu.default"(%x) {node = "relu", recomputed} : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %0 : tensor<8xf32>, tensor<8xf32>
}
func.func @report_recomputed_invalid_backward(%s: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %m = trace.op "aten.mul.Tensor"(%g, %s) {node = "mul"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %m : tensor<8xf32>
}
