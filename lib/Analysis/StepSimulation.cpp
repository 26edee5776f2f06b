//===- StepSimulation.cpp - Predicting a training step's time and memory --===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Effects.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallSet.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <mutex>

using namespace mlir;
using namespace mlir::offload;

static constexpr double kInf = std::numeric_limits<double>::infinity();
/// An offload start whose wait is not (yet) seen in forward.
static constexpr unsigned kWaitAtForwardEnd = ~0u;

//===----------------------------------------------------------------------===//
// Building the model
//===----------------------------------------------------------------------===//

namespace mlir {
namespace offload {
class StepModelBuilder {
public:
  StepModelBuilder(StepModel &model, const CostModel &costModel)
      : model(model), costModel(costModel) {}

  LogicalResult build(const TrainingStep &step);

private:
  using Ref = StepModel::Ref;
  static Ref linkRef(unsigned link) { return -int(link) - 1; }

  unsigned newBuffer(Type type, int defPos, bool persistent) {
    model.buffers.push_back(
        {getTensorSizeInBytes(type).value_or(0), defPos, persistent});
    if (auto tensor = dyn_cast<TensorType>(type))
      model.buffers.back().elementType = tensor.getElementType();
    return model.buffers.size() - 1;
  }
  unsigned newBuffer(Value value, int defPos) {
    unsigned buffer = newBuffer(value.getType(), defPos, false);
    if (unmaterialized.contains(value))
      model.buffers[buffer].bytes = 0;
    return buffer;
  }
  std::optional<Ref> lookup(Value value) const {
    auto it = refs.find(value);
    if (it == refs.end())
      return std::nullopt;
    return it->second;
  }
  void alias(Value result, Value source) {
    if (std::optional<Ref> ref = lookup(source))
      refs[result] = *ref;
  }
  void addOp(Operation *op, bool backward);
  void estimateFused(Block &block);

  StepModel &model;
  const CostModel &costModel;
  /// With ExecutionModel::fuseMemoryBound: op times under fusion, and the
  /// values fusion keeps out of device memory.
  llvm::DenseMap<Operation *, double> fusedSeconds;
  llvm::DenseSet<Value> unmaterialized;
  /// Backward arguments of a value saved more than once, to the first one.
  llvm::DenseMap<Value, Value> sameSavedValue;
  llvm::DenseMap<Value, Ref> refs;
  /// The copy each future or copied value comes from.
  llvm::DenseMap<Value, unsigned> copyOf;
  /// Per forward buffer, the last forward view op reading it.
  llvm::DenseMap<unsigned, int> lastForwardView;
  /// The backward view ops reading a saved link: (link, position).
  SmallVector<std::pair<unsigned, int>> backwardViews;
};
} // namespace offload
} // namespace mlir

void StepModelBuilder::addOp(Operation *op, bool backward) {
  unsigned pos = model.ops.size();
  model.positions[op] = pos;
  // A fused op is memory-bound by construction (isFusableMemoryBound).
  StepModel::SimOp simOp{op, 0, /*memoryBound=*/true, {}, {}};
  bool scatters = false;
  // Whether the code generator allocates the op's results (a fused kernel's,
  // a matmul's) rather than the op itself (an attention kernel).
  bool generatorAllocates = true;
  if (auto fused = fusedSeconds.find(op); fused != fusedSeconds.end()) {
    simOp.seconds = fused->second;
  } else {
    OpCost cost = costModel.estimate(op);
    simOp.seconds = cost.seconds;
    simOp.memoryBound = cost.memoryBound;
    scatters = cost.scatters;
    generatorAllocates = cost.known && !cost.attention;
  }
  auto recordCopy = [&](PlannedCopy::Kind kind, Value source, Value result) {
    std::optional<Ref> ref = lookup(source);
    if (!ref)
      return;
    PlannedCopy copy{kind, 0, getTensorSizeInBytes(source.getType()).value_or(0),
                     pos};
    if (kind == PlannedCopy::Kind::Offload) {
      if (*ref < 0)
        return;
      copy.target = *ref;
      // A synchronous offload is waited where it starts; a split one at its
      // wait, or at the end of forward if it has none there.
      copy.waitPos = isa<OffloadToCpuOp>(op) ? pos : kWaitAtForwardEnd;
    } else {
      if (*ref >= 0)
        return;
      copy.target = -*ref - 1;
      copy.waitPos = pos;
      // Filled in once the forward side is known (see build()).
      copy.dependsOn = -1;
      model.planInIR.loadOf[copy.target] = model.planInIR.copies.size();
    }
    copyOf[result] = model.planInIR.copies.size();
    copy.sequence = model.planInIR.copies.size();
    model.planInIR.copies.push_back(copy);
    refs[result] = *ref;
  };

  // The copies of a group, one per member, the first one leading.
  auto recordGroup = [&](PlannedCopy::Kind kind, ValueRange sources,
                         ValueRange futures) {
    int leader = -1;
    for (auto [source, future] : llvm::zip_equal(sources, futures)) {
      size_t before = model.planInIR.copies.size();
      recordCopy(kind, source, future);
      if (model.planInIR.copies.size() == before)
        continue;
      if (leader < 0)
        leader = before;
      else
        model.planInIR.copies.back().groupLeader = leader;
    }
  };

  if (auto offload = dyn_cast<OffloadToCpuOp>(op)) {
    recordCopy(PlannedCopy::Kind::Offload, offload.getSource(),
               offload.getResult());
  } else if (auto group = dyn_cast<OffloadGroupStartOp>(op)) {
    recordGroup(PlannedCopy::Kind::Offload, group.getSources(),
                group.getFutures());
  } else if (auto group = dyn_cast<LoadGroupStartOp>(op)) {
    recordGroup(PlannedCopy::Kind::Load, group.getSources(),
                group.getFutures());
  } else if (auto start = dyn_cast<OffloadStartOp>(op)) {
    recordCopy(PlannedCopy::Kind::Offload, start.getSource(), start.getFuture());
  } else if (auto load = dyn_cast<LoadToGpuOp>(op)) {
    recordCopy(PlannedCopy::Kind::Load, load.getSource(), load.getResult());
  } else if (auto start = dyn_cast<LoadStartOp>(op)) {
    recordCopy(PlannedCopy::Kind::Load, start.getSource(), start.getFuture());
  } else if (auto wait = dyn_cast<WaitOp>(op)) {
    alias(wait.getResult(), wait.getFuture());
    auto it = copyOf.find(wait.getFuture());
    if (it != copyOf.end()) {
      // Inserting may grow the map and invalidate `it`: read it first.
      unsigned index = it->second;
      copyOf[wait.getResult()] = index;
      model.planInIR.copies[index].waitPos = pos;
    }
  } else if (Value source = getViewSource(op)) {
    for (Value result : op->getResults())
      alias(result, source);
    // Views are no real use, but the offload of a forward storage follows
    // its views (offload-insert-offloads), and a backward view of a saved
    // value may hold its load (see build()).
    if (std::optional<Ref> ref = lookup(source)) {
      if (!backward && *ref >= 0)
        lastForwardView[*ref] = pos;
      else if (backward && *ref < 0)
        backwardViews.push_back({unsigned(-*ref - 1), int(pos)});
    }
  } else {
    // A real op: it reads its operands (and what its regions capture) and
    // defines new buffers, except where destination-passing style makes a
    // result reuse its init.
    llvm::SmallSet<Ref, 8> seen;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (nested != op && operand.getParentRegion() &&
            op->isProperAncestor(operand.getParentRegion()->getParentOp()))
          continue;
        if (std::optional<Ref> ref = lookup(operand);
            ref && seen.insert(*ref).second)
          simOp.uses.push_back(*ref);
      }
    });
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    for (OpResult result : op->getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      if (dps && result.getResultNumber() < dps.getNumDpsInits()) {
        if (std::optional<Ref> ref =
                lookup(dps.getDpsInitOperand(result.getResultNumber())->get())) {
          refs[result] = *ref;
          continue;
        }
      }
      if (std::optional<Ref> ref = lookup(getInPlaceSource(result))) {
        refs[result] = *ref; // An in-place write returns its operand's storage.
        continue;
      }
      // A scatter into a destination nothing else reads is written in place
      // (Inductor reinplaces it), as long as that destination is this
      // step's own temporary.
      if (scatters && result.getResultNumber() == 0 &&
          op->getOperand(0).getType() == result.getType() &&
          op->getOperand(0).hasOneUse())
        if (std::optional<Ref> ref = lookup(op->getOperand(0));
            ref && *ref >= 0 && !model.buffers[*ref].persistent &&
            !model.buffers[*ref].backwardArgument) {
          refs[result] = *ref;
          continue;
        }
      unsigned buffer = newBuffer(result, pos);
      model.buffers[buffer].generatorAllocated = generatorAllocates;
      simOp.defs.push_back(buffer);
      refs[result] = buffer;
    }
  }
  (void)backward;
  model.ops.push_back(std::move(simOp));
}

/// The op whose tensor results a fused memory-bound op writes: it does work,
/// none of it compute-bound, and it is an op the cost model knows.
static bool isFusableMemoryBound(Operation *op, const OpCost &cost) {
  return !cost.isView && !cost.scatters && cost.known && cost.flops == 0 &&
         cost.seconds > 0 &&
         (op->getNumRegions() == 0 || isa<RecomputeOp>(op)) &&
         !isa<OffloadToCpuOp, LoadToGpuOp, WaitOp>(op) && !isCopyStart(op);
}

