//===- InsertRecomputes.cpp - Compute saved values again in backward ------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: each saved result marked `offload.recompute` leaves the step's
// interface, and backward computes it with an `offload.recompute` of the
// forward ops that computed it, right before its first real consumer; every
// use reads that value. The recomputation reads only saved values that stay
// saved. A marked result that cannot be recomputed so is an error, and the
// IR is left as it was.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Interfaces/TracedOpInterface.h"
#include "offload/Transforms/Passes.h"
#include "offload/Transforms/Recompute.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_INSERTRECOMPUTES
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

/// The name a forward value goes by: its traced op's FX node, else the name
/// of its location, else the op's name.
static std::string getValueName(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto traced = dyn_cast_or_null<TracedOpInterface>(def))
    if (std::optional<StringRef> node = traced.getNode())
      return node->str();
  if (auto named = dyn_cast<NameLoc>(value.getLoc()))
    return named.getName().str();
  return def ? def->getName().getStringRef().str() : std::string("value");
}

/// Builds the recomputation of `candidate` before `before`, reading `inputs`.
static RecomputeOp buildRecompute(const RecomputeCandidate &candidate,
                                  ValueRange inputs, Operation *before) {
  OpBuilder builder(before);
  Location loc = candidate.value.getLoc();
  auto recompute = RecomputeOp::create(
      builder, loc, candidate.value.getType(), inputs,
      builder.getStringAttr(getValueName(candidate.value)));
  Block *body = builder.createBlock(&recompute.getBody());
  IRMapping mapping;
  for (auto [forwardValue, input] : llvm::zip_equal(candidate.inputs, inputs))
    mapping.map(forwardValue, body->addArgument(input.getType(), loc));
  for (Operation *op : candidate.ops)
    builder.clone(*op, mapping);
  YieldOp::create(builder, loc, mapping.lookup(candidate.value));
  return recompute;
}

void mlir::offload::insertRecomputes(const TrainingStep &step,
                                     ArrayRef<RecomputeCandidate> chosen) {
  if (chosen.empty())
    return;
  Block &backward = step.getBackward().getFunctionBody().front();
  llvm::BitVector dropped(step.getForward().getNumResults());
  SmallVector<Operation *> forwardOps;
  for (const RecomputeCandidate &candidate : chosen) {
    SmallVector<Value> args, aliases;
    for (unsigned link : candidate.links) {
      dropped.set(step.getSavedResultIndex(link));
      BlockArgument arg = step.getBackwardArgument(link);
      args.push_back(arg);
      llvm::append_range(aliases, collectViewClosure(arg));
    }
    llvm::append_range(forwardOps, candidate.ops);
    // The first real consumer: the earliest op reading the value, or a view
    // of it, that is no view of it itself.
    llvm::SetVector<Operation *> views;
    Operation *consumer = nullptr;
    for (Value alias : aliases)
      for (Operation *user : alias.getUsers()) {
        Operation *top = backward.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        if (getViewSource(top) && llvm::is_contained(aliases, top->getResult(0)))
          views.insert(top);
        else if (!consumer || top->isBeforeInBlock(consumer))
          consumer = top;
      }
    if (!consumer)
      consumer = backward.getTerminator();
    SmallVector<Value> inputs;
    for (unsigned link : candidate.inputLinks)
      inputs.push_back(step.getBackwardArgument(link));
    RecomputeOp recompute = buildRecompute(candidate, inputs, consumer);
    // Views of the value above its consumer go below the recomputation, in
    // their order: they read only the value, its views and values defined
    // above them, so moving them down keeps every operand defined first.
    SmallVector<Operation *> above = llvm::to_vector(llvm::make_filter_range(
        views, [&](Operation *view) { return view->isBeforeInBlock(consumer); }));
    llvm::sort(above, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *view : above)
      view->moveBefore(consumer);
    for (Value arg : args)
      arg.replaceAllUsesWith(recompute.getResult());
  }
  step.dropSavedResults(dropped);
  // The forward ops that only fed the saved results go.
  llvm::sort(forwardOps, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  forwardOps.erase(llvm::unique(forwardOps), forwardOps.end());
  for (Operation *op : llvm::reverse(forwardOps))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
}

namespace {
struct InsertRecomputes
    : public offload::impl::InsertRecomputesBase<InsertRecomputes> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  void runOnOperation() override {
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    FailureOr<DeviceProfile> profile =
        getPassDeviceProfile(DeviceProfileOverrides{}, getOperation());
    if (failed(profile))
      return signalPassFailure();
    CostModel costModel(*profile);
    auto markName =
        StringAttr::get(&getContext(), OffloadDialect::kRecomputeAttrName);
    for (const TrainingStep &step : steps) {
      FunctionOpInterface forward = step.getForward();
      SmallVector<unsigned> marked;
      for (unsigned l = 0, e = step.getNumSaved(); l < e; ++l)
        if (forward.getResultAttr(step.getSavedResultIndex(l), markName))
          marked.push_back(l);
      if (marked.empty())
        continue;
      if (!canShrinkSavedInterface(step)) {
        forward->emitError()
            << "saved results marked '" << OffloadDialect::kRecomputeAttrName
            << "' cannot leave the interface: the step is called in a way "
               "that fixes its results";
        return signalPassFailure();
      }
      SmallVector<RecomputeCandidate, 0> candidates = findRecomputeCandidates(
          step, costModel, marked, std::numeric_limits<unsigned>::max());
      llvm::SmallDenseSet<unsigned> covered;
      for (const RecomputeCandidate &candidate : candidates)
        covered.insert(candidate.links.begin(), candidate.links.end());
      for (unsigned l : marked) {
        if (covered.contains(l))
          continue;
        Value value = step.getSavedValue(l);
        emitError(value.getLoc())
            << "saved result #" << l << " ('" << getValueName(value)
            << "') cannot be recomputed in backward: it must be computed from "
               "saved values by views, constants and memory-bound ops without "
               "side effects or random state";
        return signalPassFailure();
      }
      SmallVector<unsigned> order =
          llvm::to_vector(llvm::seq<unsigned>(0, candidates.size()));
      SmallVector<unsigned> picked =
          pickCompatibleRecomputes(candidates, order, candidates.size());
      if (picked.size() != candidates.size()) {
        for (unsigned c : order)
          if (!llvm::is_contained(picked, c)) {
            emitError(candidates[c].value.getLoc())
                << "saved result #" << candidates[c].links.front() << " ('"
                << getValueName(candidates[c].value)
                << "') is marked for recomputation, but another marked value "
                   "reads it or is read by it: the inputs of a recomputation "
                   "stay saved";
            break;
          }
        return signalPassFailure();
      }
      insertRecomputes(step, candidates);
    }
  }
};
} // namespace
