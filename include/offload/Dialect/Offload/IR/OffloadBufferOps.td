//===- OffloadBufferOps.td - offload ops on buffers --------*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The memref-level forms of the copies, produced by bufferization and lowered
// to offload_rt calls by -convert-offload-to-llvm.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_OFFLOADBUFFEROPS_TD
#define OFFLOAD_DIALECT_OFFLOAD_OFFLOADBUFFEROPS_TD

include "offload/Dialect/Offload/IR/OffloadDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Offload_OffloadBufferOp : Offload_Op<"offload_buffer"> {
  let summary = "Copies a device buffer into a new pinned host buffer";
  let description = [{
    The bufferized form of `offload.offload_to_cpu`: allocates a block of the
    runtime's pinned host pool and starts copying `source` into it after the
    work already queued on the compute stream. The compute stream does not
    wait for the copy; the runtime keeps the host block until it is freed.

    The copy reads `source` as one run of bytes from its start, so `source`
    must be contiguous: an identity layout, or a strided layout with
    row-major strides (any offset). Bufferizing `offload.offload_to_cpu` of
    a strided view (a saved `tensor.extract_slice`) copies it into a
    contiguous buffer first; the verifier rejects any other source.

    ```mlir
    %h = offload.offload_buffer %d : memref<8x1024xbf16> -> memref<8x1024xbf16, #offload.host>
    ```
  }];
  let arguments = (ins Arg<Offload_DeviceMemRef, "", [MemRead]>:$source);
  let results = (outs Res<Offload_HostMemRef, "", [MemAlloc, MemWrite]>:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Offload_LoadBufferOp : Offload_Op<"load_buffer"> {
  let summary = "Copies a pinned host buffer into a new device buffer";
  let description = [{
    The bufferized form of `offload.load_to_gpu`: allocates device memory in
    stream order, copies the host block into it on the host-to-device stream,
    and makes the compute stream wait for the copy (the host never waits).

    ```mlir
    %d = offload.load_buffer %h : memref<8x1024xbf16, #offload.host> -> memref<8x1024xbf16>
    ```
  }];
  let arguments = (ins Arg<Offload_HostMemRef, "", [MemRead]>:$source);
  let results = (outs Res<Offload_DeviceMemRef, "", [MemAlloc, MemWrite]>:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

#endif // OFFLOAD_DIALECT_OFFLOAD_OFFLOADBUFFEROPS_TD
