//===- ScheduleCopies.cpp - Split copies and overlap them with compute ----===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: no `offload.offload_to_cpu` or `offload.load_to_gpu` is left
// at the top level of a training step's functions. Each became a start at
// the copy's place and an `offload.wait`. A load's wait sits right before the
// first use of its value. An offload's wait sits at its release point: before
// the first forward op the cost model predicts to start once the copy is
// done, or before the return if none does. Runtimes that cannot free a
// buffer asynchronously (a framework's allocator) release the source there,
// in stream order, so that is where the device memory comes back; with
// release=at-wait the wait then goes down toward the end of forward, as far
// as the predicted peak allows (StepModel::sinkOffloadWaits). Every load
// start sits at or above its wait, below the start of backward and below its
// source's definition; loads started and not yet waited hold at most
// `max-inflight-bytes` at any point (a load bigger than that alone starts
// at its wait). The cost model's predicted peak device memory of the result
// is at most that of the same copies with every load started right before
// its wait (StepModel::scheduleLoads, which the planner predicts with too);
// so, wherever those synchronous loads keep the peak at or below the peak
// without offload, the result does. With release=after-copy those are the
// synchronous copies the pipeline leaves without this pass. Loads started
// before one op are in the order of their waits. A start or a wait moves
// only across ops whose effects commute with its own
// (offload/Analysis/Effects.h): a copy writes, and its wait reads and frees,
// only its own future on the `offload.copies` resource (and a start on a
// buffer reads that buffer), so it crosses compute, other copies and writes
// of unrelated memory, but no op of unknown effects. The cost model plans
// with the same rule (StepModel::getLoadIssueFloor, getOffloadWaitFloor), and
// each move checks it against the ops it crosses. Nothing else moves, so
// dominance and the order of effects hold. Where offload-plan recorded its
// placements (`offload.placement`), the copies go there instead, under the
// same effects rule; a copy without one is placed by the cost model, with a
// remark. No `offload.placement` is left in the module: one that places
// nothing (not at the top level of a step's forward or backward, of the
// wrong kind there, naming a saved value the step does not have) is dropped
// with a remark.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/Effects.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_SCHEDULECOPIES
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

/// Puts a wait for `future` right before the first use of `value` (or the
/// terminator), and makes every use of `value` read the wait.
static void waitBeforeFirstUse(Value value, Value future, Block &body,
                               OpBuilder &builder) {
  Operation *firstUse = findFirstUserInBlock({value}, body);
  builder.setInsertionPoint(firstUse ? firstUse : body.getTerminator());
  auto wait = WaitOp::create(builder, value.getLoc(), value.getType(), future);
  value.replaceAllUsesWith(wait.getResult());
}

/// Splits every synchronous copy at the top level of `body`.
static void splitCopies(Block &body) {
  OpBuilder builder(body.getParentOp()->getContext());
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (auto offload = dyn_cast<OffloadToCpuOp>(op)) {
      builder.setInsertionPoint(offload);
      auto start = OffloadStartOp::create(
          builder, offload.getLoc(),
          FutureType::get(offload.getType()), offload.getSource());
      waitBeforeFirstUse(offload.getResult(), start.getFuture(), body, builder);
      offload.erase();
    } else if (auto load = dyn_cast<LoadToGpuOp>(op)) {
      builder.setInsertionPoint(load);
      auto start = LoadStartOp::create(builder, load.getLoc(),
                                       FutureType::get(load.getType()),
                                       load.getSource());
      waitBeforeFirstUse(load.getResult(), start.getFuture(), body, builder);
      load.erase();
    }
  }
}

/// Moves `op` right before `anchor`, in the same block. Operation::moveBefore
/// splices, which invalidates the block's op order, so the next
/// isBeforeInBlock renumbers the whole block: quadratic over the thousands of
/// copies a large step has. Removing and inserting leaves the other ops'
/// order indices valid and numbers only the moved op.
static void moveOpBefore(Operation *op, Block::iterator anchor) {
  Block *block = anchor->getBlock();
  op->remove();
  block->getOperations().insert(anchor, op);
}

