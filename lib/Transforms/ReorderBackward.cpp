//===- ReorderBackward.cpp - Sink views next to their consumer ------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: in each backward function, every view of a saved value (every
// view, with all-views) sits right before its first real consumer, after any
// other views that consumer needs. Everything else keeps its relative order;
// the order is topological, and no op moves across another whose effects do
// not commute with its own (offload/Analysis/Effects.h): a view without
// effects (a tensor view, a `trace.view`) moves across anything, even a
// `memref.store` or an op of unknown effects; a view with effects stops at
// the first op they do not commute with, and keeps its order with the other
// held views it does not commute with. The pass is linear in the size of the
// function, times the number of held views with effects (none in the
// dialects the pipeline is used with).
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Effects.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_REORDERBACKWARD
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
/// Builds the new order of a block's ops. Views to sink are held back until
/// an op needs them, or (for views with effects) until an op whose effects do
/// not commute with theirs is reached, then emitted together with the
/// held-back views they depend on, in their original relative order.
class ConsumerProximityOrder {
public:
  explicit ConsumerProximityOrder(Block &block) : block(block) {}

  SmallVector<Operation *> compute(const llvm::SetVector<Operation *> &held) {
    for (Operation &op : block.without_terminator()) {
      if (held.contains(&op)) {
        pending.insert(&op);
        if (!isMemoryEffectFree(&op))
          pendingWithEffects.push_back(&op);
        continue;
      }
      emitPendingNotCommutingWith(&op);
      emitPendingOperandsOf(&op);
      order.push_back(&op);
    }
    if (Operation *terminator = block.getTerminator())
      emitPendingOperandsOf(terminator);
    emitAllPending();
    return std::move(order);
  }

private:
  /// Emits, before `op`, the held-back views with effects that do not
  /// commute with `op`'s. Views without effects commute with every op.
  void emitPendingNotCommutingWith(Operation *op) {
    if (pendingWithEffects.empty())
      return;
    for (Operation *view : SmallVector<Operation *>(pendingWithEffects))
      if (pending.contains(view) && !effectsCommute(view, op))
        emitWithDependencies(view);
    llvm::erase_if(pendingWithEffects,
                   [&](Operation *view) { return !pending.contains(view); });
  }

  /// Emits, before `op`, the held-back views that `op` or an op nested in it
  /// reads, each after the held-back views it reads itself.
  void emitPendingOperandsOf(Operation *op) {
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && pending.contains(def))
          emitWithDependencies(def);
    });
  }

  /// Emits `root` after the held-back ops it depends on: the views it reads,
  /// and the earlier views with effects that do not commute with its own.
  void emitWithDependencies(Operation *root) {
    // Iterative post-order: a view's held-back sources go out first.
    SmallVector<std::pair<Operation *, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [op, expanded] = stack.pop_back_val();
      if (!pending.contains(op))
        continue;
      if (expanded) {
        pending.remove(op);
        order.push_back(op);
        continue;
      }
      stack.push_back({op, true});
      for (Value operand : llvm::reverse(op->getOperands()))
        if (Operation *def = operand.getDefiningOp();
            def && pending.contains(def))
          stack.push_back({def, false});
      if (isMemoryEffectFree(op))
        continue;
      for (Operation *earlier : llvm::reverse(pendingWithEffects))
        if (earlier != op && pending.contains(earlier) &&
            earlier->isBeforeInBlock(op) && !effectsCommute(earlier, op))
          stack.push_back({earlier, false});
    }
  }

  void emitAllPending() {
    for (Operation *op : pending)
      order.push_back(op);
    pending.clear();
  }

  Block &block;
  llvm::SetVector<Operation *> pending;
  /// The held-back views that have effects, in block order (a superset of
  /// those still pending).
  SmallVector<Operation *> pendingWithEffects;
  SmallVector<Operation *> order;
};
} // namespace

/// The views in `block` to sink: views of `roots` (and views of those), or
/// every view when `roots` is null.
static llvm::SetVector<Operation *>
collectViewsToSink(Block &block, ArrayRef<Value> roots, bool allViews) {
  llvm::SetVector<Operation *> views;
  if (allViews) {
    for (Operation &op : block.without_terminator())
      if (getViewSource(&op))
        views.insert(&op);
    return views;
  }
  for (Value root : roots)
    for (Value alias : collectViewClosure(root))
      if (Operation *def = alias.getDefiningOp();
          def && def->getBlock() == &block && getViewSource(def))
        views.insert(def);
  return views;
}

/// The values backward reads saved results through: the saved arguments, the
/// loads of host-resident ones, and the values it recomputes.
static SmallVector<Value> getSavedValuesInBackward(const TrainingStep &step) {
  SmallVector<Value> values;
  for (Operation &op : step.getBackward().getFunctionBody().front())
    if (auto recompute = dyn_cast<RecomputeOp>(op))
      values.push_back(recompute.getResult());
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    BlockArgument arg = step.getBackwardArgument(i);
    values.push_back(arg);
    for (Operation *user : arg.getUsers())
      if (auto load = dyn_cast<LoadToGpuOp>(user))
        values.push_back(load.getResult());
  }
  return values;
}

static void reorder(Block &block, const llvm::SetVector<Operation *> &views) {
  if (views.empty())
    return;
  SmallVector<Operation *> order = ConsumerProximityOrder(block).compute(views);
  Operation *terminator = block.getTerminator();
  for (Operation *op : order)
    op->moveBefore(terminator);
}

namespace {
struct ReorderBackward : public offload::impl::ReorderBackwardBase<ReorderBackward> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  void runOnOperation() override {
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    for (const TrainingStep &step : steps) {
      Block &block = step.getBackward().getFunctionBody().front();
      reorder(block, collectViewsToSink(block, getSavedValuesInBackward(step),
                                        allViews));
    }
  }
};
} // namespace
