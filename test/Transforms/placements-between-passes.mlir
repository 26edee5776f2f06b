// offload-plan's placements (`offload.placement` ops) hold under any pass
// order:
//  - canonicalize, cse and inline between planning and scheduling change
//    nothing on a step they leave alone: the scheduled step is the one the
//    planner predicted;
//  - where they do change the step, the placements stay where they stood
//    and stop nothing: CSE merges an op right after a placement with its
//    twin, canonicalization folds one, and the copies still go where the
//    placements stand, without a remark; the inliner inlines a step into a
//    caller, where the copies of its placements place nothing and are
//    dropped with a remark;
//  - a new plan replaces the placements of the old one (the same plan twice
//    gives the IR of once; a plan that records none leaves none);
//  - a copy whose placement another pass erased is placed by the cost
//    model, with a remark saying so, instead of staying at its wait
//    silently;
//  - no placement outlives the scheduling or the lowering.
// RUN: offload-opt %S/../Examples/tiny_block.mlir --offload-find-saved-activations="min-bytes=0" --offload-plan="plan=hidden schedule=true max-slowdown=0.5 recompute=false" -o %t.planned.mlir
// RUN: offload-opt %t.planned.mlir --canonicalize --cse --inline --offload-insert-offloads --offload-reorder-backward --offload-insert-loads \
// RUN:   --canonicalize --cse --offload-schedule-copies --offload-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BETWEEN
// BETWEEN: predicted ({{.*}}): {{.*}} -> [[PEAK:[0-9.]+ [KMG]?i?B]]; step {{.*}} -> [[STEP:[0-9.]+ [mu]s]] (
// BETWEEN-NEXT: offload-plan predicted for its plan: peak device memory [[PEAK]]; step [[STEP]]

// RUN: offload-opt %t.planned.mlir --offload-plan="plan=hidden schedule=true max-slowdown=0.5 recompute=false" -o %t.replanned.mlir
// RUN: diff %t.planned.mlir %t.replanned.mlir
// RUN: offload-opt %t.planned.mlir --offload-plan="plan=hidden schedule=false max-slowdown=0.5" | FileCheck %s --check-prefix=REPLACED
// REPLACED-NOT: offload.placement

// RUN: sed -e '/offload.placement load_starts/d' %t.planned.mlir | offload-opt --offload-insert-offloads --offload-reorder-backward \
// RUN:   --offload-insert-loads --offload-schedule-copies -o /dev/null 2>&1 | FileCheck %s --check-prefix=DROPPED
// DROPPED: remark: offload-plan's placement of this copy is gone (no offload.placement in its function names it); placed by the cost model instead

// RUN: offload-opt %t.planned.mlir --convert-offload-to-llvm 2>/dev/null | FileCheck %s --check-prefix=LOWERED
// LOWERED-NOT: offload.placement

// The cases below run with one pass between planning and scheduling.
// DEFINE: %{profile} = hbm-gbps=100 d2h-gbps=100 h2d-gbps=100 both-ways-gbps=200 copy-latency-us=0 op-overhead-us=0
// DEFINE: %{copies} = --offload-insert-offloads --offload-reorder-backward --offload-insert-loads --offload-schedule-copies="%{profile}"
// RUN: offload-opt %s -split-input-file --offload-find-saved-activations="min-bytes=0" \
// RUN:   --offload-plan="plan=hidden max-slowdown=1 recompute=false schedule=true %{profile}" -o %t.cases.mlir
// RUN: FileCheck %s --check-prefix=PLANNED < %t.cases.mlir
// RUN: offload-opt %t.cases.mlir -split-input-file --cse %{copies} 2>&1 | FileCheck %s --check-prefix=CSE --implicit-check-not=remark --implicit-check-not=offload.placement
// RUN: offload-opt %t.cases.mlir -split-input-file --canonicalize %{copies} 2>&1 | FileCheck %s --check-prefix=CANON --implicit-check-not=remark --implicit-check-not=offload.placement
// RUN: offload-opt %t.cases.mlir -split-input-file --inline %{copies} 2>&1 | FileCheck %s --check-prefix=INLINE

// -----