/// Splits the top-level ops of `block` into stretches between ops that are
/// not fusable memory-bound ops (matmuls, attention, convolutions, unknown
/// ops, copies); inside a stretch, a value of a memory-bound op that only
/// memory-bound ops of the same stretch read (views followed) is fused away.
/// A memory-bound op then costs the bytes it reads from device memory (each
/// value once per stretch) and writes there, plus one op overhead if it
/// writes anything (it ends a fused kernel).
void StepModelBuilder::estimateFused(Block &block) {
  const DeviceProfile &profile = costModel.getProfile();
  llvm::DenseMap<Operation *, unsigned> stretchOf;
  llvm::DenseMap<Operation *, OpCost> costs;
  unsigned stretch = 0;
  for (Operation &op : block.without_terminator()) {
    OpCost cost = costModel.estimate(&op);
    if (!isFusableMemoryBound(&op, cost) && !cost.isView && cost.seconds > 0)
      ++stretch;
    stretchOf[&op] = stretch;
    costs[&op] = cost;
  }
  auto isFusedInto = [&](Value value, unsigned valueStretch) {
    SmallVector<Value> worklist = {value};
    bool anyUse = false;
    while (!worklist.empty()) {
      Value current = worklist.pop_back_val();
      for (Operation *user : current.getUsers()) {
        Operation *top = block.findAncestorOpInBlock(*user);
        if (!top || top == block.getTerminator())
          return false;
        if (getViewSource(top) == current) {
          llvm::append_range(worklist, top->getResults());
          continue;
        }
        if (!isFusableMemoryBound(top, costs[top]) ||
            stretchOf[top] != valueStretch)
          return false;
        anyUse = true;
      }
    }
    return anyUse;
  };
  for (Operation &op : block.without_terminator())
    if (isFusableMemoryBound(&op, costs[&op]))
      for (Value result : op.getResults())
        if (isa<TensorType>(result.getType()) &&
            isFusedInto(result, stretchOf[&op]))
          unmaterialized.insert(result);

  llvm::DenseSet<Value> readInStretch;
  unsigned currentStretch = ~0u;
  for (Operation &op : block.without_terminator()) {
    if (!isFusableMemoryBound(&op, costs[&op]))
      continue;
    if (stretchOf[&op] != currentStretch) {
      currentStretch = stretchOf[&op];
      readInStretch.clear();
    }
    double bytes = 0;
    bool writes = false;
    for (Value operand : op.getOperands()) {
      Value storage = getStorageRoot(operand);
      if (Value same = sameSavedValue.lookup(storage))
        storage = same;
      if (!isa<TensorType>(storage.getType()) ||
          unmaterialized.contains(storage) ||
          !readInStretch.insert(storage).second)
        continue;
      bytes += double(getTensorSizeInBytes(storage.getType()).value_or(0));
    }
    for (Value result : op.getResults()) {
      if (!isa<TensorType>(result.getType()) || unmaterialized.contains(result))
        continue;
      bytes += double(getTensorSizeInBytes(result.getType()).value_or(0));
      writes = true;
      // The kernel that writes it has it at hand for the ops fused after.
      readInStretch.insert(result);
    }
    fusedSeconds[&op] =
        bytes / profile.hbmBandwidth + (writes ? profile.opOverhead : 0);
  }
}

LogicalResult StepModelBuilder::build(const TrainingStep &step) {
  const DeviceProfile &profile = costModel.getProfile();
  model.profileLatency = profile.copyLatency;
  model.d2hBandwidth = profile.d2hBandwidth;
  model.h2dBandwidth = profile.h2dBandwidth;
  model.bothWaysBandwidth = profile.bothWaysBandwidth;
  model.copyInterference = profile.copyInterference;

  unsigned numSaved = step.getNumSaved();
  model.links.resize(numSaved);
  model.planInIR.offloaded.assign(numSaved, false);
  model.planInIR.loadOf.assign(numSaved, -1);
  model.planInIR.offloadOf.assign(numSaved, -1);

  Block &forward = step.getForward().getFunctionBody().front();
  Block &backward = step.getBackward().getFunctionBody().front();
  if (model.execution.fuseMemoryBound) {
    // A value saved twice is one buffer: backward's arguments for it read
    // the same memory (and once offloaded as one copy, the same loaded
    // value), so a fused kernel reads it once.
    llvm::DenseMap<Value, BlockArgument> firstArgOf;
    for (unsigned i = 0; i < numSaved; ++i) {
      BlockArgument arg = step.getBackwardArgument(i);
      auto [it, inserted] = firstArgOf.try_emplace(step.getSavedValue(i), arg);
      if (!inserted)
        sameSavedValue[arg] = it->second;
    }
    estimateFused(forward);
    estimateFused(backward);
  }

  // Forward: arguments are parameters and inputs, live all step.
  for (BlockArgument arg : forward.getArguments())
    refs[arg] = newBuffer(arg.getType(), -1, true);
  for (Operation &op : forward.without_terminator())
    addOp(&op, false);
  model.numForwardOps = model.ops.size();
  int lastForward = int(model.numForwardOps) - 1;
  for (PlannedCopy &copy : model.planInIR.copies)
    if (copy.waitPos == kWaitAtForwardEnd)
      copy.waitPos = model.numForwardOps;

  Operation *ret = step.getForwardReturn();
  for (unsigned i = 0; i < step.getNumOutputs(); ++i)
    if (std::optional<Ref> ref = lookup(ret->getOperand(i)); ref && *ref >= 0)
      model.buffers[*ref].holdPos =
          std::max(model.buffers[*ref].holdPos, lastForward);
  SmallVector<int> offloadOfLink(numSaved, -1);
  // Where the saved values may share copies, planFor() predicts them so.
  bool shrinkable = canShrinkSavedInterface(step);
  for (unsigned i = 0; i < numSaved; ++i) {
    Value saved = step.getSavedValue(i);
    StepModel::Link &link = model.links[i];
    link.value = saved;
    link.bytes = getTensorSizeInBytes(saved.getType()).value_or(0);
    std::optional<Ref> ref = lookup(saved);
    if (ref && *ref >= 0)
      link.buffer = *ref;
    if (auto it = copyOf.find(saved); it != copyOf.end()) {
      model.planInIR.offloaded[i] = true;
      model.planInIR.offloadOf[i] = it->second;
      offloadOfLink[i] = it->second;
      // The saved value is the host copy; the model follows it back to the
      // device value it was copied from.
      Value source = saved;
      while (Operation *def = source.getDefiningOp()) {
        if (auto wait = dyn_cast<WaitOp>(def))
          source = wait.getFuture();
        else if (isOffloadStart(def))
          source = getStartedCopySource(source);
        else if (auto offload = dyn_cast<OffloadToCpuOp>(def))
          source = offload.getSource();
        else
          break;
      }
      link.value = source;
    } else if (isHostTensorType(saved.getType())) {
      link.buffer = -1;
    } else if (link.buffer >= 0 && shrinkable) {
      // As findSharedStorageCopies: a value without a shared source still
      // shares one copy with itself where it is saved twice.
      link.copySource = getSharedCopySource(saved, forward);
      if (!link.copySource)
        link.copySource = saved;
    }
  }

  // Backward: saved arguments read their link, the others are new buffers
  // (gradients of the outputs) that exist when backward starts.
  int firstBackward = model.numForwardOps;
  for (BlockArgument arg : backward.getArguments()) {
    if (arg.getArgNumber() < numSaved) {
      refs[arg] = linkRef(arg.getArgNumber());
      continue;
    }
    unsigned buffer = newBuffer(arg.getType(), firstBackward, false);
    model.buffers[buffer].backwardArgument = true;
    refs[arg] = buffer;
  }
  for (Operation &op : backward.without_terminator())
    addOp(&op, true);
  int lastPos = int(model.ops.size()) - 1;
  int endPos = int(model.ops.size());
  Operation *backwardReturn = backward.getTerminator();
  llvm::SmallDenseSet<unsigned> returnedLinks;
  for (Value operand : backwardReturn->getOperands()) {
    std::optional<Ref> ref = lookup(operand);
    if (!ref || isHostTensorType(operand.getType()))
      continue;
    if (*ref >= 0) {
      model.buffers[*ref].holdPos = std::max(model.buffers[*ref].holdPos, lastPos);
    } else {
      model.links[-*ref - 1].lastUse = lastPos;
      returnedLinks.insert(-*ref - 1);
    }
  }

  for (PlannedCopy &copy : model.planInIR.copies)
    if (copy.kind == PlannedCopy::Kind::Load)
      copy.dependsOn = offloadOfLink[copy.target];

  // Uses, per buffer and per link.
  model.lastDirectUse.assign(model.buffers.size(), -1);
  for (auto [pos, op] : llvm::enumerate(model.ops)) {
    for (Ref ref : op.uses) {
      if (ref >= 0) {
        model.lastDirectUse[ref] = std::max(model.lastDirectUse[ref], int(pos));
        continue;
      }
      StepModel::Link &link = model.links[-ref - 1];
      if (link.firstUse < 0)
        link.firstUse = pos;
      link.lastUse = std::max(link.lastUse, int(pos));
    }
  }
  model.lastForwardRead = model.lastDirectUse;
  for (auto [buffer, pos] : lastForwardView)
    model.lastForwardRead[buffer] =
        std::max(model.lastForwardRead[buffer], pos);

  // Where offload-insert-loads will load each saved value: before the first
  // op reading it after offload-reorder-backward has sunk its views. A view
  // without effects sinks to its consumer (already a use of the link); one
  // with effects stays above the first op whose effects do not commute with
  // its own (see ReorderBackward.cpp; this assumes no two held views with
  // effects conflict with each other, as no known dialect's views do). A
  // view nobody reads, like a value only the return reads, stays at the end
  // of backward.
  auto moveFirstUseTo = [](StepModel::Link &link, int pos) {
    if (link.firstUse < 0 || pos < link.firstUse)
      link.firstUse = pos;
  };
  for (auto [l, view] : backwardViews) {
    StepModel::Link &link = model.links[l];
    Operation *viewOp = model.ops[view].op;
    int stop = endPos;
    if (!isMemoryEffectFree(viewOp))
      for (int pos = view + 1; pos < endPos; ++pos)
        if (!effectsCommute(viewOp, model.ops[pos].op)) {
          stop = pos;
          break;
        }
    moveFirstUseTo(link, stop);
  }
  for (unsigned l : returnedLinks)
    moveFirstUseTo(model.links[l], endPos);

  // How far copies may move (see Effects.h): per position, the last op
  // before it that a copy start or wait may not cross.
  model.lastCopyBarrier.assign(model.ops.size() + 1, -1);
  for (auto [pos, op] : llvm::enumerate(model.ops))
    model.lastCopyBarrier[pos + 1] =
        commutesWithTensorCopyStart(op.op) ? model.lastCopyBarrier[pos]
                                           : int(pos);

  model.startTimes.resize(model.ops.size() + 1);
  double time = 0;
  for (auto [pos, op] : llvm::enumerate(model.ops)) {
    model.startTimes[pos] = time;
    time += op.seconds;
  }
  model.startTimes.back() = time;
  return success();
}

