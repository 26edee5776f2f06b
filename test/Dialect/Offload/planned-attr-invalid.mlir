// RUN: offload-opt %s -split-input-file -verify-diagnostics

// expected-error @below {{expects 'offload.planned' to be {peak_bytes = <integer>, step_seconds = <float>}}}
func.func @planned_without_step_seconds_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @planned_without_step_seconds_backward, offload.num_outputs = 1 : i64, offload.planned = {peak_bytes = 1 : i64}} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @planned_without_step_seconds_backward(%s: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  return %g : tensor<4xf32>
}

// -----

// expected-error @below {{has 'offload.planned' but no 'offload.backward'}}
func.func @planned_without_backward(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {offload.planned = {peak_bytes = 1 : i64, step_seconds = 1.0 : f64}} {
  return %x : tensor<4xf32>
}
