//===- InitAll.h - Register every dialect and pass of offload-mlir -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_INITALL_H
#define OFFLOAD_INITALL_H

#include "offload/Conversion/Passes.h"
#include "offload/Dialect/Offload/Transforms/BufferizableOpInterfaceImpl.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Dialect/Trace/IR/TraceDialect.h"
#include "offload/Transforms/Passes.h"
#include "offload/Dialect/Offload/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "offload/Dialect/Offload/Transforms/TrainingStepSymbolUses.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace offload {

/// The project's dialects and the interface models its passes rely on.
inline void registerAllOffloadDialects(DialectRegistry &registry) {
  registry.insert<OffloadDialect, trace::TraceDialect, tensor::TensorDialect>();
  registerTensorStorageViewExternalModels(registry);
  registerBufferizableOpInterfaceExternalModels(registry);
  registerBufferDeallocationOpInterfaceExternalModels(registry);
  registerTrainingStepSymbolUseModels(registry);
  registerConvertOffloadToLLVMInterface(registry);
}

/// Every pass of the project and the `offload-activations` pipeline.
inline void registerAllOffloadPasses() {
  registerOffloadPasses();
  registerOffloadConversionPasses();
  registerOffloadPipeline();
}

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_INITALL_H
