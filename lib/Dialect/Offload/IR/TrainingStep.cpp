//===- TrainingStep.cpp - The forward/backward contract -------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Dialect/Offload/IR/TrainingStep.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::offload;

bool TrainingStep::isForward(Operation *op) {
  return isa<FunctionOpInterface>(op) &&
         op->hasAttr(OffloadDialect::kBackwardAttrName);
}

/// Checks what the passes assume of a function's body: one block, in a region
/// with SSA dominance (a graph region may hold cyclic uses, which the passes'
/// walks up use-def chains would follow forever), ending in a return-like
/// terminator with one operand of each function result's type (the passes
/// read the saved values off it).
static LogicalResult requirePassableBody(FunctionOpInterface func,
                                         StringRef role) {
  if (func.isExternal())
    return func.emitError() << role << " function '" << func.getName()
                            << "' must have a body";
  Region &body = func.getFunctionBody();
  if (!body.hasOneBlock())
    return func.emitError() << role << " function '" << func.getName()
                            << "' must have a single block";
  if (!mayHaveSSADominance(body))
    return func.emitError()
           << role << " function '" << func.getName()
           << "' must have an SSACFG body, not a graph region (uses in a "
              "graph region may form cycles)";
  Block &block = body.front();
  Operation *last = block.empty() ? nullptr : &block.back();
  if (!last || !last->hasTrait<OpTrait::IsTerminator>() ||
      !last->hasTrait<OpTrait::ReturnLike>()) {
    InFlightDiagnostic diag = func.emitError()
                              << role << " function '" << func.getName()
                              << "' must end with a return-like terminator";
    if (last)
      diag.attachNote(last->getLoc())
          << "its body ends with '" << last->getName() << "'";
    return diag;
  }
  if (last->getNumOperands() != func.getNumResults())
    return func.emitError() << role << " function '" << func.getName()
                            << "' returns " << last->getNumOperands()
                            << " values but its type has "
                            << func.getNumResults() << " results";
  // The passes retype a saved result through the value returned for it
  // (an async.func returns a tensor as an !async.value: no such link).
  for (auto [i, operand, type] : llvm::enumerate(last->getOperandTypes(),
                                                 func.getResultTypes()))
    if (operand != type) {
      InFlightDiagnostic diag = func.emitError()
                                << role << " function '" << func.getName()
                                << "' returns " << operand << " as result #"
                                << i << " but its type has " << type;
      diag.attachNote(last->getLoc()) << "returned here";
      return diag;
    }
  return success();
}

LogicalResult TrainingStep::verifyAttributes(FunctionOpInterface forward) {
  if (!forward->getAttrOfType<FlatSymbolRefAttr>(
          OffloadDialect::kBackwardAttrName))
    return forward.emitError()
           << "expects '" << OffloadDialect::kBackwardAttrName
           << "' to be a flat symbol reference to the backward function";
  auto numOutputsAttr = forward->getAttrOfType<IntegerAttr>(
      OffloadDialect::kNumOutputsAttrName);
  if (!numOutputsAttr || !numOutputsAttr.getType().isInteger(64))
    return forward.emitError()
           << "expects '" << OffloadDialect::kNumOutputsAttrName
           << "' (an i64: how many leading results are forward outputs)";
  int64_t numOutputs = numOutputsAttr.getInt();
  int64_t numResults = forward.getNumResults();
  if (numOutputs < 0 || numOutputs > numResults)
    return forward.emitError()
           << "'" << OffloadDialect::kNumOutputsAttrName << "' is "
           << numOutputs << " but the function has " << numResults
           << " results";
  return success();
}

