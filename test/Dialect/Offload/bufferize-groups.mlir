// Copy groups bufferize member by member, as single starts do: each source
// becomes its (contiguous) buffer, each future a future of a buffer. Buffer
// deallocation then hands every consumed source to the runtime
// (release_source on the group: a source the block owns is taken over; a
// read-only argument was copied first by bufferization), and frees the host
// buffers after their loads.
// RUN: offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s

// CHECK-LABEL: func.func @groups
// CHECK-SAME: (%[[Y:.*]]: memref<2x8xbf16>)
// CHECK: %[[A:.*]] = memref.alloc() {{.*}}: memref<4xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<2x8xbf16>
// CHECK: memref.copy %[[Y]], %[[C]]
// CHECK: %[[F:.*]]:2 = offload.offload_group_start %[[A]], %[[C]] release_source : memref<4xf32>, memref<2x8xbf16> ->
// CHECK-SAME: !offload.buffer_future<memref<4xf32, #offload.host>>, !offload.buffer_future<memref<2x8xbf16, #offload.host>>
// CHECK: %[[HA:.*]] = offload.wait %[[F]]#0
// CHECK: %[[HB:.*]] = offload.wait %[[F]]#1
// CHECK: %[[G:.*]]:2 = offload.load_group_start %[[HA]], %[[HB]] : memref<4xf32, #offload.host>, memref<2x8xbf16, #offload.host> ->
// CHECK-SAME: !offload.buffer_future<memref<4xf32>>, !offload.buffer_future<memref<2x8xbf16>>
// CHECK: %[[LA:.*]] = offload.wait %[[G]]#0
// CHECK: %[[LB:.*]] = offload.wait %[[G]]#1
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc %[[C]]
// CHECK-DAG: memref.dealloc %[[HA]] : memref<4xf32, #offload.host>
// CHECK-DAG: memref.dealloc %[[HB]] : memref<2x8xbf16, #offload.host>
// CHECK: return %[[LA]], %[[LB]]
func.func @groups(%y: tensor<2x8xbf16>) -> (tensor<4xf32>, tensor<2x8xbf16>) {
  %a = bufferization.alloc_tensor() : tensor<4xf32>
  %f:2 = offload.offload_group_start %a, %y : tensor<4xf32>, tensor<2x8xbf16>
      -> !offload.future<tensor<4xf32, #offload.host>>, !offload.future<tensor<2x8xbf16, #offload.host>>
  %ha = offload.wait %f#0 : !offload.future<tensor<4xf32, #offload.host>>
  %hb = offload.wait %f#1 : !offload.future<tensor<2x8xbf16, #offload.host>>
  %g:2 = offload.load_group_start %ha, %hb : tensor<4xf32, #offload.host>, tensor<2x8xbf16, #offload.host>
      -> !offload.future<tensor<4xf32>>, !offload.future<tensor<2x8xbf16>>
  %la = offload.wait %g#0 : !offload.future<tensor<4xf32>>
  %lb = offload.wait %g#1 : !offload.future<tensor<2x8xbf16>>
  return %la, %lb : tensor<4xf32>, tensor<2x8xbf16>
}
