// offload-report reads a step's tensor form: on a bufferized step it says so
// instead of printing sizes and peaks of "0 B".
// RUN: offload-opt %s -verify-diagnostics -offload-report -o /dev/null

// expected-error @below {{offload-report reads the tensor form of a step; this one is bufferized (it returns 'memref<1000xf32>'): report before one-shot-bufferize}}
func.func @bufferized_forward(%x: memref<1000xf32>) -> (memref<1000xf32>, memref<1000xf32, #offload.host>)
    attributes {offload.backward = @bufferized_backward, offload.num_outputs = 1 : i64} {
  %e = memref.alloc() : memref<1000xf32>
  memref.copy %x, %e : memref<1000xf32> to memref<1000xf32>
  %h = offload.offload_buffer %e : memref<1000xf32> -> memref<1000xf32, #offload.host>
  return %x, %h : memref<1000xf32>, memref<1000xf32, #offload.host>
}
func.func @bufferized_backward(%s: memref<1000xf32, #offload.host>, %g: memref<1000xf32>) -> memref<1000xf32> {
  return %g : memref<1000xf32>
}