// The plan starts the load of %a right before %t3, the twin of %t1
// (offload.placement load_starts [0] there). CSE merges the two, and the
// load starts where the placement stands.
// PLANNED-LABEL: func.func @cse_twin_backward
// PLANNED: math.sin
// PLANNED-NEXT: offload.placement load_starts [0]
// PLANNED-NEXT: math.exp %arg1
// CSE-LABEL: func.func @cse_twin_backward
// CSE: %[[T1:.*]] = math.exp %arg1
// CSE-NEXT: %[[T2:.*]] = math.sin %[[T1]]
// CSE-NEXT: %[[S:.*]] = offload.load_start %arg0
// CSE-NEXT: %[[L:.*]] = offload.wait %[[S]]
// CSE-NEXT: arith.mulf %[[T1]], %[[L]]
func.func @cse_twin_forward(%x: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @cse_twin_backward, offload.num_outputs = 1 : i64} {
  %a = math.exp %x : tensor<1024x1024xf32>
  %b = math.exp %a : tensor<1024x1024xf32>
  %c = math.exp %b : tensor<1024x1024xf32>
  %d = math.exp %c : tensor<1024x1024xf32>
  return %d, %a : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
func.func @cse_twin_backward(%a: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %t1 = math.exp %g : tensor<1024x1024xf32>
  %t2 = math.sin %t1 : tensor<1024x1024xf32>
  %t3 = math.exp %g : tensor<1024x1024xf32>
  %r = arith.mulf %t3, %a : tensor<1024x1024xf32>
  %s = arith.addf %r, %t2 : tensor<1024x1024xf32>
  return %s : tensor<1024x1024xf32>
}

// -----

// The plan starts the load of %a right before %t3, which canonicalization
// folds into a constant (and hoists); the load starts where the placement
// stands, right before its consumer.
// PLANNED-LABEL: func.func @folded_backward
// PLANNED: math.sin
// PLANNED-NEXT: offload.placement load_starts [0]
// PLANNED-NEXT: math.exp %cst
// CANON-LABEL: func.func @folded_backward
// CANON: math.sin
// CANON-NEXT: %[[S:.*]] = offload.load_start %arg0
// CANON-NEXT: %[[L:.*]] = offload.wait %[[S]]
// CANON-NEXT: arith.mulf %[[L]], %cst
func.func @folded_forward(%x: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @folded_backward, offload.num_outputs = 1 : i64} {
  %a = math.exp %x : tensor<1024x1024xf32>
  %b = math.exp %a : tensor<1024x1024xf32>
  %c = math.exp %b : tensor<1024x1024xf32>
  %d = math.exp %c : tensor<1024x1024xf32>
  return %d, %a : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
func.func @folded_backward(%a: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %one = arith.constant dense<1.0> : tensor<1024x1024xf32>
  %t1 = math.exp %g : tensor<1024x1024xf32>
  %t2 = math.sin %t1 : tensor<1024x1024xf32>
  %t3 = math.exp %one : tensor<1024x1024xf32>
  %r = arith.mulf %t3, %a : tensor<1024x1024xf32>
  %s = arith.addf %r, %t2 : tensor<1024x1024xf32>
  return %s : tensor<1024x1024xf32>
}

// -----

// The inliner inlines forward and backward into the driver, placements and
// all (after the plan the step has no copy yet). The step keeps its own
// placements; the copies in the driver place nothing and are dropped, each
// with a remark.
// PLANNED-LABEL: func.func @inlined_forward
// PLANNED: offload.placement offload_waits [0]
// PLANNED-LABEL: func.func @inlined_backward
// PLANNED: math.sin
// PLANNED-NEXT: offload.placement load_starts [0]
// PLANNED-NEXT: math.cos
// INLINE-COUNT-2: remark: places nothing: it is not at the top level of a training step's forward or backward function; dropped
// INLINE-LABEL: func.func @inlined_backward
// INLINE: math.sin
// INLINE-NEXT: offload.load_start %arg0
// INLINE-NEXT: math.cos
// INLINE-LABEL: func.func @inlined_driver
// INLINE-NOT: offload.placement
// INLINE-NOT: call
// INLINE: return
func.func @inlined_forward(%x: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>)
    attributes {offload.backward = @inlined_backward, offload.num_outputs = 1 : i64} {
  %a = math.exp %x : tensor<1024x1024xf32>
  %b = math.exp %a : tensor<1024x1024xf32>
  %c = math.exp %b : tensor<1024x1024xf32>
  %d = math.exp %c : tensor<1024x1024xf32>
  return %d, %a : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
func.func @inlined_backward(%a: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %t1 = math.exp %g : tensor<1024x1024xf32>
  %t2 = math.sin %t1 : tensor<1024x1024xf32>
  %t3 = math.cos %g : tensor<1024x1024xf32>
  %r = arith.mulf %t3, %a : tensor<1024x1024xf32>
  %s = arith.addf %r, %t2 : tensor<1024x1024xf32>
  return %s : tensor<1024x1024xf32>
}
func.func @inlined_driver(%x: tensor<1024x1024xf32>, %g: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %y, %a = func.call @inlined_forward(%x) : (tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>)
  %dx = func.call @inlined_backward(%a, %g) : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %dx : tensor<1024x1024xf32>
}
