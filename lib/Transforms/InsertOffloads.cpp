//===- InsertOffloads.cpp - Offload saved results after their last use ----===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: each saved result marked `offload.selected` is returned as the
// host copy made by one `offload.offload_to_cpu` placed right after the last
// forward use of the value or of a view sharing its storage; the matching
// backward argument is host resident and read only through one
// `offload.load_to_gpu` at the entry of backward. The contract (saved result
// types equal backward argument types) holds after the pass.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Views.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_INSERTOFFLOADS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

/// Why `value` cannot be offloaded at all, or an empty string.
static StringRef getOffloadBlocker(Value value, Block &body) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return "it is not a ranked tensor";
  if (isHostTensorType(type))
    return "it is already in host memory";
  if (isa<BlockArgument>(value))
    return "it is a function argument";
  if (value.getDefiningOp()->getBlock() != &body)
    return "it is not defined in the function's body";
  return "";
}

/// Makes backward argument `arg` host resident, reading it through one load
/// at the entry of the function. The function type is updated by the caller,
/// once for all arguments.
static void loadAtEntry(BlockArgument arg, RankedTensorType hostType) {
  auto deviceType = cast<RankedTensorType>(arg.getType());
  arg.setType(hostType);
  OpBuilder builder = OpBuilder::atBlockBegin(arg.getOwner());
  auto load = LoadToGpuOp::create(builder, arg.getLoc(), deviceType, arg);
  arg.replaceAllUsesExcept(load.getResult(), load);
}

static LogicalResult insertOffloads(const TrainingStep &step) {
  FunctionOpInterface forward = step.getForward();
  FunctionOpInterface backward = step.getBackward();
  Block &body = forward.getFunctionBody().front();
  Operation *ret = step.getForwardReturn();
  MLIRContext *ctx = forward->getContext();

  // Types and attributes are rewritten once per function at the end: doing
  // it per value rebuilds arrays as long as the signature (quadratic).
  SmallVector<Type> resultTypes(forward.getResultTypes());
  SmallVector<Type> backwardInputs(backward.getArgumentTypes());
  SmallVector<DictionaryAttr> resultAttrs;
  forward.getAllResultAttrs(resultAttrs);

  // One offload per value, even when a value is saved twice.
  llvm::DenseMap<Value, Value> hostCopies;
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    unsigned result = step.getSavedResultIndex(i);
    NamedAttrList attrs(resultAttrs[result]);
    if (!attrs.erase(OffloadDialect::kSelectedAttrName))
      continue;
    resultAttrs[result] = attrs.getDictionary(ctx);

    Value value = step.getSavedValue(i);
    StringRef blocker = getOffloadBlocker(value, body);
    if (!blocker.empty())
      return forward.emitError()
             << "cannot offload saved result #" << result << ": " << blocker;

    auto hostType = getHostTensorType(cast<RankedTensorType>(value.getType()));
    Value &host = hostCopies[value];
    if (!host) {
      SmallVector<Value> aliases = collectViewClosure(getStorageRoot(value));
      Operation *lastUse = findLastUserInBlock(aliases, body, ret);
      OpBuilder builder(ctx);
      builder.setInsertionPointAfter(lastUse ? lastUse
                                             : value.getDefiningOp());
      host = OffloadToCpuOp::create(builder, value.getLoc(), hostType, value);
    }
    ret->setOperand(result, host);
    resultTypes[result] = hostType;
    backwardInputs[i] = hostType;
    loadAtEntry(step.getBackwardArgument(i), hostType);
  }
  forward.setAllResultAttrs(resultAttrs);
  forward.setType(
      forward.cloneTypeWith(forward.getArgumentTypes(), resultTypes));
  backward.setType(
      backward.cloneTypeWith(backwardInputs, backward.getResultTypes()));

  // A driver in the module that calls forward and hands the saved results to
  // backward keeps verifying: its calls of forward return the host values.
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(forward, forward->getParentOp())) {
    for (const SymbolTable::SymbolUse &use : *uses)
      if (auto call = dyn_cast<CallOpInterface>(use.getUser()))
        for (auto [result, type] : llvm::zip(call->getResults(), resultTypes))
          result.setType(type);
  }
  return success();
}

namespace {
struct InsertOffloads : public offload::impl::InsertOffloadsBase<InsertOffloads> {
  void runOnOperation() override {
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    for (const TrainingStep &step : steps)
      if (failed(insertOffloads(step)))
        return signalPassFailure();
  }
};
} // namespace