/// Where `op` goes when it is to move up before `anchor`: `anchor`, or, if
/// an op in between has effects that do not commute with `op`'s, right after
/// the last such op (`op` itself when that is the op right above it). Only
/// the ops crossed are visited.
static Operation *getReachableAnchor(Operation *op, Operation *anchor) {
  if (anchor == op || !anchor->isBeforeInBlock(op))
    return anchor;
  for (Operation *crossed = op->getPrevNode(); crossed;
       crossed = crossed->getPrevNode()) {
    if (!effectsCommute(op, crossed))
      return crossed->getNextNode();
    if (crossed == anchor)
      break;
  }
  return anchor;
}

/// getReachableAnchor for a copy start or wait that the model placed at
/// `target` (or an `offload.placement` placed it there, right before the
/// model's op): where that op is at or below `floor`, the model's last op a
/// copy may not cross, every op between commutes with the copy and the walk
/// over them (quadratic over a large step's copies) is skipped.
static Operation *getReachableAnchor(const StepModel &model, Operation *op,
                                     Operation *target, unsigned floor) {
  Operation *modelOp = target;
  while (isa<PlacementOp>(modelOp))
    modelOp = modelOp->getNextNode();
  std::optional<unsigned> pos = model.getPosition(modelOp);
  if (pos && *pos >= floor)
    return target;
  return getReachableAnchor(op, target);
}

/// Moves the wait of each offload up to its release point in `plan` (see
/// StepModel::placeOffloadWaits), except those in `placed`.
static void moveOffloadWaits(const StepModel &model, const CopyPlan &plan,
                             ArrayRef<Operation *> startOf,
                             const llvm::SmallPtrSetImpl<Operation *> &placed) {
  for (auto [copy, startOp] : llvm::zip_equal(plan.copies, startOf)) {
    if (copy.kind != PlannedCopy::Kind::Offload ||
        copy.waitPos >= model.getNumForwardOps())
      continue;
    auto start = dyn_cast<OffloadStartOp>(startOp);
    if (!start || !start.getFuture().hasOneUse())
      continue;
    auto wait = dyn_cast<WaitOp>(*start.getFuture().getUsers().begin());
    Operation *target = model.getOp(copy.waitPos);
    if (!wait || placed.contains(wait) || wait->getBlock() != start->getBlock() ||
        target->getBlock() != wait->getBlock() ||
        !start->isBeforeInBlock(target) || !target->isBeforeInBlock(wait))
      continue;
    target = getReachableAnchor(model, wait, target,
                                model.getOffloadWaitFloor());
    if (target != wait)
      moveOpBefore(wait, target->getIterator());
  }
}

/// The saved values `placement`, at the top level of `step`'s forward
/// (`kind` OffloadWaits) or backward (LoadStarts), places there; a remark
/// for what it cannot place: all of it if it is of the other kind, the
/// saved values the step does not have.
static SmallVector<int64_t> getPlacedValues(PlacementOp placement,
                                            PlacementKind kind,
                                            unsigned numSaved) {
  if (placement.getKind() != kind) {
    placement.emitRemark()
        << "a placement of " << stringifyPlacementKind(placement.getKind())
        << " in " << (kind == PlacementKind::LoadStarts ? "backward" : "forward")
        << " places nothing: loads start in backward, offloads are waited "
           "for in forward";
    return {};
  }
  SmallVector<int64_t> values;
  for (int64_t index : placement.getSaved()) {
    if (index < int64_t(numSaved))
      values.push_back(index);
    else
      placement.emitRemark() << "names saved value " << index
                             << ", but the step saves " << numSaved;
  }
  return values;
}

