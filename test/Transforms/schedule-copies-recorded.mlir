// Where offload-plan recorded its placements (`offload.placement`:
// `load_starts` in backward, `offload_waits` in forward), offload-schedule-
// copies places the copies there instead of deriving placements again, and
// erases the placements. Without them, the first case would place
// otherwise: the load of %arg1 above %a, the offload's wait below math.sin.
// A wait at the end of forward is recorded before the return (every copy has
// a placement; a missing one is a remark, see placements-between-passes.mlir).
// A placement that places nothing where it stands is dropped with a remark,
// and its copies are placed as without a plan, with a remark each: the pass
// never fails on a placement.
// RUN: offload-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics \
// RUN:   -offload-schedule-copies="hbm-gbps=1 d2h-gbps=1000 h2d-gbps=1000 both-ways-gbps=2000 copy-latency-us=0 op-overhead-us=0" | FileCheck %s

// Three loads placed at one point start there in the placement's order;
// offload-insert-loads put the load of %arg1 right before its consumer, after
// the placement, so the load's wait stays below them. The offload of %e is
// waited where its placement stands, right before math.sin.

// CHECK-LABEL: func @recorded_placements_used_forward
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[F:.*]] = offload.offload_start %[[E]]
// CHECK-NEXT: %[[W:.*]] = offload.wait %[[F]]
// CHECK-NEXT: math.sin
// CHECK-LABEL: func @recorded_placements_used_backward
// CHECK: %[[A:.*]] = math.exp %arg3
// CHECK-NEXT: %[[S1:.*]] = offload.load_start %arg1
// CHECK-NEXT: %[[S2:.*]] = offload.load_start %arg2
// CHECK-NEXT: %[[S0:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[L1:.*]] = offload.wait %[[S1]]
// CHECK-NEXT: %[[B:.*]] = arith.mulf %[[A]], %[[L1]]
// CHECK-NEXT: %[[C:.*]] = math.exp %[[B]]
func.func @recorded_placements_used_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @recorded_placements_used_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  offload.placement offload_waits [0]
  %y = math.sin %e : tensor<1000xf32>
  %p = math.exp %y : tensor<1000xf32>
  %h1 = offload.offload_to_cpu %p : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %q = math.exp %p : tensor<1000xf32>
  %h2 = offload.offload_to_cpu %q : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %q : tensor<1000xf32>
  offload.placement offload_waits [1, 2]
  return %z, %h, %h1, %h2 : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>
}
func.func @recorded_placements_used_backward(%s0: tensor<1000xf32, #offload.host>, %s1: tensor<1000xf32, #offload.host>, %s2: tensor<1000xf32, #offload.host>,
    %g: tensor<1000xf32>) -> tensor<1000xf32> {
  %a = math.exp %g : tensor<1000xf32>
  offload.placement load_starts [1, 2, 0]
  %l1 = offload.load_to_gpu %s1 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %b = arith.mulf %a, %l1 : tensor<1000xf32>
  %c = math.exp %b : tensor<1000xf32>
  %l2 = offload.load_to_gpu %s2 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %d = arith.mulf %c, %l2 : tensor<1000xf32>
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %r = arith.mulf %d, %l0 : tensor<1000xf32>
  return %r : tensor<1000xf32>
}

// -----

// A placement below the load's wait (the IR changed since the plan) leaves
// the load where it is; a start does not cross an op of unknown effects.

// CHECK-LABEL: func @placement_below_wait_ignored_backward
// CHECK: %[[A:.*]] = math.exp %arg2
// CHECK-NEXT: "test.unknown"()
// CHECK-NEXT: %[[S1:.*]] = offload.load_start %arg1
// CHECK-NEXT: %[[B:.*]] = math.exp %[[A]]
// CHECK-NEXT: %[[S0:.*]] = offload.load_start %arg0
// CHECK-NEXT: %[[L0:.*]] = offload.wait %[[S0]]
// CHECK-NEXT: %[[C:.*]] = arith.mulf %[[B]], %[[L0]]
// CHECK-NEXT: %[[L1:.*]] = offload.wait %[[S1]]
// CHECK-NEXT: arith.mulf %[[C]], %[[L1]] :
func.func @placement_below_wait_ignored_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @placement_below_wait_ignored_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %p = math.exp %e : tensor<1000xf32>
  %h1 = offload.offload_to_cpu %p : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  %z = math.sin %p : tensor<1000xf32>
  offload.placement offload_waits [0, 1]
  return %z, %h, %h1 : tensor<1000xf32>, tensor<1000xf32, #offload.host>, tensor<1000xf32, #offload.host>
}
func.func @placement_below_wait_ignored_backward(%s0: tensor<1000xf32, #offload.host>, %s1: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  offload.placement load_starts [1]
  %a = math.exp %g : tensor<1000xf32>
  "test.unknown"() : () -> ()
  %b = math.exp %a : tensor<1000xf32>
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %b, %l0 : tensor<1000xf32>
  offload.placement load_starts [0]
  %l1 = offload.load_to_gpu %s1 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %d = arith.mulf %c, %l1 : tensor<1000xf32>
  return %d : tensor<1000xf32>
}

