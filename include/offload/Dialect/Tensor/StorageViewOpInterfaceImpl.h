//===- StorageViewOpInterfaceImpl.h - Tensor ops as storage views -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The tensor dialect's ops that bufferize to views of their source
// (expand_shape, collapse_shape, extract_slice, reshape, cast) implement
// StorageViewOpInterface through external models registered here, with the
// tensor dialect, as upstream registers its own interfaces' models
// (tensor::registerBufferizableOpInterfaceExternalModels).
//
// The tensor dialect cannot promise an interface of this project
// (declarePromisedInterface belongs in a dialect's own initialize), so every
// pass that reads views registers these models itself, as a dependency
// (getDependentDialects), and a tool cannot run the passes without them.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_TENSOR_STORAGEVIEWOPINTERFACEIMPL_H
#define OFFLOAD_DIALECT_TENSOR_STORAGEVIEWOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace offload {

/// Attaches StorageViewOpInterface to the tensor ops that bufferize to views.
void registerTensorStorageViewExternalModels(DialectRegistry &registry);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_TENSOR_STORAGEVIEWOPINTERFACEIMPL_H
