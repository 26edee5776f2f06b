// RUN: offload-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: offload-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | offload-opt -split-input-file | FileCheck %s
// RUN: not offload-opt %s -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL

// CHECK-LABEL: func @round_trip
// CHECK: %[[H:.*]] = offload.offload_buffer %{{.*}} : memref<4x8xbf16> -> memref<4x8xbf16, #offload.host>
// CHECK: offload.load_buffer %[[H]] : memref<4x8xbf16, #offload.host> -> memref<4x8xbf16>
func.func @round_trip(%d: memref<4x8xbf16>) -> memref<4x8xbf16> {
  %h = offload.offload_buffer %d : memref<4x8xbf16> -> memref<4x8xbf16, #offload.host>
  %l = offload.load_buffer %h : memref<4x8xbf16, #offload.host> -> memref<4x8xbf16>
  return %l : memref<4x8xbf16>
}

// -----

func.func @offload_host_buffer(%h: memref<4xf32, #offload.host>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked memref}}
  %0 = offload.offload_buffer %h : memref<4xf32, #offload.host> -> memref<4xf32, #offload.host>
  return
}

// -----

func.func @load_device_buffer(%d: memref<4xf32>) {
  // expected-error @+1 {{operand #0 must be host-resident ranked memref}}
  %0 = offload.load_buffer %d : memref<4xf32> -> memref<4xf32>
  return
}

// -----

func.func @shape_mismatch(%d: memref<4xf32>) {
  // expected-error @+1 {{result 'memref<8xf32, #offload.host>' must have the shape and element type of source 'memref<4xf32>'}}
  %0 = offload.offload_buffer %d : memref<4xf32> -> memref<8xf32, #offload.host>
  return
}

// -----

func.func @strided_result(%h: memref<4xf32, #offload.host>) {
  // expected-error @+1 {{result 'memref<4xf32, strided<[2]>>' must have an identity layout (it is a new allocation)}}
  %0 = offload.load_buffer %h : memref<4xf32, #offload.host> -> memref<4xf32, strided<[2]>>
  return
}

// -----

// The split forms work on buffers too, as bufferization leaves them.
// CHECK-LABEL: func @split_buffers
// CHECK: offload.offload_start %{{.*}} : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
// CHECK: offload.load_start %{{.*}} : memref<4xf32, #offload.host> -> !offload.buffer_future<memref<4xf32>>
// CHECK: offload.wait %{{.*}} : !offload.buffer_future<memref<4xf32>>
func.func @split_buffers(%d: memref<4xf32>) -> memref<4xf32> {
  %f = offload.offload_start %d : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.buffer_future<memref<4xf32, #offload.host>>
  %g = offload.load_start %h : memref<4xf32, #offload.host> -> !offload.buffer_future<memref<4xf32>>
  %l = offload.wait %g : !offload.buffer_future<memref<4xf32>>
  return %l : memref<4xf32>
}

// -----

func.func @mixed_kinds(%d: memref<4xf32>) {
  // expected-error @+1 {{result 'tensor<4xf32, #offload.host>' and source 'memref<4xf32>' must both be tensors or both be buffers}}
  %f = offload.offload_start %d : memref<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  return
}

// -----

// expected-error @+1 {{a future's value must be a ranked tensor, not 'f32'}}
func.func private @bad_future(!offload.future<f32>)

// -----

// Bufferization tells tensors from buffers by type class, so a future of a
// buffer has its own type.
// expected-error @+1 {{a future of a buffer is '!offload.buffer_future<memref<4xf32>>'}}
func.func private @future_of_buffer(!offload.future<memref<4xf32>>)

// -----

// expected-error @+1 {{a future of a tensor is '!offload.future<tensor<4xf32>>'}}
func.func private @buffer_future_of_tensor(!offload.buffer_future<tensor<4xf32>>)

// -----

// expected-error @+1 {{a buffer future's value must be a memref, not 'f32'}}
func.func private @bad_buffer_future(!offload.buffer_future<f32>)

// -----

// A copy reads its source as one run of bytes: a strided source must be
// contiguous (row-major strides, any offset).
// CHECK-LABEL: func @contiguous_strided
// CHECK: offload.offload_buffer %{{.*}} : memref<4x16xf32, strided<[16, 1], offset: ?>> -> memref<4x16xf32, #offload.host>
// CHECK: offload.offload_start %{{.*}} : memref<?x16xf32, strided<[16, 1], offset: 32>> -> !offload.buffer_future<memref<?x16xf32, #offload.host>>
func.func @contiguous_strided(%d: memref<4x16xf32, strided<[16, 1], offset: ?>>, %e: memref<?x16xf32, strided<[16, 1], offset: 32>>) {
  %h = offload.offload_buffer %d : memref<4x16xf32, strided<[16, 1], offset: ?>> -> memref<4x16xf32, #offload.host>
  %f = offload.offload_start %e : memref<?x16xf32, strided<[16, 1], offset: 32>> -> !offload.buffer_future<memref<?x16xf32, #offload.host>>
  %w = offload.wait %f : !offload.buffer_future<memref<?x16xf32, #offload.host>>
  return
}

