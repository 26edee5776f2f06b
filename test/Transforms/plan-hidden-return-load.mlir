// Regression test: the step model gave no load to a saved value that only
// backward's return reads, so plan=hidden kept offloading it as free; the
// pipeline then loads it right before the return, where nothing hides the
// copy (the step got 56% slower, the guarantee is 1%). Found by
// test/Transforms/property/random-steps.mlir.
// RUN: offload-opt %s -offload-activations="min-bytes=1024 plan=hidden report=text" -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: offload report: @plan_hidden_return_load_forward -> @plan_hidden_return_load_backward
// CHECK: 1  aten.exp.default "a" {{.*}} kept: plan: its copy cannot be hidden under compute
// CHECK: step 18.0 us -> 18.0 us (exposed copies 0.0 us)
func.func @plan_hidden_return_load_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>)
    attributes {offload.backward = @plan_hidden_return_load_backward, offload.num_outputs = 1 : i64} {
  %a = trace.op "aten.exp.default"(%x) {node = "a"} : (tensor<1024xf32>) -> tensor<1024xf32>
  %b = trace.op "aten.exp.default"(%a) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c = trace.op "aten.exp.default"(%b) : (tensor<1024xf32>) -> tensor<1024xf32>
  %d = trace.op "aten.exp.default"(%c) : (tensor<1024xf32>) -> tensor<1024xf32>
  %e = trace.op "aten.exp.default"(%d) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f = trace.op "aten.exp.default"(%e) : (tensor<1024xf32>) -> tensor<1024xf32>
  %g = trace.op "aten.exp.default"(%f) : (tensor<1024xf32>) -> tensor<1024xf32>
  return %g, %a : tensor<1024xf32>, tensor<1024xf32>
}
func.func @plan_hidden_return_load_backward(%s: tensor<1024xf32>, %t: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>) {
  %0 = trace.op "aten.exp.default"(%t) : (tensor<1024xf32>) -> tensor<1024xf32>
  %1 = trace.op "aten.exp.default"(%0) : (tensor<1024xf32>) -> tensor<1024xf32>
  return %1, %s : tensor<1024xf32>, tensor<1024xf32>
}
