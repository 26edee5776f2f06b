// The lowering copies `bytes` from a source's start, so it refuses a source
// that is not contiguous, even when handed IR that was never verified (the
// verifier rejects such a copy first; see Dialect/Offload/buffer-ops.mlir).
// RUN: not offload-opt %s --mlir-very-unsafe-disable-verifier-on-parsing -convert-offload-to-llvm -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: cannot lower 'offload.offload_buffer': source 'memref<8x8xf32, strided<[16, 2]>>' is not contiguous
func.func @strided(%d: memref<8x8xf32, strided<[16, 2]>>) -> memref<8x8xf32, #offload.host> {
  %h = offload.offload_buffer %d : memref<8x8xf32, strided<[16, 2]>> -> memref<8x8xf32, #offload.host>
  return %h : memref<8x8xf32, #offload.host>
}
