//===- Effects.cpp - When two ops may trade places ------------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Effects.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::offload;

using EffectList = SmallVector<MemoryEffects::EffectInstance>;

/// An allocation of one of its op's results: memory no other op can name
/// before the op runs, so the effect orders nothing.
static bool isFreshAllocation(const MemoryEffects::EffectInstance &effect) {
  return isa<MemoryEffects::Allocate>(effect.getEffect()) &&
         isa_and_nonnull<OpResult>(effect.getValue());
}

static bool conflict(const MemoryEffects::EffectInstance &a,
                     const MemoryEffects::EffectInstance &b) {
  if (a.getResource()->getResourceID() != b.getResource()->getResourceID())
    return false;
  if (isa<MemoryEffects::Read>(a.getEffect()) &&
      isa<MemoryEffects::Read>(b.getEffect()))
    return false;
  if (isFreshAllocation(a) || isFreshAllocation(b))
    return false;
  // Each future names one copy; different futures, different copies.
  if (isa<CopyResource>(a.getResource()) && a.getValue() && b.getValue() &&
      a.getValue() != b.getValue())
    return false;
  return true;
}

bool mlir::offload::effectsCommute(Operation *a, Operation *b) {
  std::optional<EffectList> ea = getEffectsRecursively(a);
  if (ea && ea->empty())
    return true;
  std::optional<EffectList> eb = getEffectsRecursively(b);
  if (eb && eb->empty())
    return true;
  if (!ea || !eb)
    return false;
  for (const MemoryEffects::EffectInstance &x : *ea)
    for (const MemoryEffects::EffectInstance &y : *eb)
      if (conflict(x, y))
        return false;
  return true;
}

bool mlir::offload::commutesWithTensorCopyStart(Operation *op) {
  std::optional<EffectList> effects = getEffectsRecursively(op);
  if (!effects)
    return false;
  // The start's one effect is a write of its new future on the copies
  // resource: only an effect there that names no future (all copies) can
  // conflict with it.
  return llvm::all_of(*effects, [](const MemoryEffects::EffectInstance &e) {
    return !isa<CopyResource>(e.getResource()) || e.getValue();
  });
}
