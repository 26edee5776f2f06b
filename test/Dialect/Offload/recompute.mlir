// RUN: offload-opt %s | offload-opt | FileCheck %s
// RUN: offload-opt %s -offload-inline-recomputes | FileCheck %s --check-prefix=INLINE

// CHECK-LABEL: func @round_trip
// CHECK: %[[R:.*]] = offload.recompute(%{{.*}}, %{{.*}}) {name = "n"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[A]], %[[B]] : tensor<4xf32>
// CHECK-NEXT:   offload.yield %[[M]] : tensor<4xf32>
// CHECK-NEXT: }
// INLINE-LABEL: func @round_trip
// INLINE-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// INLINE-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : tensor<4xf32>
// INLINE-NEXT: %[[S:.*]] = math.sqrt %[[M]]
// INLINE-NEXT: return %[[S]]
// INLINE-NOT: offload.recompute
func.func @round_trip(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = offload.recompute(%x, %y) {name = "n"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %m = arith.mulf %a, %b : tensor<4xf32>
    offload.yield %m : tensor<4xf32>
  }
  %s = math.sqrt %r : tensor<4xf32>
  return %s : tensor<4xf32>
}
