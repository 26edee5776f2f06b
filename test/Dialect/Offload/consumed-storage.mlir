// A device-to-host copy on a buffer consumes the storage of its source, not
// only the SSA value: the verifier follows views (ViewLikeOpInterface) up to
// the buffer they view and down to every other view of it. Uses that read
// only metadata (`memref.dim`, as one-shot-bufferize adds on dynamic shapes)
// are not uses. With `release_source` the runtime frees the whole
// allocation, so the source must be that allocation, and a group's released
// sources must not share one. A future that arrives as a block argument is
// waited at most once, like one a start made.
// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @metadata_read_after_start_is_allowed
// CHECK: offload.offload_start
// CHECK: memref.dim
func.func @metadata_read_after_start_is_allowed(%d: memref<?xf32>) -> (memref<?xf32, #offload.host>, index) {
  %c0 = arith.constant 0 : index
  %f = offload.offload_start %d release_source : memref<?xf32> -> !offload.buffer_future<memref<?xf32, #offload.host>>
  %n = memref.dim %d, %c0 : memref<?xf32>
  %h = offload.wait %f : !offload.buffer_future<memref<?xf32, #offload.host>>
  return %h, %n : memref<?xf32, #offload.host>, index
}

// -----

// CHECK-LABEL: func @view_made_after_but_unused_is_allowed
func.func @view_made_after_but_unused_is_allowed(%d: memref<8xf32>) -> memref<8xf32, #offload.host> {
  %h = offload.offload_buffer %d : memref<8xf32> -> memref<8xf32, #offload.host>
  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  return %h : memref<8xf32, #offload.host>
}

// -----

func.func @base_written_while_view_copy_in_flight(%d: memref<8xf32>, %x: f32) -> memref<4xf32, #offload.host> {
  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  // expected-error @+1 {{consumes its source, whose storage is used after it}}
  %f = offload.offload_start %v : memref<4xf32, strided<[1]>> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  %c0 = arith.constant 0 : index
  // expected-note @+1 {{later use here}}
  memref.store %x, %d[%c0] : memref<8xf32>
  %h = offload.wait %f : !offload.buffer_future<memref<4xf32, #offload.host>>
  return %h : memref<4xf32, #offload.host>
}

// -----

func.func @other_view_of_base_read_after(%d: memref<8xf32>) -> f32 {
  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %w = memref.subview %d[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  // expected-error @+1 {{consumes its source, whose storage is used after it}}
  %h = offload.offload_buffer %v : memref<4xf32, strided<[1]>> -> memref<4xf32, #offload.host>
  %c0 = arith.constant 0 : index
  // expected-note @+1 {{later use here}}
  %e = memref.load %w[%c0] : memref<4xf32, strided<[1], offset: 4>>
  return %e : f32
}

// -----

func.func @view_of_source_read_after(%d: memref<8xf32>) -> f32 {
  // expected-error @+1 {{consumes its source, whose storage is used after it}}
  %h = offload.offload_buffer %d : memref<8xf32> -> memref<8xf32, #offload.host>
  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %c0 = arith.constant 0 : index
  // expected-note @+1 {{later use here}}
  %e = memref.load %v[%c0] : memref<4xf32, strided<[1]>>
  return %e : f32
}

// -----

func.func @release_source_on_view(%d: memref<8xf32>) -> memref<4xf32, #offload.host> {
  // expected-note @+1 {{view made here}}
  %v = memref.subview %d[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  // expected-error @+1 {{releases its source, which is a view of another buffer}}
  %h = offload.offload_buffer %v release_source : memref<4xf32, strided<[1]>> -> memref<4xf32, #offload.host>
  return %h : memref<4xf32, #offload.host>
}

// -----

func.func @group_releases_same_buffer_twice(%d: memref<4xf32>) {
  // expected-error @+1 {{releases sources #0 and #1, which share one allocation}}
  %f:2 = offload.offload_group_start %d, %d release_source : memref<4xf32>, memref<4xf32>
      -> !offload.buffer_future<memref<4xf32, #offload.host>>, !offload.buffer_future<memref<4xf32, #offload.host>>
  return
}

// -----

func.func @group_releases_views_of_one_base(%d: memref<8xf32>) {
  %v = memref.cast %d : memref<8xf32> to memref<?xf32>
  // expected-error @+1 {{releases sources #0 and #1, which share one allocation}}
  %f:2 = offload.offload_group_start %d, %v release_source : memref<8xf32>, memref<?xf32>
      -> !offload.buffer_future<memref<8xf32, #offload.host>>, !offload.buffer_future<memref<?xf32, #offload.host>>
  return
}

// -----

// CHECK-LABEL: func @group_copies_same_buffer_twice_without_release
func.func @group_copies_same_buffer_twice_without_release(%d: memref<4xf32>) {
  %f:2 = offload.offload_group_start %d, %d : memref<4xf32>, memref<4xf32>
      -> !offload.buffer_future<memref<4xf32, #offload.host>>, !offload.buffer_future<memref<4xf32, #offload.host>>
  return
}

// -----

// Without release_source nothing is freed, so two views of one base may
// share a group.
// CHECK-LABEL: func @group_copies_views_of_one_base_without_release
func.func @group_copies_views_of_one_base_without_release(%d: memref<8xf32>) {
  %v = memref.cast %d : memref<8xf32> to memref<?xf32>
  %f:2 = offload.offload_group_start %d, %v : memref<8xf32>, memref<?xf32>
      -> !offload.buffer_future<memref<8xf32, #offload.host>>, !offload.buffer_future<memref<?xf32, #offload.host>>
  return
}

// -----

// CHECK-LABEL: func @argument_future_waited_once
func.func @argument_future_waited_once(%f: !offload.future<tensor<4xf32>>) -> tensor<4xf32> {
  %x = offload.wait %f : !offload.future<tensor<4xf32>>
  return %x : tensor<4xf32>
}

// -----

func.func @argument_future_waited_twice(%f: !offload.future<tensor<4xf32>>) -> tensor<4xf32> {
  // expected-error @+1 {{waits a future that is waited 2 times}}
  %x = offload.wait %f : !offload.future<tensor<4xf32>>
  %y = offload.wait %f : !offload.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}
