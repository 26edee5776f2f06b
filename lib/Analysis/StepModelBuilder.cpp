//===- StepModelBuilder.cpp - Building the model of a training step ------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// StepModel::build: the ops of forward and backward in order, with their
// predicted times and the buffers they define and read; the saved links;
// the copies the IR already has (getPlanInIR); and what the execution
// model resolves from the step without offload (prefetch, reused buffers).
//
//===----------------------------------------------------------------------===//

#include "SimulationScratch.h"
#include "offload/Analysis/Effects.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/SmallSet.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::offload;

/// An offload start whose wait is not (yet) seen in forward.
static constexpr unsigned kWaitAtForwardEnd = ~0u;

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
  void recordCopy(Operation *op, unsigned pos, PlannedCopy::Kind kind,
                  Value source, Value result);
  void recordGroup(Operation *op, unsigned pos, PlannedCopy::Kind kind,
                   ValueRange sources, ValueRange futures);
  bool addCopyOp(Operation *op, unsigned pos);
  void addView(Operation *op, Value source, unsigned pos, bool backward);
  std::optional<Ref> lookupReusedStorage(Operation *op, OpResult result,
                                         bool scatters) const;
  void addRealOp(Operation *op, unsigned pos, StepModel::SimOp &simOp,
                 bool scatters, bool generatorAllocates);
  void estimateFused(Block &block);
  void readProfile();
  void estimateFusion(const TrainingStep &step);
  void addForward(const TrainingStep &step);
  SmallVector<int> addLinks(const TrainingStep &step);
  llvm::SmallDenseSet<unsigned> addBackward(const TrainingStep &step);
  void findUses();
  void placeFirstUses(const llvm::SmallDenseSet<unsigned> &returnedLinks);
  void findBarriersAndTimes();

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

/// Records the copy `op` (at `pos`) makes of `source` into `result` in
/// getPlanInIR(): an offload of a forward buffer or a load of a saved link.
void StepModelBuilder::recordCopy(Operation *op, unsigned pos,
                                  PlannedCopy::Kind kind, Value source,
                                  Value result) {
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
}

/// The copies of a group, one per member, the first one leading.
void StepModelBuilder::recordGroup(Operation *op, unsigned pos,
                                   PlannedCopy::Kind kind, ValueRange sources,
                                   ValueRange futures) {
  int leader = -1;
  for (auto [source, future] : llvm::zip_equal(sources, futures)) {
    size_t before = model.planInIR.copies.size();
    recordCopy(op, pos, kind, source, future);
    if (model.planInIR.copies.size() == before)
      continue;
    if (leader < 0)
      leader = before;
    else
      model.planInIR.copies.back().groupLeader = leader;
  }
}

/// Records `op` (at `pos`) if it is a copy or a wait; returns whether it is.
bool StepModelBuilder::addCopyOp(Operation *op, unsigned pos) {
  using Kind = PlannedCopy::Kind;
  if (auto offload = dyn_cast<OffloadToCpuOp>(op)) {
    recordCopy(op, pos, Kind::Offload, offload.getSource(),
               offload.getResult());
  } else if (auto group = dyn_cast<OffloadGroupStartOp>(op)) {
    recordGroup(op, pos, Kind::Offload, group.getSources(), group.getFutures());
  } else if (auto group = dyn_cast<LoadGroupStartOp>(op)) {
    recordGroup(op, pos, Kind::Load, group.getSources(), group.getFutures());
  } else if (auto start = dyn_cast<OffloadStartOp>(op)) {
    recordCopy(op, pos, Kind::Offload, start.getSource(), start.getFuture());
  } else if (auto load = dyn_cast<LoadToGpuOp>(op)) {
    recordCopy(op, pos, Kind::Load, load.getSource(), load.getResult());
  } else if (auto start = dyn_cast<LoadStartOp>(op)) {
    recordCopy(op, pos, Kind::Load, start.getSource(), start.getFuture());
  } else if (auto wait = dyn_cast<WaitOp>(op)) {
    alias(wait.getResult(), wait.getFuture());
    auto it = copyOf.find(wait.getFuture());
    if (it != copyOf.end()) {
      // Inserting may grow the map and invalidate `it`: read it first.
      unsigned index = it->second;
      copyOf[wait.getResult()] = index;
      model.planInIR.copies[index].waitPos = pos;
    }
  } else {
    return false;
  }
  return true;
}

