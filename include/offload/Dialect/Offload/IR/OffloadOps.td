//===- OffloadOps.td - offload dialect ops and attributes --*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD
#define OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD

include "offload/Dialect/Offload/IR/OffloadDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Offload_HostMemoryAttr : Offload_Attr<"HostMemory", "host"> {
  let summary = "Marks a tensor as resident in pinned host memory";
  let description = [{
    Used as the encoding of a ranked tensor, `#offload.host` says the value
    lives in pinned host memory rather than on the device:

    ```mlir
    tensor<8x1024xbf16, #offload.host>
    ```

    Bufferization with `use-encoding-for-memory-space` carries the encoding
    over as the memory space of the resulting memref.
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Offload_DeviceTensor : Type<
    And<[AnyRankedTensor.predicate,
         CPred<"!::mlir::offload::isHostTensorType($_self)">]>,
    "device-resident ranked tensor", "::mlir::RankedTensorType">;

def Offload_HostTensor : Type<
    CPred<"::mlir::offload::isHostTensorType($_self)">,
    "host-resident ranked tensor (encoding #offload.host)",
    "::mlir::RankedTensorType">;

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

def Offload_OffloadToCpuOp : Offload_Op<"offload_to_cpu", [Pure]> {
  let summary = "Copies a device tensor to pinned host memory";
  let description = [{
    Produces a host-resident copy of a device tensor. Once the copy is made
    the device memory of `source` may be released, so the op is placed after
    the last device use of `source`. The result has the shape and element
    type of the source and the `#offload.host` encoding.

    Example:

    ```mlir
    %h = offload.offload_to_cpu %x
        : tensor<8x1024xbf16> -> tensor<8x1024xbf16, #offload.host>
    ```
  }];
  let arguments = (ins Offload_DeviceTensor:$source);
  let results = (outs Offload_HostTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Offload_LoadToGpuOp : Offload_Op<"load_to_gpu", [Pure]> {
  let summary = "Copies a host tensor back to device memory";
  let description = [{
    Produces a device-resident copy of a tensor held in pinned host memory.
    Placed right before the first real consumer of the value in backward;
    every later use reads the loaded value.

    Example:

    ```mlir
    %x = offload.load_to_gpu %h
        : tensor<8x1024xbf16, #offload.host> -> tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins Offload_HostTensor:$source);
  let results = (outs Offload_DeviceTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

#endif // OFFLOAD_DIALECT_OFFLOAD_OFFLOADOPS_TD
