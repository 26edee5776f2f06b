// `offload.placement` records where offload-plan places copies. It prints
// and parses in both forms, and other passes keep it where it stands without
// it stopping them: canonicalization and CSE keep it (never dead, never
// merged) and still merge and fold the ops beside it, loop-invariant code
// motion hoists the ops beside it and not it, and the inliner moves it with
// its function's body (bufferization: placement-bufferized.mlir).
// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -split-input-file -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -canonicalize -cse -loop-invariant-code-motion -inline | FileCheck %s --check-prefix=PASSES

// CHECK-LABEL: func @placement_round_trip
// CHECK-NEXT: offload.placement load_starts [0, 2]
// CHECK-NEXT: math.exp
// CHECK-NEXT: offload.placement offload_waits [1]
// CHECK-NEXT: return
func.func @placement_round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  offload.placement load_starts [0, 2]
  %e = math.exp %x : tensor<4xf32>
  offload.placement offload_waits [1]
  return %e : tensor<4xf32>
}

// -----

// The twin after the placement folds into the one before it; the placements
// stay where they stood (two alike are not merged), and so does the
// multiplication by one that folds away after them.
// PASSES-LABEL: func @placement_beside_merged_twins
// PASSES-NEXT: %[[A:.*]] = math.exp %arg0
// PASSES-NEXT: offload.placement load_starts [0]
// PASSES-NEXT: offload.placement load_starts [0]
// PASSES-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[A]]
// PASSES-NEXT: return %[[S]]
func.func @placement_beside_merged_twins(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = math.exp %x : tensor<4xf32>
  offload.placement load_starts [0]
  %b = math.exp %x : tensor<4xf32>
  offload.placement load_starts [0]
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %c = arith.mulf %b, %one : tensor<4xf32>
  %s = arith.addf %a, %c : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// The loop-invariant op leaves the loop; the placement does not.
// PASSES-LABEL: func @placement_stays_in_loop
// PASSES: %[[E:.*]] = math.exp %arg0
// PASSES-NEXT: scf.for
// PASSES-NEXT: offload.placement load_starts [0]
// PASSES-NEXT: arith.addf %{{.*}}, %[[E]]
func.func @placement_stays_in_loop(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<4xf32> {
    offload.placement load_starts [0]
    %e = math.exp %x : tensor<4xf32>
    %s = arith.addf %acc, %e : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// The inliner inlines a function with a placement; the placement comes along.
// PASSES-LABEL: func @placement_inlined_caller
// PASSES-NEXT: offload.placement offload_waits [1]
// PASSES-NEXT: math.exp
// PASSES-NOT: call
func.func private @placement_inlined_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  offload.placement offload_waits [1]
  %e = math.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}
func.func @placement_inlined_caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @placement_inlined_callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
