// Without identity layouts at function boundaries, a host argument bufferizes
// to a strided host buffer, which a load cannot read: the error says which
// bufferization option fixes it.
// RUN: not offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space" -o /dev/null 2>&1 | FileCheck %s
// RUN: offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=IDENTITY

// CHECK: error: 'offload.load_buffer' op host buffer 'memref<8x16xf32, strided<[?, ?], offset: ?>, #offload.host>'
// CHECK-SAME: must have an identity layout (a pinned host block is dense from its start);
// CHECK-SAME: bufferize with function-boundary-type-conversion=identity-layout-map
// IDENTITY-LABEL: func @load_of_strided_host_argument
// IDENTITY: offload.load_buffer %{{.*}} : memref<8x16xf32, #offload.host> -> memref<8x16xf32>
func.func @load_of_strided_host_argument(%s: tensor<8x16xf32, #offload.host>) -> tensor<8x16xf32> {
  %l = offload.load_to_gpu %s : tensor<8x16xf32, #offload.host> -> tensor<8x16xf32>
  return %l : tensor<8x16xf32>
}
