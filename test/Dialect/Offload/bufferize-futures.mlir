// RUN: offload-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" | FileCheck %s
// RUN: offload-opt %s -split-input-file --one-shot-bufferize="dialect-filter=offload use-encoding-for-memory-space unknown-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=PARTIAL

// A future is one more tensor for one-shot-bufferize (!offload.future is
// tensor-like, !offload.buffer_future buffer-like): the scheduled form
// bufferizes op for op, and the hoisted load start stays where the scheduler
// put it, above the compute it overlaps.
// CHECK-LABEL: func @scheduled
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[S:.*]]: memref<8x16xf32, #offload.host>)
// CHECK: %[[G:.*]] = offload.load_start %[[S]] : memref<8x16xf32, #offload.host> -> !offload.buffer_future<memref<8x16xf32>>
// CHECK: %[[E:.*]] = memref.alloc()
// CHECK: linalg.exp ins(%[[X]] : memref<8x16xf32>) outs(%[[E]] : memref<8x16xf32>)
// CHECK: %[[F:.*]] = offload.offload_start %[[E]] : memref<8x16xf32> -> !offload.buffer_future<memref<8x16xf32, #offload.host>>
// CHECK: %[[L:.*]] = offload.wait %[[G]] : !offload.buffer_future<memref<8x16xf32>>
// CHECK: linalg.mul ins(%[[L]], %[[X]] : memref<8x16xf32>, memref<8x16xf32>)
// CHECK: %[[H:.*]] = offload.wait %[[F]] : !offload.buffer_future<memref<8x16xf32, #offload.host>>
// CHECK: return %{{.*}}, %[[H]]
// CHECK-NOT: bufferization.to_tensor

// Only the copies bufferized: the futures never leave their ops, and the
// tensors around them are cast as usual. The source of the offload is the
// result of an op that is not bufferized, so it is copied before the
// offload consumes it.
// PARTIAL-LABEL: func @scheduled
// PARTIAL: %[[SB:.*]] = bufferization.to_buffer %{{.*}} : tensor<8x16xf32, #offload.host> to memref<8x16xf32, #offload.host>
// PARTIAL: %[[G:.*]] = offload.load_start %[[SB]] : memref<8x16xf32, #offload.host> -> !offload.buffer_future<memref<8x16xf32>>
// PARTIAL: linalg.exp
// PARTIAL: bufferization.alloc_tensor() copy(
// PARTIAL: %[[F:.*]] = offload.offload_start %{{.*}} : memref<8x16xf32> -> !offload.buffer_future<memref<8x16xf32, #offload.host>>
// PARTIAL: %[[L:.*]] = offload.wait %[[G]] : !offload.buffer_future<memref<8x16xf32>>
// PARTIAL: bufferization.to_tensor %[[L]] : memref<8x16xf32> to tensor<8x16xf32>
// PARTIAL: linalg.mul
// PARTIAL: offload.wait %[[F]] : !offload.buffer_future<memref<8x16xf32, #offload.host>>
// PARTIAL-NOT: !offload.future
func.func @scheduled(%x: tensor<8x16xf32>, %s: tensor<8x16xf32, #offload.host>) -> (tensor<8x16xf32>, tensor<8x16xf32, #offload.host>) {
  %g = offload.load_start %s : tensor<8x16xf32, #offload.host> -> !offload.future<tensor<8x16xf32>>
  %init = tensor.empty() : tensor<8x16xf32>
  %e = linalg.exp ins(%x : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %f = offload.offload_start %e : tensor<8x16xf32> -> !offload.future<tensor<8x16xf32, #offload.host>>
  %l = offload.wait %g : !offload.future<tensor<8x16xf32>>
  %init2 = tensor.empty() : tensor<8x16xf32>
  %r = linalg.mul ins(%l, %x : tensor<8x16xf32>, tensor<8x16xf32>) outs(%init2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = offload.wait %f : !offload.future<tensor<8x16xf32, #offload.host>>
  return %r, %h : tensor<8x16xf32>, tensor<8x16xf32, #offload.host>
}

// -----

// The IR between two bufferization steps verifies: here the start is
// bufferized and its wait is not yet, so the wait reads the buffer future
// through `bufferization.to_tensor` (as one-shot-bufferize leaves it). The
// run finishes it: the wait reads the buffer future directly.
// CHECK-LABEL: func @start_bufferized_wait_not_yet
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>)
// CHECK: %[[F:.*]] = offload.offload_start %[[X]] : memref<8x16xf32> -> !offload.buffer_future<memref<8x16xf32, #offload.host>>
// CHECK-NEXT: %[[H:.*]] = offload.wait %[[F]] : !offload.buffer_future<memref<8x16xf32, #offload.host>>
// CHECK-NEXT: return %[[H]]
// PARTIAL-LABEL: func @start_bufferized_wait_not_yet
// PARTIAL: %[[F:.*]] = offload.offload_start %{{.*}} : memref<8x16xf32> -> !offload.buffer_future<memref<8x16xf32, #offload.host>>
// PARTIAL-NEXT: offload.wait %[[F]] : !offload.buffer_future<memref<8x16xf32, #offload.host>>
func.func @start_bufferized_wait_not_yet(%x: tensor<8x16xf32>) -> tensor<8x16xf32, #offload.host> {
  %b = bufferization.to_buffer %x : tensor<8x16xf32> to memref<8x16xf32>
  %bf = offload.offload_start %b : memref<8x16xf32> -> !offload.buffer_future<memref<8x16xf32, #offload.host>>
  %f = bufferization.to_tensor %bf restrict : !offload.buffer_future<memref<8x16xf32, #offload.host>> to !offload.future<tensor<8x16xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<8x16xf32, #offload.host>>
  return %h : tensor<8x16xf32, #offload.host>
}

