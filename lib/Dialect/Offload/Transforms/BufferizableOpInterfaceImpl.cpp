//===- BufferizableOpInterfaceImpl.cpp - Bufferizing the copies -----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Every copy reads its operand and writes a fresh allocation of the other
// memory: it never aliases its operand. A device-to-host copy consumes its
// operand's buffer, so the analysis treats it as a write of the operand (the
// operand is copied first where it is used later); bufferization needs no
// other copy of the operand, except where the operand's buffer is not
// contiguous (a strided view): a copy reads its source as one run of bytes,
// so such a source is first copied into a contiguous buffer.
//
// The asynchronous forms keep their shape: a start takes the source's buffer
// and yields a future of a buffer, the wait yields that buffer. For that,
// the future types implement bufferization's type interfaces:
// `!offload.future<tensor>` is tensor-like, its buffer type the
// `!offload.buffer_future<memref>` of the tensor's buffer. So one-shot-
// bufferize treats a future as one more tensor: a bufferized start reaches
// its not yet bufferized wait through `bufferization.to_tensor`, and the IR
// verifies between any two steps.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/Transforms/BufferizableOpInterfaceImpl.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::offload;

/// The buffer type a copy's tensor result (or a future's tensor) becomes:
/// host tensors always live in the host memory space, device tensors in the
/// memory space the options give them.
static FailureOr<MemRefType>
getCopyBufferType(RankedTensorType tensorType,
                  const BufferizationOptions &options,
                  function_ref<InFlightDiagnostic()> emitError) {
  Attribute memorySpace = HostMemoryAttr::get(tensorType.getContext());
  if (!isHostTensorType(tensorType)) {
    std::optional<Attribute> space = options.defaultMemorySpaceFn(tensorType);
    if (!space)
      return emitError() << "no memory space for " << tensorType;
    memorySpace = *space;
  }
  return MemRefType::get(tensorType.getShape(), tensorType.getElementType(),
                         MemRefLayoutAttrInterface(), memorySpace);
}

static FailureOr<BufferLikeType>
getCopyBufferType(Operation *op, RankedTensorType tensorType,
                  const BufferizationOptions &options) {
  FailureOr<MemRefType> type = getCopyBufferType(
      tensorType, options, [op] { return op->emitError(); });
  if (failed(type))
    return failure();
  return cast<BufferLikeType>(*type);
}

namespace {
/// `!offload.future<T>` is a tensor for bufferization; its buffer is the
/// `!offload.buffer_future` of the memref `T` becomes.
struct FutureTensorModel
    : public TensorLikeType::ExternalModel<FutureTensorModel, FutureType> {
  FailureOr<BufferLikeType>
  getBufferType(Type type, const BufferizationOptions &options,
                function_ref<InFlightDiagnostic()> emitError) const {
    auto tensor = cast<RankedTensorType>(cast<FutureType>(type).getValueType());
    FailureOr<MemRefType> buffer = getCopyBufferType(tensor, options, emitError);
    if (failed(buffer))
      return failure();
    return cast<BufferLikeType>(BufferFutureType::get(*buffer));
  }

  /// The buffer of a future is a future of a memref of the same shape and
  /// element type, in host memory exactly where the tensor is a host tensor.
  LogicalResult
  verifyCompatibleBufferType(Type type, BufferLikeType bufferType,
                             function_ref<InFlightDiagnostic()> emitError) const {
    auto tensor = cast<RankedTensorType>(cast<FutureType>(type).getValueType());
    auto future = dyn_cast<BufferFutureType>(bufferType);
    auto memref = future ? dyn_cast<MemRefType>(future.getValueType())
                         : MemRefType();
    if (memref && memref.getShape() == tensor.getShape() &&
        memref.getElementType() == tensor.getElementType() &&
        isHostMemRefType(memref) == isHostTensorType(tensor))
      return success();
    return emitError() << bufferType << " is not a buffer of " << type
                       << ": expected an '!offload.buffer_future' of a memref "
                          "with the same shape and element type, in the "
                          "#offload.host memory space if and only if the "
                          "tensor is a host tensor";
  }
};

/// `!offload.buffer_future<M>` is a buffer for bufferization.
struct BufferFutureModel
    : public BufferLikeType::ExternalModel<BufferFutureModel,
                                           BufferFutureType> {};
} // namespace

namespace {
/// True for the device-to-host copies: on buffers they consume their source
/// (offload.offload_buffer).
template <typename OpTy>
constexpr bool kConsumesSource = std::is_same_v<OpTy, OffloadToCpuOp> ||
                                 std::is_same_v<OpTy, OffloadStartOp> ||
                                 std::is_same_v<OpTy, OffloadGroupStartOp>;

/// Common answers of ops that read their tensor operand into new memory.
/// A device-to-host copy also counts as writing its operand: its buffer form
/// consumes the source (the copy reads it after the op, and the runtime
/// frees it), so the analysis must give it a buffer no later op reads or
/// writes. One-shot-bufferize then copies the source first wherever the
/// tensor is still used after the copy, or is not writable (a constant, a
/// read-only argument).
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
    return kConsumesSource<OpTy>;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &opOperand,
                                      const AnalysisState &state) const {
    return {};
  }
};