// -----

func.func @strided_source(%d: memref<8x8xf32, strided<[16, 2]>>) {
  // expected-error @+1 {{source 'memref<8x8xf32, strided<[16, 2]>>' is not contiguous: the copy reads it as one run of bytes; copy it into a contiguous buffer first}}
  %h = offload.offload_buffer %d : memref<8x8xf32, strided<[16, 2]>> -> memref<8x8xf32, #offload.host>
  return
}

// -----

func.func @dynamic_strides(%d: memref<4x4xf32, strided<[?, 1], offset: ?>>) {
  // expected-error @+1 {{source 'memref<4x4xf32, strided<[?, 1], offset: ?>>' is not contiguous}}
  %f = offload.offload_start %d : memref<4x4xf32, strided<[?, 1], offset: ?>> -> !offload.buffer_future<memref<4x4xf32, #offload.host>>
  %w = offload.wait %f : !offload.buffer_future<memref<4x4xf32, #offload.host>>
  return
}

// -----

func.func @transposed_source(%d: memref<4x8xf32, affine_map<(d0, d1) -> (d1 * 4 + d0)>>) {
  // expected-error @+1 {{is not contiguous}}
  %h = offload.offload_buffer %d : memref<4x8xf32, affine_map<(d0, d1) -> (d1 * 4 + d0)>> -> memref<4x8xf32, #offload.host>
  return
}

// -----

// Where a buffer lives is decided by its memory space alone: a strided buffer
// in #offload.host is a host buffer, never a device source.
func.func @strided_host_is_host(%h: memref<4xf32, strided<[1], offset: ?>, #offload.host>) {
  // expected-error @+1 {{operand #0 must be device-resident ranked memref}}
  %0 = offload.offload_buffer %h : memref<4xf32, strided<[1], offset: ?>, #offload.host> -> memref<4xf32, #offload.host>
  return
}

// -----

// A host buffer a copy reads must also have an identity layout: a separate
// check, whose message names the bufferization option that gives it one.
func.func @strided_host_source(%h: memref<4xf32, strided<[1], offset: ?>, #offload.host>) {
  // FULL: buffer-ops.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'offload.load_buffer' op host buffer 'memref<4xf32, strided<[1], offset: ?>, #offload.host>' must have an identity layout
  // FULL-SAME: (a pinned host block is dense from its start); bufferize with function-boundary-type-conversion=identity-layout-map
  // expected-error @+1 {{host buffer 'memref<4xf32, strided<[1], offset: ?>, #offload.host>' must have an identity layout}}
  %0 = offload.load_buffer %h : memref<4xf32, strided<[1], offset: ?>, #offload.host> -> memref<4xf32>
  return
}

// -----

func.func @strided_host_split(%h: memref<4xf32, strided<[1], offset: ?>, #offload.host>) {
  // expected-error @+1 {{host buffer 'memref<4xf32, strided<[1], offset: ?>, #offload.host>' must have an identity layout}}
  %f = offload.load_start %h : memref<4xf32, strided<[1], offset: ?>, #offload.host> -> !offload.buffer_future<memref<4xf32>>
  %l = offload.wait %f : !offload.buffer_future<memref<4xf32>>
  return
}

// -----

// CHECK-LABEL: func @release_round_trip
// CHECK: offload.offload_buffer %{{.*}} release_source : memref<4xf32> -> memref<4xf32, #offload.host>
// CHECK: offload.offload_start %{{.*}} release_source : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
func.func @release_round_trip(%d: memref<4xf32>, %e: memref<4xf32>) -> memref<4xf32, #offload.host> {
  %h = offload.offload_buffer %d release_source : memref<4xf32> -> memref<4xf32, #offload.host>
  %f = offload.offload_start %e release_source : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  %h2 = offload.wait %f : !offload.buffer_future<memref<4xf32, #offload.host>>
  return %h : memref<4xf32, #offload.host>
}

// -----

func.func @source_used_after(%d: memref<4xf32>) -> f32 {
  // expected-error @+1 {{consumes its source, whose storage is used after it}}
  %h = offload.offload_buffer %d : memref<4xf32> -> memref<4xf32, #offload.host>
  %c0 = arith.constant 0 : index
  // expected-note @+1 {{later use here}}
  %e = memref.load %d[%c0] : memref<4xf32>
  return %e : f32
}

// -----

func.func @start_source_used_after(%d: memref<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{consumes its source, whose storage is used after it}}
  %f = offload.offload_start %d : memref<4xf32> -> !offload.buffer_future<memref<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.buffer_future<memref<4xf32, #offload.host>>
  // expected-note @+1 {{later use here}}
  return %d : memref<4xf32>
}

// -----

func.func @release_tensor(%t: tensor<4xf32>) {
  // expected-error @+1 {{releases its source, but the source is a tensor}}
  %f = offload.offload_start %t release_source : tensor<4xf32> -> !offload.future<tensor<4xf32, #offload.host>>
  %h = offload.wait %f : !offload.future<tensor<4xf32, #offload.host>>
  return
}
