//===- BufferizableOpInterfaceImpl.cpp - Bufferizing the copies -----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Every copy reads its operand and writes a fresh allocation of the other
// memory: it never aliases its operand and never writes it, so bufferization
// needs no copy of the operand. The asynchronous forms keep their shape: a
// start takes the source's buffer and yields a future of a buffer, the wait
// yields that buffer.
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

/// The buffer type a copy's tensor result (or a future's tensor) becomes:
/// host tensors always live in the host memory space, device tensors in the
/// memory space the options give them.
static FailureOr<BufferLikeType>
getCopyBufferType(Operation *op, RankedTensorType tensorType,
                  const BufferizationOptions &options) {
  Attribute memorySpace = HostMemoryAttr::get(op->getContext());
  if (!isHostTensorType(tensorType)) {
    std::optional<Attribute> space = options.defaultMemorySpaceFn(tensorType);
    if (!space)
      return op->emitError() << "no memory space for " << tensorType;
    memorySpace = *space;
  }
  return cast<BufferLikeType>(MemRefType::get(tensorType.getShape(),
                                              tensorType.getElementType(),
                                              MemRefLayoutAttrInterface(),
                                              memorySpace));
}

namespace {
/// Common answers of ops that read their tensor operand into new memory.
template <typename ConcreteModel, typename OpTy>
struct ReadIntoNewMemory
    : public BufferizableOpInterface::ExternalModel<ConcreteModel, OpTy> {
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
};

/// Replaces a copy of a tensor by `NewOp` on the source's buffer. The new op
/// yields the buffer of `valueType`, or with `asFuture` a future of it.
template <typename NewOp>
LogicalResult replaceWithBufferCopy(Operation *op, Value source,
                                    RankedTensorType valueType, bool asFuture,
                                    RewriterBase &rewriter,
                                    const BufferizationOptions &options,
                                    BufferizationState &state) {
  FailureOr<Value> buffer = getBuffer(rewriter, source, options, state);
  if (failed(buffer))
    return failure();
  FailureOr<BufferLikeType> bufferType =
      getCopyBufferType(op, valueType, options);
  if (failed(bufferType))
    return failure();
  Type resultType = *bufferType;
  if (asFuture)
    resultType = FutureType::get(resultType);
  replaceOpWithNewBufferizedOp<NewOp>(rewriter, op, resultType, *buffer);
  return success();
}

/// offload_to_cpu / load_to_gpu -> offload_buffer / load_buffer.
template <typename TensorOp, typename BufferOp>
struct CopyOpInterface
    : public ReadIntoNewMemory<CopyOpInterface<TensorOp, BufferOp>, TensorOp> {
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    return getCopyBufferType(op, cast<RankedTensorType>(value.getType()),
                             options);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto copy = cast<TensorOp>(op);
    return replaceWithBufferCopy<BufferOp>(
        op, copy.getSource(), cast<RankedTensorType>(copy.getType()),
        /*asFuture=*/false, rewriter, options, state);
  }
};

/// offload_start / load_start on a tensor -> the same op on its buffer,
/// yielding a future of a buffer.
template <typename StartOp>
struct StartOpInterface
    : public ReadIntoNewMemory<StartOpInterface<StartOp>, StartOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto start = cast<StartOp>(op);
    return replaceWithBufferCopy<StartOp>(
        op, start.getSource(),
        cast<RankedTensorType>(start.getFuture().getType().getValueType()),
        /*asFuture=*/true, rewriter, options, state);
  }
};

/// wait on a future of a tensor -> wait on the future of its buffer (the
/// start, which dominates the wait, is bufferized first).
struct WaitOpInterface
    : public BufferizableOpInterface::ExternalModel<WaitOpInterface, WaitOp> {
  bool bufferizesToAllocation(Operation *op, Value value) const { return true; }

  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    return getCopyBufferType(op, cast<RankedTensorType>(value.getType()),
                             options);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<WaitOp>(op);
    auto futureType = wait.getFuture().getType();
    if (!isa<MemRefType>(futureType.getValueType()))
      return op->emitError() << "the start of this future was not bufferized";
    rewriter.setInsertionPoint(op);
    auto bufferWait = WaitOp::create(rewriter, op->getLoc(),
                                     futureType.getValueType(),
                                     wait.getFuture());
    replaceOpWithBufferizedValues(rewriter, op, bufferWait.getResult());
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
    OffloadStartOp::attachInterface<StartOpInterface<OffloadStartOp>>(*ctx);
    LoadStartOp::attachInterface<StartOpInterface<LoadStartOp>>(*ctx);
    WaitOp::attachInterface<WaitOpInterface>(*ctx);
  });
}
