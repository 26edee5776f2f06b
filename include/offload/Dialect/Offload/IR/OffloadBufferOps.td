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

    The op consumes `source`: the copy reads it until it completes, after
    the op returns, so nothing may use, write or free `source` (or a view of
    it) after the op; the verifier rejects a later use in the block. Effects:
    it reads and frees `source`. With `release_source`, the lowering hands
    `source` to the runtime, which frees it once the copy is done
    (`offload_rt_free_device_after_copy`); `source` must then be the
    allocation itself (not a view) and come from the runtime's device
    allocator. `-buffer-deallocation-pipeline` sets `release_source` (the
    op's `BufferDeallocationOpInterface` model): it hands over a source the
    block owns, or copies one it does not own and hands over the copy, and
    never deallocates a consumed source itself. Without `release_source` the
    compiled code never frees the source.

    ```mlir
    %h = offload.offload_buffer %d : memref<8x1024xbf16> -> memref<8x1024xbf16, #offload.host>
    %h2 = offload.offload_buffer %d2 release_source : memref<8x1024xbf16> -> memref<8x1024xbf16, #offload.host>
    ```
  }];
  let arguments = (ins Arg<Offload_DeviceMemRef, "the buffer copied, consumed",
                           [MemRead, MemFree]>:$source,
                       UnitAttr:$release_source);
  let results = (outs Res<Offload_HostMemRef, "", [MemAlloc, MemWrite]>:$result);
  let assemblyFormat = [{
    $source (`release_source` $release_source^)? attr-dict `:` type($source)
    `->` type($result)
  }];
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
