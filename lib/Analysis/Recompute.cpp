//===- Recompute.cpp - Saved values backward can compute again ------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/Recompute.h"

#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Interfaces/TracedOpInterface.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::offload;

bool mlir::offload::isSeededRandomOp(Operation *op) {
  auto traced = dyn_cast<TracedOpInterface>(op);
  if (!traced)
    return false;
  // The op name without its namespace and overload: aten.native_dropout.default
  // -> native_dropout.
  StringRef target = traced.getTarget();
  StringRef name = target.contains('.') ? target.split('.').second : target;
  name = name.split('.').first;
  for (StringRef random :
       {"rand", "bernoulli", "dropout", "normal", "uniform", "multinomial",
        "poisson", "exponential", "cauchy", "geometric", "log_normal",
        "random", "rng", "seed"})
    if (name.contains(random))
      return true;
  // torch.ops.higher_order.*rng* wrappers and the attention kernels that take
  // a dropout probability are named with the words above.
  return target.contains("rng");
}

/// An op backward may run again: no regions, no effects, tensor results,
/// not a copy, and a view, a constant or a memory-bound op of known cost.
static bool isCheapToRecompute(Operation *op, const CostModel &costModel) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op) ||
      isa<OffloadDialect>(op->getDialect()) || isSeededRandomOp(op))
    return false;
  if (op->getNumResults() == 0)
    return false;
  for (Type type : op->getResultTypes())
    if (!isa<RankedTensorType>(type) || isHostResident(type))
      return false;
  if (getViewSource(op) || op->getNumOperands() == 0)
    return true;
  OpCost cost = costModel.estimate(op);
  return cost.known && !cost.isView && !cost.scatters && !cost.attention &&
         cost.flops == 0 && cost.memoryBound;
}

SmallVector<RecomputeCandidate, 0> mlir::offload::findRecomputeCandidates(
    const TrainingStep &step, const CostModel &costModel,
    ArrayRef<unsigned> links, unsigned maxOps) {
  Block &body = step.getForward().getFunctionBody().front();
  // The saved values backward receives, each with its first link.
  llvm::MapVector<Value, unsigned> savedLink;
  for (unsigned l = 0, e = step.getNumSaved(); l < e; ++l)
    savedLink.try_emplace(step.getSavedValue(l), l);

  llvm::MapVector<Value, RecomputeCandidate> byValue;
  for (unsigned l : links) {
    Value value = step.getSavedValue(l);
    auto [it, inserted] = byValue.try_emplace(value);
    it->second.links.push_back(l);
    if (!inserted)
      continue;
    it->second.value = value;
  }

  SmallVector<RecomputeCandidate, 0> candidates;
  for (auto &[value, candidate] : byValue) {
    Operation *def = value.getDefiningOp();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!def || def->getBlock() != &body || !type || isHostResident(type))
      continue;
    std::optional<int64_t> bytes = getTensorSizeInBytes(type);
    if (!bytes)
      continue;
    // Walk up from the value to values backward has.
    llvm::SetVector<Operation *> slice;
    llvm::SetVector<Value> inputs;
    SmallVector<Value> worklist = {value};
    bool ok = true;
    llvm::DenseSet<Value> seen;
    while (ok && !worklist.empty()) {
      Value current = worklist.pop_back_val();
      if (!seen.insert(current).second)
        continue;
      if (current != value && savedLink.contains(current)) {
        inputs.insert(current);
        continue;
      }
      Operation *op = current.getDefiningOp();
      if (!op || op->getBlock() != &body ||
          !isCheapToRecompute(op, costModel) || slice.size() >= maxOps) {
        ok = false;
        break;
      }
      if (slice.insert(op))
        llvm::append_range(worklist, op->getOperands());
    }
    if (!ok || slice.empty())
      continue;
    candidate.ops = slice.takeVector();
    llvm::sort(candidate.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    // Inputs in the order the ops first read them.
    for (Operation *op : candidate.ops)
      for (Value operand : op->getOperands())
        if (inputs.contains(operand) &&
            !llvm::is_contained(candidate.inputs, operand)) {
          candidate.inputs.push_back(operand);
          candidate.inputLinks.push_back(savedLink.lookup(operand));
        }
    candidate.bytes = *bytes;
    for (Operation *op : candidate.ops)
      candidate.seconds += costModel.estimate(op).seconds;
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

SmallVector<unsigned>
mlir::offload::pickCompatibleRecomputes(ArrayRef<RecomputeCandidate> candidates,
                                        ArrayRef<unsigned> order,
                                        size_t limit) {
  SmallVector<unsigned> picked;
  llvm::DenseSet<Value> recomputed, readByPicked;
  for (unsigned c : order) {
    if (picked.size() >= limit)
      break;
    const RecomputeCandidate &candidate = candidates[c];
    if (readByPicked.contains(candidate.value) ||
        llvm::any_of(candidate.inputs,
                     [&](Value input) { return recomputed.contains(input); }))
      continue;
    picked.push_back(c);
    recomputed.insert(candidate.value);
    readByPicked.insert(candidate.inputs.begin(), candidate.inputs.end());
  }
  return picked;
}
