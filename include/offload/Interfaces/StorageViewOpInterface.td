//===- StorageViewOpInterface.td - Tensor views of storage -*- tablegen -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_TD
#define OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def StorageViewOpInterface : OpInterface<"StorageViewOpInterface"> {
  let cppNamespace = "::mlir::offload";
  let description = [{
    A view at the tensor level: the op's result shares the storage of one
    operand, the view source, and the op reads none of its data (a reshape,
    a slice, a cast, a framework's `view` or `t`). Keeping the result alive
    keeps the source's memory alive, and the op is not a real consumer of
    the source. The passes use it to find the value that owns a saved
    value's storage and to tell views from real consumers.

    `ViewLikeOpInterface` says the same of buffers (memrefs), and the passes
    still honour it there. Tensors are values: which tensor ops will share
    storage after bufferization is the project's own statement, made by
    this interface. `trace.view` implements it; the tensor dialect's
    reshapes, `extract_slice` and `cast` get it as external models
    (`offload::registerTensorStorageViewExternalModels`).
  }];

  let methods = [
    InterfaceMethod<
      "The operand whose storage the result shares.",
      "::mlir::Value", "getViewSource">,
  ];
}

#endif // OFFLOAD_INTERFACES_STORAGEVIEWOPINTERFACE_TD