FailureOr<TrainingStep> TrainingStep::get(FunctionOpInterface forward,
                                          bool requireBodies,
                                          SymbolTableCollection *tables) {
  if (failed(verifyAttributes(forward)))
    return failure();
  auto backwardRef = forward->getAttrOfType<FlatSymbolRefAttr>(
      OffloadDialect::kBackwardAttrName);
  int64_t numOutputs =
      forward->getAttrOfType<IntegerAttr>(OffloadDialect::kNumOutputsAttrName)
          .getInt();
  int64_t numResults = forward.getNumResults();

  Operation *symbolTableOp = SymbolTable::getNearestSymbolTable(forward);
  Operation *target = nullptr;
  if (symbolTableOp)
    target = tables ? tables->lookupSymbolIn(symbolTableOp, backwardRef)
                    : SymbolTable::lookupSymbolIn(symbolTableOp,
                                                  backwardRef.getAttr());
  auto backward = dyn_cast_or_null<FunctionOpInterface>(target);
  if (!backward)
    return forward.emitError()
           << "backward function " << backwardRef << " not found";
  if (backward == forward)
    return forward.emitError() << "a function cannot be its own backward";

  unsigned numSaved = numResults - numOutputs;
  if (backward.getNumArguments() < numSaved)
    return forward.emitError()
           << "saves " << numSaved << " values but backward function "
           << backwardRef << " takes only " << backward.getNumArguments()
           << " arguments";
  for (unsigned i = 0; i < numSaved; ++i) {
    Type savedType = forward.getResultTypes()[numOutputs + i];
    Type argType = backward.getArgumentTypes()[i];
    if (savedType != argType)
      return forward.emitError()
             << "saved result #" << numOutputs + i << " has type " << savedType
             << " but backward argument #" << i << " of " << backwardRef
             << " has type " << argType;
  }

  if (requireBodies && (failed(requirePassableBody(forward, "forward")) ||
                        failed(requirePassableBody(backward, "backward"))))
    return failure();
  return TrainingStep(forward, backward, numOutputs);
}

LogicalResult TrainingStep::collect(ModuleOp module,
                                    SmallVectorImpl<TrainingStep> &steps) {
  bool ok = true;
  // Each backward belongs to one forward: the passes rewrite its signature.
  llvm::DenseMap<Operation *, FunctionOpInterface> forwardOf;
  for (Operation &op : module.getBody()->getOperations()) {
    if (!isForward(&op))
      continue;
    FailureOr<TrainingStep> step = get(cast<FunctionOpInterface>(op));
    if (failed(step)) {
      ok = false;
      continue;
    }
    auto [it, inserted] =
        forwardOf.try_emplace(step->getBackward(), step->getForward());
    if (!inserted) {
      step->getForward().emitError()
          << "backward function '" << step->getBackward().getName()
          << "' is already the backward of '" << it->second.getName()
          << "'; each forward needs its own";
      ok = false;
      continue;
    }
    steps.push_back(*step);
  }
  return success(ok);
}

unsigned TrainingStep::getNumSaved() const {
  return forward.getNumResults() - numOutputs;
}

Operation *TrainingStep::getForwardReturn() const {
  return forward.getFunctionBody().front().getTerminator();
}

Value TrainingStep::getSavedValue(unsigned i) const {
  return getForwardReturn()->getOperand(numOutputs + i);
}

BlockArgument TrainingStep::getBackwardArgument(unsigned i) const {
  return backward.getArgument(i);
}

/// Whether `call` calls `callee` (by a symbol whose leaf is its name).
static bool isCallOf(CallOpInterface call, FunctionOpInterface callee) {
  auto ref =
      llvm::dyn_cast_if_present<SymbolRefAttr>(call.getCallableForCallee());
  return ref && ref.getLeafReference() == callee.getNameAttr();
}

/// Collects the calls of `function` into `calls`; fails with why in `why`
/// on a use that is not a call, but for forward's `offload.backward`.
static LogicalResult collectCalls(FunctionOpInterface function,
                                  Operation *forward,
                                  SmallVectorImpl<CallOpInterface> &calls,
                                  std::string &why) {
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(function, function->getParentOp());
  if (!uses) {
    why = "the uses of '" + function.getName().str() +
          "' cannot all be listed (an unregistered op may hold a symbol "
          "table)";
    return failure();
  }
  for (const SymbolTable::SymbolUse &use : *uses) {
    if (use.getUser() == forward &&
        use.getSymbolRef() ==
            forward->getAttr(OffloadDialect::kBackwardAttrName))
      continue;
    auto call = dyn_cast<CallOpInterface>(use.getUser());
    if (!call || !isCallOf(call, function)) {
      why = "'" + function.getName().str() + "' is used by '" +
            use.getUser()->getName().getStringRef().str() +
            "', not only called";
      return failure();
    }
    calls.push_back(call);
  }
  return success();
}

