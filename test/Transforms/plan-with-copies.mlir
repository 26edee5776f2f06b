// offload-plan plans a step before its copies are made: on a step that
// already has copies it says so, instead of taking the peak with those copies
// for the step's peak without offload (and the smallest reachable).
// RUN: offload-opt %s -verify-diagnostics -offload-plan="budget=0.9"

// expected-error @below {{offload-plan plans a step before its copies are made, but this one already has copies; run it before offload-insert-offloads}}
func.func @step_with_copies_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @step_with_copies_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %y, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @step_with_copies_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %o = arith.mulf %g, %l : tensor<1000xf32>
  return %o : tensor<1000xf32>
}
