// RUN: offload-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// The copies bufferize to new allocations in the other memory; host tensors
// become memrefs in the #offload.host memory space across function boundaries.
// CHECK-LABEL: func @forward
// CHECK-SAME: -> (memref<8x16xf32>, memref<8x16xf32, #offload.host>)
// CHECK: %[[E:.*]] = memref.alloc() {{.*}} : memref<8x16xf32>
// CHECK: %[[H:.*]] = offload.offload_buffer %[[E]] : memref<8x16xf32> -> memref<8x16xf32, #offload.host>
// CHECK: return %{{.*}}, %[[H]]
// CHECK-LABEL: func @backward
// CHECK-SAME: (%[[S:.*]]: memref<8x16xf32, #offload.host>
// CHECK: %[[L:.*]] = offload.load_buffer %[[S]] : memref<8x16xf32, #offload.host> -> memref<8x16xf32>
func.func @forward(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32, #offload.host>)
    attributes {offload.backward = @backward, offload.num_outputs = 1 : i64} {
  %init = tensor.empty() : tensor<8x16xf32>
  %e = linalg.exp ins(%x : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = offload.offload_to_cpu %e : tensor<8x16xf32> -> tensor<8x16xf32, #offload.host>
  %init2 = tensor.empty() : tensor<8x16xf32>
  %t = linalg.exp ins(%e : tensor<8x16xf32>) outs(%init2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %t, %h : tensor<8x16xf32>, tensor<8x16xf32, #offload.host>
}
func.func @backward(%s: tensor<8x16xf32, #offload.host>, %g: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %l = offload.load_to_gpu %s : tensor<8x16xf32, #offload.host> -> tensor<8x16xf32>
  %init = tensor.empty() : tensor<8x16xf32>
  %r = linalg.mul ins(%l, %g : tensor<8x16xf32>, tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// Dynamic shapes carry over.
// CHECK-LABEL: func @dynamic
// CHECK: offload.offload_buffer %{{.*}} : memref<?x16xf32> -> memref<?x16xf32, #offload.host>
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32, #offload.host> {
  %h = offload.offload_to_cpu %x : tensor<?x16xf32> -> tensor<?x16xf32, #offload.host>
  return %h : tensor<?x16xf32, #offload.host>
}