FailureOr<StepModel> StepModel::build(const TrainingStep &step,
                                      const CostModel &costModel,
                                      ExecutionModel execution) {
  StepModel model;
  model.execution = execution;
  model.scratchPool = std::make_shared<SimulationScratchPool>();
  if (failed(StepModelBuilder(model, costModel).build(step)))
    return failure();
  if (execution.reuseFreedBuffers)
    model.reuseFreedBuffers();
  if (execution.autoPrefetchLead ||
      (execution.prefetchLead > 0 && execution.prefetchBytes < 0))
    model.resolvePrefetch();
  return model;
}

void StepModel::resolvePrefetch() {
  // Resolved bytes stop simulate() from holding any for the next graph.
  execution.prefetchBytes = 0;
  double lead = execution.prefetchLead;
  execution.prefetchLead = 0;
  SmallVector<int64_t> liveAt;
  SimulationResult empty = simulate(getEmptyPlan(), &liveAt);
  unsigned numOps = ops.size();
  double end = startTimes[numOps];
  // Walking backward from the end: the most bytes live over the tail from
  // `pos` on, and what that tail leaves free below the peak.
  int64_t tailLive = liveAt[numOps];
  double bestLead = 0;
  int64_t bestBytes = 0, bestMoved = 0;
  for (unsigned pos = numOps; pos-- > numForwardOps;) {
    tailLive = std::max(tailLive, liveAt[pos]);
    double tail = end - startTimes[pos];
    int64_t free = std::max<int64_t>(0, empty.peakBytes - tailLive);
    if (!execution.autoPrefetchLead) {
      if (tail > lead)
        break;
      bestLead = lead;
      bestBytes = free;
      continue;
    }
    int64_t carried =
        int64_t(std::max(0.0, tail - profileLatency) * h2dBandwidth);
    if (std::min(free, carried) > bestMoved) {
      bestMoved = std::min(free, carried);
      bestLead = tail;
      bestBytes = free;
    }
  }
  execution.prefetchLead = execution.autoPrefetchLead ? bestLead : lead;
  execution.prefetchBytes = bestBytes;
}

SmallVector<unsigned>
StepModel::getPrefetchedLoads(const CopyPlan &plan) const {
  SmallVector<unsigned> loads;
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0)
    return loads;
  unsigned slot = getIssueSlot(numForwardOps, /*pastViews=*/true);
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.issuePos <= slot &&
        copy.issuePos >= numForwardOps)
      loads.push_back(index);
  llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  int64_t bytes = 0;
  unsigned fit = 0;
  for (unsigned index : loads) {
    bytes += plan.copies[index].bytes;
    if (bytes > execution.prefetchBytes)
      break;
    ++fit;
  }
  loads.truncate(fit);
  return loads;
}

SmallVector<unsigned>
StepModel::getDeferredOffloads(const CopyPlan &plan) const {
  SmallVector<unsigned> offloads;
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0 ||
      execution.release != ExecutionModel::Release::AtWait)
    return offloads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Offload &&
        getIssueSlot(std::min(copy.waitPos, numForwardOps), false) >=
            numForwardOps)
      offloads.push_back(index);
  llvm::stable_sort(offloads, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  int64_t bytes = 0;
  double seconds = 0;
  unsigned fit = 0;
  for (unsigned index : offloads) {
    bytes += plan.copies[index].bytes;
    seconds += getMinCopySeconds(PlannedCopy::Kind::Offload,
                                 plan.copies[index].bytes);
    if (bytes > execution.prefetchBytes || seconds > execution.prefetchLead)
      break;
    ++fit;
  }
  offloads.truncate(fit);
  return offloads;
}

std::optional<unsigned> StepModel::getDeferredRelease() const {
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0 ||
      execution.release != ExecutionModel::Release::AtWait)
    return std::nullopt;
  auto it = std::lower_bound(startTimes.begin(),
                             startTimes.begin() + numForwardOps,
                             execution.prefetchLead);
  return unsigned(it - startTimes.begin());
}

std::optional<unsigned> StepModel::getPrefetchIssue() const {
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0)
    return std::nullopt;
  unsigned numOps = ops.size();
  double from = startTimes[numOps] - execution.prefetchLead;
  auto it = std::lower_bound(startTimes.begin() + numForwardOps,
                             startTimes.begin() + numOps, from);
  return unsigned(it - startTimes.begin());
}

void StepModel::reuseFreedBuffers() {
  // As Inductor's memory planning (AllocateLine::plan and
  // FreeIfNotReusedLine::plan in torch/_inductor/codegen/wrapper.py): a
  // buffer freed inside its graph (not a graph input, not an output: not a
  // saved value nor a returned gradient) goes to a pool keyed by dtype and
  // storage size; an allocation of that key takes the last one pushed, if
  // the two are adjacent or the held bytes keep the graph's estimated peak,
  // and the estimate over the hold grows by them. Inductor estimates each
  // graph by itself and counts host tensors like device ones, so the holds
  // it chooses hardly depend on what is offloaded: they are found here
  // once, on the plan without offload, and every plan keeps them.
  SmallVector<int64_t> liveAt;
  simulate(getEmptyPlan(), &liveAt);
  // Saved values and forward outputs live to the end of forward in these
  // ranges, returned gradients to the end of backward: neither is freed
  // inside its graph.
  SmallVector<std::pair<int, int>> ranges = getLiveRangesWithoutOffload();

  auto planGraph = [&](unsigned begin, unsigned end) {
    if (begin >= end)
      return;
    SmallVector<SmallVector<unsigned, 2>> freedAfter(end - begin);
    for (auto [id, buffer] : llvm::enumerate(buffers)) {
      int last = ranges[id].second;
      if (buffer.bytes > 0 && !buffer.persistent && !buffer.backwardArgument &&
          buffer.defPos >= int(begin) && last < int(end) - 1)
        freedAfter[last - begin].push_back(id);
    }
    SmallVector<int64_t> estimate(liveAt.begin() + begin, liveAt.begin() + end);
    int64_t peak = *llvm::max_element(estimate);
    using Key = std::pair<Type, int64_t>;
    llvm::DenseMap<Key, SmallVector<unsigned, 4>> pool;
    for (unsigned pos = begin; pos < end; ++pos) {
      for (unsigned def : ops[pos].defs) {
        Buffer &buffer = buffers[def];
        if (!buffer.generatorAllocated || buffer.bytes == 0)
          continue;
        auto it = pool.find({buffer.elementType, buffer.bytes});
        if (it == pool.end() || it->second.empty())
          continue;
        unsigned donor = it->second.back();
        unsigned from = ranges[donor].second + 1 - begin, to = pos - begin;
        int64_t held = 0;
        for (unsigned p = from; p < to; ++p)
          held = std::max(held, estimate[p]);
        if (from != to && held + buffer.bytes > peak)
          continue;
        it->second.pop_back();
        buffers[donor].holdPos = std::max<int>(buffers[donor].holdPos, pos - 1);
        for (unsigned p = from; p < to; ++p)
          estimate[p] += buffer.bytes;
      }
      for (unsigned id : freedAfter[pos - begin])
        pool[{buffers[id].elementType, buffers[id].bytes}].push_back(id);
    }
  };
  planGraph(0, numForwardOps);
  planGraph(numForwardOps, ops.size());
}

