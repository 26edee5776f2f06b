//===- BufferDeallocationOpInterfaceImpl.cpp - The offload consumes --------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Ownership-based buffer deallocation for the device-to-host copies on
// buffers (`offload.offload_buffer`, `offload.offload_start` on a memref).
// Such a copy consumes its source: the copy reads it asynchronously, so the
// compute stream must not free it (nor reuse its memory) until the copy is
// done, and only the runtime knows when that is.
//
// Guarantees, for each such op the deallocation pass meets:
//   - if the op's block provably owns the source (ownership `true`), the
//     source is an allocation (not a view into one) and neither it nor a view
//     of it is used after the op, the op takes the source over: it gets
//     `release_source`, the source leaves the block's deallocation list, and
//     the lowering hands it to offload_rt_free_device_after_copy (or its
//     release variant), which frees it behind the copy;
//   - otherwise (a function argument, a view, a buffer of dynamic ownership,
//     one still used later) the op copies the source into a new allocation
//     first and consumes that: correct, at the cost of one device copy;
//   - the host buffer the op produces is owned by its block (as for any
//     allocation), so a host buffer nothing returns is freed.
// The pass therefore never inserts a deallocation of a consumed source, and
// the runtime frees it exactly once.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferDeallocationOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::offload;

/// True if `value` or a view of it (transitively) is used by an op that is
/// not before `op` in `op`'s block (any use outside that block counts), other
/// than to read its metadata (readsOnlyMetadata).
static bool isUsedAfter(Value value, Operation *op) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (user == op || readsOnlyMetadata(user))
        continue;
      Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
      if (!ancestor || !ancestor->isBeforeInBlock(op))
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == current)
          worklist.push_back(view->getResult(0));
    }
  }
  return false;
}

static Value boolConstant(OpBuilder &builder, Location loc, bool value) {
  return arith::ConstantOp::create(builder, loc, builder.getBoolAttr(value));
}

/// True if `value` is the result of an op that allocates it (not a view).
static bool isAllocation(Value value) {
  auto effects = value.getDefiningOp<MemoryEffectOpInterface>();
  return effects &&
         effects.getEffectOnValue<MemoryEffects::Allocate>(value).has_value();
}

/// Hands `source`, consumed by the device-to-host copy `op`, to the runtime:
/// taken over if this block owns it, is its allocation and nothing uses it
/// later; else a private copy is made and consumed instead. Returns the
/// value the op consumes.
static Value takeOverSource(Operation *op, Value source, OpBuilder &builder,
                            DeallocationState &state) {
  Block *block = op->getBlock();
  Location loc = op->getLoc();
  Ownership ownership = state.getOwnership(source, block);
  bool owned = ownership.isUnique() &&
               matchPattern(ownership.getIndicator(), m_One());
  if (owned && isAllocation(source) && !isUsedAfter(source, op)) {
    // Taken over: released by the runtime behind the copy, never here.
    state.dropMemrefToDeallocate(source, block);
    state.resetOwnerships(source, block);
    state.updateOwnership(source, boolConstant(builder, loc, false), block);
    return source;
  }
  // Not ours to free: consume a private copy. The original keeps its
  // ownership and is deallocated (or not) as before.
  auto sourceType = cast<MemRefType>(source.getType());
  auto copyType = MemRefType::get(sourceType.getShape(),
                                  sourceType.getElementType(),
                                  MemRefLayoutAttrInterface(),
                                  sourceType.getMemorySpace());
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < sourceType.getRank(); ++dim)
    if (sourceType.isDynamicDim(dim))
      dynamicSizes.push_back(memref::DimOp::create(builder, loc, source, dim));
  Value copy = memref::AllocOp::create(builder, loc, copyType, dynamicSizes);
  memref::CopyOp::create(builder, loc, source, copy);
  state.updateOwnership(copy, boolConstant(builder, loc, false), block);
  return copy;
}

namespace {
/// offload_group_start on buffers: each source as ConsumeSourceModel's.
struct ConsumeGroupSourcesModel
    : public BufferDeallocationOpInterface::ExternalModel<
          ConsumeGroupSourcesModel, OffloadGroupStartOp> {
  FailureOr<Operation *> process(Operation *operation, DeallocationState &state,
                                 const DeallocationOptions &options) const {
    auto op = cast<OffloadGroupStartOp>(operation);
    if (llvm::any_of(op.getSources(), [](Value source) {
          return !isa<MemRefType>(source.getType());
        }))
      return op->emitOpError()
             << "on a tensor reached buffer deallocation; bufferize first";
    if (op.getReleaseSource())
      return op->emitOpError()
             << "already releases its sources: run buffer deallocation once";
    OpBuilder builder(op);
    for (OpOperand &source : op.getSourcesMutable())
      source.set(takeOverSource(op, source.get(), builder, state));
    op.setReleaseSource(true);
    return op.getOperation();
  }
};

template <typename OpTy>
struct ConsumeSourceModel
    : public BufferDeallocationOpInterface::ExternalModel<
          ConsumeSourceModel<OpTy>, OpTy> {
  FailureOr<Operation *> process(Operation *operation, DeallocationState &state,
                                 const DeallocationOptions &options) const {
    auto op = cast<OpTy>(operation);
    Block *block = op->getBlock();
    OpBuilder builder(op);
    Location loc = op.getLoc();

    // The host buffer is a new allocation, owned here (a future is not a
    // memref: its wait yields the buffer).
    for (Value result : op->getResults())
      if (isa<BaseMemRefType>(result.getType())) {
        state.updateOwnership(
            result, boolConstant(builder, loc, true));
        state.addMemrefToDeallocate(result, block);
      }

    if (!isa<MemRefType>(op.getSource().getType()))
      return op->emitOpError()
             << "on a tensor reached buffer deallocation; bufferize first";
    if (op.getReleaseSource())
      return op->emitOpError()
             << "already releases its source: run buffer deallocation once";
    op.getSourceMutable().assign(
        takeOverSource(op, op.getSource(), builder, state));
    op.setReleaseSource(true);
    return op.getOperation();
  }
};
} // namespace

void mlir::offload::registerBufferDeallocationOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OffloadDialect *) {
    OffloadBufferOp::attachInterface<ConsumeSourceModel<OffloadBufferOp>>(*ctx);
    OffloadStartOp::attachInterface<ConsumeSourceModel<OffloadStartOp>>(*ctx);
    OffloadGroupStartOp::attachInterface<ConsumeGroupSourcesModel>(*ctx);
  });
}
