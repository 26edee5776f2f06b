//===- SharedStorage.cpp - Saved values that move as one copy -------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::offload;

/// Whether `op`, a view, can be cloned into backward with only its view
/// source replaced: no regions, no effects, one result, and every other
/// operand a constant (cloned along).
static bool isReappliableView(Operation *op, Value source) {
  if (op->getNumRegions() != 0 || op->getNumResults() != 1 ||
      !isMemoryEffectFree(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    return operand == source || matchPattern(operand, m_Constant());
  });
}

Value mlir::offload::getSharedCopySource(Value value, Block &forwardBody) {
  // Up through re-appliable views.
  Value source = value;
  while (auto result = dyn_cast<OpResult>(source)) {
    Value viewed = getViewSource(result.getOwner());
    if (!viewed || !isReappliableView(result.getOwner(), viewed))
      break;
    source = viewed;
  }
  auto result = dyn_cast<OpResult>(source);
  if (!result || result.getOwner()->getBlock() != &forwardBody)
    return nullptr;
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!type || !type.hasStaticShape() || isHostTensorType(type) ||
      !getTensorSizeInBytes(type))
    return nullptr;
  // It owns the whole storage if only in-place writes (which return their
  // operand's type) lead from it to the root; a view on the way (the source
  // is an in-place result of a view) means it owns only part of it.
  Value owner = source;
  while (auto ownerResult = dyn_cast<OpResult>(owner)) {
    if (getViewSource(ownerResult.getOwner()))
      return nullptr;
    Value written = getInPlaceSource(ownerResult);
    if (!written)
      break;
    owner = written;
  }
  if (owner != getStorageRoot(source))
    return nullptr;
  return source;
}

SmallVector<Operation *> mlir::offload::getViewChain(Value source,
                                                     Value value) {
  SmallVector<Operation *> chain;
  for (Value current = value; current != source;) {
    Operation *op = current.getDefiningOp();
    assert(op && getViewSource(op) && "not a view of the source");
    chain.push_back(op);
    current = getViewSource(op);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

bool mlir::offload::shouldShareCopy(Value source, ArrayRef<Value> members) {
  if (members.size() < 2)
    return false;
  // One value saved several times: one copy of it, whatever its size.
  if (llvm::all_of(members, [&](Value member) { return member == source; }))
    return true;
  std::optional<int64_t> sourceBytes = getTensorSizeInBytes(source.getType());
  if (!sourceBytes)
    return false;
  int64_t memberBytes = 0;
  llvm::SmallPtrSet<void *, 8> seen;
  for (Value member : members) {
    if (!seen.insert(member.getAsOpaquePointer()).second)
      continue;
    std::optional<int64_t> bytes = getTensorSizeInBytes(member.getType());
    if (!bytes)
      return false;
    memberBytes += *bytes;
  }
  return *sourceBytes <= memberBytes;
}

bool mlir::offload::canShrinkSavedInterface(const TrainingStep &step) {
  SmallVector<CallOpInterface> forwardCalls, backwardCalls;
  std::string why;
  if (failed(step.getCalls(forwardCalls, backwardCalls, why)))
    return false;
  // Per-argument attributes would go out of step with erased arguments.
  for (CallOpInterface call : llvm::concat<CallOpInterface>(forwardCalls,
                                                            backwardCalls))
    if (call.getArgAttrsAttr())
      return false;
  // offload-insert-offloads rebuilds a call of forward with fewer results:
  // one whose results carry attributes, or that has regions, stays as it is.
  for (CallOpInterface call : forwardCalls)
    if (call->getNumResults() != step.getForward().getNumResults() ||
        call->getNumRegions() != 0 || call.getResAttrsAttr())
      return false;
  // Each saved result a caller sees goes only to backward, in its place.
  return llvm::all_of(step.getRetypeBlockers(),
                      [](const std::string &why) { return why.empty(); });
}

SmallVector<SharedStorageCopy>
mlir::offload::findSharedStorageCopies(const TrainingStep &step,
                                       ArrayRef<unsigned> offloaded) {
  SmallVector<SharedStorageCopy> copies;
  if (offloaded.size() < 2 || !canShrinkSavedInterface(step))
    return copies;
  Block &body = step.getForward().getFunctionBody().front();
  llvm::MapVector<Value, SmallVector<unsigned>> bySource;
  SmallVector<unsigned> sorted(offloaded);
  llvm::sort(sorted);
  sorted.erase(llvm::unique(sorted), sorted.end());
  for (unsigned i : sorted) {
    // A value with no shared source still shares one copy with itself
    // where it is saved twice.
    Value value = step.getSavedValue(i);
    Value source = getSharedCopySource(value, body);
    bySource[source ? source : value].push_back(i);
  }
  for (auto &[source, members] : bySource) {
    SmallVector<Value> values = llvm::map_to_vector(
        members, [&](unsigned i) { return step.getSavedValue(i); });
    if (!shouldShareCopy(source, values))
      continue;
    SharedStorageCopy copy{source, members, members.front(),
                           getTensorSizeInBytes(source.getType()).value_or(0)};
    for (unsigned i : members)
      if (step.getSavedValue(i) == source) {
        copy.leader = i;
        break;
      }
    copies.push_back(std::move(copy));
  }
  llvm::sort(copies,
             [](const SharedStorageCopy &a, const SharedStorageCopy &b) {
               return a.members.front() < b.members.front();
             });
  return copies;
}
