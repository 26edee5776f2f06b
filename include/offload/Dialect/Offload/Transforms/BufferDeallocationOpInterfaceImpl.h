//===- BufferDeallocationOpInterfaceImpl.h - The offload consumes ---------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// External models of bufferization::BufferDeallocationOpInterface for the
// device-to-host copies on buffers, which consume their source.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERDEALLOCATIONOPINTERFACEIMPL_H
#define OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERDEALLOCATIONOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace offload {
void registerBufferDeallocationOpInterfaceExternalModels(
    DialectRegistry &registry);
} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERDEALLOCATIONOPINTERFACEIMPL_H
