//===- Effects.h - When two ops may trade places -------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The passes move ops (views, copy starts, copy waits) past other ops only
// where the two ops' memory effects commute, asked through
// MemoryEffectOpInterface (and HasRecursiveMemoryEffects for ops with
// regions), never through lists of ops:
//
// - an op without effects (Pure, a tensor view) commutes with every op, even
//   one whose effects are unknown: it touches no memory;
// - otherwise an op of unknown effects commutes with nothing;
// - otherwise two ops commute unless an effect of one and an effect of the
//   other conflict: they are on the same resource, not both reads, not the
//   allocation of a result (new memory no other op can name yet), and not on
//   two different copies (effects on `offload.copies` name the copy's future,
//   and different futures are different copies).
//
// Effects on the default resource are not told apart by value: two memrefs
// may alias, so a write to any buffer conflicts with a read of any other.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_EFFECTS_H
#define OFFLOAD_ANALYSIS_EFFECTS_H

#include "mlir/IR/Operation.h"

namespace mlir {
namespace offload {

/// True if `a` and `b`, adjacent in one block and not using each other's
/// results, can trade places without changing what either reads or writes.
bool effectsCommute(Operation *a, Operation *b);

/// True if a copy start on a tensor can be moved across `op`: such a start
/// writes only its own, new future on `offload.copies` (see
/// `offload.load_start`), so this is effectsCommute with a start that is not
/// in the IR yet, as the planner needs it.
bool commutesWithTensorCopyStart(Operation *op);

/// True if the wait of a copy started on a tensor can be moved across `op`
/// (other than the copy's start): it reads and frees only its own future.
inline bool commutesWithCopyWait(Operation *op) {
  return commutesWithTensorCopyStart(op);
}

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_EFFECTS_H