LogicalResult
TrainingStep::getCalls(SmallVectorImpl<CallOpInterface> &forwardCalls,
                       SmallVectorImpl<CallOpInterface> &backwardCalls,
                       std::string &why) const {
  if (failed(collectCalls(forward, forward, forwardCalls, why)))
    return failure();
  return collectCalls(backward, forward, backwardCalls, why);
}

/// The position of `use` among the arguments of `call`, if it is one.
static std::optional<unsigned> getArgumentPosition(CallOpInterface call,
                                                   OpOperand &use) {
  OperandRange args = call.getArgOperands();
  unsigned begin = args.getBeginOperandIndex();
  unsigned number = use.getOperandNumber();
  if (args.empty() || number < begin || number >= begin + args.size())
    return std::nullopt;
  return number - begin;
}

SmallVector<std::string> TrainingStep::getRetypeBlockers() const {
  unsigned numSaved = getNumSaved();
  SmallVector<std::string> blockers(numSaved);
  SmallVector<CallOpInterface> forwardCalls, backwardCalls;
  std::string why;
  if (failed(getCalls(forwardCalls, backwardCalls, why))) {
    blockers.assign(numSaved, why);
    return blockers;
  }
  auto block = [&](unsigned i, Operation *user, StringRef what) {
    if (!blockers[i].empty())
      return;
    std::string where;
    if (auto function = user->getParentOfType<FunctionOpInterface>())
      where = " in '" + function.getName().str() + "'";
    blockers[i] = (what + " ('" + user->getName().getStringRef() + "'" +
                   where + ")")
                      .str();
  };
  // A caller of forward may only hand saved value i to backward, as its
  // argument i.
  for (CallOpInterface call : forwardCalls) {
    if (call->getNumResults() != forward.getNumResults())
      continue;
    for (unsigned i = 0; i < numSaved; ++i)
      for (OpOperand &use : call->getResult(numOutputs + i).getUses()) {
        auto user = dyn_cast<CallOpInterface>(use.getOwner());
        std::optional<unsigned> position =
            user && isCallOf(user, backward) ? getArgumentPosition(user, use)
                                             : std::nullopt;
        if (!position || *position >= numSaved)
          block(i, use.getOwner(), "a caller of forward reads it");
        else if (*position != i)
          block(i, use.getOwner(),
                "a caller of forward passes it to backward in saved result #" +
                    std::to_string(numOutputs + *position) + "'s place");
      }
  }
  // A call of backward passes argument i only from forward's saved value i.
  for (CallOpInterface call : backwardCalls) {
    OperandRange args = call.getArgOperands();
    for (unsigned i = 0; i < numSaved && i < args.size(); ++i) {
      auto result = dyn_cast<OpResult>(args[i]);
      auto producer =
          result ? dyn_cast<CallOpInterface>(result.getOwner()) : nullptr;
      if (!producer || !isCallOf(producer, forward) ||
          result.getResultNumber() != numOutputs + i)
        block(i, call, "a call of backward passes another value for it");
    }
  }
  return blockers;
}

/// The renumbering of dropSavedResults for the placements of `step`.
static void renumberPlacements(const TrainingStep &step,
                               const llvm::BitVector &dropped,
                               ArrayRef<int> carrierOf) {
  unsigned numSaved = step.getNumSaved(), numOutputs = step.getNumOutputs();
  SmallVector<int64_t> renumbered(numSaved, -1);
  int64_t next = 0;
  for (unsigned i = 0; i < numSaved; ++i)
    if (!dropped.test(numOutputs + i))
      renumbered[i] = next++;
  for (unsigned i = 0; i < numSaved; ++i)
    if (dropped.test(numOutputs + i) && i < carrierOf.size() &&
        carrierOf[i] >= 0)
      renumbered[i] = renumbered[carrierOf[i]];
  for (FunctionOpInterface function : {step.getForward(), step.getBackward()})
    for (auto placement : llvm::make_early_inc_range(
             function.getFunctionBody().front().getOps<PlacementOp>())) {
      llvm::SetVector<int64_t> mapped;
      for (int64_t index : placement.getSaved()) {
        int64_t to = index < int64_t(numSaved) ? renumbered[index] : index;
        if (to >= 0)
          mapped.insert(to);
      }
      if (mapped.empty())
        placement->erase();
      else
        placement.setSaved(mapped.getArrayRef());
    }
}

