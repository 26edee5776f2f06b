// RUN: offload-opt %s -split-input-file -offload-insert-loads | FileCheck %s

// The load moves from the entry to right before its first consumer.
// CHECK-LABEL: func @load_before_first_consumer_backward
// CHECK-NEXT: math.exp
// CHECK-NEXT: math.tanh
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: arith.mulf %[[L]]
// CHECK-NEXT: arith.addf %{{.*}}, %[[L]]
func.func @load_before_first_consumer_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
    attributes {offload.backward = @load_before_first_consumer_backward, offload.num_outputs = 1 : i64} {
  %h = offload.offload_to_cpu %x : tensor<16xf32> -> tensor<16xf32, #offload.host>
  return %x, %h : tensor<16xf32>, tensor<16xf32, #offload.host>
}
func.func @load_before_first_consumer_backward(%s: tensor<16xf32, #offload.host>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %l = offload.load_to_gpu %s : tensor<16xf32, #offload.host> -> tensor<16xf32>
  %0 = math.exp %g : tensor<16xf32>
  %1 = math.tanh %0 : tensor<16xf32>
  %2 = arith.mulf %l, %1 : tensor<16xf32>
  %3 = arith.addf %2, %l : tensor<16xf32>
  return %3 : tensor<16xf32>
}

// -----

// Several loads of one saved value become one, before the earliest use; a
// use inside a region counts at its top-level ancestor.
// CHECK-LABEL: func @loads_of_one_value_merge_backward
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: scf.for
// CHECK-NEXT: arith.addf %{{.*}}, %[[L]]
// CHECK: arith.mulf %{{.*}}, %[[L]]
// CHECK-NOT: offload.load_to_gpu
// CHECK: return
func.func @loads_of_one_value_merge_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
    attributes {offload.backward = @loads_of_one_value_merge_backward, offload.num_outputs = 1 : i64} {
  %h = offload.offload_to_cpu %x : tensor<16xf32> -> tensor<16xf32, #offload.host>
  return %x, %h : tensor<16xf32>, tensor<16xf32, #offload.host>
}
func.func @loads_of_one_value_merge_backward(%s: tensor<16xf32, #offload.host>, %n: index, %g: tensor<16xf32>) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g) -> tensor<16xf32> {
    %l0 = offload.load_to_gpu %s : tensor<16xf32, #offload.host> -> tensor<16xf32>
    %a = arith.addf %acc, %l0 : tensor<16xf32>
    scf.yield %a : tensor<16xf32>
  }
  %l1 = offload.load_to_gpu %s : tensor<16xf32, #offload.host> -> tensor<16xf32>
  %m = arith.mulf %r, %l1 : tensor<16xf32>
  return %m : tensor<16xf32>
}

// -----

// A load nobody reads is removed; a host value passed straight to a call
// stays host resident.
// CHECK-LABEL: func @unread_load_removed_backward
// CHECK-NOT: offload.load_to_gpu
// CHECK: call @keep_on_host(%arg0)
func.func private @keep_on_host(tensor<16xf32, #offload.host>)
func.func @unread_load_removed_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
    attributes {offload.backward = @unread_load_removed_backward, offload.num_outputs = 1 : i64} {
  %h = offload.offload_to_cpu %x : tensor<16xf32> -> tensor<16xf32, #offload.host>
  return %x, %h : tensor<16xf32>, tensor<16xf32, #offload.host>
}
func.func @unread_load_removed_backward(%s: tensor<16xf32, #offload.host>) {
  %l = offload.load_to_gpu %s : tensor<16xf32, #offload.host> -> tensor<16xf32>
  call @keep_on_host(%s) : (tensor<16xf32, #offload.host>) -> ()
  return
}
