// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-reorder-backward | FileCheck %s
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -offload-reorder-backward="all-views=true" | FileCheck %s --check-prefix=ALL

// Views of saved values (trace views and tensor reshapes) sink to just before
// their first real consumer; every other op keeps its order.
// CHECK-LABEL: func @views_sink_to_first_consumer_backward
// CHECK-NEXT: %[[A:.*]] = trace.op "aten.mul.Tensor"(%arg2, %arg2)
// CHECK-NEXT: %[[B:.*]] = trace.op "aten.neg.default"(%[[A]])
// CHECK-NEXT: %[[T:.*]] = trace.view "aten.t.default"(%arg0)
// CHECK-NEXT: %[[V:.*]] = trace.view "aten.view.default"(%[[T]])
// CHECK-NEXT: %[[M:.*]] = trace.op "aten.mm.default"(%[[V]], %[[B]])
// CHECK-NEXT: %[[E:.*]] = tensor.collapse_shape %arg1
// CHECK-NEXT: trace.op "aten.add.Tensor"(%[[M]], %[[E]])
// CHECK-NEXT: return
func.func @views_sink_to_first_consumer_forward(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x16xf32>)
    attributes {offload.backward = @views_sink_to_first_consumer_backward, offload.num_outputs = 1 : i64} {
  %0 = tensor.expand_shape %x [[0], [1, 2]] output_shape [8, 2, 2] : tensor<8x4xf32> into tensor<8x2x2xf32>
  %1 = tensor.collapse_shape %0 [[0, 1], [2]] : tensor<8x2x2xf32> into tensor<16x2xf32>
  %2 = trace.view "aten.t.default"(%1) : (tensor<16x2xf32>) -> tensor<2x16xf32>
  return %x, %x, %2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<2x16xf32>
}
func.func @views_sink_to_first_consumer_backward(%s0: tensor<8x4xf32>, %s1: tensor<2x16xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = trace.view "aten.t.default"(%s0) : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %e = tensor.collapse_shape %s1 [[0, 1]] : tensor<2x16xf32> into tensor<32xf32>
  %v = trace.view "aten.view.default"(%t) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = trace.op "aten.mul.Tensor"(%g, %g) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = trace.op "aten.neg.default"(%a) : (tensor<4x4xf32>) -> tensor<4x8xf32>
  %m = trace.op "aten.mm.default"(%v, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %r = trace.op "aten.add.Tensor"(%m, %e) : (tensor<4x4xf32>, tensor<32xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// Views have no effects, so they commute with every op: the view of the
// saved value sinks past the in-place add_ (a write) to its consumer. A view
// aliases its source, so it reads what the source holds when it is read,
// wherever it is taken. Views of values that are not saved stay where they
// are unless all-views is set.
// CHECK-LABEL: func @view_sinks_past_write_backward
// CHECK-NEXT: %[[T:.*]] = trace.view "aten.t.default"(%arg1)
// CHECK-NEXT: trace.op "aten.exp.default"
// CHECK-NEXT: trace.op "aten.add_.Tensor"
// CHECK-NEXT: trace.op "aten.exp.default"
// CHECK-NEXT: %[[V:.*]] = trace.view "aten.t.default"(%arg0)
// CHECK-NEXT: trace.op "aten.mm.default"(%[[V]], %[[T]])
// ALL-LABEL: func @view_sinks_past_write_backward
// ALL-NEXT: trace.op "aten.exp.default"
// ALL-NEXT: trace.op "aten.add_.Tensor"
// ALL-NEXT: trace.op "aten.exp.default"
// ALL-NEXT: %[[V:.*]] = trace.view "aten.t.default"(%arg0)
// ALL-NEXT: %[[T:.*]] = trace.view "aten.t.default"(%arg1)
// ALL-NEXT: trace.op "aten.mm.default"(%[[V]], %[[T]])
func.func @view_sinks_past_write_forward(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @view_sinks_past_write_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4x4xf32>, tensor<4x4xf32>
}
func.func @view_sinks_past_write_backward(%s: tensor<4x4xf32>, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = trace.view "aten.t.default"(%g) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = trace.view "aten.t.default"(%s) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %0 = trace.op "aten.exp.default"(%g) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = trace.op "aten.add_.Tensor"(%g, %0) {mutates = array<i64: 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = trace.op "aten.exp.default"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = trace.op "aten.mm.default"(%v, %t) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// A consumer inside a region pulls the view to just before its top-level
// ancestor; a view of the loaded value moves, the load itself is left to
// -offload-insert-loads.
// CHECK-LABEL: func @consumer_in_region_backward
// CHECK-NEXT: %[[L:.*]] = offload.load_to_gpu %arg0
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: math.exp
// CHECK-NEXT: %[[V:.*]] = tensor.expand_shape %[[L]]
// CHECK-NEXT: scf.for
// CHECK: math.absf %[[V]]
func.func @consumer_in_region_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32, #offload.host>)
    attributes {offload.backward = @consumer_in_region_backward, offload.num_outputs = 1 : i64} {
  %h = offload.offload_to_cpu %x : tensor<16xf32> -> tensor<16xf32, #offload.host>
  return %x, %h : tensor<16xf32>, tensor<16xf32, #offload.host>
}
func.func @consumer_in_region_backward(%s: tensor<16xf32, #offload.host>, %n: index, %g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %l = offload.load_to_gpu %s : tensor<16xf32, #offload.host> -> tensor<16xf32>
  %v = tensor.expand_shape %l [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = math.exp %g : tensor<4x4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %e) -> tensor<4x4xf32> {
    %a = math.absf %v : tensor<4x4xf32>
    %b = arith.addf %acc, %a : tensor<4x4xf32>
    scf.yield %b : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// A view only the terminator reads ends up right before it.
// CHECK-LABEL: func @view_read_by_terminator_backward
// CHECK-NEXT: math.exp
// CHECK-NEXT: %[[V:.*]] = trace.view
// CHECK-NEXT: return %{{.*}}, %[[V]]
func.func @view_read_by_terminator_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {offload.backward = @view_read_by_terminator_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @view_read_by_terminator_backward(%s: tensor<4xf32>, %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %v = trace.view "aten.alias.default"(%s) : (tensor<4xf32>) -> tensor<4xf32>
  %e = math.exp %g : tensor<4xf32>
  return %e, %v : tensor<4xf32>, tensor<4xf32>
}

// -----

// A tensor view of a saved value is not held back by an unrelated
// memref.store, nor by an op of unknown effects: it has no effects, so it
// commutes with both and sinks to its consumer, and offload-insert-loads
// then loads the value right there, not three ops above it.
// CHECK-LABEL: func @view_not_held_by_store_backward
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: memref.store
// CHECK-NEXT: "test.unknown"
// CHECK-NEXT: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[V:.*]] = tensor.collapse_shape %arg0
// CHECK-NEXT: arith.addf %[[E]], %[[V]]
func.func @view_not_held_by_store_forward(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {offload.backward = @view_not_held_by_store_backward, offload.num_outputs = 1 : i64} {
  return %x, %x : tensor<4x4xf32>, tensor<4x4xf32>
}
func.func @view_not_held_by_store_backward(%s: tensor<4x4xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %v = tensor.collapse_shape %s [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %m = memref.alloc() : memref<4xf32>
  memref.store %one, %m[%c0] : memref<4xf32>
  "test.unknown"() : () -> ()
  %e = math.exp %g : tensor<16xf32>
  %r = arith.addf %e, %v : tensor<16xf32>
  return %r : tensor<16xf32>
}
