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
// `offload.load_to_gpu` at the entry of backward. Saved results that share
// one storage (offload/Analysis/SharedStorage.h) move as one copy of the
// value owning it instead: the leader's slot returns that copy, the other
// members leave the interface (forward's results, backward's arguments and
// the calls of both), and backward re-applies each member's views to the
// one load. The contract (saved result types equal backward argument types)
// holds after the pass.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
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
static std::string getOffloadBlocker(Value value, Block &body) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return "it is not a ranked tensor";
  if (isHostTensorType(type))
    return "it is already in host memory";
  if (type.getEncoding()) {
    std::string text;
    llvm::raw_string_ostream(text) << type.getEncoding();
    return "its encoding " + text + " has no host form";
  }
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &body && isDonatedArgument(arg)
               ? ""
               : "it is a function argument the caller does not donate";
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

/// The offload of `value` (once per value): right after the last forward use
/// of its storage, views included.
static Value getOrCreateOffload(Value value, Block &body, Operation *ret,
                                llvm::DenseMap<Value, Value> &hostCopies) {
  Value &host = hostCopies[value];
  if (!host) {
    SmallVector<Value> aliases = collectViewClosure(getStorageRoot(value));
    Operation *lastUse = findLastUserInBlock(aliases, body, ret);
    OpBuilder builder(value.getContext());
    if (lastUse)
      builder.setInsertionPointAfter(lastUse);
    else if (Operation *def = value.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(&body);
    auto hostType = getHostTensorType(cast<RankedTensorType>(value.getType()));
    host = OffloadToCpuOp::create(builder, value.getLoc(), hostType, value);
  }
  return host;
}

/// Backward's side of a shared copy: its leader argument (already host
/// resident) is loaded once at the entry, and every member argument that
/// backward reads is replaced by its chain of views re-applied to the loaded
/// value (clones of forward's view ops, marked `offload.rebuilt_view`; a
/// prefix two members share is cloned once). offload-reorder-backward sinks
/// each view to its first real consumer, and offload-insert-loads the load
/// to the first of them.
static void rebuildMembers(const TrainingStep &step,
                           const SharedStorageCopy &shared,
                           ArrayRef<Value> savedValues) {
  BlockArgument leader = step.getBackwardArgument(shared.leader);
  OpBuilder builder = OpBuilder::atBlockBegin(leader.getOwner());
  auto load = LoadToGpuOp::create(builder, leader.getLoc(),
                                  shared.source.getType(), leader);
  IRMapping mapping;
  mapping.map(shared.source, load.getResult());
  auto rebuiltName =
      builder.getStringAttr(OffloadDialect::kRebuiltViewAttrName);
  for (unsigned member : shared.members) {
    BlockArgument arg = step.getBackwardArgument(member);
    if (llvm::all_of(arg.getUsers(),
                     [&](Operation *user) { return user == load; }))
      continue;
    Value saved = savedValues[member];
    for (Operation *view : getViewChain(shared.source, saved)) {
      if (mapping.contains(view->getResult(0)))
        continue;
      // The other operands are constants (getSharedCopySource).
      for (Value operand : view->getOperands())
        if (!mapping.contains(operand))
          mapping.map(operand,
                      builder.clone(*operand.getDefiningOp())->getResult(0));
      Operation *clone = builder.clone(*view, mapping);
      clone->setAttr(rebuiltName, builder.getUnitAttr());
    }
    arg.replaceAllUsesExcept(mapping.lookup(saved), load);
  }
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

  SmallVector<unsigned> selected;
  SmallVector<std::string> retypeBlockers = step.getRetypeBlockers();
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    unsigned result = step.getSavedResultIndex(i);
    NamedAttrList attrs(resultAttrs[result]);
    if (!attrs.erase(OffloadDialect::kSelectedAttrName))
      continue;
    resultAttrs[result] = attrs.getDictionary(ctx);
    std::string blocker = getOffloadBlocker(step.getSavedValue(i), body);
    if (blocker.empty())
      blocker = retypeBlockers[i];
    if (!blocker.empty())
      return forward.emitError()
             << "cannot offload saved result #" << result << ": " << blocker;
    selected.push_back(i);
  }

  // Saved results sharing one storage move as one copy of it, returned in
  // the leader's slot; the other members leave the interface.
  SmallVector<SharedStorageCopy> shared =
      findSharedStorageCopies(step, selected);
  llvm::DenseMap<unsigned, const SharedStorageCopy *> sharedOf;
  for (const SharedStorageCopy &copy : shared)
    for (unsigned member : copy.members)
      sharedOf[member] = &copy;
  llvm::BitVector dropped(forward.getNumResults());
  // The saved values before the return yields host copies in their place.
  SmallVector<Value> savedValues;
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i)
    savedValues.push_back(step.getSavedValue(i));

  // One offload per value, even when a value is saved twice.
  llvm::DenseMap<Value, Value> hostCopies;
  for (unsigned i : selected) {
    unsigned result = step.getSavedResultIndex(i);
    const SharedStorageCopy *copy = sharedOf.lookup(i);
    if (copy && copy->leader != i) {
      dropped.set(result);
      continue;
    }
    Value value = copy ? copy->source : step.getSavedValue(i);
    Value host = getOrCreateOffload(value, body, ret, hostCopies);
    ret->setOperand(result, host);
    resultTypes[result] = host.getType();
    backwardInputs[i] = host.getType();
    if (copy) {
      step.getBackwardArgument(i).setType(host.getType());
      rebuildMembers(step, *copy, savedValues);
    } else {
      loadAtEntry(step.getBackwardArgument(i),
                  cast<RankedTensorType>(host.getType()));
    }
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
  if (dropped.any()) {
    // A dropped member's copy is its leader's (offload-plan's placements
    // name the leader for it from now on).
    SmallVector<int> carrierOf(step.getNumSaved(), -1);
    for (auto [member, copy] : sharedOf)
      carrierOf[member] = copy->leader;
    step.dropSavedResults(dropped, carrierOf);
  }
  return success();
}

namespace {
struct InsertOffloads : public offload::impl::InsertOffloadsBase<InsertOffloads> {

  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }
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
