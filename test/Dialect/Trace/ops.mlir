// RUN: offload-opt %s -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @ops
func.func @ops(%a: tensor<8x1024xbf16>, %b: tensor<1024x1024xbf16>, %g: tensor<1024xbf16>)
    -> (tensor<1024x8xbf16>, tensor<16x1024xbf16>, tensor<8x1024xbf16>) {
  // CHECK: trace.op "aten.mm.default"(%{{.*}}, %{{.*}}) {args = [#trace.operand<0>, #trace.operand<1>], node = "mm"} : (tensor<8x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<8x1024xbf16>
  %0 = trace.op "aten.mm.default"(%a, %b) {node = "mm", args = [#trace.operand<0>, #trace.operand<1>]}
      : (tensor<8x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<8x1024xbf16>
  // Non-tensor arguments of every kind, nested lists and keyword arguments.
  // CHECK: trace.op "aten.native_layer_norm.default"(%{{.*}}, %{{.*}}) {args = [#trace.operand<0>, [1024], #trace.operand<1>, unit, 9.9999999999999995E-7], node = "native_layer_norm"}
  // CHECK-SAME: -> (tensor<8x1024xbf16>, tensor<8x1xf32>, tensor<8x1xf32>)
  %1:3 = trace.op "aten.native_layer_norm.default"(%0, %g)
      {node = "native_layer_norm", args = [#trace.operand<0>, [1024], #trace.operand<1>, unit, 1.0e-6 : f64]}
      : (tensor<8x1024xbf16>, tensor<1024xbf16>) -> (tensor<8x1024xbf16>, tensor<8x1xf32>, tensor<8x1xf32>)
  // CHECK: trace.op "aten.cat.default"(%{{.*}}, %{{.*}}) {args = {{\[}}[#trace.operand<0>, #trace.operand<1>], 0], node = "cat"}
  %2 = trace.op "aten.cat.default"(%1#0, %0) {node = "cat", args = [[#trace.operand<0>, #trace.operand<1>], 0]}
      : (tensor<8x1024xbf16>, tensor<8x1024xbf16>) -> tensor<16x1024xbf16>
  // CHECK: trace.op "aten._to_copy.default"(%{{.*}}) {args = [#trace.operand<0>], kwargs = {dtype = #trace.py<"torch.float32">, non_blocking = false}, node = "_to_copy"}
  %3 = trace.op "aten._to_copy.default"(%0) {node = "_to_copy", args = [#trace.operand<0>],
      kwargs = {dtype = #trace.py<"torch.float32">, non_blocking = false}}
      : (tensor<8x1024xbf16>) -> tensor<8x1024xf32>
  // CHECK: trace.op "aten.add_.Tensor"(%{{.*}}, %{{.*}}) {mutates = array<i64: 0>, node = "add_"}
  %4 = trace.op "aten.add_.Tensor"(%0, %0) {node = "add_", mutates = array<i64: 0>}
      : (tensor<8x1024xbf16>, tensor<8x1024xbf16>) -> tensor<8x1024xbf16>
  // CHECK: trace.view "aten.t.default"(%{{.*}}) {args = [#trace.operand<0>], node = "t"} : (tensor<8x1024xbf16>) -> tensor<1024x8xbf16>
  %5 = trace.view "aten.t.default"(%4) {node = "t", args = [#trace.operand<0>]}
      : (tensor<8x1024xbf16>) -> tensor<1024x8xbf16>
  return %5, %2, %0 : tensor<1024x8xbf16>, tensor<16x1024xbf16>, tensor<8x1024xbf16>
}

// -----

// CHECK-LABEL: func @no_operands
// CHECK: trace.op "aten.zeros.default"() {args = {{\[}}[4]], node = "zeros"} : () -> tensor<4xf32>
func.func @no_operands() -> tensor<4xf32> {
  %0 = trace.op "aten.zeros.default"() {node = "zeros", args = [[4]]} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
