// With schedule=true, offload-plan records where its plan places the
// copies as `offload.placement` ops: `load_starts` in backward right before
// the op each load starts before (naming every saved value the copy carries:
// %h is saved twice, as saved values 0 and 2, and moves as one copy),
// `offload_waits` in forward right before the op an offload is waited
// before (here the return: both are waited at the end of forward).
// offload-insert-offloads renumbers them when the shared copy's second slot
// leaves the interface; offload-schedule-copies places the loads there and
// erases the placements. schedule=false records nothing.
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="recompute=false plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=true" | FileCheck %s --check-prefix=PLAN
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="recompute=false plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=true" -offload-insert-offloads | \
// RUN:   FileCheck %s --check-prefix=RENUMBERED
// RUN: offload-opt %s --offload-activations="recompute=false min-bytes=0 plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=true" | \
// RUN:   FileCheck %s --check-prefix=PLACED --implicit-check-not=offload.placement
// RUN: offload-opt %s -offload-find-saved-activations="min-bytes=0" \
// RUN:   -offload-plan="recompute=false plan=hidden max-slowdown=10 max-interference=10 copy-margin=0 schedule=false" | \
// RUN:   FileCheck %s --check-prefix=SYNC --implicit-check-not=offload.placement

// PLAN-LABEL: func.func @plan_records_placements_forward
// PLAN: trace.op "aten.mm.default"(%arg0, %arg1) {node = "mm_1"}
// PLAN-NEXT: offload.placement offload_waits [0, 2, 1]
// PLAN-NEXT: return
// PLAN-LABEL: func.func @plan_records_placements_backward
// PLAN-NEXT: offload.placement load_starts [0, 2]
// PLAN-NEXT: trace.op "aten.mm.default"(%arg3, %arg3) {node = "mm_2"}
// PLAN: trace.op "aten.mm.default"(%{{.*}}, %arg3) {node = "mm_5"}
// PLAN-NEXT: offload.placement load_starts [1]
// PLAN-NEXT: trace.op "aten.mm.default"(%{{.*}}, %arg3) {node = "mm_6"}

// RENUMBERED-LABEL: func.func @plan_records_placements_forward
// RENUMBERED: offload.placement offload_waits [0, 1]
// RENUMBERED-NEXT: return
// RENUMBERED-LABEL: func.func @plan_records_placements_backward
// RENUMBERED: offload.placement load_starts [0]
// RENUMBERED-NEXT: {node = "mm_2"}
// RENUMBERED: offload.placement load_starts [1]
// RENUMBERED-NEXT: {node = "mm_6"}

// PLACED-LABEL: func.func @plan_records_placements_backward
// PLACED: %[[H:.*]] = offload.load_start %arg0
// PLACED-NEXT: trace.op "aten.mm.default"(%arg2, %arg2) {node = "mm_2"}
// PLACED: %[[G:.*]] = offload.load_start %arg1
// PLACED-NEXT: trace.op "aten.mm.default"(%{{.*}}, %arg2) {node = "mm_6"}

// SYNC-LABEL: func.func @plan_records_placements_forward

func.func @plan_records_placements_forward(%x: tensor<1024x1024xf32>, %w: tensor<1024x1024xf32>)
    -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @plan_records_placements_backward, offload.num_outputs = 1 : i64} {
  %h = trace.op "aten.mm.default"(%x, %w) {node = "mm"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v = trace.view "aten.view.default"(%h) {node = "view", args = [#trace.operand<0>, [2048, 512]]} : (tensor<1024x1024xf32>) -> tensor<2048x512xf32>
  %g = trace.op "aten.relu.default"(%v) {node = "relu"} : (tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %c = trace.op "aten.mm.default"(%x, %w) {node = "mm_1"} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %c, %h, %g, %h : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<2048x512xf32>, tensor<1024x1024xf32>
}
func.func @plan_records_placements_backward(%h: tensor<1024x1024xf32>, %g: tensor<2048x512xf32>, %h2: tensor<1024x1024xf32>, %d: tensor<1024x1024xf32>)
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
