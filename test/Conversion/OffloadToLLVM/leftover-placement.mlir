// An `offload.placement` that reaches the lowering (offload-schedule-copies,
// which consumes every one, did not run) places nothing: both drivers erase
// it with a remark, and none reaches the LLVM dialect.
// RUN: offload-opt %s -convert-offload-to-llvm -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -convert-to-llvm -verify-diagnostics | FileCheck %s

// CHECK-LABEL: @leftover_placement_erased
// CHECK-NOT: offload.placement
// CHECK: return
func.func @leftover_placement_erased(%x: f32) -> f32 {
  // expected-remark @below {{offload-schedule-copies did not consume this placement; it places nothing and is dropped}}
  offload.placement load_starts [0]
  %y = arith.addf %x, %x : f32
  // expected-remark @below {{offload-schedule-copies did not consume this placement; it places nothing and is dropped}}
  offload.placement offload_waits [0, 1]
  return %y : f32
}
