// offload-insert-offloads refuses, with the reason, a saved value selected
// by hand that cannot become host resident: its type cannot carry the host
// encoding, or something besides forward, backward and the calls between
// them would see its type change. (offload-find-saved-activations keeps
// such values with the same reason: valid-or-diagnosed.mlir.)
// RUN: offload-opt %s -split-input-file -verify-diagnostics --offload-insert-offloads -o /dev/null

#csr = #sparse_tensor.encoding<{map = (d0, d1) -> (d0 : dense, d1 : compressed)}>
// expected-error @+1 {{cannot offload saved result #1: its encoding #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }> has no host form}}
func.func @sparse_saved_value_selected_by_hand(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32, #csr> {offload.selected})
    attributes {offload.backward = @sparse_saved_value_selected_by_hand_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<8x8xf32>
  %s = sparse_tensor.convert %e : tensor<8x8xf32> to tensor<8x8xf32, #csr>
  return %e, %s : tensor<8x8xf32>, tensor<8x8xf32, #csr>
}
func.func @sparse_saved_value_selected_by_hand_backward(%s: tensor<8x8xf32, #csr>, %g: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %d = sparse_tensor.convert %s : tensor<8x8xf32, #csr> to tensor<8x8xf32>
  %o = arith.mulf %d, %g : tensor<8x8xf32>
  return %o : tensor<8x8xf32>
}

// -----

// expected-error @+1 {{cannot offload saved result #1: a caller of forward reads it ('math.absf' in 'caller_reads_saved_value')}}
func.func @caller_reads_saved_value_forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {offload.selected})
    attributes {offload.backward = @caller_reads_saved_value_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<8xf32>
  return %e, %e : tensor<8xf32>, tensor<8xf32>
}
func.func @caller_reads_saved_value_backward(%s: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %o = arith.mulf %s, %g : tensor<8xf32>
  return %o : tensor<8xf32>
}
func.func @caller_reads_saved_value(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y, %s = func.call @caller_reads_saved_value_forward(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %a = math.absf %s : tensor<8xf32>
  %d = func.call @caller_reads_saved_value_backward(%s, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

// expected-error @+1 {{cannot offload saved result #1: a call of backward passes another value for it ('func.call' in 'backward_called_with_another_value')}}
func.func @backward_called_with_another_value_forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {offload.selected})
    attributes {offload.backward = @backward_called_with_another_value_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<8xf32>
  return %e, %e : tensor<8xf32>, tensor<8xf32>
}
func.func @backward_called_with_another_value_backward(%s: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %o = arith.mulf %s, %g : tensor<8xf32>
  return %o : tensor<8xf32>
}
func.func @backward_called_with_another_value(%x: tensor<8xf32>) -> tensor<8xf32> {
  %d = func.call @backward_called_with_another_value_backward(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

// expected-error @+1 {{cannot offload saved result #1: 'function_constant_of_forward' is used by 'func.constant', not only called}}
func.func @function_constant_of_forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {offload.selected})
    attributes {offload.backward = @function_constant_of_forward_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<8xf32>
  return %e, %e : tensor<8xf32>, tensor<8xf32>
}
func.func @function_constant_of_forward_backward(%s: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %o = arith.mulf %s, %g : tensor<8xf32>
  return %o : tensor<8xf32>
}
func.func @function_constant_of_forward_user() -> ((tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)) {
  %f = func.constant @function_constant_of_forward : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %f : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
}

// -----

// A driver hands two saved values of one type to backward in each other's
// place: one moving without the other would give backward a value of the
// wrong residence.
// expected-error @+1 {{cannot offload saved result #1: a caller of forward passes it to backward in saved result #2's place ('func.call' in 'driver_swaps_saved_values')}}
func.func @driver_swaps_saved_values_forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {offload.selected}, tensor<8xf32>)
    attributes {offload.backward = @driver_swaps_saved_values_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<8xf32>
  %s = math.sin %x : tensor<8xf32>
  return %e, %e, %s : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
func.func @driver_swaps_saved_values_backward(%a: tensor<8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %o = arith.mulf %a, %b : tensor<8xf32>
  return %o : tensor<8xf32>
}
func.func @driver_swaps_saved_values(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y, %a, %b = func.call @driver_swaps_saved_values_forward(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %d = func.call @driver_swaps_saved_values_backward(%b, %a, %y) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}