std::optional<unsigned> StepModel::getPosition(Operation *op) const {
  auto it = positions.find(op);
  if (it == positions.end())
    return std::nullopt;
  return it->second;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

CopyPlan StepModel::getEmptyPlan() const {
  CopyPlan plan;
  plan.offloaded.assign(links.size(), false);
  plan.loadOf.assign(links.size(), -1);
  plan.offloadOf.assign(links.size(), -1);
  return plan;
}

SmallVector<std::pair<int, int>> StepModel::getLiveRangesWithoutOffload() const {
  // As simulate() computes liveness for a plan that offloads nothing.
  SmallVector<std::pair<int, int>> ranges;
  ranges.reserve(buffers.size());
  for (auto [id, buffer] : llvm::enumerate(buffers))
    ranges.push_back({buffer.defPos, std::max(lastDirectUse[id], buffer.holdPos)});
  int lastForward = int(numForwardOps) - 1;
  for (const Link &link : links) {
    if (link.buffer < 0)
      continue;
    int &last = ranges[link.buffer].second;
    last = std::max({last, lastForward, link.lastUse});
  }
  for (auto &[def, last] : ranges)
    last = std::max(last, def);
  return ranges;
}

SmallVector<StepModel::CopyGroup>
StepModel::groupForCopies(ArrayRef<unsigned> chosen) const {
  SmallVector<CopyGroup> groups;
  // Links with a shared copy source, by source (in order of first link).
  llvm::MapVector<Value, SmallVector<unsigned>> bySource;
  for (unsigned l : chosen)
    if (links[l].copySource)
      bySource[links[l].copySource].push_back(l);
  llvm::DenseSet<unsigned> shared;
  for (auto &[source, members] : bySource) {
    SmallVector<Value> values = llvm::map_to_vector(
        members, [&](unsigned l) { return links[l].value; });
    if (!shouldShareCopy(source, values))
      continue;
    // The leader is the first member saved as the source itself, else the
    // first member (findSharedStorageCopies): offload-insert-offloads makes
    // the copy when it reaches the leader, which orders it against the
    // other offloads placed after the same op.
    CopyGroup group{members, members.front(),
                    getTensorSizeInBytes(source.getType()).value_or(0)};
    group.value = source;
    auto sourceMember = llvm::find_if(
        members, [&](unsigned l) { return links[l].value == source; });
    if (sourceMember != members.end())
      group.leader = *sourceMember;
    for (unsigned l : members) {
      const Link &link = links[l];
      if (link.firstUse >= 0 &&
          (group.firstUse < 0 || link.firstUse < group.firstUse))
        group.firstUse = link.firstUse;
      group.lastUse = std::max(group.lastUse, link.lastUse);
      shared.insert(l);
    }
    groups.push_back(std::move(group));
  }
  for (unsigned l : chosen) {
    if (shared.contains(l))
      continue;
    const Link &link = links[l];
    CopyGroup group{{l}, l, link.bytes, link.firstUse, link.lastUse};
    group.value = link.value;
    groups.push_back(std::move(group));
  }
  llvm::stable_sort(groups, [](const CopyGroup &a, const CopyGroup &b) {
    return a.leader < b.leader;
  });
  return groups;
}

SmallVector<StepModel::PlannedLoad>
StepModel::getPlannedLoads(ArrayRef<unsigned> chosen) const {
  SmallVector<unsigned> sorted(chosen);
  llvm::sort(sorted);
  sorted.erase(llvm::unique(sorted), sorted.end());
  SmallVector<PlannedLoad> loads;
  for (const CopyGroup &group : groupForCopies(sorted)) {
    const Link &link = links[group.leader];
    if (link.buffer < 0 || buffers[link.buffer].persistent ||
        group.firstUse < 0)
      continue;
    loads.push_back({unsigned(group.firstUse), group.bytes});
  }
  return loads;
}

std::optional<unsigned> StepModel::getPlannedOffloadIssue(unsigned l) const {
  const Link &link = links[l];
  if (link.buffer < 0 || buffers[link.buffer].persistent)
    return std::nullopt;
  // As planFor() places it.
  int last = lastForwardRead[link.buffer];
  if (last < 0 || last >= int(numForwardOps))
    last = buffers[link.buffer].defPos;
  return unsigned(last + 1);
}

/// True for the ops that do not end an issue point (getIssueSlot).
static bool continuesIssuePoint(Operation *op, bool pastViews) {
  return isCopyStart(op) || isa<WaitOp, OffloadToCpuOp, LoadToGpuOp>(op) ||
         (pastViews && getViewSource(op));
}

unsigned StepModel::getIssueSlot(unsigned pos, bool pastViews) const {
  while (pos < ops.size() && continuesIssuePoint(ops[pos].op, pastViews))
    ++pos;
  return pos;
}

SmallVector<unsigned> StepModel::getIssueSlots(bool pastViews) const {
  SmallVector<unsigned> slots(ops.size() + 1);
  slots[ops.size()] = ops.size();
  for (unsigned pos = ops.size(); pos-- > 0;) {
    slots[pos] =
        continuesIssuePoint(ops[pos].op, pastViews) ? slots[pos + 1] : pos;
  }
  return slots;
}

void StepModel::coalesceCopies(CopyPlan &plan, int64_t maxBytes,
                               PlannedCopy::Kind kind) const {
  if (maxBytes <= 0)
    return;
  unsigned numOps = ops.size();
  // An offload starts after the last read of its storage, views included,
  // so its group does not reach past a view (which may read that storage).
  bool pastViews = kind == PlannedCopy::Kind::Load;
  SmallVector<unsigned> issueSlots = getIssueSlots(pastViews);
  SmallVector<unsigned> order;
  SmallVector<unsigned> slotOf(plan.copies.size());
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == kind && copy.groupLeader < 0) {
      order.push_back(index);
      slotOf[index] = issueSlots[std::min(copy.issuePos, numOps)];
    }
  // Stream order: by issue position, then sequence (simulate()).
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    return std::make_tuple(x.issuePos, x.sequence) <
           std::make_tuple(y.issuePos, y.sequence);
  });
  auto eligible = [&](unsigned c) {
    int64_t bytes = plan.copies[c].bytes;
    return bytes > 0 && bytes < maxBytes;
  };
  // Loads waited at their issue point, or later.
  auto waitedAtOnce = [&](unsigned c) {
    return kind == PlannedCopy::Kind::Load &&
           issueSlots[std::min(plan.copies[c].waitPos, numOps)] == slotOf[c];
  };
  for (size_t i = 0; i < order.size();) {
    unsigned leader = order[i];
    size_t end = i + 1;
    if (eligible(leader))
      while (end < order.size() && eligible(order[end]) &&
             slotOf[order[end]] == slotOf[leader] &&
             waitedAtOnce(order[end]) == waitedAtOnce(leader))
        ++end;
    for (size_t j = i + 1; j < end; ++j) {
      PlannedCopy &member = plan.copies[order[j]];
      member.groupLeader = leader;
      member.issuePos = plan.copies[leader].issuePos;
    }
    i = end;
  }
}

SimulationResult StepModel::coalesceLoads(CopyPlan &plan,
                                          SimulationResult apart) const {
  CopyPlan grouped = plan;
  coalesceCopies(grouped, execution.coalesceBelow, PlannedCopy::Kind::Load);
  bool any = llvm::any_of(grouped.copies, [](const PlannedCopy &copy) {
    return copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0;
  });
  if (!any)
    return apart;
  SimulationResult together = simulate(grouped);
  if (together.peakBytes > apart.peakBytes)
    return apart;
  plan = std::move(grouped);
  return together;
}

CopyPlan StepModel::planFor(ArrayRef<unsigned> chosen, bool schedule,
                            int64_t maxInflightBytes,
                            SimulationResult *simulated) const {
  CopyPlan plan = getEmptyPlan();
  llvm::DenseMap<Value, unsigned> offloadOfValue;
  // In saved order, as offload-insert-offloads and offload-insert-loads
  // place the copies: an offload goes right after the last use of its
  // storage, so before the offloads of other storages placed there earlier
  // and after those of its own storage (they use it); loads before the same
  // op keep the saved order. Saved links sharing one copy (SharedStorage.h)
  // move as one offload and one load, in their leader's place.
  llvm::DenseMap<unsigned, SmallVector<unsigned>> offloadsAt;
  SmallVector<unsigned> sorted(chosen);
  llvm::sort(sorted);
  sorted.erase(llvm::unique(sorted), sorted.end());
  for (const CopyGroup &group : groupForCopies(sorted)) {
    unsigned l = group.leader;
    const Link &link = links[l];
    if (link.buffer < 0 || buffers[link.buffer].persistent)
      continue;
    auto [it, inserted] =
        offloadOfValue.try_emplace(group.value, plan.copies.size());
    for (unsigned member : group.links) {
      plan.offloaded[member] = true;
      plan.offloadOf[member] = it->second;
    }
    if (inserted) {
      // Right after the last forward use of the storage (views included).
      int last = int(*getPlannedOffloadIssue(l)) - 1;
      SmallVector<unsigned> &row = offloadsAt[last + 1];
      auto sameStorage = llvm::find_if(llvm::reverse(row), [&](unsigned c) {
        return plan.copies[c].target == unsigned(link.buffer);
      });
      row.insert(sameStorage == row.rend() ? row.begin() : sameStorage.base(),
                 plan.copies.size());
      plan.copies.push_back({PlannedCopy::Kind::Offload, unsigned(link.buffer),
                             group.bytes, unsigned(last + 1),
                             /*waitPos=*/unsigned(last + 1)});
    }
    if (group.firstUse < 0)
      continue;
    for (unsigned member : group.links)
      plan.loadOf[member] = plan.copies.size();
    plan.copies.push_back({PlannedCopy::Kind::Load, l, group.bytes,
                           unsigned(group.firstUse), unsigned(group.firstUse),
                           int(it->second)});
    plan.copies.back().sequence = plan.copies.size();
  }
  // Offloads go to their stream before loads issued at the same op (the end
  // of forward), in the order of their ops.
  for (auto &[pos, row] : offloadsAt)
    for (auto [rank, copy] : llvm::enumerate(row))
      plan.copies[copy].sequence = int64_t(rank) - int64_t(row.size());
  if (schedule) {
    // As offload-schedule-copies: offloads grouped where they are issued
    // (their waits placed for the groups' ends), loads once placed.
    coalesceCopies(plan, execution.coalesceBelow, PlannedCopy::Kind::Offload);
    placeOffloadWaits(plan);
    SimulationResult result = scheduleLoads(plan, maxInflightBytes);
    if (execution.coalesceBelow > 0)
      result = coalesceLoads(plan, std::move(result));
    if (simulated)
      *simulated = std::move(result);
  } else if (simulated) {
    *simulated = simulate(plan);
  }
  return plan;
}

