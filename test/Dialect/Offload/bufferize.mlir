// RUN: offload-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// The copies bufferize to new allocations in the other memory; host tensors
// become memrefs in the #offload.host memory space across function boundaries.
// CHECK-LABEL: func @offload_copies_a_source_read_later_forward
// CHECK-SAME: -> (memref<8x16xf32>, memref<8x16xf32, #offload.host>)
// The offload consumes its source, and %e is still read after it: the
// offload gets a copy of %e.
// CHECK: %[[E:.*]] = memref.alloc() {{.*}} : memref<8x16xf32>
// CHECK: %[[C:.*]] = memref.alloc() {{.*}} : memref<8x16xf32>
// CHECK: memref.copy %[[E]], %[[C]]
// CHECK: %[[H:.*]] = offload.offload_buffer %[[C]] : memref<8x16xf32> -> memref<8x16xf32, #offload.host>
// CHECK: linalg.exp ins(%[[E]] : memref<8x16xf32>)
// CHECK: return %{{.*}}, %[[H]]
// CHECK-LABEL: func @offload_copies_a_source_read_later_backward
// CHECK-SAME: (%[[S:.*]]: memref<8x16xf32, #offload.host>
// CHECK: %[[L:.*]] = offload.load_buffer %[[S]] : memref<8x16xf32, #offload.host> -> memref<8x16xf32>
func.func @offload_copies_a_source_read_later_forward(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32, #offload.host>)
    attributes {offload.backward = @offload_copies_a_source_read_later_backward, offload.num_outputs = 1 : i64} {
  %init = tensor.empty() : tensor<8x16xf32>
  %e = linalg.exp ins(%x : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = offload.offload_to_cpu %e : tensor<8x16xf32> -> tensor<8x16xf32, #offload.host>
  %init2 = tensor.empty() : tensor<8x16xf32>
  %t = linalg.exp ins(%e : tensor<8x16xf32>) outs(%init2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %t, %h : tensor<8x16xf32>, tensor<8x16xf32, #offload.host>
}
func.func @offload_copies_a_source_read_later_backward(%s: tensor<8x16xf32, #offload.host>, %g: tensor<8x16xf32>) -> tensor<8x16xf32> {
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

// -----

// A saved strided slice bufferizes to a strided subview; a copy reads its
// source as one run of bytes, so the slice is first copied into a contiguous
// buffer. A slice of whole rows is contiguous and is copied as it is.
// CHECK-LABEL: func @slices
// CHECK: %[[V:.*]] = memref.subview %[[X:.*]][0, 0] [8, 8] [1, 2]
// CHECK: %[[D:.*]] = memref.alloc() {{.*}} : memref<8x8xf32>
// CHECK: memref.copy %[[V]], %[[D]]
// CHECK: offload.offload_buffer %[[D]] : memref<8x8xf32> -> memref<8x8xf32, #offload.host>
// CHECK: %[[R:.*]] = memref.subview %[[X]][2, 0] [4, 16] [1, 1]
// CHECK-NOT: memref.copy
// CHECK: offload.offload_start %[[R]] : memref<4x16xf32, strided<[16, 1], offset: 32>> -> !offload.buffer_future<memref<4x16xf32, #offload.host>>
func.func @slices(%x: tensor<8x16xf32>) -> (tensor<8x8xf32, #offload.host>, tensor<4x16xf32, #offload.host>) {
  %s = tensor.extract_slice %x[0, 0] [8, 8] [1, 2] : tensor<8x16xf32> to tensor<8x8xf32>
  %h = offload.offload_to_cpu %s : tensor<8x8xf32> -> tensor<8x8xf32, #offload.host>
  %r = tensor.extract_slice %x[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  %f = offload.offload_start %r : tensor<4x16xf32> -> !offload.future<tensor<4x16xf32, #offload.host>>
  %g = offload.wait %f : !offload.future<tensor<4x16xf32, #offload.host>>
  return %h, %g : tensor<8x8xf32, #offload.host>, tensor<4x16xf32, #offload.host>
}

// -----

// The same for a split offload of a strided slice with a dynamic size.
// CHECK-LABEL: func @dynamic_slice
// CHECK: %[[V:.*]] = memref.subview
// CHECK: %[[N:.*]] = memref.dim %[[V]], %{{.*}} : memref<?x8xf32, strided<[16, 2]>>
// CHECK: %[[D:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?x8xf32>
// CHECK: memref.copy %[[V]], %[[D]]
// CHECK: offload.offload_start %[[D]] : memref<?x8xf32> -> !offload.buffer_future<memref<?x8xf32, #offload.host>>
func.func @dynamic_slice(%x: tensor<8x16xf32>, %n: index) -> tensor<?x8xf32, #offload.host> {
  %s = tensor.extract_slice %x[0, 0] [%n, 8] [1, 2] : tensor<8x16xf32> to tensor<?x8xf32>
  %f = offload.offload_start %s : tensor<?x8xf32> -> !offload.future<tensor<?x8xf32, #offload.host>>
  %g = offload.wait %f : !offload.future<tensor<?x8xf32, #offload.host>>
  return %g : tensor<?x8xf32, #offload.host>
}
