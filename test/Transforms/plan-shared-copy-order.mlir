// A value saved twice moves as one copy, made where offload-insert-offloads
// reaches its first saved slot (the copy's leader). Offloads placed after the
// same op go to the D2H stream in the order the IR has them, and the planner
// must predict with that order. Here %h (saved first and third) and %g
// (saved second) are both offloaded after relu, and the IR issues %g's copy
// first. The planner used to take the last slot saved as %h for the leader,
// so it predicted %h's copy first and %h's load, which backward needs first,
// 69 us earlier than the emitted IR allows (465.3 against 534.3 us).
// RUN: offload-opt %s --offload-activations="recompute=false min-bytes=0 plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=true report=text" \
// RUN:   -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// REPORT-LABEL: offload report: @plan_shared_copy_order_forward -> @plan_shared_copy_order_backward
// REPORT: offloaded 2 values
// REPORT: predicted (h100-pcie5): {{.*}} peak device memory {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]]
// REPORT-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

// IR-LABEL: func.func @plan_shared_copy_order_forward
// IR: %[[G:.*]] = trace.op "aten.relu.default"
// IR-NEXT: offload.offload_start %[[G]]
// IR-NEXT: offload.offload_start %{{.*}} : tensor<1024x1024xf32>

func.func @plan_shared_copy_order_forward(%x: tensor<1024x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @plan_shared_copy_order_backward, offload.num_outputs = 1 : i64} {
  %h = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v = trace.view "aten.view.default"(%h) {node = "view", args = [#trace.operand<0>, [2048, 512]]} : (tensor<1024x1024xf32>) -> tensor<2048x512xf32>
  %g = trace.op "aten.relu.default"(%v) {node = "relu"} : (tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %c = trace.op "aten.mm.default"(%x, %w) {node = "mm_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c, %h, %g, %h : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>, tensor<1024x1024xf32>
}
func.func @plan_shared_copy_order_backward(%h: tensor<1024x1024xf32>, %g: tensor<2048x512xf32>, %h2: tensor<1024x1024xf32>, %d: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<2048x512xf32>) {
  %e = trace.op "aten.mm.default"(%d, %d) {node = "mm_2"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %f = trace.op "aten.mm.default"(%e, %h) {node = "mm_3"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %k = trace.op "aten.mm.default"(%f, %h2) {node = "mm_4"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %m = trace.op "aten.mm.default"(%k, %d) {node = "mm_5"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %n = trace.op "aten.mm.default"(%m, %d) {node = "mm_6"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %o = trace.op "aten.mm.default"(%n, %d) {node = "mm_7"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %q = trace.op "aten.mm.default"(%o, %d) {node = "mm_8"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = trace.op "aten.mul.Tensor"(%g, %g) {node = "mul"} : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<2048x512xf32>
  return %q, %r : tensor<1024x1024xf32>, tensor<2048x512xf32>
}
