//===- OffloadOps.cpp - offload dialect ops -------------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::offload;

LogicalResult mlir::offload::verifyCopyTypes(Operation *op, Type source,
                                             Type result) {
  auto src = cast<ShapedType>(source);
  auto res = cast<ShapedType>(result);
  if (isa<TensorType>(src) != isa<TensorType>(res))
    return op->emitOpError() << "result " << result << " and source " << source
                             << " must both be tensors or both be buffers";
  if (src.getShape() != res.getShape() ||
      src.getElementType() != res.getElementType())
    return op->emitOpError()
           << "result " << result
           << " must have the shape and element type of source " << source;
  // A host tensor's encoding is #offload.host, so a device tensor with an
  // encoding of its own (a sparse layout) would lose it on the way.
  for (Type type : {source, result})
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.getEncoding() && !isHostTensorType(tensor))
      return op->emitOpError()
             << "copies " << type
             << ", whose encoding has no host form (a host tensor's "
                "encoding is #offload.host)";
  if (auto buffer = dyn_cast<MemRefType>(res);
      buffer && !buffer.getLayout().isIdentity())
    return op->emitOpError() << "result " << result
                             << " must have an identity layout (it is a new "
                                "allocation)";
  return success();
}

LogicalResult mlir::offload::verifyHostBufferLayout(Operation *op,
                                                    Type type) {
  auto buffer = dyn_cast<MemRefType>(type);
  if (!buffer || !isHostMemRefType(buffer) || buffer.getLayout().isIdentity())
    return success();
  return op->emitOpError()
         << "host buffer " << type
         << " must have an identity layout (a pinned host block is dense from "
            "its start); bufferize with "
            "function-boundary-type-conversion=identity-layout-map";
}

LogicalResult OffloadToCpuOp::verify() {
  return verifyCopyTypes(*this, getSource().getType(),
                                  getResult().getType());
}

LogicalResult LoadToGpuOp::verify() {
  return verifyCopyTypes(*this, getSource().getType(),
                                  getResult().getType());
}

//===----------------------------------------------------------------------===//
// RecomputeOp
//===----------------------------------------------------------------------===//

LogicalResult RecomputeOp::verify() {
  if (getName().empty())
    return emitOpError() << "expects a non-empty 'name' (the forward value)";
  for (auto [index, input] : llvm::enumerate(getInputs()))
    if (isHostResident(input.getType()) || isa<FutureLikeType>(input.getType()))
      return emitOpError() << "input #" << index << " is " << input.getType()
                           << ": a recomputation reads device values only "
                              "(load a host value first)";
  return success();
}