// -----

// A placement naming a saved value the step does not have places nothing for
// it; the step's copies without a placement are placed by the cost model,
// each with a remark.

// CHECK-LABEL: func @placement_index_out_of_range_backward
// CHECK-NOT: offload.placement
func.func @placement_index_out_of_range_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @placement_index_out_of_range_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  // expected-remark @below {{offload-plan's placement of this copy is gone (no offload.placement in its function names it); placed by the cost model instead}}
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %e, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @placement_index_out_of_range_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  // expected-remark @below {{names saved value 3, but the step saves 1}}
  offload.placement load_starts [3]
  %a = math.exp %g : tensor<1000xf32>
  // expected-remark @below {{offload-plan's placement of this copy is gone}}
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %a, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}

// -----

// A placement of load starts in forward (or of offload waits in backward)
// places nothing; the one of the right kind still places its copy.

// CHECK-LABEL: func @placement_of_wrong_kind_forward
// CHECK-NOT: offload.placement
// CHECK: %[[F:.*]] = offload.offload_start
// CHECK-NEXT: offload.wait %[[F]]
// CHECK-NEXT: math.sin
func.func @placement_of_wrong_kind_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @placement_of_wrong_kind_backward, offload.num_outputs = 1 : i64} {
  // expected-remark @below {{a placement of load_starts in forward places nothing: loads start in backward, offloads are waited for in forward}}
  offload.placement load_starts [0]
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  offload.placement offload_waits [0]
  %y = math.sin %e : tensor<1000xf32>
  %z = math.sin %y : tensor<1000xf32>
  return %z, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @placement_of_wrong_kind_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>) -> tensor<1000xf32> {
  // expected-remark @below {{a placement of offload_waits in backward places nothing}}
  offload.placement offload_waits [0]
  %a = math.exp %g : tensor<1000xf32>
  // expected-remark @below {{offload-plan's placement of this copy is gone}}
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %a, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}

// -----

// Only placements at the top level of a step's forward or backward place
// copies; one nested in an op's region, or in a function of no step, is
// dropped with a remark. The step has no placement, so its copies are
// placed by the cost model without one.

// CHECK-LABEL: func @placement_out_of_step_forward
// CHECK-LABEL: func @placement_out_of_step_backward
// CHECK-NOT: offload.placement
// CHECK-LABEL: func @placement_out_of_step_driver
// CHECK-NOT: offload.placement
func.func @placement_out_of_step_forward(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32, #offload.host>)
    attributes {offload.backward = @placement_out_of_step_backward, offload.num_outputs = 1 : i64} {
  %e = math.exp %x : tensor<1000xf32>
  %h = offload.offload_to_cpu %e : tensor<1000xf32> -> tensor<1000xf32, #offload.host>
  return %e, %h : tensor<1000xf32>, tensor<1000xf32, #offload.host>
}
func.func @placement_out_of_step_backward(%s0: tensor<1000xf32, #offload.host>, %g: tensor<1000xf32>, %p: i1) -> tensor<1000xf32> {
  %a = scf.if %p -> tensor<1000xf32> {
    // expected-remark @below {{places nothing: it is not at the top level of a training step's forward or backward function; dropped}}
    offload.placement load_starts [0]
    %b = math.exp %g : tensor<1000xf32>
    scf.yield %b : tensor<1000xf32>
  } else {
    scf.yield %g : tensor<1000xf32>
  }
  %l0 = offload.load_to_gpu %s0 : tensor<1000xf32, #offload.host> -> tensor<1000xf32>
  %c = arith.mulf %a, %l0 : tensor<1000xf32>
  return %c : tensor<1000xf32>
}
func.func @placement_out_of_step_driver(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  // expected-remark @below {{places nothing: it is not at the top level of a training step's forward or backward function; dropped}}
  offload.placement load_starts [0]
  %e = math.exp %x : tensor<1000xf32>
  return %e : tensor<1000xf32>
}