namespace {
/// Per op position, the live bytes of a plan plus the bytes added across it
/// (loads hoisted, sources held to a later wait), and those added bytes
/// alone: a segment tree with range add and range maximum, so placeLoads and
/// sinkOffloadWaits find the position that would break a limit in O(log n)
/// instead of walking every position a copy is moved across (quadratic over
/// a large step's copies).
class HoistedBytes {
public:
  HoistedBytes(ArrayRef<int64_t> liveAt) : size(liveAt.size()) {
    while (leaves < size)
      leaves *= 2;
    live.assign(2 * leaves, std::numeric_limits<int64_t>::min());
    hoisted.assign(2 * leaves, 0);
    pending.assign(2 * leaves, 0);
    for (size_t i = 0; i < size; ++i)
      live[leaves + i] = liveAt[i];
    for (size_t i = leaves; i-- > 1;)
      live[i] = std::max(live[2 * i], live[2 * i + 1]);
  }

  /// Adds `bytes` at positions [from, to).
  void add(size_t from, size_t to, int64_t bytes) {
    if (from < to)
      add(1, 0, leaves, from, to, bytes);
  }

  /// The last position in [from, to) whose live plus hoisted bytes exceed
  /// `liveLimit`, or whose hoisted bytes exceed `hoistedLimit`; -1 if none.
  int64_t lastAbove(size_t from, size_t to, int64_t liveLimit,
                    int64_t hoistedLimit) {
    if (from >= to)
      return -1;
    return lastAbove(1, 0, leaves, from, to, liveLimit, hoistedLimit);
  }

  /// The live plus added bytes at `pos`.
  int64_t at(size_t pos) {
    size_t node = 1, lo = 0, hi = leaves;
    while (hi - lo > 1) {
      push(node);
      size_t mid = (lo + hi) / 2;
      if (pos < mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid;
      }
    }
    return live[node];
  }

  /// The first position in [from, to) whose live plus added bytes exceed
  /// `liveLimit`; -1 if none.
  int64_t firstAbove(size_t from, size_t to, int64_t liveLimit) {
    if (from >= to)
      return -1;
    return firstAbove(1, 0, leaves, from, to, liveLimit);
  }

private:
  void apply(size_t node, int64_t bytes) {
    live[node] += bytes;
    hoisted[node] += bytes;
    pending[node] += bytes;
  }
  void push(size_t node) {
    if (pending[node] != 0) {
      apply(2 * node, pending[node]);
      apply(2 * node + 1, pending[node]);
      pending[node] = 0;
    }
  }
  void add(size_t node, size_t lo, size_t hi, size_t from, size_t to,
           int64_t bytes) {
    if (to <= lo || hi <= from)
      return;
    if (from <= lo && hi <= to) {
      apply(node, bytes);
      return;
    }
    push(node);
    size_t mid = (lo + hi) / 2;
    add(2 * node, lo, mid, from, to, bytes);
    add(2 * node + 1, mid, hi, from, to, bytes);
    live[node] = std::max(live[2 * node], live[2 * node + 1]);
    hoisted[node] = std::max(hoisted[2 * node], hoisted[2 * node + 1]);
  }
  int64_t lastAbove(size_t node, size_t lo, size_t hi, size_t from, size_t to,
                    int64_t liveLimit, int64_t hoistedLimit) {
    if (to <= lo || hi <= from ||
        (live[node] <= liveLimit && hoisted[node] <= hoistedLimit))
      return -1;
    if (hi - lo == 1)
      return int64_t(lo);
    push(node);
    size_t mid = (lo + hi) / 2;
    int64_t right = lastAbove(2 * node + 1, mid, hi, from, to, liveLimit,
                              hoistedLimit);
    if (right >= 0)
      return right;
    return lastAbove(2 * node, lo, mid, from, to, liveLimit, hoistedLimit);
  }

  int64_t firstAbove(size_t node, size_t lo, size_t hi, size_t from,
                     size_t to, int64_t liveLimit) {
    if (to <= lo || hi <= from || live[node] <= liveLimit)
      return -1;
    if (hi - lo == 1)
      return int64_t(lo);
    push(node);
    size_t mid = (lo + hi) / 2;
    int64_t left = firstAbove(2 * node, lo, mid, from, to, liveLimit);
    if (left >= 0)
      return left;
    return firstAbove(2 * node + 1, mid, hi, from, to, liveLimit);
  }

  size_t size, leaves = 1;
  SmallVector<int64_t> live, hoisted, pending;
};
} // namespace

void StepModel::placeOffloadWaits(CopyPlan &plan) const {
  // Forward has no loads, and nothing stalls it before these waits, so its
  // D2H copies run back to back in issue order from compute-only times.
  SmallVector<unsigned> offloads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Offload &&
        copy.issuePos < numForwardOps)
      offloads.push_back(index);
  llvm::stable_sort(offloads, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    return std::make_pair(x.issuePos, x.sequence) <
           std::make_pair(y.issuePos, y.sequence);
  });
  double streamFree = 0;
  for (unsigned index : offloads) {
    PlannedCopy &copy = plan.copies[index];
    double end = std::max(startTimes[copy.issuePos], streamFree) +
                 profileLatency + double(copy.bytes) / d2hBandwidth;
    streamFree = end;
    // The first forward op after the issue starting at or after `end`
    // (start times only grow), then the first of those not a wait.
    unsigned pos = std::lower_bound(startTimes.begin() + copy.issuePos + 1,
                                    startTimes.begin() + numForwardOps, end) -
                   startTimes.begin();
    while (pos < numForwardOps && isa<WaitOp>(ops[pos].op))
      ++pos;
    // The wait moves up from the end of forward only across ops whose
    // effects commute with it.
    copy.waitPos = std::max(pos, getOffloadWaitFloor());
  }
  if (execution.release == ExecutionModel::Release::AtWait)
    sinkOffloadWaits(plan, offloads);
}

void StepModel::sinkOffloadWaits(CopyPlan &plan,
                                 ArrayRef<unsigned> offloads) const {
  // A wait at the predicted end of its copy stalls forward as soon as the
  // compute runs a little faster than predicted, or the link a little slower
  // (on the H100, waits placed so stalled 0.7 and 1.0 ms mid-forward, 2.5%
  // and 3.6% of the time elapsed, where the model's forward was 2.5% long;
  // waits held to 5% past their copy's end still stalled 0.25 ms at 27 ms,
  // the copy ending 4.8% later than predicted and forward running 2.7%
  // faster). Held later, a wait costs only memory: each goes down as far
  // as the bytes it keeps live leave the plan's predicted peak where it was,
  // up to the end of forward. Later offloads first: the D2H queue behind
  // them is longer.
  struct Sink {
    unsigned copy;
    /// Where the wait was placed, and where it goes.
    unsigned from, to;
  };
  SmallVector<Sink> sinks;
  for (unsigned index : offloads) {
    unsigned from = plan.copies[index].waitPos;
    if (from < numForwardOps)
      sinks.push_back({index, from, from});
  }
  if (sinks.empty())
    return;
  llvm::stable_sort(sinks, [](const Sink &a, const Sink &b) {
    return a.from > b.from;
  });
  SmallVector<int64_t> liveAt, afterRelease;
  int64_t peak = simulate(plan, &liveAt, &afterRelease).peakBytes;
  HoistedBytes bytesAt(ArrayRef<int64_t>(liveAt).take_front(numForwardOps));
  for (Sink &sink : sinks) {
    PlannedCopy &copy = plan.copies[sink.copy];
    // The wait's own op counts the source only until its release, which
    // comes before what the op allocates: held across it, the source is
    // live with all of that (and with what earlier sinks hold there).
    int64_t added = bytesAt.at(sink.from) - liveAt[sink.from];
    if (afterRelease[copy.target] >= 0 &&
        afterRelease[copy.target] + copy.bytes + added > peak)
      continue;
    // Then the first op below it where the source, live there too, would
    // raise the peak, or the end of forward; the wait goes right before it,
    // or, if that op is a wait, before the last op above it that is none.
    int64_t blocked =
        bytesAt.firstAbove(sink.from + 1, numForwardOps, peak - copy.bytes);
    unsigned pos = blocked < 0 ? numForwardOps : unsigned(blocked);
    while (pos > sink.from && pos < numForwardOps && isa<WaitOp>(ops[pos].op))
      --pos;
    bytesAt.add(sink.from, pos, copy.bytes);
    copy.waitPos = sink.to = pos;
  }
  // liveAt is per position and the releases move to later times, so the
  // bound is checked once more on the whole plan. If it breaks, the sinks
  // are kept in the order placed (each was placed with the ones before it)
  // up to the longest run a bisection finds to keep the peak, instead of
  // none (random_steps.py, seeds 1 to 3, 40 steps each, under three
  // pipelines: 4 of 360 runs broke it at least once; 21 before the wait's
  // own op was checked through afterRelease).
  if (simulate(plan).peakBytes <= peak)
    return;
  auto keepFirst = [&](size_t count) {
    for (auto [rank, sink] : llvm::enumerate(sinks))
      plan.copies[sink.copy].waitPos = rank < count ? sink.to : sink.from;
  };
  size_t holds = 0, breaks = sinks.size();
  while (breaks - holds > 1) {
    size_t mid = holds + (breaks - holds) / 2;
    keepFirst(mid);
    if (simulate(plan).peakBytes <= peak)
      holds = mid;
    else
      breaks = mid;
  }
  keepFirst(holds);
}

