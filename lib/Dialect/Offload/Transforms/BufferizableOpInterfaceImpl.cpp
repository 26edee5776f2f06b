//===- BufferizableOpInterfaceImpl.cpp - Bufferizing the copies -----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Both copies read their operand and write a fresh allocation of the other
// memory: they never alias their operand and never write it, so bufferization
// needs no copy of the operand.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/Transforms/BufferizableOpInterfaceImpl.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::offload;

namespace {
template <typename TensorOp, typename BufferOp>
struct CopyOpInterface
    : public BufferizableOpInterface::ExternalModel<
          CopyOpInterface<TensorOp, BufferOp>, TensorOp> {
  bool bufferizesToAllocation(Operation *op, Value value) const { return true; }

  bool bufferizesToMemoryRead(Operation *op, OpOperand &opOperand,
                              const AnalysisState &state) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &opOperand,
                               const AnalysisState &state) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &opOperand,
                                      const AnalysisState &state) const {
    return {};
  }

  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    auto tensorType = cast<RankedTensorType>(value.getType());
    // The host copy lives in the host memory space whatever the options say;
    // the device copy in the memory space the options give device tensors.
    Attribute memorySpace = HostMemoryAttr::get(op->getContext());
    if (!isHostTensorType(tensorType)) {
      std::optional<Attribute> space =
          options.defaultMemorySpaceFn(tensorType);
      if (!space)
        return op->emitError() << "no memory space for " << tensorType;
      memorySpace = *space;
    }
    return cast<BufferLikeType>(MemRefType::get(
        tensorType.getShape(), tensorType.getElementType(),
        MemRefLayoutAttrInterface(), memorySpace));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto copy = cast<TensorOp>(op);
    FailureOr<Value> source =
        getBuffer(rewriter, copy.getSource(), options, state);
    if (failed(source))
      return failure();
    SmallVector<Value> invocationStack;
    FailureOr<BufferLikeType> resultType = getBufferType(
        op, copy.getResult(), options, state, invocationStack);
    if (failed(resultType))
      return failure();
    replaceOpWithNewBufferizedOp<BufferOp>(rewriter, op, *resultType, *source);
    return success();
  }
};
} // namespace

void mlir::offload::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OffloadDialect *) {
    OffloadToCpuOp::attachInterface<
        CopyOpInterface<OffloadToCpuOp, OffloadBufferOp>>(*ctx);
    LoadToGpuOp::attachInterface<CopyOpInterface<LoadToGpuOp, LoadBufferOp>>(
        *ctx);
  });
}
