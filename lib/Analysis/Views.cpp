//===- Views.cpp - Telling views from real consumers ----------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Views.h"
#include "offload/Interfaces/StorageViewOpInterface.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::offload;

Value mlir::offload::getViewSource(Operation *op) {
  if (auto view = dyn_cast<StorageViewOpInterface>(op))
    return view.getViewSource();
  // Buffers: a memref view says so through the upstream interface.
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return view.getViewSource();
  return nullptr;
}

Value mlir::offload::getInPlaceSource(OpResult result) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(result.getOwner());
  if (!effects)
    return nullptr;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &instance : instances) {
    if (!isa<MemoryEffects::Write>(instance.getEffect()))
      continue;
    OpOperand *written = instance.getEffectValue<OpOperand *>();
    if (written && written->get().getType() == result.getType())
      return written->get();
  }
  return nullptr;
}

/// The value whose storage `value` shares: a view's source, or the operand
/// its op writes in place; null if `value` owns its storage.
static Value getStorageSource(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return nullptr;
  if (Value source = getViewSource(result.getOwner()))
    return source;
  return getInPlaceSource(result);
}

Value mlir::offload::getStorageRoot(Value value) {
  while (Value source = getStorageSource(value))
    value = source;
  return value;
}

SmallVector<Value> mlir::offload::collectViewClosure(Value root) {
  llvm::SetVector<Value> closure;
  closure.insert(root);
  for (unsigned i = 0; i < closure.size(); ++i) {
    Value value = closure[i];
    for (Operation *user : value.getUsers())
      for (Value result : user->getResults())
        if (getStorageSource(result) == value)
          closure.insert(result);
  }
  return closure.takeVector();
}

Operation *mlir::offload::getAncestorInBlock(Operation *op, Block &block) {
  return block.findAncestorOpInBlock(*op);
}

Operation *mlir::offload::findLastUserInBlock(ArrayRef<Value> values,
                                              Block &block,
                                              Operation *ignored) {
  Operation *last = nullptr;
  for (Value value : values) {
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = getAncestorInBlock(user, block);
      if (!ancestor || ancestor == ignored)
        continue;
      if (!last || last->isBeforeInBlock(ancestor))
        last = ancestor;
    }
  }
  return last;
}

Operation *mlir::offload::findFirstUserInBlock(ArrayRef<Value> values,
                                               Block &block) {
  Operation *first = nullptr;
  for (Value value : values) {
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = getAncestorInBlock(user, block);
      if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
        first = ancestor;
    }
  }
  return first;
}