LogicalResult RecomputeOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments for " << getInputs().size()
                         << " inputs";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs())))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return emitOpError() << "body argument #" << index << " is "
                           << std::get<0>(pair) << ", input #" << index
                           << " is " << std::get<1>(pair).getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end in 'offload.yield'";
  if (yield.getValue().getType() != getResult().getType())
    return emitOpError() << "yields " << yield.getValue().getType()
                         << " but its result is " << getResult().getType();
  // Computing the value again must not write anything or wait for a copy:
  // every op of the body is free of memory effects (nested ops too).
  WalkResult walk = body.walk([&](Operation *op) {
    if (op == yield.getOperation() || isMemoryEffectFree(op))
      return WalkResult::advance();
    op->emitOpError()
        << "has memory effects; the body of 'offload.recompute' must be free "
           "of side effects";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// True for the ops that forward a future unchanged to the other future
/// type while a conversion runs: one-shot-bufferize's
/// `bufferization.to_tensor` and `to_buffer`, and dialect conversion's
/// `builtin.unrealized_conversion_cast`.
static bool isFutureCast(Operation *op) {
  return isa<bufferization::ToTensorOp, bufferization::ToBufferOp,
             UnrealizedConversionCastOp>(op) &&
         op->getNumOperands() == 1 && op->getNumResults() == 1 &&
         isa<FutureLikeType>(op->getResult(0).getType());
}

/// A future is waited at most once, by an `offload.wait` in the block that
/// started the copy; nothing else may read it, except the casts that forward
/// it while bufferization runs (their waits count as the future's). Returns
/// how many waits it has (0 or 1).
static FailureOr<unsigned> verifyFutureUses(Operation *op, Value future) {
  unsigned waits = 0;
  SmallVector<Value> forwarded = {future};
  while (!forwarded.empty()) {
    for (Operation *user : forwarded.pop_back_val().getUsers()) {
      if (user->getBlock() != op->getBlock())
        return op->emitOpError()
               << "future must be waited in the block that starts the copy";
      if (isFutureCast(user)) {
        forwarded.push_back(user->getResult(0));
        continue;
      }
      if (!isa<WaitOp>(user))
        return op->emitOpError()
               << "future may only be read by 'offload.wait', not by '"
               << user->getName() << "'";
      if (++waits > 1)
        return op->emitOpError() << "future is waited more than once";
    }
  }
  return waits;
}

/// A future no start of this dialect made (a block argument, or the result
/// of another op) is waited at most once too; the starts count their own
/// futures' waits (verifyFutureUses).
LogicalResult WaitOp::verify() {
  Value future = getFuture();
  while (Operation *def = future.getDefiningOp()) {
    if (!isFutureCast(def))
      break;
    future = def->getOperand(0);
  }
  if (getStartedCopySource(future))
    return success();
  unsigned waits = 0;
  SmallVector<Value> forwarded = {future};
  while (!forwarded.empty())
    for (Operation *user : forwarded.pop_back_val().getUsers()) {
      if (isFutureCast(user))
        forwarded.push_back(user->getResult(0));
      else if (isa<WaitOp>(user))
        ++waits;
    }
  if (waits > 1)
    return emitOpError() << "waits a future that is waited " << waits
                         << " times: every copy is waited at most once";
  return success();
}

LogicalResult mlir::offload::verifyContiguousSource(Operation *op,
                                                    Type source) {
  auto buffer = dyn_cast<MemRefType>(source);
  if (!buffer || isContiguousMemRef(buffer))
    return success();
  return op->emitOpError()
         << "source " << source
         << " is not contiguous: the copy reads it as one run of bytes; copy "
            "it into a contiguous buffer first";
}

/// A start begins a copy: it writes its future on the copies resource, and
/// reads its source where that is a buffer (a tensor is a value, not memory).
static void getStartEffects(
    Value future, OpOperand &source,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), cast<OpResult>(future),
                       CopyResource::get());
  if (isa<BaseMemRefType>(source.get().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &source,
                         SideEffects::DefaultResource::get());
}

/// An offload's start also consumes a buffer source (see
/// offload.offload_buffer).
static void getOffloadStartEffects(
    Value future, OpOperand &source,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getStartEffects(future, source, effects);
  if (isa<BaseMemRefType>(source.get().getType()))
    effects.emplace_back(MemoryEffects::Free::get(), &source,
                         SideEffects::DefaultResource::get());
}

void OffloadStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getOffloadStartEffects(getFuture(), getSourceMutable(), effects);
}

/// The buffer whose storage `buffer` is a view of, through the view ops
/// (ViewLikeOpInterface) that define it; `buffer` itself if it is no view.
static Value getStorageRoot(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>()) {
    if (view.getViewDest() != buffer)
      break;
    buffer = view.getViewSource();
  }
  return buffer;
}

bool mlir::offload::readsOnlyMetadata(Operation *user) {
  return user->getNumResults() > 0 && isMemoryEffectFree(user) &&
         llvm::all_of(user->getResultTypes(), [](Type type) {
           return type.isIntOrIndexOrFloat();
         });
}

/// True if `user` runs after `op`: in the innermost block holding both (the
/// ops' ancestors there), `user`'s comes after `op`'s. A use in a region of
/// an op that holds `op` (a loop around it) does not count.
static bool isUsedAfter(Operation *user, Operation *op) {
  for (Operation *scope = op; scope; scope = scope->getParentOp()) {
    if (!scope->getBlock())
      return false;
    if (Operation *ancestor = scope->getBlock()->findAncestorOpInBlock(*user))
      return ancestor != scope && !ancestor->isBeforeInBlock(scope);
  }
  return false;
}

/// The first use, after `op` in its block, of the storage of `buffer`:
/// `buffer`, the buffers it is a view of, and every view of those
/// (transitively). Uses that read only metadata, and views (whose own uses
/// count), are not uses. Null if there is none.
static Operation *findStorageUseAfter(Operation *op, Value buffer) {
  SmallVector<Value> worklist = {getStorageRoot(buffer)};
  llvm::SmallPtrSet<Value, 8> seen = {worklist.front()};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (user == op)
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == current) {
        if (seen.insert(view.getViewDest()).second)
          worklist.push_back(view.getViewDest());
        continue;
      }
      if (readsOnlyMetadata(user))
        continue;
      if (isUsedAfter(user, op))
        return user;
    }
  }
  return nullptr;
}

