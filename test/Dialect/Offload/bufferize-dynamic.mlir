// On dynamic shapes, one-shot-bufferize reads the size of an offloaded
// buffer after its copy starts (`memref.dim`, for the next allocation). That
// reads the descriptor, not the memory the copy consumes: the IR verifies,
// and buffer deallocation still hands the source to the runtime.
// RUN: offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" | FileCheck %s
// RUN: offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s --check-prefix=DEALLOC

// CHECK-LABEL: func @size_read_after_start
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?xf32>
// CHECK: offload.offload_start %[[A]] : memref<?xf32>
// CHECK-NEXT: memref.dim %[[A]]
// DEALLOC-LABEL: func @size_read_after_start
// DEALLOC: %[[A:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?xf32>
// DEALLOC-NOT: memref.copy
// DEALLOC: offload.offload_start %[[A]] release_source : memref<?xf32>
func.func @size_read_after_start(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32, #offload.host>) {
  %c0 = arith.constant 0 : index
  %a = linalg.exp ins(%x : tensor<?xf32>) outs(%x : tensor<?xf32>) -> tensor<?xf32>
  %f = offload.offload_start %a : tensor<?xf32> -> !offload.future<tensor<?xf32, #offload.host>>
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %b = linalg.exp ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %h = offload.wait %f : !offload.future<tensor<?xf32, #offload.host>>
  return %b, %h : tensor<?xf32>, tensor<?xf32, #offload.host>
}