/// Places the copies where offload-plan recorded them: each load start of a
/// saved value a `load_starts` placement in backward names right where the
/// placement stands (in its order), each offload wait an `offload_waits`
/// placement in forward names right where it stands; then erases those
/// placements. Only placements at the top level of the two functions count.
/// A copy stays where it is if its placement is not between its start and
/// its wait (the IR changed since the plan), and moves only as far as the
/// ops it crosses commute with it. Adds each copy op it placed (a load
/// start, an offload wait) to `placed`, and sets `found` if the step has any
/// placement.
static void placeAsRecorded(const TrainingStep &step, const StepModel &model,
                            llvm::SmallPtrSetImpl<Operation *> &placed,
                            bool &found) {
  unsigned numSaved = step.getNumSaved();
  Block &forward = step.getForward().getFunctionBody().front();
  Block &backward = step.getBackward().getFunctionBody().front();
  SmallVector<PlacementOp> placements;
  for (Block *block : {&forward, &backward})
    llvm::append_range(placements, block->getOps<PlacementOp>());
  found = !placements.empty();
  if (!found)
    return;

  // The copies of each saved value: the load that reads its backward
  // argument, the offload whose wait forward returns for it.
  SmallVector<LoadStartOp> loadOf(numSaved);
  SmallVector<WaitOp> offloadWaitOf(numSaved);
  for (auto start : backward.getOps<LoadStartOp>())
    if (auto arg = dyn_cast<BlockArgument>(start.getSource());
        arg && arg.getOwner() == &backward && arg.getArgNumber() < numSaved)
      loadOf[arg.getArgNumber()] = start;
  Operation *ret = step.getForwardReturn();
  for (unsigned i = 0; i < numSaved; ++i)
    if (auto wait = ret->getOperand(step.getSavedResultIndex(i))
                        .getDefiningOp<WaitOp>())
      if (wait.getFuture().getDefiningOp<OffloadStartOp>())
        offloadWaitOf[i] = wait;

  for (PlacementOp placement : placements) {
    if (placement->getBlock() == &backward) {
      for (int64_t index : getPlacedValues(placement, PlacementKind::LoadStarts,
                                           numSaved)) {
        LoadStartOp start = loadOf[index];
        if (!start || !placed.insert(start).second)
          continue;
        Operation *wait = *start.getFuture().getUsers().begin();
        if (!placement->isBeforeInBlock(start) ||
            !placement->isBeforeInBlock(wait))
          continue;
        Operation *target = getReachableAnchor(
            model, start, placement,
            model.getLoadIssueFloor(*model.getPosition(wait)));
        if (target != start)
          moveOpBefore(start, target->getIterator());
      }
      continue;
    }
    for (int64_t index :
         getPlacedValues(placement, PlacementKind::OffloadWaits, numSaved)) {
      WaitOp wait = offloadWaitOf[index];
      if (!wait || !placed.insert(wait).second)
        continue;
      Operation *start = wait.getFuture().getDefiningOp();
      if (!start->isBeforeInBlock(placement) ||
          !placement->isBeforeInBlock(wait))
        continue;
      Operation *target = getReachableAnchor(model, wait, placement,
                                             model.getOffloadWaitFloor());
      if (target != wait)
        moveOpBefore(wait, target->getIterator());
    }
  }
  for (PlacementOp placement : placements)
    placement->erase();
}

static LogicalResult placeCopies(const TrainingStep &step,
                                 const CostModel &costModel,
                                 const ExecutionModel &execution,
                                 int64_t maxInflightBytes);

/// Makes the IR's copy groups: the copies StepModel::coalesceCopies (for
/// loads, coalesceLoads) groups on the IR as it is become one
/// offload.offload_group_start or offload.load_group_start where the
/// group's first start is. A member
/// whose source is not defined above that point ends its group early.
static LogicalResult formCopyGroups(const TrainingStep &step,
                                    const CostModel &costModel,
                                    const ExecutionModel &execution) {
  FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
  if (failed(model))
    return failure();
  CopyPlan plan = model->getPlanInIR();
  SmallVector<Operation *> startOf;
  for (const PlannedCopy &copy : plan.copies)
    startOf.push_back(model->getOp(copy.issuePos));
  model->coalesceCopies(plan, execution.coalesceBelow,
                        PlannedCopy::Kind::Offload);
  // Load groups only where their shared allocations do not raise the peak.
  (void)model->coalesceLoads(plan, model->simulate(plan));
  llvm::MapVector<unsigned, SmallVector<unsigned>> groups;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.groupLeader >= 0)
      groups[copy.groupLeader].push_back(index);

  OpBuilder builder(step.getForward()->getContext());
  for (auto &[leader, others] : groups) {
    Operation *first = startOf[leader];
    SmallVector<Operation *> members = {first};
    for (unsigned other : others) {
      Operation *start = startOf[other];
      Value source = start->getOperand(0);
      Operation *def = source.getDefiningOp();
      if (def && (def->getBlock() != first->getBlock() ||
                  !def->isBeforeInBlock(first)))
        break;
      members.push_back(start);
    }
    if (members.size() < 2 ||
        llvm::any_of(members, [](Operation *op) {
          return !isa<OffloadStartOp, LoadStartOp>(op);
        }))
      continue;
    SmallVector<Value> sources, futures;
    SmallVector<Type> futureTypes;
    for (Operation *start : members) {
      sources.push_back(start->getOperand(0));
      futures.push_back(start->getResult(0));
      futureTypes.push_back(start->getResult(0).getType());
    }
    builder.setInsertionPoint(first);
    Operation *group;
    if (isa<OffloadStartOp>(first))
      group = OffloadGroupStartOp::create(builder, first->getLoc(),
                                          TypeRange(futureTypes),
                                          ValueRange(sources),
                                          /*release_source=*/false);
    else
      group = LoadGroupStartOp::create(builder, first->getLoc(),
                                       TypeRange(futureTypes),
                                       ValueRange(sources));
    for (auto [future, result] : llvm::zip_equal(futures, group->getResults()))
      future.replaceAllUsesWith(result);
    for (Operation *start : members)
      start->erase();
  }
  return success();
}

