// RUN: offload-opt %s -split-input-file -offload-insert-recomputes -verify-diagnostics | FileCheck %s

// A saved norm-like value computed from two saved values by pointwise ops is
// computed again in backward, right before its first real consumer; its
// view moves below the recomputation, it leaves the interface, and the
// forward op that only computed it goes.
// CHECK-LABEL: func @norm_recomputed_before_first_consumer_forward
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: return
// CHECK-LABEL: func @norm_recomputed_before_first_consumer_backward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[R:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = math.sqrt %[[G]]
// CHECK-NEXT: %[[N:.*]] = offload.recompute(%[[X]], %[[R]]) {name = "n"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[BX:.*]]: tensor<4x8xf32>, %[[BR:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[BX]], %[[BR]]
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[M]]
// CHECK-NEXT:   offload.yield %[[E]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[V:.*]] = tensor.collapse_shape %[[N]]
// CHECK-NEXT: %[[W:.*]] = tensor.expand_shape %[[V]]
// CHECK-NEXT: arith.mulf %[[A]], %[[W]]
func.func @norm_recomputed_before_first_consumer_forward(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> {offload.recompute})
    attributes {offload.backward = @norm_recomputed_before_first_consumer_backward, offload.num_outputs = 1 : i64} {
  %r = math.tanh %x : tensor<4x8xf32>
  %m = arith.mulf %x, %r : tensor<4x8xf32>
  %n = math.exp %m : tensor<4x8xf32> loc("n")
  %y = math.sin %r : tensor<4x8xf32>
  return %y, %x, %r, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @norm_recomputed_before_first_consumer_backward(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %n: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %v = tensor.collapse_shape %n [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %a = math.sqrt %g : tensor<4x8xf32>
  %w = tensor.expand_shape %v [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %b = arith.mulf %a, %w : tensor<4x8xf32>
  %c = arith.addf %b, %r : tensor<4x8xf32>
  %d = arith.addf %c, %x : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// The forward value stays where forward still reads it; a value saved in
// two slots leaves both, and each use reads the one recomputation.
// CHECK-LABEL: func @forward_value_stays_two_slots_leave_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK: math.sin %[[E]]
// CHECK: return %{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xf32>
// CHECK-LABEL: func @forward_value_stays_two_slots_leave_backward
// CHECK-SAME: (%[[X:.*]]: tensor<16xf32>, %[[G:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[N:.*]] = offload.recompute(%[[X]])
// CHECK: arith.mulf %[[G]], %[[N]]
// CHECK-NEXT: arith.addf %{{.*}}, %[[N]]
func.func @forward_value_stays_two_slots_leave_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32> {offload.recompute}, tensor<16xf32> {offload.recompute})
    attributes {offload.backward = @forward_value_stays_two_slots_leave_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<16xf32>
  %y = math.sin %e : tensor<16xf32>
  return %y, %x, %e, %e : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @forward_value_stays_two_slots_leave_backward(%x: tensor<16xf32>, %e1: tensor<16xf32>, %e2: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %a = arith.mulf %g, %e1 : tensor<16xf32>
  %b = arith.addf %a, %e2 : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// A matmul is not cheap to recompute.
func.func @matmul_not_recomputed_forward(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> {offload.recompute})
    attributes {offload.backward = @matmul_not_recomputed_backward, offload.num_outputs = 1 : i64} {
  %z = tensor.empty() : tensor<8x8xf32>
  // expected-error @below {{saved result #2 ('linalg.matmul') cannot be recomputed in backward}}
  %m = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = math.exp %m : tensor<8x8xf32>
  return %y, %x, %w, %m : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
func.func @matmul_not_recomputed_backward(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %m: tensor<8x8xf32>, %g: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = arith.mulf %g, %m : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

// A forward argument that backward does not receive cannot feed it.
func.func @argument_not_passed_to_backward_forward(%x: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32> {offload.recompute})
    attributes {offload.backward = @argument_not_passed_to_backward_backward, offload.num_outputs = 1 : i64} {
  // expected-error @below {{saved result #1 ('arith.addf') cannot be recomputed in backward}}
  %e = arith.addf %x, %b : tensor<16xf32>
  %y = math.sin %e : tensor<16xf32>
  return %y, %x, %e : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @argument_not_passed_to_backward_backward(%x: tensor<16xf32>, %e: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %a = arith.mulf %g, %e : tensor<16xf32>
  return %a : tensor<16xf32>
}

// -----

// Recomputing a value another marked value is computed from would leave
// that one without its input.
func.func @marked_values_read_each_other_forward(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32> {offload.recompute}, tensor<16xf32> {offload.recompute})
    attributes {offload.backward = @marked_values_read_each_other_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<16xf32>
  // expected-error @below {{saved result #2 ('math.tanh') is marked for recomputation, but another marked value reads it or is read by it}}
  %t = math.tanh %e : tensor<16xf32>
  return %t, %x, %e, %t : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @marked_values_read_each_other_backward(%x: tensor<16xf32>, %e: tensor<16xf32>, %t: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %a = arith.mulf %g, %e : tensor<16xf32>
  %b = arith.mulf %a, %t : tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// offload-plan's placements follow the interface: the recomputed value (saved
// value 2) leaves the ones that name it, a placement naming nothing else
// goes, and an index the step never had stays for offload-schedule-copies
// to report.
// CHECK-LABEL: func @placements_renumbered_forward
// CHECK: offload.placement offload_waits [1]
// CHECK-NEXT: return
// CHECK-LABEL: func @placements_renumbered_backward
// CHECK-NEXT: offload.placement load_starts [1]
// CHECK-NEXT: math.sqrt
// CHECK-NEXT: offload.recompute
// CHECK-NOT: offload.placement
// CHECK: offload.placement load_starts [0, 7]
// CHECK-NEXT: arith.addf
func.func @placements_renumbered_forward(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> {offload.recompute})
    attributes {offload.backward = @placements_renumbered_backward, offload.num_outputs = 1 : i64} {
  %r = math.tanh %x : tensor<4x8xf32>
  %m = arith.mulf %x, %r : tensor<4x8xf32>
  %n = math.exp %m : tensor<4x8xf32> loc("n")
  %y = math.sin %r : tensor<4x8xf32>
  offload.placement offload_waits [1, 2]
  return %y, %x, %r, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @placements_renumbered_backward(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %n: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  offload.placement load_starts [2, 1]
  %a = math.sqrt %g : tensor<4x8xf32>
  offload.placement load_starts [2]
  %b = arith.mulf %a, %n : tensor<4x8xf32>
  %c = arith.addf %b, %r : tensor<4x8xf32>
  offload.placement load_starts [0, 7]
  %d = arith.addf %c, %x : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