bool StepModel::placeLoads(CopyPlan &plan, ArrayRef<unsigned> loads,
                           int64_t maxInflightBytes, ArrayRef<int64_t> liveAt,
                           int64_t memoryLimit) const {
  // Per position: the synchronous plan's live bytes (`liveAt`) plus the
  // bytes of hoisted loads issued at or before it and waited after it (in
  // flight), which the synchronous plan lacks.
  HoistedBytes bytesAt(liveAt.take_front(ops.size() + 1));
  double streamFree = kInf;
  // The loads placed so far, latest wait first; their issue positions never
  // grow along it.
  SmallVector<unsigned> placed;
  for (unsigned index : loads) {
    PlannedCopy &copy = plan.copies[index];
    unsigned wait = copy.waitPos;
    unsigned first = getLoadIssueFloor(wait);
    double transfer = profileLatency + double(copy.bytes) / h2dBandwidth;
    double end = std::min(startTimes[wait], streamFree);
    double start = end - transfer * (1 + execution.loadLead);
    // The stream is needed from the copy's own start: the lead is slack for
    // this copy, and does not push every earlier load earlier still.
    streamFree = end - transfer;
    // The latest position at or before the wait whose start is early enough
    // (start times only grow), or the first position allowed.
    unsigned issue = wait;
    if (first < wait && startTimes[wait] > start) {
      auto it = std::upper_bound(startTimes.begin() + first,
                                 startTimes.begin() + wait, start);
      issue = it == startTimes.begin() + first
                  ? first
                  : unsigned(it - startTimes.begin()) - 1;
    }
    // The H2D stream runs loads in the order they are issued: issued after
    // a load that waits later, this one would queue behind it.
    if (!placed.empty())
      issue = std::min(issue, plan.copies[placed.back()].issuePos);
    // Then no higher than the first position, going up from the wait, where
    // its bytes would break the in-flight or the memory limit.
    int64_t blocked = bytesAt.lastAbove(
        issue, wait, memoryLimit - copy.bytes,
        maxInflightBytes > 0 ? maxInflightBytes - copy.bytes
                             : std::numeric_limits<int64_t>::max());
    if (blocked >= 0)
      issue = unsigned(blocked) + 1;
    bytesAt.add(issue, wait, copy.bytes);
    copy.issuePos = issue;
    // Held back by memory below loads that wait later: those are issued no
    // earlier than this one, so the stream still runs loads in wait order
    // (they hold their bytes for less time, so no limit breaks).
    for (unsigned later : llvm::reverse(placed)) {
      PlannedCopy &laterCopy = plan.copies[later];
      if (laterCopy.issuePos >= issue)
        break;
      bytesAt.add(laterCopy.issuePos, issue, -laterCopy.bytes);
      laterCopy.issuePos = issue;
    }
    placed.push_back(index);
  }
  return llvm::any_of(loads, [&](unsigned index) {
    return plan.copies[index].issuePos < plan.copies[index].waitPos;
  });
}

SimulationResult StepModel::scheduleLoads(CopyPlan &plan,
                                          int64_t maxInflightBytes) const {
  SmallVector<unsigned> loads;
  int64_t count = plan.copies.size();
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Load)
      continue;
    loads.push_back(index);
    // Loads issued before one op go to the stream in the order of their
    // waits (offload-schedule-copies emits them so), after the offloads
    // issued there; this changes no order among copies issued apart.
    copy.sequence += int64_t(copy.waitPos) * count;
    // The synchronous plan the peak is held to.
    copy.issuePos = copy.waitPos;
  }
  if (loads.empty())
    return simulate(plan);
  // Latest wait first; the H2D stream is serial, so each load must end
  // before the next one (in time) starts. Of loads waited before one op, the
  // last in the IR waits last.
  llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    if (x.waitPos != y.waitPos)
      return x.waitPos > y.waitPos;
    return x.sequence > y.sequence;
  });

  SmallVector<int64_t> liveAt;
  SimulationResult synchronous = simulate(plan, &liveAt);
  int64_t peak = synchronous.peakBytes;
  // The peak without offload bounds it only where the synchronous loads
  // stay within it: below it, min(peak, no-offload peak) is `peak`, and
  // above it no placement of loads can reach it (the loads are issued no
  // later than their waits already).
  // With a lead, the loads the graph before starts (up to prefetchBytes)
  // are on the device when backward begins whatever this placement does;
  // the peak may grow by as much.
  if (execution.prefetchLead > 0 && execution.prefetchBytes > 0)
    peak += execution.prefetchBytes;
  int64_t limit = peak;
  // Placed on the synchronous plan's positions, the hoisted loads run
  // backward ahead of where it ran against the copies, so buffers whose
  // offload completes late are released at later ops. Few placements need
  // a second try; each one has the excess taken off its headroom.
  constexpr unsigned kAttempts = 4;
  CopyPlan trial = plan;
  for (unsigned attempt = 0; attempt < kAttempts; ++attempt) {
    if (!placeLoads(trial, loads, maxInflightBytes, liveAt, limit))
      break;
    SimulationResult result = simulate(trial);
    if (result.peakBytes <= peak) {
      plan = std::move(trial);
      return result;
    }
    limit -= result.peakBytes - peak;
  }
  // Every load at its wait: the synchronous plan itself.
  return synchronous;
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

namespace {
/// Two copy streams whose transfers share the link: alone, a transfer runs
/// at its direction's bandwidth; while both transfer, each gets half the
/// both-ways bandwidth (at most its own).
class CopyStreams {
public:
  CopyStreams(const CopyPlan &plan, double latency, double d2h, double h2d,
              double both)
      : plan(plan), latency(latency), issueTime(plan.copies.size(), kInf),
        endTime(plan.copies.size(), kInf), across(plan.copies.size(), 0) {
    bandwidth[0] = d2h;
    bandwidth[1] = h2d;
    shared[0] = std::min(d2h, both / 2);
    shared[1] = std::min(h2d, both / 2);
    for (auto [index, copy] : llvm::enumerate(plan.copies))
      if (copy.groupLeader >= 0) {
        if (groups.empty())
          groups.resize(plan.copies.size());
        SmallVector<unsigned> &members = groups[copy.groupLeader];
        if (members.empty())
          members.push_back(copy.groupLeader);
        members.push_back(index);
      }
  }

  /// `bytes` of `copy` crossed the link before it is issued (a load the
  /// graph before started; its latency is paid then, too).
  void setAcrossBeforeIssue(unsigned copy, int64_t bytes) {
    across[copy] = bytes;
  }

  void issue(unsigned copy, double time) {
    issueTime[copy] = time;
    streams[plan.copies[copy].kind == PlannedCopy::Kind::Load].queue.push_back(
        copy);
  }

  bool isDone(unsigned copy) const { return endTime[copy] < kInf; }
  /// Ends `copy` now, wherever it is: the rest of it runs while other
  /// graphs do (a deferred offload, StepModel::getDeferredOffloads).
  void settle(unsigned copy) {
    if (isDone(copy))
      return;
    for (Stream &stream : streams) {
      if (stream.active == int(copy))
        stream.active = -1;
      llvm::erase(stream.queue, copy);
    }
    finish(copy);
  }
  /// Seconds the streams have transferred so far, summed over the two.
  double getTransferSeconds() const { return transferSeconds; }
  double getEnd(unsigned copy) const { return endTime[copy]; }
  double getNow() const { return now; }

  /// Runs the streams until `target`, or (with `until`) until that copy is
  /// done, whichever comes first.
  void run(double target, int until = -1) {
    while (true) {
      if (until >= 0 && isDone(until))
        return;
      activate();
      bool transferring[2] = {streams[0].active >= 0 && !streams[0].inLatency,
                              streams[1].active >= 0 && !streams[1].inLatency};
      bool both = transferring[0] && transferring[1];
      double rate[2] = {both ? shared[0] : bandwidth[0],
                        both ? shared[1] : bandwidth[1]};
      double next = kInf;
      for (int s = 0; s < 2; ++s) {
        Stream &stream = streams[s];
        if (stream.active >= 0)
          next = std::min(next, stream.inLatency
                                    ? stream.latencyEnd
                                    : now + stream.remaining / rate[s]);
        else if (!stream.queue.empty())
          next = std::min(next, std::max(now, readyTime(stream.queue.front())));
      }
      if (next == kInf) {
        now = std::max(now, target == kInf ? now : target);
        return;
      }
      if (next > target) {
        for (int s = 0; s < 2; ++s)
          if (transferring[s]) {
            streams[s].remaining -= rate[s] * (target - now);
            transferSeconds += target - now;
          }
        now = target;
        return;
      }
      double dt = next - now;
      transferSeconds += dt * (int(transferring[0]) + int(transferring[1]));
      now = next;
      for (int s = 0; s < 2; ++s) {
        Stream &stream = streams[s];
        if (stream.active < 0)
          continue;
        if (stream.inLatency) {
          if (stream.latencyEnd <= now) {
            stream.inLatency = false;
            stream.latencyEnd = now;
          }
          continue;
        }
        stream.remaining -= rate[s] * dt;
        if (stream.remaining <= 1e-3 ||
            now + stream.remaining / rate[s] <= now * (1 + 1e-12)) {
          finish(stream.active);
          stream.active = -1;
        }
      }
    }
  }

private:
  struct Stream {
    std::deque<unsigned> queue;
    int active = -1;
    bool inLatency = false;
    double latencyEnd = 0;
    double remaining = 0;
  };

