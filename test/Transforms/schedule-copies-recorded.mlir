// Where offload-plan recorded its placements (`offload.load_starts` on
// backward ops, `offload.offload_waits` on forward ops), offload-schedule-
// copies places the copies there instead of deriving placements again, and
// removes the stamps. Without the stamps, the first case would place
// otherwise: the load of %arg1 above %a, the offload's wait below math.sin.
// A wait at the end of forward is recorded on the return (every copy has a
// placement; a missing one is a remark, see placements-between-passes.mlir).
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1000 h2d-gbps=1000 both-ways-gbps=2000 copy-latency-us=0 op-overhead-us=0" | FileCheck %s

// Two loads stamped on one op start there in the stamp's order; the load
// of %arg1, whose wait is right above that op, starts before that wait,
// as the planner issues a position's loads before its waits. The offload of
// %e is waited right before the stamped math.sin.

// CHECK-LABEL: func @recorded_placements_used_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT: %[[W:.*]] = offload.wait %[[F]]
// CHECK-NEXT: math.sin
// CHECK-NOT: offload.offload_waits
// CHECK-LABEL: func @recorded_placements_used_backward
// CHECK-NOT: offload.load_starts
// CHECK: %[[A:.*]] = math.exp %arg3
// CHECK-NEXT: %[[S1:.*]] = offload.load_start %arg1
// CHECK-NEXT: %[[S2:.*]] = offload.load_start %arg2
// CHECK-NEXT: %[[S0:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[L1:.*]] = offload.wait %[[S1]]
// CHECK-NEXT: %[[B:.*]] = arith.mulf %[[A]], %[[L1]]
// CHECK-NEXT: %[[C:.*]] = math.exp %[[B]]
// CHECK-NOT: offload.load_starts
func.func @recorded_placements_used_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @recorded_placements_used_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %y = math.sin %e {offload.offload_waits = array<i64: 0>} : tensor<1000xf32>
  %p = math.exp %y : tensor<1000xf32>
  %h1 = offload.offload_to_cpu %p : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %q = math.exp %p : tensor<1000xf32>
  %h2 = offload.offload_to_cpu %q : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %q : tensor<1000xf32>
  return {offload.offload_waits = array<i64: 1, 2>} %z, %h, %h1, %h2 : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>
}
func.func @recorded_placements_used_backward(%s0: tensor<1000xf32, #offload.host>, %s1: tensor<1000xf32, #offload.host>, %s2: tensor<1000xf32, #offload.host>,
    %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  %l1 = offload.load_to_gpu %s1 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %b = arith.mulf %a, %l1 {offload.load_starts = array<i64: 1, 2, 0>} : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l2 = offload.load_to_gpu %s2 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %d = arith.mulf %c, %l2 : tensor<1000xf32>
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %d, %l0 : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// A stamp below the load's wait (the IR changed since the plan) leaves the
// load where it is; a start does not cross an op of unknown effects.

// CHECK-LABEL: func @stamp_below_wait_ignored_backward
// CHECK: %[[A:.*]] = math.exp %arg2
// CHECK-NEXT: "test.unknown"()
// CHECK-NEXT: %[[S1:.*]] = offload.load_start %arg1
// CHECK-NEXT: %[[B:.*]] = math.exp %[[A]]
// CHECK-NEXT: %[[S0:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[L0:.*]] = offload.wait %[[S0]]
// CHECK-NEXT: %[[C:.*]] = arith.mulf %[[B]], %[[L0]]
// CHECK-NEXT: %[[L1:.*]] = offload.wait %[[S1]]
// CHECK-NEXT: arith.mulf %[[C]], %[[L1]] :
func.func @stamp_below_wait_ignored_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @stamp_below_wait_ignored_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %p = math.exp %e : tensor<1000xf32>
  %h1 = offload.offload_to_cpu %p : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %p : tensor<1000xf32>
  return {offload.offload_waits = array<i64: 0, 1>} %z, %h, %h1 : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>
}
func.func @stamp_below_wait_ignored_backward(%s0: tensor<1000xf32, #offload.host>, %s1: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g {offload.load_starts = array<i64: 1>} : tensor<1000xf32>
  "test.unknown"() : () -> ()
  %b = math.exp %a : tensor<1000xf32>
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %b, %l0 : tensor<1000xf32>
  %l1 = offload.load_to_gpu %s1 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %d = arith.mulf %c, %l1 {offload.load_starts = array<i64: 0>} : tensor<1000xf32>
  return %d : tensor<1000xf32>
}

// -----

func.func @load_starts_index_out_of_range_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @load_starts_index_out_of_range_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %e, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @load_starts_index_out_of_range_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  // expected-error @below {{'offload.load_starts' names saved value 3, but the step saves 1}}
  %a = math.exp %g {offload.load_starts = array<i64: 3>} : tensor<1000xf32>
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %a, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}

// -----

func.func @load_starts_on_forward_op_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @load_starts_on_forward_op_backward, offload.num_outputs = 1 : i64} {
  // expected-error @below {{'offload.load_starts' on an op of forward: loads start in backward}}
  %e = math.exp %x {offload.load_starts = array<i64: 0>} : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %e, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @load_starts_on_forward_op_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %g, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}

// -----

func.func @offload_waits_not_indices_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @offload_waits_not_indices_backward, offload.num_outputs = 1 : i64} {
  // expected-error @below {{'offload.offload_waits' to be a non-empty array<i64> of saved value indices}}
  %e = math.exp %x {offload.offload_waits = [0]} : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %e, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @offload_waits_not_indices_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %g, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}
