//===- OffloadTypeInterfaces.td - offload type interfaces --*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_OFFLOADTYPEINTERFACES_TD
#define OFFLOAD_DIALECT_OFFLOAD_OFFLOADTYPEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Offload_FutureLikeTypeInterface : TypeInterface<"FutureLikeType"> {
  let cppNamespace = "::mlir::offload";
  let description = [{
    The handle of a copy in flight, whatever the value it produces:
    `!offload.future<T>` of a tensor before bufferization,
    `!offload.buffer_future<M>` of a memref after it. The copy ops and
    `offload.wait` take either, and read the value through this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        The type of the value the copy produces, which `offload.wait` yields.
      }],
      "::mlir::Type", "getValueType">
  ];
}

#endif // OFFLOAD_DIALECT_OFFLOAD_OFFLOADTYPEINTERFACES_TD