  double readyTime(unsigned copy) const {
    double ready = issueTime[copy];
    int dep = plan.copies[copy].dependsOn;
    // A load the graph before started runs after the other graphs' forward
    // and backward that come between, long after its offload ended.
    if (dep >= 0 && across[copy] == 0)
      ready = std::max(ready, endTime[dep]);
    return ready;
  }

  void activate() {
    for (Stream &stream : streams) {
      if (stream.active >= 0 || stream.queue.empty())
        continue;
      unsigned head = stream.queue.front();
      if (readyTime(head) > now)
        continue;
      stream.queue.pop_front();
      int64_t left = plan.copies[head].bytes - across[head];
      if (left <= 0) {
        finish(head);
        continue;
      }
      stream.active = head;
      // A group's later copies are the same transfer, and a load started
      // before is under way: no latency of their own.
      stream.inLatency = plan.copies[head].groupLeader < 0 && across[head] == 0;
      stream.latencyEnd = stream.inLatency ? now + latency : now;
      stream.remaining = double(left);
    }
  }

  /// A copy's bytes are across; a copy of a group ends with its last one.
  void finish(unsigned copy) {
    if (groups.empty()) {
      endTime[copy] = now;
      return;
    }
    int leader = plan.copies[copy].groupLeader;
    ArrayRef<unsigned> members = groups[leader < 0 ? copy : leader];
    if (members.empty()) {
      endTime[copy] = now;
      return;
    }
    transferred.insert(copy);
    if (!llvm::all_of(members,
                      [&](unsigned m) { return transferred.contains(m); }))
      return;
    for (unsigned member : members)
      endTime[member] = now;
  }

  const CopyPlan &plan;
  double latency;
  double bandwidth[2], shared[2];
  Stream streams[2];
  double now = 0, transferSeconds = 0;
  SmallVector<double> issueTime, endTime;
  /// Per copy, its bytes across before it was issued.
  SmallVector<int64_t> across;
  /// Per group leader, the copies of its group (empty if no group).
  SmallVector<SmallVector<unsigned>> groups;
  /// Copies of groups whose bytes are across.
  llvm::DenseSet<unsigned> transferred;
};

/// Orders a release the compute stream does not see after everything else
/// at its time.
constexpr int64_t kAsyncOrder = std::numeric_limits<int64_t>::max();

struct MemoryEvent {
  double time;
  int64_t order;
  int64_t delta;
  /// Buffer id (>= 0), load copy (-(copy + 1)) or kNextGraphOwner.
  int owner;
  /// The op position whose issues, waits or run it happens in; kSlotNow for
  /// a release the compute stream does not see (whichever op runs then).
  unsigned slot;
};
constexpr unsigned kSlotNow = ~0u;
/// MemoryEvent::owner of the bytes the next graph's prefetched loads hold.
constexpr int kNextGraphOwner = std::numeric_limits<int>::min();
/// MemoryEvent::order of events at one time: those before op `pos` (its
/// waits' releases, its loads' issues), those of the op itself (its
/// results), and those at its end (the releases of what it read last).
constexpr int64_t orderBefore(unsigned pos) { return 2 * int64_t(pos) - 1; }
constexpr int64_t orderAt(unsigned pos) { return 2 * int64_t(pos); }
constexpr int64_t orderAfter(unsigned pos) { return 2 * int64_t(pos) + 1; }
} // namespace

namespace mlir::offload {
/// What simulate() fills per call, reused between calls.
struct SimulationScratch {
  /// The copies issued (waited) at each position, by position: those of
  /// position p are [start[p], start[p + 1]).
  SmallVector<unsigned> issuedStart, issued, waitedStart, waited;
  /// Per position: when its copies are issued (before the compute stream
  /// waits there), when its op starts and ends.
  SmallVector<double> issueStart, opStart, opEnd;
  std::vector<MemoryEvent> events;
};

class SimulationScratchPool {
public:
  std::unique_ptr<SimulationScratch> acquire() {
    std::lock_guard<std::mutex> lock(mutex);
    if (free.empty())
      return std::make_unique<SimulationScratch>();
    std::unique_ptr<SimulationScratch> scratch = std::move(free.back());
    free.pop_back();
    return scratch;
  }
  void release(std::unique_ptr<SimulationScratch> scratch) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(std::move(scratch));
  }

private:
  std::mutex mutex;
  SmallVector<std::unique_ptr<SimulationScratch>> free;
};
} // namespace mlir::offload

/// Fills `start` and `items` with `count` lists, by key: each item in the
/// order given.
static void groupByKey(unsigned count, ArrayRef<unsigned> itemsInOrder,
                       llvm::function_ref<unsigned(unsigned)> keyOf,
                       SmallVectorImpl<unsigned> &start,
                       SmallVectorImpl<unsigned> &items) {
  start.assign(count + 1, 0);
  for (unsigned item : itemsInOrder)
    ++start[keyOf(item) + 1];
  for (unsigned key = 0; key < count; ++key)
    start[key + 1] += start[key];
  items.resize_for_overwrite(itemsInOrder.size());
  SmallVector<unsigned> fill(start.begin(), start.end() - 1);
  for (unsigned item : itemsInOrder)
    items[fill[keyOf(item)]++] = item;
}

SimulationResult StepModel::simulate(const CopyPlan &plan) const {
  return simulate(plan, nullptr);
}