// -----

// And the other way: a start not yet bufferized, its wait already reading a
// buffer future through `bufferization.to_buffer`.
// CHECK-LABEL: func @wait_bufferized_start_not_yet
// CHECK-SAME: (%[[S:.*]]: memref<4x8xbf16, #offload.host>)
// CHECK: %[[G:.*]] = offload.load_start %[[S]] : memref<4x8xbf16, #offload.host> -> !offload.buffer_future<memref<4x8xbf16>>
// CHECK-NEXT: %[[L:.*]] = offload.wait %[[G]] : !offload.buffer_future<memref<4x8xbf16>>
// CHECK-NEXT: return %[[L]]
func.func @wait_bufferized_start_not_yet(%s: tensor<4x8xbf16, #offload.host>) -> memref<4x8xbf16> {
  %g = offload.load_start %s : tensor<4x8xbf16, #offload.host> -> !offload.future<tensor<4x8xbf16>>
  %b = bufferization.to_buffer %g : !offload.future<tensor<4x8xbf16>> to !offload.buffer_future<memref<4x8xbf16>>
  %l = offload.wait %b : !offload.buffer_future<memref<4x8xbf16>>
  return %l : memref<4x8xbf16>
}

// -----

// A training step bufferized partially: the host argument of backward
// reaches its load through `bufferization.to_buffer` into host memory, a
// cast the step's contract lets read a host value (it renames it).
// CHECK-LABEL: func @partial_step_backward
// CHECK: offload.load_start %{{.*}} : memref<4xf32, #offload.host>
// PARTIAL-LABEL: func @partial_step_backward
// PARTIAL: %[[B:.*]] = bufferization.to_buffer %{{.*}} : tensor<4xf32, #offload.host> to memref<4xf32, #offload.host>
// PARTIAL: offload.load_start %[[B]] : memref<4xf32, #offload.host>
func.func @partial_step_forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32, #offload.host>)
    attributes {offload.backward = @partial_step_backward, offload.num_outputs = 1 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %f = offload.offload_start %a : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return %x, %h : tensor<4xf32>, tensor<4xf32, #offload.host>
}
func.func @partial_step_backward(%s: tensor<4xf32, #offload.host>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %f = offload.load_start %s : tensor<4xf32, #offload.host> -> !offload.future<tensor<4xf32>>
  %l = offload.wait %f : !offload.future<tensor<4xf32>>
  %e = tensor.empty() : tensor<4xf32>
  %m = linalg.mul ins(%l, %g : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}
