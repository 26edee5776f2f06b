//===- StorageViewOpInterfaceImpl.cpp - Tensor ops as storage views -------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Interfaces/StorageViewOpInterface.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::offload;

namespace {
/// A tensor op whose bufferized form is a view of its operand 0 (the source
/// of each op below), reading none of its data.
template <typename OpTy>
struct TensorStorageViewModel
    : public StorageViewOpInterface::ExternalModel<TensorStorageViewModel<OpTy>,
                                                   OpTy> {
  Value getViewSource(Operation *op) const { return op->getOperand(0); }
};

template <typename... OpTys>
void attachModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<TensorStorageViewModel<OpTys>>(*ctx), ...);
}
} // namespace

void mlir::offload::registerTensorStorageViewExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    attachModels<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                 tensor::ExtractSliceOp, tensor::ReshapeOp, tensor::CastOp>(
        ctx);
  });
}
