// Regression tests: the planner must predict the copies where the pipeline
// puts them, or a plan it says fits the budget does not.
// RUN: not offload-opt %s -split-input-file -offload-activations="min-bytes=1024 schedule=false budget=0.95" -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: not offload-opt %s -split-input-file -offload-activations="min-bytes=1024 schedule=false budget=0.95" -mlir-print-op-on-diagnostic=false 2>/dev/null | FileCheck %s --check-prefix=FIT
// RUN: offload-opt %s -split-input-file -offload-activations="plan=all min-bytes=1024 schedule=false report=text" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL

// With plan=all the report predicts the peak of the copies where the
// pipeline puts them: the first step goes from 72 KiB to 68 KiB, the second
// stays at 72 KiB.

// In backward, the view of the saved value has no effects, so it sinks past
// the in-place add_ (a write of %t, which it does not commute with only if it
// had effects of its own) to its real consumer %3, and the value is loaded
// there: off the device while %0 and %1 make the peak. The planner predicts
// the load there, so the plan fits 95% of the peak. (Until views were moved
// by their effects, the view stayed above the add_, the load sat before it,
// and no plan fit: the planner had to predict that too.)
// ALL-LABEL: offload report: @load_after_sunk_view_forward -> @load_after_sunk_view_backward
// ALL: peak device memory 72.0 KiB -> 68.0 KiB
// FIT-LABEL: func.func @load_after_sunk_view_backward
// FIT: trace.op "aten.add_.Tensor"
// FIT: %[[S:.*]] = trace.op "aten.sum.default"
// FIT-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// FIT-NEXT: %[[V:.*]] = trace.view "aten.view.default"(%[[L]])
// FIT-NEXT: trace.op "aten.mul.Tensor"(%[[S]], %[[V]])
func.func @load_after_sunk_view_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>)
    attributes {offload.backward = @load_after_sunk_view_backward, offload.num_outputs = 1 : i64} {
  %a = trace.op "aten.exp.default"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %b = trace.op "aten.exp.default"(%a) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c = trace.op "aten.exp.default"(%b) : (tensor<1024xf32>) -> tensor<1024xf32>
  %d = trace.op "aten.exp.default"(%c) : (tensor<1024xf32>) -> tensor<1024xf32>
  %e = trace.op "aten.exp.default"(%d) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f = trace.op "aten.exp.default"(%e) : (tensor<1024xf32>) -> tensor<1024xf32>
  %g = trace.op "aten.exp.default"(%f) : (tensor<1024xf32>) -> tensor<1024xf32>
  return %g, %a : tensor<1024xf32>, tensor<1024xf32>
}
func.func @load_after_sunk_view_backward(%s: tensor<1024xf32>, %t: tensor<1024xf32>) -> tensor<32x32xf32> {
  %v = trace.view "aten.view.default"(%s) : (tensor<1024xf32>) -> tensor<32x32xf32>
  %m = trace.op "aten.add_.Tensor"(%t, %t) {mutates = array<i64: 0>} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %0 = trace.op "aten.exp.default"(%m) : (tensor<1024xf32>) -> tensor<8192xf32>
  %1 = trace.op "aten.exp.default"(%0) : (tensor<8192xf32>) -> tensor<8192xf32>
  %2 = trace.op "aten.sum.default"(%1) : (tensor<8192xf32>) -> tensor<32x32xf32>
  %3 = trace.op "aten.mul.Tensor"(%2, %v) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %3 : tensor<32x32xf32>
}

// -----

// In forward, %a is saved through a view taken at the end, so its offload
// goes after that view, not after %b, its last real use: %a is on the device
// while %g and %h make the peak.
// ALL-LABEL: offload report: @offload_after_saved_view_forward -> @offload_after_saved_view_backward
// ALL: peak device memory 72.0 KiB -> 72.0 KiB
// CHECK: error: no plan fits the budget of 68.40 KiB (70041 bytes): the smallest predicted peak is 72.00 KiB (73728 bytes); without offload it is 72.00 KiB (73728 bytes)
func.func @offload_after_saved_view_forward(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<32x32xf32>)
    attributes {offload.backward = @offload_after_saved_view_backward, offload.num_outputs = 1 : i64} {
  %a = trace.op "aten.exp.default"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %b = trace.op "aten.exp.default"(%a) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c = trace.op "aten.exp.default"(%b) : (tensor<1024xf32>) -> tensor<1024xf32>
  %d = trace.op "aten.exp.default"(%c) : (tensor<1024xf32>) -> tensor<1024xf32>
  %e = trace.op "aten.exp.default"(%d) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f0 = trace.op "aten.exp.default"(%e) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f1 = trace.op "aten.exp.default"(%f0) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f2 = trace.op "aten.exp.default"(%f1) : (tensor<1024xf32>) -> tensor<1024xf32>
  %f = trace.op "aten.exp.default"(%f2) : (tensor<1024xf32>) -> tensor<1024xf32>
  %g = trace.op "aten.exp.default"(%f) : (tensor<1024xf32>) -> tensor<8192xf32>
  %h = trace.op "aten.exp.default"(%g) : (tensor<8192xf32>) -> tensor<8192xf32>
  %i = trace.op "aten.sum.default"(%h) : (tensor<8192xf32>) -> tensor<1024xf32>
  %v = trace.view "aten.view.default"(%a) : (tensor<1024xf32>) -> tensor<32x32xf32>
  return %i, %v : tensor<1024xf32>, tensor<32x32xf32>
}
func.func @offload_after_saved_view_backward(%s: tensor<32x32xf32>, %t: tensor<1024xf32>) -> tensor<32x32xf32> {
  %0 = trace.op "aten.mul.Tensor"(%s, %t) : (tensor<32x32xf32>, tensor<1024xf32>) -> tensor<32x32xf32>
  return %0 : tensor<32x32xf32>
}
