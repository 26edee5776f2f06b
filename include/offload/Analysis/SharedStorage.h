//===- SharedStorage.h - Saved values that move as one copy -----*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Several saved results of a training step can be views of one storage: q, k
// and v sliced from one fused projection, or the 2-D views of one
// activation that feed three matmuls. Offloading each of them copies the
// storage once per view to free it once, and loads it back once per view.
// This analysis finds the saved results that move as a single copy instead:
// forward offloads the value that owns the storage (its source), returns that
// one host value in place of all of them, and backward loads it once and
// re-applies each saved result's chain of views to the loaded value.
//
// The rule, shared by offload-insert-offloads (which rewrites the IR) and
// the cost model's StepModel (which predicts plans before the rewrite), so
// the plan, the prediction and the report all count one copy per storage:
//
// - Each member reaches the source through views only (ViewLikeOpInterface,
//   no regions, no memory effects, every other operand a constant), which
//   can be cloned into backward. The source is a result of an op at the top
//   level of forward and owns its whole storage: it is the storage root, or
//   an in-place result of it (same type). Members reached through an
//   in-place write on the way keep one copy each: the write is real work.
// - At least two saved results share the source, all of static shape. A
//   value saved twice is one copy of itself whatever its shape or path (no
//   view to re-apply, no more bytes).
// - The source's bytes are at most the bytes of its distinct members
//   together, so merging never moves more bytes than one copy per member:
//   three whole-storage views (or q, k, v covering a fused projection) move
//   a third of the bytes, while two small slices of a large buffer keep
//   their own copies rather than move the whole buffer twice over the link
//   and hold all of it in backward. Either way the storage is freed: every
//   member is offloaded.
// - The step's interface can change: forward's symbol is used only by calls
//   whose saved results feed, at the same positions, calls of backward
//   (or nothing), and backward's only by calls.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_SHAREDSTORAGE_H
#define OFFLOAD_ANALYSIS_SHAREDSTORAGE_H

#include "offload/Dialect/Offload/IR/TrainingStep.h"

namespace mlir {
namespace offload {

/// Saved results of one training step that move as one copy of `source`.
struct SharedStorageCopy {
  /// The forward value offloaded: it owns the storage of every member.
  Value source;
  /// Saved indices carried by the copy, ascending.
  SmallVector<unsigned> members;
  /// The member whose slot returns the host copy: the source's own slot if
  /// the source is saved, else the first member. The other members leave
  /// the step's interface.
  unsigned leader = 0;
  /// Bytes of the copy (the source's; 0 if its shape is dynamic).
  int64_t bytes = 0;
};

/// The value that owns the storage `value` views and can stand for it in a
/// shared copy: reached from `value` through views that can be re-applied in
/// backward, defined at the top level of forward's body, device resident,
/// of static shape, and owning its whole storage. Null if there is none
/// (`value` is not such a view, nor such a value itself).
Value getSharedCopySource(Value value, Block &forwardBody);

/// The view ops leading from `source` to `value`, source side first; empty
/// when `value` is `source`. `source` is getSharedCopySource(value), or
/// `value` itself.
SmallVector<Operation *> getViewChain(Value source, Value value);

/// Whether saved values `members` (with repeats for a value saved twice),
/// all with shared copy source `source`, move as one copy: at least two,
/// and `source` no larger than their distinct values together (or all of
/// them `source` itself).
bool shouldShareCopy(Value source, ArrayRef<Value> members);

/// Whether offload-insert-offloads may drop saved results from `step`'s
/// interface (see the file comment); false if anything outside the two
/// functions would see it change.
bool canShrinkSavedInterface(const TrainingStep &step);

/// The shared copies among the saved results `offloaded` (saved indices, all
/// to be offloaded) of `step`, in the order of their first member. Saved
/// results in none of them keep one copy each.
SmallVector<SharedStorageCopy>
findSharedStorageCopies(const TrainingStep &step, ArrayRef<unsigned> offloaded);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_SHAREDSTORAGE_H
