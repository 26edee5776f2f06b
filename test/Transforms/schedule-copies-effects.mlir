// Copy starts and waits move only across ops whose effects commute with
// theirs (offload/Analysis/Effects.h): a load start on a tensor writes only
// its own future on the offload.copies resource, so it crosses a write of
// unrelated memory but not an op of unknown effects; likewise an offload's
// wait. With a link of 0.25 GB/s, loading the 4000-byte saved value takes
// 16 us: to be done before the mulf (24 us) it must start before %b (8 us).
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1 h2d-gbps=0.25 both-ways-gbps=2 copy-latency-us=0 op-overhead-us=0" | FileCheck %s

// The unknown op stops the hoist: the start stays below it.
// CHECK-LABEL: func @load_start_crosses_unrelated_write_backward
// CHECK-NEXT: math.exp %arg1
// CHECK-NEXT: %[[B:.*]] = math.exp
// CHECK-NEXT: "test.unknown"()
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[C:.*]] = math.exp %[[B]]
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[S]]
// CHECK-NEXT: arith.mulf %[[C]], %[[L]]
func.func @load_start_crosses_unrelated_write_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @load_start_crosses_unrelated_write_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @load_start_crosses_unrelated_write_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  "test.unknown"() : () -> ()
  %c = math.exp %b : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %c, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// A memref.store writes memory the start does not touch: the start crosses
// it and everything else up to where its copy is hidden.
// CHECK-LABEL: func @start_crosses_store_backward
// CHECK-NEXT: %[[S:.*]] = offload.load_start %arg0
// CHECK-NEXT: math.exp %arg1
// CHECK: memref.store
// CHECK-NEXT: math.exp
// CHECK-NEXT: offload.wait %[[S]]
func.func @start_crosses_store_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @start_crosses_store_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @start_crosses_store_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %b = math.exp %a : tensor<1000xf32>
  %m = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %m[%c0] : memref<4xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %c, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// The offload's copy is done before %w, but its wait does not move up across
// the unknown op: it stays at the end of forward.
// CHECK-LABEL: func @wait_stays_above_unknown_op_forward
// CHECK: %[[F:.*]] = offload.offload_start
// CHECK-NEXT: math.sin
// CHECK-NEXT: math.sin
// CHECK-NEXT: "test.unknown"()
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NEXT: return
func.func @wait_stays_above_unknown_op_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @wait_stays_above_unknown_op_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %y = math.sin %e : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %y : tensor<1000xf32>
  %w = math.sin %z : tensor<1000xf32>
  "test.unknown"() : () -> ()
  return %w, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @wait_stays_above_unknown_op_backward(%s: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l = offload.load_to_gpu %s : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %g, %l : tensor<1000xf32>
  return %r : tensor<1000xf32>
}