/// A view aliases its source. Views are no real use, but the offload of a
/// forward storage follows its views (offload-insert-offloads), and a
/// backward view of a saved value may hold its load (see build()).
void StepModelBuilder::addView(Operation *op, Value source, unsigned pos,
                               bool backward) {
  for (Value result : op->getResults())
    alias(result, source);
  if (std::optional<Ref> ref = lookup(source)) {
    if (!backward && *ref >= 0)
      lastForwardView[*ref] = pos;
    else if (backward && *ref < 0)
      backwardViews.push_back({unsigned(-*ref - 1), int(pos)});
  }
}

/// The storage `result` of a real op writes: its init's where
/// destination-passing style reuses it, its operand's for an in-place write,
/// a scattered destination nothing else reads (Inductor reinplaces it, as
/// long as it is this step's own temporary); none if it is new.
std::optional<StepModel::Ref>
StepModelBuilder::lookupReusedStorage(Operation *op, OpResult result,
                                      bool scatters) const {
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  if (dps && result.getResultNumber() < dps.getNumDpsInits())
    if (std::optional<Ref> ref =
            lookup(dps.getDpsInitOperand(result.getResultNumber())->get()))
      return ref;
  if (std::optional<Ref> ref = lookup(getInPlaceSource(result)))
    return ref;
  if (scatters && result.getResultNumber() == 0 &&
      op->getOperand(0).getType() == result.getType() &&
      op->getOperand(0).hasOneUse())
    if (std::optional<Ref> ref = lookup(op->getOperand(0));
        ref && *ref >= 0 && !model.buffers[*ref].persistent &&
        !model.buffers[*ref].backwardArgument)
      return ref;
  return std::nullopt;
}

/// A real op reads its operands (and what its regions capture) and defines
/// new buffers, except where its results reuse a storage.
void StepModelBuilder::addRealOp(Operation *op, unsigned pos,
                                 StepModel::SimOp &simOp, bool scatters,
                                 bool generatorAllocates) {
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
  for (OpResult result : op->getResults()) {
    if (!isa<RankedTensorType>(result.getType()))
      continue;
    if (std::optional<Ref> ref = lookupReusedStorage(op, result, scatters)) {
      refs[result] = *ref;
      continue;
    }
    unsigned buffer = newBuffer(result, pos);
    model.buffers[buffer].generatorAllocated = generatorAllocates;
    simOp.defs.push_back(buffer);
    refs[result] = buffer;
  }
}

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
  if (!addCopyOp(op, pos)) {
    if (Value source = getViewSource(op))
      addView(op, source, pos, backward);
    else
      addRealOp(op, pos, simOp, scatters, generatorAllocates);
  }
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

void StepModelBuilder::readProfile() {
  const DeviceProfile &profile = costModel.getProfile();
  model.profileLatency = profile.copyLatency;
  model.d2hBandwidth = profile.d2hBandwidth;
  model.h2dBandwidth = profile.h2dBandwidth;
  model.bothWaysBandwidth = profile.bothWaysBandwidth;
  model.copyInterference = profile.copyInterference;
}

/// With ExecutionModel::fuseMemoryBound: what fusion keeps out of device
/// memory. A value saved twice is one buffer: backward's arguments for it
/// read the same memory (and once offloaded as one copy, the same loaded
/// value), so a fused kernel reads it once.
void StepModelBuilder::estimateFusion(const TrainingStep &step) {
  llvm::DenseMap<Value, BlockArgument> firstArgOf;
  for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
    BlockArgument arg = step.getBackwardArgument(i);
    auto [it, inserted] = firstArgOf.try_emplace(step.getSavedValue(i), arg);
    if (!inserted)
      sameSavedValue[arg] = it->second;
  }
  estimateFused(step.getForward().getFunctionBody().front());
  estimateFused(step.getBackward().getFunctionBody().front());
}

/// Forward: arguments are parameters and inputs, live all step; a donated
/// one lives as long as the step reads it. Its outputs live to its end.
void StepModelBuilder::addForward(const TrainingStep &step) {
  Block &forward = step.getForward().getFunctionBody().front();
  for (BlockArgument arg : forward.getArguments())
    refs[arg] = newBuffer(arg.getType(), -1, !isDonatedArgument(arg));
  // offload-plan's placements (offload.placement) do nothing when the step
  // runs: the model has no position for them.
  for (Operation &op : forward.without_terminator())
    if (!isa<PlacementOp>(op))
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
}