static LogicalResult scheduleStep(const TrainingStep &step,
                                  const CostModel &costModel,
                                  const ExecutionModel &execution,
                                  int64_t maxInflightBytes, bool useRecorded) {
  if (!useRecorded) {
    erasePlacements(step.getForward());
    erasePlacements(step.getBackward());
  }
  if (failed(placeCopies(step, costModel, execution, maxInflightBytes)))
    return failure();
  if (execution.coalesceBelow > 0)
    return formCopyGroups(step, costModel, execution);
  return success();
}

/// Splits the copies of `step` and places their starts and waits.
static LogicalResult placeCopies(const TrainingStep &step,
                                 const CostModel &costModel,
                                 const ExecutionModel &execution,
                                 int64_t maxInflightBytes) {
  splitCopies(step.getForward().getFunctionBody().front());
  splitCopies(step.getBackward().getFunctionBody().front());

  FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
  if (failed(model))
    return failure();
  // Where offload-plan placed the copies, they go there: the prediction it
  // recorded is then of this IR's placements, not of a second derivation.
  // A copy whose placement is gone (another pass moved or erased its
  // offload.placement) is placed below as without a plan, with a remark.
  bool recorded = false;
  llvm::SmallPtrSet<Operation *, 16> placed;
  placeAsRecorded(step, *model, placed, recorded);
  if (recorded) {
    bool missing = false;
    for (Block *block : {&step.getForward().getFunctionBody().front(),
                         &step.getBackward().getFunctionBody().front()})
      for (Operation &op : *block) {
        bool isCopy = isa<LoadStartOp>(op) ||
                      (isa<WaitOp>(op) && cast<WaitOp>(op)
                                              .getFuture()
                                              .getDefiningOp<OffloadStartOp>());
        if (!isCopy || placed.contains(&op))
          continue;
        missing = true;
        op.emitRemark() << "offload-plan's placement of this copy is gone "
                           "(no offload.placement in its function names it); "
                           "placed by the cost model instead";
      }
    if (!missing)
      return success();
    // The recorded moves changed the positions: model the IR as it is now.
    model = StepModel::build(step, costModel, execution);
    if (failed(model))
      return failure();
  }
  CopyPlan plan = model->getPlanInIR();
  // Where each copy starts now (grouping moves a copy's issue position to
  // its group's).
  SmallVector<Operation *> startOf;
  for (const PlannedCopy &copy : plan.copies)
    startOf.push_back(model->getOp(copy.issuePos));
  // Offloads that will move as one transfer end together: their waits are
  // placed for that (as StepModel::planFor does).
  model->coalesceCopies(plan, execution.coalesceBelow,
                        PlannedCopy::Kind::Offload);
  SmallVector<std::pair<unsigned, LoadStartOp>> loads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load)
      if (auto start = dyn_cast<LoadStartOp>(model->getOp(copy.issuePos)))
        loads.push_back({index, start});
  // The offload waits first: with release=at-wait they hold memory, and the
  // loads are placed against the plan with them where they will be. Placing
  // them moves no op, and hoisting loads moves no forward op, so the
  // positions hold for both.
  model->placeOffloadWaits(plan);
  model->scheduleLoads(plan, maxInflightBytes);

  // A load issued at position p goes before the first op at or after p
  // that is not a load start (those move too), after the loads issued at
  // earlier positions and, of those issued at p, in the order of their waits
  // (their sequence): the order the model issued them in.
  auto anchorOf = [&](unsigned pos) {
    while (pos < model->getNumOps() && isa<LoadStartOp>(model->getOp(pos)))
      ++pos;
    return pos < model->getNumOps()
               ? model->getOp(pos)
               : step.getBackward().getFunctionBody().front().getTerminator();
  };
  llvm::stable_sort(loads, [&](auto a, auto b) {
    const PlannedCopy &x = plan.copies[a.first], &y = plan.copies[b.first];
    return std::make_pair(x.issuePos, x.sequence) <
           std::make_pair(y.issuePos, y.sequence);
  });
  SmallVector<Operation *> anchors;
  for (auto [index, start] : loads)
    anchors.push_back(anchorOf(plan.copies[index].issuePos));
  for (auto [load, anchor] : llvm::zip_equal(loads, anchors)) {
    LoadStartOp start = load.second;
    if (placed.contains(start))
      continue;
    // Never above the definition of the host value.
    Operation *target = anchor;
    Operation *def = start.getSource().getDefiningOp();
    if (def && def->getBlock() == start->getBlock() &&
        !def->isBeforeInBlock(anchor))
      target = def->getNextNode();
    target = getReachableAnchor(
        *model, start, target,
        model->getLoadIssueFloor(plan.copies[load.first].waitPos));
    if (target != start)
      moveOpBefore(start, target->getIterator());
  }
  moveOffloadWaits(*model, plan, startOf, placed);
  return success();
}