/// `buffer` if a copy can read it as one run of bytes; otherwise (a strided
/// view, such as the subview a saved `tensor.extract_slice` becomes) a new
/// identity-layout allocation in its memory space that `buffer` is copied
/// into first.
static FailureOr<Value> getContiguousBuffer(RewriterBase &rewriter,
                                            Location loc, Value buffer,
                                            const BufferizationOptions &options) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || isContiguousMemRef(type))
    return buffer;
  auto denseType =
      MemRefType::get(type.getShape(), type.getElementType(),
                      MemRefLayoutAttrInterface(), type.getMemorySpace());
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      dynamicSizes.push_back(memref::DimOp::create(rewriter, loc, buffer, dim));
  FailureOr<Value> dense =
      options.createAlloc(rewriter, loc, denseType, dynamicSizes);
  if (failed(dense) ||
      failed(options.createMemCpy(rewriter, loc, buffer, *dense)))
    return failure();
  return *dense;
}

/// Replaces a copy of a tensor by `NewOp` on the source's buffer (for a
/// device-to-host copy, made contiguous first if it is not). The new op yields the buffer of
/// `valueType`, or with `asFuture` a future of it.
template <typename NewOp>
LogicalResult replaceWithBufferCopy(Operation *op, Value source,
                                    RankedTensorType valueType, bool asFuture,
                                    RewriterBase &rewriter,
                                    const BufferizationOptions &options,
                                    BufferizationState &state) {
  FailureOr<Value> buffer = getBuffer(rewriter, source, options, state);
  if (failed(buffer))
    return failure();
  // Only device sources: a host source is a pinned block the runtime
  // allocated, which a copy into a new host allocation would not be.
  if constexpr (std::is_same_v<NewOp, OffloadBufferOp> ||
                std::is_same_v<NewOp, OffloadStartOp>) {
    buffer = getContiguousBuffer(rewriter, op->getLoc(), *buffer, options);
    if (failed(buffer))
      return failure();
  }
  FailureOr<BufferLikeType> bufferType =
      getCopyBufferType(op, valueType, options);
  if (failed(bufferType))
    return failure();
  Type resultType = *bufferType;
  if (asFuture)
    resultType = BufferFutureType::get(resultType);
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

/// Copy starts: their results are futures, whose buffer type is the
/// future's own (FutureTensorModel).
template <typename ConcreteModel, typename OpTy>
struct StartsCopies : public ReadIntoNewMemory<ConcreteModel, OpTy> {
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    return cast<TensorLikeType>(value.getType())
        .getBufferType(options, [op] { return op->emitError(); });
  }
};

/// offload_start / load_start on a tensor -> the same op on its buffer,
/// yielding a future of a buffer.
template <typename StartOp>
struct StartOpInterface
    : public StartsCopies<StartOpInterface<StartOp>, StartOp> {
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

/// offload_group_start / load_group_start on tensors -> the same op on their
/// buffers (each made contiguous first for a device-to-host copy), yielding
/// futures of buffers.
template <typename GroupOp>
struct GroupStartOpInterface
    : public StartsCopies<GroupStartOpInterface<GroupOp>, GroupOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto group = cast<GroupOp>(op);
    SmallVector<Value> buffers;
    SmallVector<Type> futureTypes;
    for (auto [source, future] :
         llvm::zip_equal(group.getSources(), group.getFutures())) {
      FailureOr<Value> buffer = getBuffer(rewriter, source, options, state);
      if (failed(buffer))
        return failure();
      if constexpr (kConsumesSource<GroupOp>) {
        buffer = getContiguousBuffer(rewriter, op->getLoc(), *buffer, options);
        if (failed(buffer))
          return failure();
      }
      FailureOr<BufferLikeType> bufferType = getCopyBufferType(
          op,
          cast<RankedTensorType>(
              cast<FutureLikeType>(future.getType()).getValueType()),
          options);
      if (failed(bufferType))
        return failure();
      buffers.push_back(*buffer);
      futureTypes.push_back(BufferFutureType::get(*bufferType));
    }
    rewriter.setInsertionPoint(op);
    Operation *bufferized;
    if constexpr (kConsumesSource<GroupOp>)
      bufferized = GroupOp::create(rewriter, op->getLoc(), TypeRange(futureTypes),
                                   ValueRange(buffers), /*release_source=*/false);
    else
      bufferized = GroupOp::create(rewriter, op->getLoc(), TypeRange(futureTypes),
                                   ValueRange(buffers));
    replaceOpWithBufferizedValues(rewriter, op, bufferized->getResults());
    return success();
  }
};

/// wait on a future of a tensor -> wait on the future's buffer, the future
/// of a buffer that the bufferized start yields. The wait reads its future
/// and yields new memory (nothing else can reach the buffer a copy fills).
struct WaitOpInterface
    : public BufferizableOpInterface::ExternalModel<WaitOpInterface, WaitOp> {
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
    return getCopyBufferType(op, cast<RankedTensorType>(value.getType()),
                             options);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<WaitOp>(op);
    FailureOr<Value> future =
        getBuffer(rewriter, wait.getFuture(), options, state);
    if (failed(future))
      return failure();
    auto futureType = cast<FutureLikeType>(future->getType());
    rewriter.setInsertionPoint(op);
    auto bufferWait = WaitOp::create(rewriter, op->getLoc(),
                                     futureType.getValueType(), *future);
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
    OffloadGroupStartOp::attachInterface<
        GroupStartOpInterface<OffloadGroupStartOp>>(*ctx);
    LoadGroupStartOp::attachInterface<GroupStartOpInterface<LoadGroupStartOp>>(
        *ctx);
    WaitOp::attachInterface<WaitOpInterface>(*ctx);
    FutureType::attachInterface<FutureTensorModel>(*ctx);
    BufferFutureType::attachInterface<BufferFutureModel>(*ctx);
  });
}