/// The device value a saved host copy was copied from.
static Value getCopiedSource(Value saved) {
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
  return source;
}

/// The saved links: their buffers, the offloads the IR already has for
/// them, and where the saved values may share copies, the copy each would
/// share (planFor() predicts them so). Returns the offload of each link in
/// getPlanInIR(), or -1.
SmallVector<int> StepModelBuilder::addLinks(const TrainingStep &step) {
  unsigned numSaved = step.getNumSaved();
  SmallVector<int> offloadOfLink(numSaved, -1);
  Block &forward = step.getForward().getFunctionBody().front();
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
      // The saved value is the host copy; the model follows it back.
      link.value = getCopiedSource(saved);
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
  return offloadOfLink;
}

/// Backward: saved arguments read their link, the others are new buffers
/// (gradients of the outputs) that exist when backward starts. What it
/// returns lives to the end of the step. Returns the links it returns.
llvm::SmallDenseSet<unsigned>
StepModelBuilder::addBackward(const TrainingStep &step) {
  Block &backward = step.getBackward().getFunctionBody().front();
  unsigned numSaved = step.getNumSaved();
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
    if (!isa<PlacementOp>(op))
      addOp(&op, true);
  int lastPos = int(model.ops.size()) - 1;
  llvm::SmallDenseSet<unsigned> returnedLinks;
  for (Value operand : backward.getTerminator()->getOperands()) {
    std::optional<Ref> ref = lookup(operand);
    if (!ref || isHostTensorType(operand.getType()))
      continue;
    if (*ref >= 0) {
      model.buffers[*ref].holdPos =
          std::max(model.buffers[*ref].holdPos, lastPos);
    } else {
      model.links[-*ref - 1].lastUse = lastPos;
      returnedLinks.insert(-*ref - 1);
    }
  }
  return returnedLinks;
}

/// Uses, per buffer and per link.
void StepModelBuilder::findUses() {
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
}

/// Where offload-insert-loads will load each saved value: before the first
/// op reading it after offload-reorder-backward has sunk its views. A view
/// without effects sinks to its consumer (already a use of the link); one
/// with effects stays above the first op whose effects do not commute with
/// its own (see ReorderBackward.cpp; this assumes no two held views with
/// effects conflict with each other, as no known dialect's views do). A
/// view nobody reads, like a value only the return reads, stays at the end
/// of backward.
void StepModelBuilder::placeFirstUses(
    const llvm::SmallDenseSet<unsigned> &returnedLinks) {
  int endPos = int(model.ops.size());
  auto moveFirstUseTo = [](StepModel::Link &link, int pos) {
    if (link.firstUse < 0 || pos < link.firstUse)
      link.firstUse = pos;
  };
  for (auto [l, view] : backwardViews) {
    Operation *viewOp = model.ops[view].op;
    int stop = endPos;
    if (!isMemoryEffectFree(viewOp))
      for (int pos = view + 1; pos < endPos; ++pos)
        if (!effectsCommute(viewOp, model.ops[pos].op)) {
          stop = pos;
          break;
        }
    moveFirstUseTo(model.links[l], stop);
  }
  for (unsigned l : returnedLinks)
    moveFirstUseTo(model.links[l], endPos);
}

/// How far copies may move (see Effects.h): per position, the last op
/// before it that a copy start or wait may not cross; and when each op
/// starts on the compute stream alone.
void StepModelBuilder::findBarriersAndTimes() {
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
}

LogicalResult StepModelBuilder::build(const TrainingStep &step) {
  readProfile();
  unsigned numSaved = step.getNumSaved();
  model.links.resize(numSaved);
  model.planInIR.offloaded.assign(numSaved, false);
  model.planInIR.loadOf.assign(numSaved, -1);
  model.planInIR.offloadOf.assign(numSaved, -1);
  if (model.execution.fuseMemoryBound)
    estimateFusion(step);
  addForward(step);
  SmallVector<int> offloadOfLink = addLinks(step);
  llvm::SmallDenseSet<unsigned> returnedLinks = addBackward(step);
  for (PlannedCopy &copy : model.planInIR.copies)
    if (copy.kind == PlannedCopy::Kind::Load)
      copy.dependsOn = offloadOfLink[copy.target];
  findUses();
  placeFirstUses(returnedLinks);
  findBarriersAndTimes();
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
