// Regression test: the budget planner's greedy offloads one value at a time
// while that lowers the peak. Here the step has two equal peaks, one in
// forward where only %a is live and one in backward where only %b is, so no
// single offload lowers the peak, and the planner failed with "no plan
// fits" while naming a smallest predicted peak (132 KiB, both offloaded)
// below the budget. It now falls back to offloading everything, then drops
// what the budget does not need.
// RUN: offload-opt %s -offload-activations="min-bytes=1024 budget=140000 report=text" -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: offload report: @plan_budget_all_fits_forward -> @plan_budget_all_fits_backward: 2 of 2 saved results offloaded
// CHECK: peak device memory 148.0 KiB -> 132.0 KiB
func.func @plan_budget_all_fits_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<4096xf32>, tensor<4096xf32>)
    attributes {offload.backward = @plan_budget_all_fits_backward, offload.num_outputs = 1 : i64} {
  %a = trace.op "aten.exp.default"(%x) : (tensor<1024xf32>) -> tensor<4096xf32>
  %c1 = trace.op "aten.exp.default"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c2 = trace.op "aten.exp.default"(%c1) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c3 = trace.op "aten.exp.default"(%c2) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c4 = trace.op "aten.exp.default"(%c3) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c5 = trace.op "aten.exp.default"(%c4) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c6 = trace.op "aten.exp.default"(%c5) : (tensor<1024xf32>) -> tensor<1024xf32>
  %t1 = trace.op "aten.exp.default"(%c6) : (tensor<1024xf32>) -> tensor<16384xf32>
  %t2 = trace.op "aten.exp.default"(%t1) : (tensor<16384xf32>) -> tensor<16384xf32>
  %s = trace.op "aten.sum.default"(%t2) : (tensor<16384xf32>) -> tensor<1024xf32>
  %b = trace.op "aten.exp.default"(%s) : (tensor<1024xf32>) -> tensor<4096xf32>
  %y = trace.op "aten.sum.default"(%b) : (tensor<4096xf32>) -> tensor<1024xf32>
  return %y, %a, %b : tensor<1024xf32>, tensor<4096xf32>, tensor<4096xf32>
}
func.func @plan_budget_all_fits_backward(%sa: tensor<4096xf32>, %sb: tensor<4096xf32>, %g: tensor<1024xf32>) -> tensor<4096xf32> {
  %u0 = trace.op "aten.mul.Tensor"(%sa, %g) : (tensor<4096xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %u1 = trace.op "aten.exp.default"(%u0) : (tensor<1024xf32>) -> tensor<1024xf32>
  %u2 = trace.op "aten.exp.default"(%u1) : (tensor<1024xf32>) -> tensor<1024xf32>
  %u3 = trace.op "aten.exp.default"(%u2) : (tensor<1024xf32>) -> tensor<1024xf32>
  %u4 = trace.op "aten.exp.default"(%u3) : (tensor<1024xf32>) -> tensor<1024xf32>
  %u5 = trace.op "aten.exp.default"(%u4) : (tensor<1024xf32>) -> tensor<1024xf32>
  %u6 = trace.op "aten.exp.default"(%u5) : (tensor<1024xf32>) -> tensor<1024xf32>
  %t3 = trace.op "aten.exp.default"(%u6) : (tensor<1024xf32>) -> tensor<16384xf32>
  %t4 = trace.op "aten.exp.default"(%t3) : (tensor<16384xf32>) -> tensor<16384xf32>
  %r = trace.op "aten.sum.default"(%t4) : (tensor<16384xf32>) -> tensor<4096xf32>
  %w = trace.op "aten.mul.Tensor"(%r, %sb) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %w : tensor<4096xf32>
}
