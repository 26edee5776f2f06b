// RUN: offload-opt %s -split-input-file -verify-diagnostics \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s

// The offload takes over a source its block owns: no deallocation of the
// source is left, the host buffer it returns is retained.
// CHECK-LABEL: func @owned_source
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[H:.*]] = offload.offload_buffer %[[D]] release_source
// CHECK-NOT: memref.dealloc %[[D]]
// CHECK: return %[[H]]
func.func @owned_source(%x: f32) -> memref<4x8xf32, #offload.host> {
  %d = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<4x8xf32>)
  %h = offload.offload_buffer %d : memref<4x8xf32> -> memref<4x8xf32, #offload.host>
  return %h : memref<4x8xf32, #offload.host>
}

// -----

// The async form, and a host buffer nothing returns: freed (the lowering
// turns a host memref.dealloc into offload_rt_mlir_free_host).
// CHECK-LABEL: func @owned_source_start
// CHECK: %[[D:.*]] = memref.alloc() : memref<16xf32>
// CHECK: %[[F:.*]] = offload.offload_start %[[D]] release_source
// CHECK: %[[H:.*]] = offload.wait %[[F]]
// CHECK-NOT: memref.dealloc %[[D]]
// CHECK: memref.dealloc %[[H]] : memref<16xf32, #offload.host>
// CHECK-NEXT: return
func.func @owned_source_start(%x: f32) {
  %d = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<16xf32>)
  %f = offload.offload_start %d : memref<16xf32> -> !offload.buffer_future<memref<16xf32, #offload.host>>
  %h = offload.wait %f : !offload.buffer_future<memref<16xf32, #offload.host>>
  return
}

// -----

// A function argument is not the function's to free: the offload consumes a
// private copy instead.
// CHECK-LABEL: func @argument_source
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[A]], %[[C]]
// CHECK: offload.offload_buffer %[[C]] release_source
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc %[[C]]
func.func @argument_source(%a: memref<4xf32>) -> memref<4xf32, #offload.host> {
  %h = offload.offload_buffer %a : memref<4xf32> -> memref<4xf32, #offload.host>
  return %h : memref<4xf32, #offload.host>
}

// -----

// A view of an allocation is not an allocation the runtime could free: a
// copy is consumed, and the allocation is deallocated as before.
// CHECK-LABEL: func @view_source
// CHECK: %[[D:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[V:.*]] = memref.subview %[[D]]
// CHECK: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[V]], %[[C]]
// CHECK: offload.offload_buffer %[[C]] release_source
// CHECK: memref.dealloc %[[D]]
func.func @view_source(%x: f32) -> memref<4xf32, #offload.host> {
  %d = memref.alloc() : memref<8xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<8xf32>)
  %v = memref.subview %d[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  %h = offload.offload_buffer %v : memref<4xf32, strided<[1], offset: 4>> -> memref<4xf32, #offload.host>
  return %h : memref<4xf32, #offload.host>
}

// -----

func.func @released_twice(%x: f32) -> memref<4xf32, #offload.host> {
  %d = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{already releases its source: run buffer deallocation once}}
  %h = offload.offload_buffer %d release_source : memref<4xf32> -> memref<4xf32, #offload.host>
  return %h : memref<4xf32, #offload.host>
}

// -----

// A wait on a buffer future yields a new buffer, as the synchronous copies
// do: its block owns it. A host buffer returned from forward is returned
// as it is (no clone), and a loaded device buffer is freed after its last
// use.
// CHECK-LABEL: func @waits_own_their_buffers
// CHECK: %[[F:.*]] = offload.offload_start %{{.*}} release_source
// CHECK: %[[H:.*]] = offload.wait %[[F]]
// CHECK: %[[G:.*]] = offload.load_start %[[H]]
// CHECK: %[[L:.*]] = offload.wait %[[G]]
// CHECK: linalg.exp ins(%[[L]] : memref<16xf32>)
// CHECK-NOT: bufferization.clone
// CHECK: memref.dealloc %[[L]] : memref<16xf32>
// CHECK: return %[[H]]
func.func @waits_own_their_buffers(%x: f32, %out: memref<16xf32>) -> memref<16xf32, #offload.host> {
  %d = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<16xf32>)
  %f = offload.offload_start %d : memref<16xf32> -> !offload.buffer_future<memref<16xf32, #offload.host>>
  %h = offload.wait %f : !offload.buffer_future<memref<16xf32, #offload.host>>
  %g = offload.load_start %h : memref<16xf32, #offload.host> -> !offload.buffer_future<memref<16xf32>>
  %l = offload.wait %g : !offload.buffer_future<memref<16xf32>>
  linalg.exp ins(%l : memref<16xf32>) outs(%out : memref<16xf32>)
  return %h : memref<16xf32, #offload.host>
}

// -----

// A group that copies one buffer twice hands it to the runtime once; the
// other member consumes a private copy, so nothing is freed twice.
// CHECK-LABEL: func @group_same_buffer_twice
// CHECK: %[[D:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[D]], %[[C]]
// CHECK: offload.offload_group_start %[[D]], %[[C]] release_source
// CHECK-NOT: memref.dealloc %[[D]]
func.func @group_same_buffer_twice(%x: f32) -> (memref<4xf32, #offload.host>, memref<4xf32, #offload.host>) {
  %d = memref.alloc() : memref<4xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<4xf32>)
  %f:2 = offload.offload_group_start %d, %d : memref<4xf32>, memref<4xf32>
      -> !offload.buffer_future<memref<4xf32, #offload.host>>, !offload.buffer_future<memref<4xf32, #offload.host>>
  %a = offload.wait %f#0 : !offload.buffer_future<memref<4xf32, #offload.host>>
  %b = offload.wait %f#1 : !offload.buffer_future<memref<4xf32, #offload.host>>
  return %a, %b : memref<4xf32, #offload.host>, memref<4xf32, #offload.host>
}
