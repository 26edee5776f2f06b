// RUN: offload-opt %s -convert-trace-to-calls | FileCheck %s

// One declaration per target and signature; the call keeps every attribute
// of the traced op under `trace.`.
// CHECK-DAG: func.func private @aten.mm.default_0(tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32> attributes {trace.target = "aten.mm.default"}
// CHECK-DAG: func.func private @aten.mm.default_1(tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> attributes {trace.target = "aten.mm.default"}
// CHECK-DAG: func.func private @aten.t.default_0(tensor<4x8xf32>) -> tensor<8x4xf32> attributes {trace.target = "aten.t.default"}
// CHECK-DAG: func.func private @aten.native_layer_norm.default_0(tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK-LABEL: func @traced_ops_become_calls
// CHECK: %[[T:.*]] = call @aten.t.default_0(%arg0) {trace.args = [#trace.operand<0>], trace.node = "t"}
// CHECK: %[[M:.*]] = call @aten.mm.default_0(%arg0, %[[T]]) {trace.node = "mm"}
// CHECK: %[[M2:.*]] = call @aten.mm.default_1(%[[M]], %[[M]]) {trace.node = "mm_1"}
// CHECK: %[[N:.*]]:3 = call @aten.native_layer_norm.default_0(%[[M2]])
// CHECK: call @aten.add_.Tensor_0(%[[N]]#0, %[[M]]) {trace.mutates = array<i64: 0>}
// CHECK: call @aten.mm.default_1(%[[N]]#0, %[[M]])
func.func @traced_ops_become_calls(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %t = trace.view "aten.t.default"(%a) {node = "t", args = [#trace.operand<0>]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %m = trace.op "aten.mm.default"(%a, %t) {node = "mm"} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %m2 = trace.op "aten.mm.default"(%m, %m) {node = "mm_1"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %n:3 = trace.op "aten.native_layer_norm.default"(%m2) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %s = trace.op "aten.add_.Tensor"(%n#0, %m) {mutates = array<i64: 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = trace.op "aten.mm.default"(%n#0, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
