// The planner models the step before the copies are inserted, where a
// load's wait has no position of its own: the wait, and the releases its
// stall lets happen, count in the position of the op it precedes. So
// offload-schedule-copies, which works on the emitted IR, must not issue
// another load between that wait and its op either: the planner could not
// have chosen that point, and its recorded prediction would differ from the
// report of the IR. Here %g's load may start only after mm_3, which reads %h
// right after %h's load is waited (before, the IR issued it between the two:
// 420.9 us in the report against 431.6 us planned).
// RUN: offload-opt %s --offload-activations="recompute=false min-bytes=0 plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=true report=text" \
// RUN:   -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// REPORT-LABEL: offload report: @plan_load_wait_position_forward -> @plan_load_wait_position_backward
// REPORT: offloaded 2 values
// REPORT: predicted (h100-pcie5): {{.*}} peak device memory {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]]
// REPORT-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

// IR-LABEL: func.func @plan_load_wait_position_backward
// IR: %[[H:.*]] = offload.wait %{{.*}} : !offload.future<tensor<1024x1024xf32>>
// IR-NEXT: trace.op "aten.mm.default"(%{{.*}}, %[[H]]) {{.*}}node = "mm_3"
// IR-NEXT: offload.load_start %{{.*}} : tensor<2048x512xf32, #offload.host>

func.func @plan_load_wait_position_forward(%x: tensor<1024x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>)
    attributes {offload.backward = @plan_load_wait_position_backward, offload.num_outputs = 1 : i64} {
  %h = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v = trace.view "aten.view.default"(%h) {node = "view", args = [#trace.operand<0>, [2048, 512]]} : (tensor<1024x1024xf32>) -> tensor<2048x512xf32>
  %g = trace.op "aten.relu.default"(%v) {node = "relu"} : (tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %c = trace.op "aten.mm.default"(%x, %w) {node = "mm_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c, %h, %g : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>
}
func.func @plan_load_wait_position_backward(%h: tensor<1024x1024xf32>, %g: tensor<2048x512xf32>, %d: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<2048x512xf32>) {
  %e = trace.op "aten.mm.default"(%d, %d) {node = "mm_2"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %f = trace.op "aten.mm.default"(%e, %h) {node = "mm_3"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %k = trace.op "aten.mm.default"(%f, %h) {node = "mm_4"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %m = trace.op "aten.mm.default"(%k, %d) {node = "mm_5"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = trace.op "aten.mul.Tensor"(%g, %g) {node = "mul"} : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<2048x512xf32>
  return %m, %r : tensor<1024x1024xf32>, tensor<2048x512xf32>
}
