// RUN: offload-opt %s -split-input-file -verify-diagnostics
// The training-step contract is checked wherever `offload.backward` appears.

// expected-error @+1 {{backward function @missing not found}}
func.func @missing_backward_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @missing, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'offload.num_outputs' is 3 but the function has 2 results}}
func.func @num_outputs_above_results_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @num_outputs_above_results_backward, offload.num_outputs = 3 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @num_outputs_above_results_backward(%s: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{'offload.num_outputs' is -1 but the function has 2 results}}
func.func @num_outputs_negative_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @num_outputs_negative_backward, offload.num_outputs = -1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @num_outputs_negative_backward(%s: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{expects 'offload.num_outputs' (an i64: how many leading results are forward outputs)}}
func.func @num_outputs_missing_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @num_outputs_missing_backward} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @num_outputs_missing_backward(%s: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{expects 'offload.num_outputs' (an i64: how many leading results are forward outputs)}}
func.func @num_outputs_not_i64_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @num_outputs_not_i64_backward, offload.num_outputs = 1 : i32} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @num_outputs_not_i64_backward(%s: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{saved result #1 has type 'tensor<4xf32>' but backward argument #0 of @saved_type_mismatch_backward has type 'tensor<4xf16>'}}
func.func @saved_type_mismatch_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @saved_type_mismatch_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @saved_type_mismatch_backward(%s: tensor<4xf16>) { return }

// -----

// expected-error @+1 {{saves 2 values but backward function @backward_takes_too_few_backward takes only 1 arguments}}
func.func @backward_takes_too_few_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward_takes_too_few_backward, offload.num_outputs = 0 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @backward_takes_too_few_backward(%s: tensor<4xf32>) { return }

// -----

// expected-error @+1 {{expects 'offload.backward' to be a flat symbol reference to the backward function}}
func.func @backward_not_a_symbol_forward(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {offload.backward = "backward", offload.num_outputs = 1 : i64} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{a function cannot be its own backward}}
func.func @is_its_own_backward_forward(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {offload.backward = @is_its_own_backward_forward, offload.num_outputs = 1 : i64} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has 'offload.num_outputs' but no 'offload.backward'}}
func.func @num_outputs_without_backward_forward(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {offload.num_outputs = 1 : i64} {
  return %x : tensor<4xf32>
}

// -----

func.func @host_value_read_by_compute_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32, #offload.host>)
    attributes {offload.backward = @host_value_read_by_compute_backward, offload.num_outputs = 1 : i64} {
  %h = offload.offload_to_cpu %x : tensor<4xf32> -> tensor<4xf32, #offload.host>
  return %x, %h : tensor<4xf32>, tensor<4xf32, #offload.host>
}
// expected-note @+1 {{host value defined here}}
func.func @host_value_read_by_compute_backward(%s: tensor<4xf32, #offload.host>, %g: tensor<4xf32>) -> tensor<4xf32, #offload.host> {
  // expected-error @+1 {{'math.exp' op reads host-resident operand #0; only 'offload.load_to_gpu', 'offload.load_start', terminators and calls may read host memory}}
  %0 = math.exp %s : tensor<4xf32, #offload.host>
  return %0 : tensor<4xf32, #offload.host>
}

// -----

// expected-error @+1 {{'func.func' op unknown offload result attribute 'offload.whatever'}}
func.func @unknown_result_attr_forward(%x: tensor<4xf32>) -> (tensor<4xf32> {offload.whatever})
    attributes {offload.backward = @unknown_result_attr_backward, offload.num_outputs = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @unknown_result_attr_backward() { return }
