//===- InsertLoads.cpp - Load offloaded values before first use -----------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: each host-resident saved argument of a backward function is read
// through exactly one `offload.load_to_gpu`, placed right before the first op
// that uses the loaded value (uses nested in regions count at their top-level
// ancestor); every former load's uses read it. A load nobody uses is removed.
// Terminators and calls that take the host value directly keep doing so.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_INSERTLOADS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

static void placeSingleLoad(BlockArgument arg, Block &body) {
  SmallVector<LoadToGpuOp> loads;
  for (Operation *user : arg.getUsers())
    if (auto load = dyn_cast<LoadToGpuOp>(user))
      loads.push_back(load);
  if (loads.empty())
    return;

  SmallVector<Value> loaded =
      llvm::map_to_vector(loads, [](LoadToGpuOp load) -> Value { return load.getResult(); });
  Operation *firstUse = findFirstUserInBlock(loaded, body);
  if (!firstUse) {
    for (LoadToGpuOp load : loads)
      load.erase();
    return;
  }

  LoadToGpuOp kept = loads.front();
  kept->moveBefore(firstUse);
  for (LoadToGpuOp load : ArrayRef(loads).drop_front()) {
    load.getResult().replaceAllUsesWith(kept.getResult());
    load.erase();
  }
}

namespace {
struct InsertLoads : public offload::impl::InsertLoadsBase<InsertLoads> {
  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  void runOnOperation() override {
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    for (const TrainingStep &step : steps) {
      Block &body = step.getBackward().getFunctionBody().front();
      for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
        BlockArgument arg = step.getBackwardArgument(i);
        if (isHostTensorType(arg.getType()))
          placeSingleLoad(arg, body);
      }
    }
  }
};
} // namespace
