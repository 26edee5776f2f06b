//===- FindSavedActivations.cpp - Mark saved results to offload -----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: every saved result of every training step ends up with exactly
// one of `offload.selected` (offload it) or `offload.kept = "<reason>"`
// (leave it on the device); nothing else in the IR changes.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SavedActivations.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_FINDSAVEDACTIVATIONS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
struct FindSavedActivations
    : public offload::impl::FindSavedActivationsBase<FindSavedActivations> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();

    SavedActivationOptions options;
    options.minBytes = minBytes;
    options.denyOps.assign(denyOps.begin(), denyOps.end());
    Builder builder(&getContext());
    for (const TrainingStep &step : steps) {
      FunctionOpInterface forward = step.getForward();
      for (const SavedActivation &saved :
           findSavedActivations(step, options)) {
        unsigned result = step.getSavedResultIndex(saved.savedIndex);
        forward.removeResultAttr(
            result, builder.getStringAttr(OffloadDialect::kSelectedAttrName));
        forward.removeResultAttr(
            result, builder.getStringAttr(OffloadDialect::kKeptAttrName));
        if (saved.selected)
          forward.setResultAttr(result, OffloadDialect::kSelectedAttrName,
                                builder.getUnitAttr());
        else
          forward.setResultAttr(result, OffloadDialect::kKeptAttrName,
                                builder.getStringAttr(saved.keptReason));
      }
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