/// Marks the copies a step compiled as one of several graphs shares with
/// the backward graphs beside it (ExecutionModel::prefetchLead), as the
/// model of the scheduled IR predicts them: `offload.prefetch` on each load
/// start the graph before starts (StepModel::getPrefetchedLoads),
/// `offload.prefetch_issue` on the op before which this graph starts the
/// next graph's (StepModel::getPrefetchIssue), `offload.deferred` on each
/// offload wait the next graph's forward completes
/// (StepModel::getDeferredOffloads).
static LogicalResult markPrefetch(const TrainingStep &step,
                                  const CostModel &costModel,
                                  const ExecutionModel &execution) {
  if (execution.prefetchLead <= 0 && !execution.autoPrefetchLead)
    return success();
  FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
  if (failed(model))
    return failure();
  UnitAttr unit = UnitAttr::get(step.getForward()->getContext());
  const CopyPlan &plan = model->getPlanInIR();
  for (unsigned copy : model->getPrefetchedLoads(plan))
    model->getOp(plan.copies[copy].issuePos)
        ->setAttr(OffloadDialect::kPrefetchAttrName, unit);
  for (unsigned copy : model->getDeferredOffloads(plan))
    model->getOp(plan.copies[copy].waitPos)
        ->setAttr(OffloadDialect::kDeferredAttrName, unit);
  if (std::optional<unsigned> issue = model->getPrefetchIssue())
    model->getOp(std::min(*issue, model->getNumOps() - 1))
        ->setAttr(OffloadDialect::kPrefetchIssueAttrName, unit);
  return success();
}

namespace {
struct ScheduleCopies
    : public offload::impl::ScheduleCopiesBase<ScheduleCopies> {
  using Base::Base;

  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  void runOnOperation() override {
    FailureOr<DeviceProfile> profile =
        getPassDeviceProfile(OFFLOAD_PASS_PROFILE_OVERRIDES(), getOperation());
    if (failed(profile))
      return signalPassFailure();
    FailureOr<double> lead =
        getPassLoadLead(copyMargin, loadLead, getOperation());
    if (failed(lead))
      return signalPassFailure();
    FailureOr<ExecutionModel> parsedExecution = OFFLOAD_PASS_EXECUTION_MODEL();
    if (failed(parsedExecution))
      return signalPassFailure();
    ExecutionModel execution = *parsedExecution;
    execution.loadLead = *lead;
    execution.coalesceBelow = coalesceBelow;
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    CostModel costModel(*profile);
    for (const TrainingStep &step : steps)
      if (failed(scheduleStep(step, costModel, execution, maxInflightBytes,
                                useRecorded)) ||
          failed(markPrefetch(step, costModel, execution)))
        return signalPassFailure();
    // The steps consumed their placements; any other places nothing.
    getOperation()->walk([&](PlacementOp placement) {
      if (useRecorded)
        placement.emitRemark()
            << "places nothing: it is not at the top level of a training "
               "step's forward or backward function; dropped";
      placement->erase();
    });
  }
};
} // namespace
