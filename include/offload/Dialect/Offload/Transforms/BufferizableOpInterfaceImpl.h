//===- BufferizableOpInterfaceImpl.h - Bufferizing the copies ---*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace offload {
/// Lets one-shot-bufferize turn offload.offload_to_cpu / load_to_gpu into
/// offload.offload_buffer / load_buffer. Host tensors become memrefs in the
/// #offload.host memory space; run one-shot-bufferize with
/// use-encoding-for-memory-space so function boundaries agree.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace offload
} // namespace mlir

#endif // OFFLOAD_DIALECT_OFFLOAD_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
