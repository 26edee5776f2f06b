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
// release=at-wait the wait then goes down by 5% of its predicted time, as
// far as the predicted peak allows (StepModel::placeOffloadWaits). Every load
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
// dominance and the order of effects hold.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/Effects.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

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
/// `target`: where `target` is at or below `floor`, the model's last op a
/// copy may not cross, every op between commutes with the copy and the walk
/// over them (quadratic over a large step's copies) is skipped.
static Operation *getReachableAnchor(const StepModel &model, Operation *op,
                                     Operation *target, unsigned floor) {
  std::optional<unsigned> pos = model.getPosition(target);
  if (pos && *pos >= floor)
    return target;
  return getReachableAnchor(op, target);
}

/// Moves the wait of each offload up to its release point in `plan` (see
/// StepModel::placeOffloadWaits).
static void moveOffloadWaits(const StepModel &model, const CopyPlan &plan) {
  for (const PlannedCopy &copy : plan.copies) {
    if (copy.kind != PlannedCopy::Kind::Offload ||
        copy.waitPos >= model.getNumForwardOps())
      continue;
    auto start = dyn_cast<OffloadStartOp>(model.getOp(copy.issuePos));
    if (!start || !start.getFuture().hasOneUse())
      continue;
    auto wait = dyn_cast<WaitOp>(*start.getFuture().getUsers().begin());
    Operation *target = model.getOp(copy.waitPos);
    if (!wait || wait->getBlock() != start->getBlock() ||
        target->getBlock() != wait->getBlock() ||
        !start->isBeforeInBlock(target) || !target->isBeforeInBlock(wait))
      continue;
    target = getReachableAnchor(model, wait, target,
                                model.getOffloadWaitFloor());
    if (target != wait)
      moveOpBefore(wait, target->getIterator());
  }
}

static LogicalResult scheduleStep(const TrainingStep &step,
                                  const CostModel &costModel,
                                  const ExecutionModel &execution,
                                  int64_t maxInflightBytes) {
  splitCopies(step.getForward().getFunctionBody().front());
  splitCopies(step.getBackward().getFunctionBody().front());

  FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
  if (failed(model))
    return failure();
  CopyPlan plan = model->getPlanInIR();
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
  moveOffloadWaits(*model, plan);
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
    if (!(copyMargin >= 0) || !std::isfinite(copyMargin)) {
      emitError(getOperation().getLoc())
          << "copy-margin must be a finite fraction >= 0, got " << copyMargin;
      return signalPassFailure();
    }
    ExecutionModel execution = getPassExecutionModel(release, fuseMemoryBound);
    execution.loadLead = copyMargin;
    FailureOr<int64_t> cap =
        parseBytesOption("max-inflight-bytes",
                         maxInflightBytes, getOperation());
    if (failed(cap))
      return signalPassFailure();
    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    CostModel costModel(*profile);
    for (const TrainingStep &step : steps)
      if (failed(scheduleStep(step, costModel, execution, *cap)))
        return signalPassFailure();
  }
};
} // namespace
