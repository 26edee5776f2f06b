// Bufferization and buffer deallocation leave an `offload.placement` as it
// is: it has no tensors (the lowering to LLVM erases any left,
// Conversion/OffloadToLLVM/leftover-placement.mlir).
// RUN: offload-opt %s --one-shot-bufferize="bufferize-function-boundaries use-encoding-for-memory-space function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s
// RUN: offload-opt %s --one-shot-bufferize="dialect-filter=offload use-encoding-for-memory-space unknown-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=PARTIAL

// CHECK-LABEL: func @placement_bufferized
// CHECK: offload.load_buffer
// CHECK-NEXT: offload.placement load_starts [0]
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: linalg.exp
func.func @placement_bufferized(%s: tensor<8x16xf32, #offload.host>) -> tensor<8x16xf32> {
  %l = offload.load_to_gpu %s : tensor<8x16xf32, #offload.host> -> tensor<8x16xf32>
  offload.placement load_starts [0]
  %init = tensor.empty() : tensor<8x16xf32>
  %e = linalg.exp ins(%l : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// PARTIAL-LABEL: func @placement_bufferized
// PARTIAL: offload.load_buffer
// PARTIAL: offload.placement load_starts [0]
