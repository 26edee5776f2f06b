// RUN: offload-opt %s -split-input-file | FileCheck %s
// Round trip through the custom form, then through the generic form.
// RUN: offload-opt %s -split-input-file | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s
// RUN: offload-opt %s -split-input-file -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func @round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<8x1024xbf16>)
// CHECK: %[[H:.*]] = offload.offload_to_cpu %[[X]] : tensor<8x1024xbf16> -> tensor<8x1024xbf16, #offload.host>
// CHECK: %[[D:.*]] = offload.load_to_gpu %[[H]] : tensor<8x1024xbf16, #offload.host> -> tensor<8x1024xbf16>
// CHECK: return %[[D]]
// GENERIC-LABEL: "func.func"() <{function_type = {{.*}}, sym_name = "round_trip"}>
// GENERIC: "offload.offload_to_cpu"(%{{.*}}) : (tensor<8x1024xbf16>) -> tensor<8x1024xbf16, #offload.host>
// GENERIC: "offload.load_to_gpu"(%{{.*}}) : (tensor<8x1024xbf16, #offload.host>) -> tensor<8x1024xbf16>
func.func @round_trip(%x: tensor<8x1024xbf16>) -> tensor<8x1024xbf16> {
  %h = offload.offload_to_cpu %x : tensor<8x1024xbf16> -> tensor<8x1024xbf16, #offload.host>
  %d = offload.load_to_gpu %h : tensor<8x1024xbf16, #offload.host> -> tensor<8x1024xbf16>
  return %d : tensor<8x1024xbf16>
}

// -----

// CHECK-LABEL: func @dynamic_and_scalar
// CHECK: offload.offload_to_cpu %{{.*}} : tensor<?x4xf32> -> tensor<?x4xf32, #offload.host>
// CHECK: offload.offload_to_cpu %{{.*}} : tensor<f32> -> tensor<f32, #offload.host>
func.func @dynamic_and_scalar(%x: tensor<?x4xf32>, %s: tensor<f32>)
    -> (tensor<?x4xf32, #offload.host>, tensor<f32, #offload.host>) {
  %h = offload.offload_to_cpu %x : tensor<?x4xf32> -> tensor<?x4xf32, #offload.host>
  %g = offload.offload_to_cpu %s : tensor<f32> -> tensor<f32, #offload.host>
  return %h, %g : tensor<?x4xf32, #offload.host>, tensor<f32, #offload.host>
}

// -----

// A training step with host-resident saved values: the contract attributes
// and host types survive the round trip.
// CHECK-LABEL: func @step_with_host_saved_value_forward
// CHECK-SAME: -> (tensor<4xf32>, tensor<4xf32, #offload.host>)
// CHECK-SAME: attributes {offload.backward = @step_with_host_saved_value_backward, offload.num_outputs = 1 : i64}
func.func @step_with_host_saved_value_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32, #offload.host>)
    attributes {offload.backward = @step_with_host_saved_value_backward, offload.num_outputs = 1 : i64} {
  %0 = math.exp %x : tensor<4xf32>
  %h = offload.offload_to_cpu %0 : tensor<4xf32> -> tensor<4xf32, #offload.host>
  %1 = math.exp %0 : tensor<4xf32>
  return %1, %h : tensor<4xf32>, tensor<4xf32, #offload.host>
}
// CHECK-LABEL: func @step_with_host_saved_value_backward
// CHECK-SAME: (%{{.*}}: tensor<4xf32, #offload.host>, %{{.*}}: tensor<4xf32>)
func.func @step_with_host_saved_value_backward(%s: tensor<4xf32, #offload.host>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %0 = offload.load_to_gpu %s : tensor<4xf32, #offload.host> -> tensor<4xf32>
  %1 = arith.mulf %0, %g : tensor<4xf32>
  return %1 : tensor<4xf32>
}