void TrainingStep::dropSavedResults(const llvm::BitVector &dropped,
                                    ArrayRef<int> carrierOf) const {
  renumberPlacements(*this, dropped, carrierOf);
  FunctionOpInterface forward = getForward();
  FunctionOpInterface backward = getBackward();
  unsigned numOutputs = getNumOutputs();
  llvm::BitVector droppedArgs(backward.getNumArguments());
  for (unsigned result : dropped.set_bits())
    droppedArgs.set(result - numOutputs);

  // Named: a range-for does not keep alive a temporary nested in its range
  // expression.
  SmallVector<unsigned> erasedArgs = llvm::to_vector(droppedArgs.set_bits());
  Operation *moduleOp = forward->getParentOp();
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(backward, moduleOp))
    for (const SymbolTable::SymbolUse &use : *uses) {
      // The rest are calls; forward's `offload.backward` names it too.
      auto call = dyn_cast<CallOpInterface>(use.getUser());
      if (!call)
        continue;
      MutableOperandRange args = call.getArgOperandsMutable();
      for (unsigned arg : llvm::reverse(erasedArgs))
        args.erase(arg);
    }
  Operation *ret = getForwardReturn();
  ret->eraseOperands(dropped);
  (void)forward.eraseResults(dropped);
  (void)backward.eraseArguments(droppedArgs);
  // Calls of forward get the new result list; their dropped results fed
  // only the backward arguments just removed.
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(forward, moduleOp))
    for (const SymbolTable::SymbolUse &use : llvm::to_vector(*uses)) {
      Operation *call = use.getUser();
      SmallVector<Value> kept;
      for (OpResult result : call->getResults())
        if (!dropped.test(result.getResultNumber()))
          kept.push_back(result);
      OpBuilder builder(call);
      Operation *replacement =
          Operation::create(call->getLoc(), call->getName(),
                            forward.getResultTypes(), call->getOperands(),
                            NamedAttrList(call->getDiscardableAttrDictionary()),
                            call->getPropertiesStorage(), call->getSuccessors(),
                            call->getNumRegions());
      builder.insert(replacement);
      for (auto [from, to] : llvm::zip_equal(kept, replacement->getResults()))
        from.replaceAllUsesWith(to);
      call->erase();
    }
}

/// True for a cast that only renames a host value as a host buffer: partial
/// bufferization's `bufferization.to_buffer` into `#offload.host` memory.
static bool isHostBufferCast(Operation *op) {
  auto cast = dyn_cast<bufferization::ToBufferOp>(op);
  return cast && isHostMemRefType(cast.getResult().getType());
}

bool mlir::offload::isDonatedArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return false;
  auto function = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return function && function.getArgAttr(arg.getArgNumber(),
                                         OffloadDialect::kDonatedAttrName);
}

LogicalResult
mlir::offload::verifyTrainingStepSymbolUses(FunctionOpInterface forward,
                                            SymbolTableCollection &tables) {
  if (!TrainingStep::isForward(forward))
    return success();
  FailureOr<TrainingStep> step =
      TrainingStep::get(forward, /*requireBodies=*/false, &tables);
  if (failed(step))
    return failure();
  FunctionOpInterface backward = step->getBackward();
  if (backward.isExternal())
    return success();
  return verifyHostValueUses(backward.getFunctionBody());
}

LogicalResult mlir::offload::verifyHostValueUses(Region &region) {
  WalkResult result = region.walk([](Operation *op) {
    if (isa<LoadToGpuOp, CallOpInterface>(op) || isLoadStart(op) ||
        isHostBufferCast(op) || op->hasTrait<OpTrait::IsTerminator>())
      return WalkResult::advance();
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isHostTensorType(operand.get().getType()))
        continue;
      InFlightDiagnostic diag =
          op->emitOpError() << "reads host-resident operand #"
                            << operand.getOperandNumber()
                            << "; only 'offload.load_to_gpu', "
                               "'offload.load_start', terminators and calls "
                               "may read host memory";
      diag.attachNote(operand.get().getLoc()) << "host value defined here";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
