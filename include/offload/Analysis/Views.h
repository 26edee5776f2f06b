//===- Views.h - Telling views from real consumers --------------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// A view shares storage with its source: keeping a view alive keeps the
// source's memory alive, and a view is not a real consumer of the data. The
// result of an op that writes an operand in place and returns it shares that
// operand's storage too, but is a real consumer. Views are recognised through
// interfaces only, so the passes carry no op lists: the project's
// StorageViewOpInterface for tensors (trace.view implements it; tensor
// reshapes, slices and casts get it from
// registerTensorStorageViewExternalModels), and upstream's
// ViewLikeOpInterface for buffers (memref views).
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_VIEWS_H
#define OFFLOAD_ANALYSIS_VIEWS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"

namespace mlir {
namespace offload {

/// The source `op` views, if `op` is a view; null otherwise.
Value getViewSource(Operation *op);

/// The operand whose storage `result` is, because its op writes that operand
/// in place and returns it (a `trace.op` with `mutates`, like `aten.relu_`):
/// the first operand the op declares a MemoryEffects::Write on whose type is
/// the result's type. Null if there is none, or the op does not declare its
/// effects.
Value getInPlaceSource(OpResult result);

/// Follows view sources and in-place writes up from `value` to the value
/// that owns the storage.
Value getStorageRoot(Value value);

/// `root` and every value reached from it through views and in-place writes
/// (the values sharing its storage), in discovery order.
SmallVector<Value> collectViewClosure(Value root);

/// The ancestor of `op` (or `op` itself) that lives directly in `block`;
/// null if `op` is not nested in `block`.
Operation *getAncestorInBlock(Operation *op, Block &block);

/// The latest op in `block` that uses any of `values` (a use nested in a
/// region counts at its ancestor in `block`), ignoring `ignored`. Null if no
/// such use exists.
Operation *findLastUserInBlock(ArrayRef<Value> values, Block &block,
                               Operation *ignored = nullptr);

/// The earliest op in `block` that uses any of `values`, with the same
/// conventions.
Operation *findFirstUserInBlock(ArrayRef<Value> values, Block &block);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_VIEWS_H