SimulationResult StepModel::simulate(
    const CopyPlan &plan, SmallVectorImpl<int64_t> *liveAt,
    SmallVectorImpl<int64_t> *afterRelease) const {
  SimulationResult result;
  unsigned numOps = ops.size();
  result.exposedPerCopy.assign(plan.copies.size(), 0);

  std::unique_ptr<SimulationScratch> scratch = scratchPool->acquire();
  auto releaseScratch = llvm::make_scope_exit(
      [&] { scratchPool->release(std::move(scratch)); });
  SmallVector<unsigned> bySequence =
      llvm::to_vector(llvm::seq<unsigned>(0, plan.copies.size()));
  llvm::stable_sort(bySequence, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  groupByKey(
      numOps + 1, bySequence,
      [&](unsigned c) { return std::min(plan.copies[c].issuePos, numOps); },
      scratch->issuedStart, scratch->issued);
  bool releaseAtWait = execution.release == ExecutionModel::Release::AtWait;
  SmallVector<unsigned> waitedCopies;
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind == PlannedCopy::Kind::Load || releaseAtWait)
      waitedCopies.push_back(index);
    (copy.kind == PlannedCopy::Kind::Load ? result.h2dBytes : result.d2hBytes) +=
        copy.bytes;
  }
  groupByKey(
      numOps + 1, waitedCopies,
      [&](unsigned c) { return std::min(plan.copies[c].waitPos, numOps); },
      scratch->waitedStart, scratch->waited);
  auto issuedAt = [&](unsigned pos) {
    return ArrayRef(scratch->issued)
        .slice(scratch->issuedStart[pos],
               scratch->issuedStart[pos + 1] - scratch->issuedStart[pos]);
  };
  auto waitedAt = [&](unsigned pos) {
    return ArrayRef(scratch->waited)
        .slice(scratch->waitedStart[pos],
               scratch->waitedStart[pos + 1] - scratch->waitedStart[pos]);
  };

  CopyStreams streams(plan, profileLatency, d2hBandwidth, h2dBandwidth,
                      bothWaysBandwidth);
  // The loads the backward graph before this one started: the link carried
  // them over the lead, one after the other in stream order.
  double leadLeft = execution.prefetchLead;
  for (unsigned copy : getPrefetchedLoads(plan)) {
    double seconds = leadLeft - profileLatency;
    if (seconds <= 0)
      break;
    int64_t bytes = std::min<int64_t>(plan.copies[copy].bytes,
                                      int64_t(seconds * h2dBandwidth));
    streams.setAcrossBeforeIssue(copy, bytes);
    leadLeft -= profileLatency + double(bytes) / h2dBandwidth;
  }
  SmallVector<bool> deferred(plan.copies.size(), false);
  for (unsigned copy : getDeferredOffloads(plan))
    deferred[copy] = true;
    SmallVectorImpl<double> &issueStart = scratch->issueStart,
                          &opStart = scratch->opStart, &opEnd = scratch->opEnd;
  issueStart.resize_for_overwrite(numOps + 1);
  opStart.resize_for_overwrite(numOps + 1);
  opEnd.resize_for_overwrite(numOps + 1);
  double time = 0;
  for (unsigned pos = 0; pos <= numOps; ++pos) {
    streams.run(time);
    issueStart[pos] = time;
    for (unsigned copy : issuedAt(pos))
      streams.issue(copy, time);
    if (pos == numForwardOps)
      for (auto [copy, isDeferred] : llvm::enumerate(deferred))
        if (isDeferred)
          streams.settle(copy);
    for (unsigned copy : waitedAt(pos)) {
      if (deferred[copy])
        continue;
      streams.run(kInf, copy);
      if (streams.isDone(copy) && streams.getEnd(copy) > time) {
        result.exposedPerCopy[copy] += streams.getEnd(copy) - time;
        result.exposedSeconds += streams.getEnd(copy) - time;
        time = streams.getEnd(copy);
      }
    }
    opStart[pos] = time;
    if (pos < numOps) {
      double seconds = ops[pos].seconds;
      if (copyInterference > 0 && ops[pos].memoryBound) {
        // A memory-bound op runs longer by the share of copy transfer beside
        // it (the streams run on meanwhile, but the added time is not
        // charged again). Compute-bound ops (matmuls, attention) lose
        // nothing measurable to the copies' memory traffic.
        double transferred = streams.getTransferSeconds();
        streams.run(time + seconds);
        double slowdown =
            copyInterference * (streams.getTransferSeconds() - transferred);
        seconds += slowdown;
        result.interferenceSeconds += slowdown;
      }
      time += seconds;
      result.computeSeconds += ops[pos].seconds;
    }
    opEnd[pos] = time;
  }
  streams.run(kInf);
  result.copyEnd.resize(plan.copies.size());
  result.stepSeconds = time;
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    result.copyEnd[index] = streams.getEnd(index);
    if (result.copyEnd[index] < kInf)
      result.stepSeconds = std::max(result.stepSeconds, result.copyEnd[index]);
  }

  // Liveness under the plan.
  SmallVector<int> lastPos(buffers.size());
  for (auto [id, buffer] : llvm::enumerate(buffers))
    lastPos[id] = std::max(lastDirectUse[id], buffer.holdPos);
  int lastForward = int(numForwardOps) - 1;
  for (auto [l, link] : llvm::enumerate(links)) {
    if (link.buffer < 0)
      continue;
    bool readsForwardBuffer =
        !plan.offloaded[l] || (plan.loadOf[l] < 0 && link.firstUse >= 0);
    if (!plan.offloaded[l])
      lastPos[link.buffer] = std::max(lastPos[link.buffer], lastForward);
    if (readsForwardBuffer)
      lastPos[link.buffer] = std::max(lastPos[link.buffer], link.lastUse);
  }
  // When each offloaded buffer may be released: once its copies are done,
  // or (at their waits) in stream order.
  SmallVector<double> offloadEnd(buffers.size(), -1);
  SmallVector<int64_t> offloadEndOrder(buffers.size(), kAsyncOrder);
  SmallVector<unsigned> offloadEndSlot(buffers.size(), kSlotNow);
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Offload)
      continue;
    double end = result.copyEnd[index];
    int64_t order = kAsyncOrder;
    unsigned slot = kSlotNow;
    if (releaseAtWait) {
      slot = std::min(copy.waitPos, numOps);
      end = opStart[slot];
      order = orderBefore(slot);
    }
    if (end > offloadEnd[copy.target]) {
      offloadEnd[copy.target] = end;
      offloadEndOrder[copy.target] = order;
      offloadEndSlot[copy.target] = slot;
    }
  }

  std::vector<MemoryEvent> &events = scratch->events;
  events.clear();
  for (auto [id, buffer] : llvm::enumerate(buffers)) {
    if (buffer.bytes == 0)
      continue;
    if (buffer.persistent) {
      events.push_back({0, -1, buffer.bytes, int(id), 0});
      continue;
    }
    // Without this, an unread argument would live as long as whatever op
    // is first in backward, a copy (no time) or not, depending on the pass.
    if (buffer.backwardArgument && lastPos[id] < 0)
      continue;
    unsigned def = std::min<unsigned>(std::max(buffer.defPos, 0), numOps);
    // Backward's arguments exist when backward starts, before its first op
    // waits for anything.
    double defined = buffer.backwardArgument ? issueStart[def] : opStart[def];
    events.push_back({defined, orderAt(def), buffer.bytes, int(id), def});
    int last = lastPos[id] < 0 ? int(def) : std::max(lastPos[id], int(def));
    unsigned lastOp = std::min<unsigned>(last, numOps);
    double free = opEnd[lastOp];
    int64_t order = orderAfter(lastOp);
    unsigned slot = lastOp;
    if (offloadEnd[id] > free) {
      free = offloadEnd[id];
      order = offloadEndOrder[id];
      slot = offloadEndSlot[id];
    }
    events.push_back({free, order, -buffer.bytes, int(id), slot});
  }
  // A load's destination lives until the last read of any link it carries
  // (several, for a shared copy).
  SmallVector<int> lastRead(plan.copies.size(), -1);
  for (auto [l, link] : llvm::enumerate(links))
    if (plan.loadOf[l] >= 0)
      lastRead[plan.loadOf[l]] =
          std::max(lastRead[plan.loadOf[l]], link.lastUse);
  // A load group's members share one device allocation, which the runtime
  // frees with the last of them: each lives until the group's last read.
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0) {
      int groupLast = std::max({lastRead[index], int(copy.waitPos),
                                lastRead[copy.groupLeader],
                                int(plan.copies[copy.groupLeader].waitPos)});
      lastRead[copy.groupLeader] = groupLast;
    }
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0)
      lastRead[index] = lastRead[copy.groupLeader];
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Load || copy.bytes == 0)
      continue;
    unsigned issue = std::min(copy.issuePos, numOps);
    // A load allocates its destination when it is issued, before the
    // compute stream waits there (for it, if it is also waited there).
    events.push_back({issueStart[issue], orderBefore(issue), copy.bytes,
                      -int(index) - 1, issue});
    unsigned last = std::max<int>(lastRead[index], copy.waitPos);
    last = std::min(last, numOps);
    events.push_back({opEnd[last], orderAfter(last), -copy.bytes,
                      -int(index) - 1, last});
  }
  // The graph before's deferred offloads hold up to prefetchBytes of their
  // sources over the first prefetchLead seconds of forward.
  if (std::optional<unsigned> end = getDeferredRelease()) {
    events.push_back({0, -1, execution.prefetchBytes, kNextGraphOwner, 0});
    events.push_back({opStart[*end], orderBefore(*end), -execution.prefetchBytes,
                      kNextGraphOwner, *end});
  }
  // The next graph's loads, started over the last prefetchLead seconds of
  // backward, hold up to prefetchBytes until the step ends.
  if (std::optional<unsigned> issue = getPrefetchIssue()) {
    events.push_back({issueStart[*issue], orderBefore(*issue),
                      execution.prefetchBytes, kNextGraphOwner, *issue});
    events.push_back({opEnd[numOps], orderAfter(numOps),
                      -execution.prefetchBytes, kNextGraphOwner, numOps});
  }
  llvm::stable_sort(events, [](const MemoryEvent &a, const MemoryEvent &b) {
    if (a.time != b.time)
      return a.time < b.time;
    return a.order < b.order;
  });
  int64_t live = 0;
  size_t peakIndex = 0;
  // Per position, the most bytes live in it: what it starts with, and after
  // each of its events. Events come in position order, but for ties at one
  // time (a release at a wait before an end of the op before): those count
  // in the later position, which only overstates it.
  unsigned slot = 0;
  // The buffers released at this position's waits, for afterRelease.
  SmallVector<int> releasedHere;
  if (liveAt)
    liveAt->assign(numOps + 1, 0);
  if (afterRelease)
    afterRelease->assign(buffers.size(), -1);
  for (auto [index, event] : llvm::enumerate(events)) {
    if ((liveAt || afterRelease) && event.slot != kSlotNow &&
        event.slot > slot) {
      if (liveAt)
        for (unsigned p = slot + 1; p <= event.slot; ++p)
          (*liveAt)[p] = live;
      slot = event.slot;
      releasedHere.clear();
    }
    live += event.delta;
    if (liveAt)
      (*liveAt)[slot] = std::max((*liveAt)[slot], live);
    if (afterRelease) {
      // An offload's source released at a wait before this position's op.
      if (event.delta < 0 && event.owner >= 0 && event.slot == slot &&
          event.order == orderBefore(slot))
        releasedHere.push_back(event.owner);
      for (int id : releasedHere)
        (*afterRelease)[id] = std::max((*afterRelease)[id], live);
    }
    if (live > result.peakBytes) {
      result.peakBytes = live;
      result.peakTime = event.time;
      peakIndex = index;
    }
  }
  if (liveAt) {
    for (unsigned p = slot + 1; p <= numOps; ++p)
      (*liveAt)[p] = live;
    // A model of the step before the copies are inserted (the planner's) has
    // no position for a load's wait: the wait, and the releases its stall
    // lets happen, count in the position of the op it precedes. So the
    // positions after a load's wait, up to that op (past other copies and
    // views, which offload-reorder-backward sinks to it), count what was
    // live at the wait: a schedule made on the IR (offload-schedule-copies)
    // never issues a copy between the two, where the planner could not.
    for (unsigned p = 0; p < numOps; ++p) {
      auto wait = dyn_cast<WaitOp>(ops[p].op);
      if (!wait || !isLoadStart(wait.getFuture().getDefiningOp()))
        continue;
      for (unsigned q = p + 1; q <= numOps; ++q) {
        (*liveAt)[q] = std::max((*liveAt)[q], (*liveAt)[p]);
        if (q == numOps ||
            !(isa<WaitOp>(ops[q].op) || isCopyStart(ops[q].op) ||
              getViewSource(ops[q].op)))
          break;
      }
    }
  }
  result.liveAtPeak.assign(buffers.size(), false);
  result.loadLiveAtPeak.assign(links.size(), false);
  for (size_t i = 0; i <= peakIndex && i < events.size(); ++i) {
    const MemoryEvent &event = events[i];
    if (event.owner == kNextGraphOwner)
      continue;
    if (event.owner >= 0)
      result.liveAtPeak[event.owner] = event.delta > 0;
    else
      result.loadLiveAtPeak[plan.copies[-event.owner - 1].target] =
          event.delta > 0;
  }
  auto it = llvm::upper_bound(ArrayRef(opStart).take_front(numOps),
                              result.peakTime);
  result.peakPos = it == opStart.begin() ? 0 : (it - opStart.begin()) - 1;
  return result;
}