LogicalResult mlir::offload::verifyConsumedSource(Operation *op, Value source,
                                                  bool releaseSource) {
  if (!isa<BaseMemRefType>(source.getType())) {
    if (releaseSource)
      return op->emitOpError()
             << "releases its source, but the source is a tensor: only a "
                "buffer can be handed to the runtime";
    return success();
  }
  if (releaseSource && getStorageRoot(source) != source) {
    InFlightDiagnostic diag =
        op->emitOpError()
        << "releases its source, which is a view of another buffer: the "
           "runtime frees the whole allocation; release the allocation "
           "itself, or copy the view into its own buffer first";
    diag.attachNote(source.getDefiningOp()->getLoc()) << "view made here";
    return diag;
  }
  if (Operation *user = findStorageUseAfter(op, source)) {
    InFlightDiagnostic diag =
        op->emitOpError()
        << "consumes its source, whose storage is used after it: the copy "
           "reads the source until it completes, so copy the source first "
           "(or move the op after the last use of the source and of every "
           "view of its storage)";
    diag.attachNote(user->getLoc()) << "later use here";
    return diag;
  }
  return success();
}

/// The members of a group that releases its sources have distinct storage:
/// the runtime would free a shared allocation once per member.
static LogicalResult verifyDistinctReleasedStorage(Operation *op,
                                                   ValueRange sources) {
  llvm::SmallDenseMap<Value, unsigned> memberOf;
  for (auto [index, source] : llvm::enumerate(sources)) {
    if (!isa<BaseMemRefType>(source.getType()))
      continue;
    auto [it, inserted] = memberOf.try_emplace(getStorageRoot(source), index);
    if (!inserted)
      return op->emitOpError()
             << "releases sources #" << it->second << " and #" << index
             << ", which share one allocation: the runtime would free it "
                "twice; copy one of them into its own buffer first";
  }
  return success();
}

void LoadStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getStartEffects(getFuture(), getSourceMutable(), effects);
}

/// Reads and frees (retires) the future on the copies resource; on a buffer,
/// the result is a new buffer the copy wrote.
void WaitOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getFutureMutable(),
                       CopyResource::get());
  effects.emplace_back(MemoryEffects::Free::get(), &getFutureMutable(),
                       CopyResource::get());
  if (isa<BaseMemRefType>(getResult().getType())) {
    effects.emplace_back(MemoryEffects::Allocate::get(),
                         cast<OpResult>(getResult()),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         cast<OpResult>(getResult()),
                         SideEffects::DefaultResource::get());
  }
}

/// One device-to-host copy `op` starts (alone or in a group): `source`
/// becomes the value of `future`.
static LogicalResult verifyOffloadCopy(Operation *op, Value source,
                                       Value future, bool releaseSource) {
  if (failed(verifyCopyTypes(
          op, source.getType(),
          cast<FutureLikeType>(future.getType()).getValueType())) ||
      failed(verifyContiguousSource(op, source.getType())) ||
      failed(verifyConsumedSource(op, source, releaseSource)))
    return failure();
  return verifyFutureUses(op, future);
}

/// One host-to-device copy `op` starts; returns how often it is waited.
static FailureOr<unsigned> verifyLoadCopy(Operation *op, Value source,
                                          Value future) {
  if (failed(verifyCopyTypes(
          op, source.getType(),
          cast<FutureLikeType>(future.getType()).getValueType())) ||
      failed(verifyHostBufferLayout(op, source.getType())))
    return failure();
  return verifyFutureUses(op, future);
}

LogicalResult OffloadStartOp::verify() {
  return verifyOffloadCopy(*this, getSource(), getFuture(),
                           getReleaseSource());
}

LogicalResult LoadStartOp::verify() {
  FailureOr<unsigned> waits = verifyLoadCopy(*this, getSource(), getFuture());
  if (failed(waits))
    return failure();
  // The wait is where the compute stream is ordered after the copy and
  // where the device buffer it fills is handed over: a load without one
  // would fill memory nothing releases or reads.
  if (*waits == 0)
    return emitOpError()
           << "starts a load that is never waited: its future must be read by "
              "one 'offload.wait' in this block";
  return success();
}

Value mlir::offload::getStartedCopySource(Value future) {
  auto result = dyn_cast<OpResult>(future);
  if (!result)
    return nullptr;
  Operation *op = result.getOwner();
  if (auto start = dyn_cast<OffloadStartOp>(op))
    return start.getSource();
  if (auto start = dyn_cast<LoadStartOp>(op))
    return start.getSource();
  if (auto group = dyn_cast<OffloadGroupStartOp>(op))
    return group.getSources()[result.getResultNumber()];
  if (auto group = dyn_cast<LoadGroupStartOp>(op))
    return group.getSources()[result.getResultNumber()];
  return nullptr;
}

/// A group's members pair up (as many futures as sources) and there are at
/// least two of them (one copy is an offload_start or a load_start).
static LogicalResult verifyGroupShape(Operation *op, ValueRange sources,
                                      ValueRange futures) {
  if (sources.size() != futures.size())
    return op->emitOpError() << "has " << sources.size() << " sources but "
                             << futures.size() << " futures";
  if (sources.size() < 2)
    return op->emitOpError()
           << "groups at least two copies; one copy is a single start";
  return success();
}

void OffloadGroupStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (auto [future, source] :
       llvm::zip_equal(getFutures(), getSourcesMutable()))
    getOffloadStartEffects(future, source, effects);
}

void LoadGroupStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (auto [future, source] :
       llvm::zip_equal(getFutures(), getSourcesMutable()))
    getStartEffects(future, source, effects);
}

LogicalResult OffloadGroupStartOp::verify() {
  if (failed(verifyGroupShape(*this, getSources(), getFutures())) ||
      (getReleaseSource() &&
       failed(verifyDistinctReleasedStorage(*this, getSources()))))
    return failure();
  for (auto [source, future] : llvm::zip_equal(getSources(), getFutures()))
    if (failed(verifyOffloadCopy(*this, source, future, getReleaseSource())))
      return failure();
  return success();
}

LogicalResult LoadGroupStartOp::verify() {
  if (failed(verifyGroupShape(*this, getSources(), getFutures())))
    return failure();
  for (auto [source, future] : llvm::zip_equal(getSources(), getFutures())) {
    FailureOr<unsigned> waits = verifyLoadCopy(*this, source, future);
    if (failed(waits))
      return failure();
    if (*waits == 0)
      return emitOpError()
             << "starts a load that is never waited: each future must be read "
                "by one 'offload.wait' in this block";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PlacementOp
//===----------------------------------------------------------------------===//

/// Local checks only: where a placement stands, and whether its step has
/// the saved values it names, is offload-schedule-copies' to judge (other
/// passes move and copy placements; one that places nothing is dropped with
/// a remark, not rejected).
LogicalResult PlacementOp::verify() {
  ArrayRef<int64_t> saved = getSaved();
  if (saved.empty())
    return emitOpError() << "names no saved value";
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t index : saved) {
    if (index < 0)
      return emitOpError() << "names saved value " << index
                           << "; saved value indices are >= 0";
    if (!seen.insert(index).second)
      return emitOpError() << "names saved value " << index << " twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

#define GET_TYPEDEF_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOpsTypes.cpp.inc"

#include "offload/Dialect/Offload/IR/OffloadTypeInterfaces.cpp.inc"

LogicalResult
FutureType::verify(function_ref<InFlightDiagnostic()> emitError,
                   Type valueType) {
  if (isa<MemRefType>(valueType))
    return emitError() << "a future of a buffer is "
                       << BufferFutureType::get(valueType);
  if (!isa<RankedTensorType>(valueType))
    return emitError() << "a future's value must be a ranked tensor, not "
                       << valueType;
  return success();
}

LogicalResult
BufferFutureType::verify(function_ref<InFlightDiagnostic()> emitError,
                         Type valueType) {
  if (isa<RankedTensorType>(valueType))
    return emitError() << "a future of a tensor is "
                       << FutureType::get(valueType);
  if (!isa<MemRefType>(valueType))
    return emitError() << "a buffer future's value must be a memref, not "
                       << valueType;
  return success();
}

// ShapedTypeInterface: a future has the shape and element type of its value,
// and is always ranked.

/// The future of `valueType` with `shape` (the value's own where none is
/// given) and `elementType`.
static ShapedType cloneFutureWith(Type valueType,
                                  std::optional<ArrayRef<int64_t>> shape,
                                  Type elementType) {
  auto value = cast<ShapedType>(valueType);
  return cast<ShapedType>(getFutureType(
      value.cloneWith(shape.value_or(value.getShape()), elementType)));
}

#define OFFLOAD_FUTURE_SHAPED_TYPE(FutureClass)                                \
  bool FutureClass::hasRank() const { return true; }                           \
  ArrayRef<int64_t> FutureClass::getShape() const {                            \
    return cast<ShapedType>(getValueType()).getShape();                        \
  }                                                                            \
  Type FutureClass::getElementType() const {                                   \
    return cast<ShapedType>(getValueType()).getElementType();                  \
  }                                                                            \
  ShapedType FutureClass::cloneWith(std::optional<ArrayRef<int64_t>> shape,    \
                                    Type elementType) const {                  \
    return cloneFutureWith(getValueType(), shape, elementType);                \
  }
OFFLOAD_FUTURE_SHAPED_TYPE(FutureType)
OFFLOAD_FUTURE_SHAPED_TYPE(BufferFutureType)
#undef OFFLOAD_FUTURE_SHAPED_TYPE

FutureLikeType mlir::offload::getFutureType(Type valueType) {
  if (isa<MemRefType>(valueType))
    return BufferFutureType::get(valueType);
  return FutureType::get(valueType);
}

void OffloadDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "offload/Dialect/Offload/IR/OffloadOpsTypes.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "offload/Dialect/Offload/IR/OffloadOps.cpp.inc"
