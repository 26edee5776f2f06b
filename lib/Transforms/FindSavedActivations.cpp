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
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
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

  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

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
      // Rewrite all result attributes at once: setting them one result at a
      // time rebuilds the whole attribute array each time (quadratic).
      SmallVector<DictionaryAttr> resultAttrs;
      forward.getAllResultAttrs(resultAttrs);
      for (const SavedActivation &saved :
           findSavedActivations(step, options)) {
        unsigned result = step.getSavedResultIndex(saved.savedIndex);
        NamedAttrList attrs(resultAttrs[result]);
        attrs.erase(OffloadDialect::kSelectedAttrName);
        attrs.erase(OffloadDialect::kKeptAttrName);
        if (saved.selected)
          attrs.set(OffloadDialect::kSelectedAttrName, builder.getUnitAttr());
        else
          attrs.set(OffloadDialect::kKeptAttrName,
                    builder.getStringAttr(saved.keptReason));
        resultAttrs[result] = attrs.getDictionary(&getContext());
      }
      forward.setAllResultAttrs(resultAttrs);
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
