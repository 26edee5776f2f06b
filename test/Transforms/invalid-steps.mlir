// Inputs the passes cannot work on get a diagnostic at the function and a
// non-zero exit, never a crash or a hang.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics --offload-activations

// A forward whose body does not end in a terminator (an unregistered op may
// end a block): the passes read the saved values off the terminator.
// expected-error @+1 {{forward function 'forward_without_terminator_forward' must end with a return-like terminator}}
func.func @forward_without_terminator_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @forward_without_terminator_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<4xf32>
  // expected-note @+1 {{its body ends with 'test.foo'}}
  "test.foo"(%0) : (tensor<4xf32>) -> ()
}
func.func @forward_without_terminator_backward(%s: tensor<4xf32>, %g: tensor<4xf32>) {
  return
}

// -----

func.func @backward_without_terminator_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @backward_without_terminator_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}
// expected-error @+1 {{backward function 'backward_without_terminator_backward' must end with a return-like terminator}}
func.func @backward_without_terminator_backward(%s: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-note @+1 {{its body ends with 'test.bar'}}
  "test.bar"(%s) : (tensor<4xf32>) -> ()
}

// -----

// A graph region may hold cyclic uses (here two views of each other); walking
// up their view sources never ends.
// expected-error @+1 {{forward function 'graph_region_body_forward' must have an SSACFG body, not a graph region}}
ml_program.subgraph @graph_region_body_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @graph_region_body_backward, offload.num_outputs = 1 : i64} {
  %a = tensor.expand_shape %b [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %b = tensor.collapse_shape %a [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %e = math.exp %x : tensor<16xf32>
  ml_program.output %e, %a : tensor<16xf32>, tensor<4x4xf32>
}
ml_program.subgraph @graph_region_body_backward(%s: tensor<4x4xf32>, %g: tensor<16xf32>) -> () {
  ml_program.output
}
