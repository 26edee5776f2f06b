// RUN: offload-opt %s -split-input-file -verify-diagnostics
// RUN: not offload-opt %s -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL

// Bufferization's casts check that a buffer type is the buffer of a future
// (TensorLikeType::verifyCompatibleBufferType).

func.func @host_future_from_device_buffer(%bf: !offload.buffer_future<memref<8x16xf32>>) {
  // FULL: bufferize-futures-invalid.mlir:[[@LINE+5]]:{{[0-9]+}}: error: '!offload.buffer_future<memref<8x16xf32>>' is not a buffer of '!offload.future<tensor<8x16xf32, #offload.host>>':
  // FULL-SAME: expected an '!offload.buffer_future' of a memref with the same shape and element type,
  // FULL-SAME: in the #offload.host memory space if and only if the tensor is a host tensor
  // expected-error @+2 {{'!offload.buffer_future<memref<8x16xf32>>' is not a buffer of '!offload.future<tensor<8x16xf32, #offload.host>>'}}
  // expected-error @+1 {{failed to verify that specified tensor and buffer types match}}
  %f = bufferization.to_tensor %bf restrict : !offload.buffer_future<memref<8x16xf32>> to !offload.future<tensor<8x16xf32, #offload.host>>
  return
}

// -----

func.func @future_from_plain_buffer(%m: memref<8x16xf32>) {
  // expected-error @+2 {{'memref<8x16xf32>' is not a buffer of '!offload.future<tensor<8x16xf32>>'}}
  // expected-error @+1 {{failed to verify that specified tensor and buffer types match}}
  %f = bufferization.to_tensor %m restrict : memref<8x16xf32> to !offload.future<tensor<8x16xf32>>
  return
}

// -----

func.func @buffer_of_another_shape(%f: !offload.future<tensor<8x16xf32>>) {
  // expected-error @+2 {{'!offload.buffer_future<memref<16x8xf32>>' is not a buffer of '!offload.future<tensor<8x16xf32>>'}}
  // expected-error @+1 {{failed to verify that specified tensor and buffer types match}}
  %b = bufferization.to_buffer %f : !offload.future<tensor<8x16xf32>> to !offload.buffer_future<memref<16x8xf32>>
  return
}

// -----

// The waits behind a cast count as the future's: one is required for a load,
// and at most one is allowed.
func.func @load_waited_only_through_a_dead_cast(%s: memref<8xf32, #offload.host>) {
  // expected-error @+1 {{starts a load that is never waited}}
  %g = offload.load_start %s : memref<8xf32, #offload.host> -> !offload.buffer_future<memref<8xf32>>
  %t = bufferization.to_tensor %g restrict : !offload.buffer_future<memref<8xf32>> to !offload.future<tensor<8xf32>>
  return
}

// -----

func.func @waited_twice_through_a_cast(%s: memref<8xf32, #offload.host>) {
  // expected-error @+1 {{future is waited more than once}}
  %g = offload.load_start %s : memref<8xf32, #offload.host> -> !offload.buffer_future<memref<8xf32>>
  %t = bufferization.to_tensor %g restrict : !offload.buffer_future<memref<8xf32>> to !offload.future<tensor<8xf32>>
  %a = offload.wait %g : !offload.buffer_future<memref<8xf32>>
  %b = offload.wait %t : !offload.future<tensor<8xf32>>
  return
}

// -----

func.func @future_read_by_another_op(%s: memref<8xf32, #offload.host>) {
  // expected-error @+1 {{future may only be read by 'offload.wait', not by 'bufferization.clone'}}
  %g = offload.load_start %s : memref<8xf32, #offload.host> -> !offload.buffer_future<memref<8xf32>>
  %w = offload.wait %g : !offload.buffer_future<memref<8xf32>>
  %c = "bufferization.clone"(%g) : (!offload.buffer_future<memref<8xf32>>) -> !offload.buffer_future<memref<8xf32>>
  return
}
