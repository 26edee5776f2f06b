//===- PlanOffloads.cpp - Choose what to offload from predicted cost ------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: only ever narrows the selection of offload-find-saved-
// activations. A selected saved result it does not keep selected gets
// `offload.kept = "plan: <why>"`. Saved results sharing a storage are kept
// or offloaded together, and predicted as one copy where
// offload-insert-offloads will move them as one (StepModel::planFor). With
// plan=budget, the cost model's predicted peak device memory of the
// resulting plan is at most the budget, or the pass fails with an error
// giving the smallest peak it could reach. With plan=hidden, the predicted
// step time grows by at most max-slowdown. The plan=all default changes
// nothing. With schedule=true, where the plan places its copies is recorded
// as `offload.placement` ops where they go (recordPlacements), for
// offload-schedule-copies; a new plan erases the placements of the old one.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "Planner.h"
#include "offload/Analysis/Recompute.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"
#include "offload/Transforms/Recompute.h"
#include "offload_support/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Debug.h"

#include <cmath>
#include <limits>
#include <optional>

#define DEBUG_TYPE "offload-plan"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_PLANOFFLOADS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

static constexpr double kInfiniteSeconds =
    std::numeric_limits<double>::infinity();

namespace {
struct PlanOffloads : public offload::impl::PlanOffloadsBase<PlanOffloads> {
  using Base::Base;

  // The views of tensor ops this pass must see as views (see Views.h).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerTensorStorageViewExternalModels(registry);
  }

  void runOnOperation() override {
    PlanMode mode = plan;
    if (!budget.empty() && mode == PlanMode::All)
      mode = PlanMode::Budget;
    if (mode == PlanMode::Budget && budget.empty()) {
      emitError(getOperation().getLoc()) << "plan=budget needs budget=";
      return signalPassFailure();
    }
    if (dropPeakNeutral && mode != PlanMode::Hidden) {
      emitError(getOperation().getLoc())
          << "drop-peak-neutral drops what plan=hidden chose; plan="
          << (mode == PlanMode::Budget ? "budget drops what the budget does "
                                         "not need by itself"
                                       : "all keeps every offload");
      return signalPassFailure();
    }
    if (mode == PlanMode::Hidden && !budget.empty()) {
      emitError(getOperation().getLoc())
          << "budget= plans to a budget; it cannot be combined with "
             "plan=hidden";
      return signalPassFailure();
    }
    for (auto [name, value] :
         {std::pair<StringRef, double>{"copy-margin", copyMargin},
          {"max-interference", maxInterference},
          {"max-slowdown", maxSlowdown}}) {
      if (!(value >= 0) || !std::isfinite(value)) {
        emitError(getOperation().getLoc())
            << name << " must be a finite fraction >= 0, got " << value;
        return signalPassFailure();
      }
    }
    FailureOr<double> lead =
        getPassLoadLead(copyMargin, loadLead, getOperation());
    if (failed(lead))
      return signalPassFailure();
    if (mode == PlanMode::All) {
      markAllAnalysesPreserved();
      return;
    }
    FailureOr<DeviceProfile> profile =
        getPassDeviceProfile(OFFLOAD_PASS_PROFILE_OVERRIDES(), getOperation());
    if (failed(profile))
      return signalPassFailure();
    FailureOr<ExecutionModel> parsedExecution = OFFLOAD_PASS_EXECUTION_MODEL();
    if (failed(parsedExecution))
      return signalPassFailure();
    ExecutionModel execution = *parsedExecution;
    execution.loadLead = *lead;
    execution.coalesceBelow = coalesceBelow;
    budgetValue = budget;

    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    nominalCostModel.emplace(*profile);
    // plan=hidden keeps a value only if its copies stay hidden even when
    // they run copy-margin longer than predicted (or compute that much
    // faster); the report predicts with the profile as it is.
    CostModel costModel(mode == PlanMode::Hidden
                            ? profile->withCopyMargin(copyMargin)
                            : *profile);
    if (!(maxRecompute >= 0) || !std::isfinite(maxRecompute)) {
      emitError(getOperation().getLoc())
          << "max-recompute must be a finite fraction >= 0, got "
          << maxRecompute;
      return signalPassFailure();
    }
    // A new plan replaces the placements of any earlier one.
    for (const TrainingStep &step : steps) {
      if (failed(checkNoCopies(step)))
        return signalPassFailure();
      erasePlacements(step.getForward());
      erasePlacements(step.getBackward());
    }
    for (const TrainingStep &step : steps)
      if (failed(planStepJointly(step, costModel, execution, mode,
                                 maxInflightBytes)))
        return signalPassFailure();
  }

  /// It plans a step whose copies are not made yet: the peak without offload
  /// of a step with copies is not that of the step.
  static LogicalResult checkNoCopies(const TrainingStep &step) {
    for (FunctionOpInterface function :
         {step.getForward(), step.getBackward()}) {
      WalkResult copies = function.walk([](Operation *op) {
        return isa<OffloadToCpuOp, LoadToGpuOp, OffloadStartOp, LoadStartOp,
                   OffloadGroupStartOp, LoadGroupStartOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      });
      if (copies.wasInterrupted())
        return function->emitError()
               << "offload-plan plans a step before its copies are made, "
                  "but this one already has copies; run it before "
                  "offload-insert-offloads";
    }
    return success();
  }

  /// What planStep predicts for a step, read from its `offload.planned`.
  struct Outcome {
    bool fits = false;
    int64_t peakBytes = 0;
    double stepSeconds = kInfiniteSeconds;
  };

  /// Plans `step` with recomputation (see the pass description): ranks the
  /// recompute candidates, predicts the plan planStep makes on top of the
  /// best-ranked k of them for a sweep of k (each on a copy of the module),
  /// carries out the best k's recomputation and plans the copies on it.
  LogicalResult planStepJointly(const TrainingStep &step,
                                const CostModel &costModel,
                                const ExecutionModel &execution, PlanMode mode,
                                int64_t inflight) {
    if (!recompute || !canShrinkSavedInterface(step))
      return planStep(step, costModel, execution, mode, inflight);
    FunctionOpInterface forward = step.getForward();
    SmallVector<RecomputeCandidate, 0> candidates;
    SmallVector<unsigned> ranked = rankRecomputes(step, candidates);
    if (candidates.empty())
      return planStep(step, costModel, execution, mode, inflight);

    // The step without offload or recomputation, for plan=hidden's limit.
    FailureOr<StepModel> model =
        StepModel::build(step, *nominalCostModel, execution);
    if (failed(model))
      return failure();
    SimulationResult without = model->simulate(model->getEmptyPlan());
    double limit = without.stepSeconds * (1 + maxSlowdown + maxRecompute);
    // A fraction of a budget is of this step's peak, before any
    // recomputation lowers it.
    Budget stepBudget = budgetValue;
    auto restoreBudget =
        llvm::make_scope_exit([&, saved = budgetValue] { budgetValue = saved; });
    if (mode == PlanMode::Budget)
      budgetValue.bytes = stepBudget.resolve(without.peakBytes);
    // plan=hidden: the allowance over the step as it came is the joint
    // plan's to spend, on recomputation or on copies the link does not hide.
    if (mode == PlanMode::Hidden)
      hiddenStepLimit = limit;
    auto forgetLimit = llvm::make_scope_exit([&] { hiddenStepLimit.reset(); });

    // The first k ranked candidates, as candidates of `target`, a copy of
    // `step` whose saved links are numbered alike.
    auto prefixOf = [&](const TrainingStep &target, size_t k) {
      SmallVector<unsigned> links;
      for (unsigned c : ArrayRef(ranked).take_front(k))
        llvm::append_range(links, candidates[c].links);
      return findRecomputeCandidates(target, *nominalCostModel, links,
                                     recomputeMaxOps);
    };
    StringAttr forwardName = forward.getNameAttr();
    llvm::DenseMap<size_t, Outcome> outcomes;
    auto predict = [&](size_t k) -> const Outcome & {
      if (auto it = outcomes.find(k); it != outcomes.end())
        return it->second;
      Outcome outcome = predictOnCopy(
          forwardName,
          [&](const TrainingStep &target) { return prefixOf(target, k); },
          costModel, execution, mode, inflight);
      if (mode == PlanMode::Hidden)
        outcome.fits = outcome.fits && outcome.stepSeconds <= limit;
      return outcomes[k] = outcome;
    };
    // Whether k's plan is better than best's: plan=budget, the faster of
    // those that fit; plan=hidden, the lower peak of those within the limit.
    // Ties go to fewer recomputations.
    auto better = [&](size_t k, size_t best) {
      const Outcome &a = predict(k), &b = predict(best);
      if (a.fits != b.fits)
        return a.fits;
      if (!a.fits)
        return false;
      if (mode == PlanMode::Budget)
        return a.stepSeconds < b.stepSeconds * (1 - 1e-9) ||
               (a.stepSeconds <= b.stepSeconds * (1 + 1e-9) && k < best);
      return a.peakBytes < b.peakBytes ||
             (a.peakBytes == b.peakBytes && a.stepSeconds < b.stepSeconds);
    };
    size_t best = searchRecomputeCount(ranked.size(), better);
    LLVM_DEBUG(llvm::dbgs() << "[offload-plan] recomputes the best " << best
                            << " of " << ranked.size() << " candidates"
                            << (predict(best).fits ? "" : " (none fits)")
                            << "\n");
    // Nothing fits: the copies alone make the error's plan (recomputing
    // can raise a peak, where a recomputed value lives longer in backward
    // than its inputs would have).
    if (!predict(best).fits)
      best = 0;
    // The trials ran on copies: the candidates found on `step` still hold.
    SmallVector<RecomputeCandidate, 0> chosen;
    for (unsigned c : ArrayRef(ranked).take_front(best))
      chosen.push_back(std::move(candidates[c]));
    insertRecomputes(step, chosen);
    peakAsItCame = without.peakBytes;
    auto forget = llvm::make_scope_exit([&] { peakAsItCame.reset(); });
    if (failed(planStep(step, costModel, execution, mode, inflight)))
      return failure();
    if (chosen.empty())
      return success();
    recordUnplanned(forward, without);
    return success();
  }

  /// The recompute candidates of `step`'s selected values, in `candidates`,
  /// and the order they are tried in: bytes freed per second of
  /// recomputation, most first, those that cannot go together left out.
  SmallVector<unsigned>
  rankRecomputes(const TrainingStep &step,
                 SmallVector<RecomputeCandidate, 0> &candidates) {
    FunctionOpInterface forward = step.getForward();
    auto selectedName = StringAttr::get(&getContext(),
                                        OffloadDialect::kSelectedAttrName);
    SmallVector<unsigned> selected;
    for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i)
      if (forward.getResultAttr(step.getSavedResultIndex(i), selectedName))
        selected.push_back(i);
    candidates = findRecomputeCandidates(step, *nominalCostModel, selected,
                                         recomputeMaxOps);
    SmallVector<unsigned> order =
        llvm::to_vector(llvm::seq<unsigned>(0, candidates.size()));
    auto rate = [&](unsigned c) {
      return double(candidates[c].bytes) /
             std::max(candidates[c].seconds, 1e-12);
    };
    llvm::stable_sort(order,
                      [&](unsigned a, unsigned b) { return rate(a) > rate(b); });
    return pickCompatibleRecomputes(candidates, order, candidates.size());
  }

  /// What planStep predicts for the step of `forwardName` with the
  /// recomputes `recomputesOf` gives for it, planned on a copy of the
  /// module. The plans that do not fit are expected: their errors are not
  /// the pass's.
  Outcome predictOnCopy(
      StringAttr forwardName,
      llvm::function_ref<SmallVector<RecomputeCandidate, 0>(
          const TrainingStep &)>
          recomputesOf,
      const CostModel &costModel, const ExecutionModel &execution,
      PlanMode mode, int64_t inflight) {
    OwningOpRef<ModuleOp> copy = getOperation().clone();
    Outcome outcome;
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    auto copyForward = dyn_cast_or_null<FunctionOpInterface>(
        SymbolTable::lookupSymbolIn(*copy, forwardName));
    FailureOr<TrainingStep> copyStep = failure();
    if (copyForward)
      copyStep = TrainingStep::get(copyForward);
    if (failed(copyStep))
      return outcome;
    insertRecomputes(*copyStep, recomputesOf(*copyStep));
    outcome.fits =
        succeeded(planStep(*copyStep, costModel, execution, mode, inflight));
    if (auto planned = copyForward->getAttrOfType<DictionaryAttr>(
            OffloadDialect::kPlannedAttrName)) {
      outcome.peakBytes = planned.getAs<IntegerAttr>("peak_bytes").getInt();
      outcome.stepSeconds =
          planned.getAs<FloatAttr>("step_seconds").getValueAsDouble();
    }
    return outcome;
  }

  /// How many of the ranked recompute candidates to take, of `n`: a grid
  /// over the count, then a local search around the best point with halving
  /// steps. `better(k, best)`: whether k's plan beats best's.
  static size_t
  searchRecomputeCount(size_t n,
                       llvm::function_ref<bool(size_t, size_t)> better) {
    constexpr size_t kGrid = 8;
    size_t best = 0;
    for (size_t i = 1; i <= kGrid; ++i)
      if (size_t k = n * i / kGrid; better(k, best))
        best = k;
    for (size_t stride = std::max<size_t>(n / (2 * kGrid), 1);;
         stride /= 2) {
      size_t center = best;
      if (center >= stride && better(center - stride, best))
        best = center - stride;
      if (center + stride <= n && better(center + stride, best))
        best = center + stride;
      if (stride == 1)
        break;
    }
    return best;
  }

  /// The report sets the plan beside the step as it came, `without` its
  /// recomputation.
  void recordUnplanned(FunctionOpInterface forward,
                       const SimulationResult &without) {
    auto planned =
        forward->getAttrOfType<DictionaryAttr>(OffloadDialect::kPlannedAttrName);
    NamedAttrList entries(planned);
    Builder builder(&getContext());
    entries.set("unplanned_peak_bytes",
                builder.getI64IntegerAttr(without.peakBytes));
    entries.set("unplanned_step_seconds",
                builder.getF64FloatAttr(without.stepSeconds));
    forward->setAttr(OffloadDialect::kPlannedAttrName,
                     entries.getDictionary(&getContext()));
  }

  /// The parsed `budget` option, for plan=budget.
  Budget budgetValue;
  /// The profile as it is (no copy margin), for the prediction recorded on
  /// the IR.
  std::optional<CostModel> nominalCostModel;

  /// The candidates of `step`: its selected results, grouped by storage.
  void collectCandidates(const TrainingStep &step, const StepModel &model,
                         Planner &planner) {
    FunctionOpInterface forward = step.getForward();
    auto selectedName = StringAttr::get(&getContext(),
                                        OffloadDialect::kSelectedAttrName);
    llvm::MapVector<int, unsigned> groupOf;
    for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
      if (!forward.getResultAttr(step.getSavedResultIndex(i), selectedName))
        continue;
      int buffer = model.getLinkBuffer(i);
      if (buffer < 0)
        continue;
      auto [it, inserted] =
          groupOf.try_emplace(buffer, planner.candidates.size());
      if (inserted)
        planner.candidates.push_back(
            {{}, buffer, model.getBufferBytes(buffer)});
      planner.candidates[it->second].links.push_back(i);
    }
  }

  /// plan=hidden's limits on a plan's step (its copies exposed included)
  /// and on the kernels its copies slow, from the step without offload.
  std::pair<double, double> hiddenLimits(const SimulationResult &baseline) {
    return {hiddenStepLimit.value_or(baseline.stepSeconds * (1 + maxSlowdown)),
            baseline.stepSeconds * maxInterference};
  }

  /// plan=hidden: the candidates first fit keeps, largest first.
  SmallVector<unsigned> chooseHidden(const Planner &planner,
                                     const SimulationResult &baseline) {
    SmallVector<unsigned> order =
        llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return planner.candidates[a].bytes > planner.candidates[b].bytes;
    });
    auto [limit, interferenceLimit] = hiddenLimits(baseline);
    return fitHidden(planner, order, limit, interferenceLimit, hiddenPatience,
                     &getContext());
  }

  /// drop-peak-neutral: `chosen` (plan=hidden's) less the offloads its
  /// predicted peak does not need. What is left must be hidden as fitHidden
  /// asks of any plan, but need not predict a step as short as `chosen`'s:
  /// without some copies the model predicts a step a fraction of a
  /// microsecond longer (the loads left are placed a little differently).
  SmallVector<unsigned>
  dropPeakNeutralOffloads(const Planner &planner,
                          const SimulationResult &baseline,
                          SmallVector<unsigned> chosen) {
    auto [limit, interferenceLimit] = hiddenLimits(baseline);
    SimulationResult current = planner.simulate(chosen);
    dropUnneededOffloads(
        planner, current.peakBytes,
        [&](const SimulationResult &trial, const SimulationResult &) {
          return trial.stepSeconds - trial.interferenceSeconds <= limit &&
                 trial.interferenceSeconds <= interferenceLimit;
        },
        chosen, current);
    return chosen;
  }

  /// plan=budget: the candidates that fit the budget, or an error giving the
  /// smallest peak reached. Scheduled, an offload's wait sits where forward
  /// does not stall for its copy, and with release=at-wait its source is
  /// held until then; a synchronous copy frees it at once, at the price of
  /// the stall. So the synchronous form may reach budgets the scheduled one
  /// cannot, and where the scheduled plan adds time it may add less (copies
  /// only add time, so a scheduled plan that adds none is not compared). The
  /// synchronous plan is taken where only it fits or it is faster, and its
  /// placements are recorded (a wait right after each offload, each load
  /// started at its wait) for offload-schedule-copies: a scheduled plan is
  /// never worse than schedule=false's.
  FailureOr<SmallVector<unsigned>>
  chooseBudget(const TrainingStep &step, const StepModel &model,
               const Planner &planner, const SimulationResult &baseline,
               int64_t inflight) {
    int64_t limit = budgetValue.resolve(baseline.peakBytes);
    BudgetFit scheduled = fitBudget(planner, baseline, limit, !schedule);
    if (!schedule && !scheduled.fits)
      return emitBudgetError(step, limit, baseline.peakBytes,
                             scheduled.reachedPeak);
    if (!schedule)
      return std::move(scheduled.chosen);
    double scheduledStep = scheduled.fits
                               ? planner.simulate(scheduled.chosen).stepSeconds
                               : kInfiniteSeconds;
    if (scheduled.fits &&
        scheduledStep <= baseline.stepSeconds * (1 + 1e-9))
      return std::move(scheduled.chosen);
    Planner &synchronous =
        synchronousPlanner.emplace(model, /*schedule=*/false, inflight);
    synchronous.candidates = planner.candidates;
    BudgetFit synchronousFit =
        fitBudget(synchronous, synchronous.simulate({}), limit, !schedule);
    if (!scheduled.fits && !synchronousFit.fits)
      return emitBudgetError(
          step, limit, baseline.peakBytes,
          std::min(synchronousFit.reachedPeak, scheduled.reachedPeak));
    if (synchronousFit.fits &&
        (!scheduled.fits ||
         synchronous.simulate(synchronousFit.chosen).stepSeconds <
             scheduledStep)) {
      LLVM_DEBUG(llvm::dbgs() << "[offload-plan] budget: takes the "
                                 "synchronous plan (it fits, or is faster)\n");
      return std::move(synchronousFit.chosen);
    }
    synchronousPlanner.reset();
    return std::move(scheduled.chosen);
  }

  /// Rewrites the selection once for the whole function: the candidates not
  /// chosen and still selected are kept, for `reason`.
  void markKept(const TrainingStep &step, const Planner &planner,
                ArrayRef<unsigned> chosen, StringRef reason) {
    llvm::SmallDenseSet<unsigned> keep;
    for (unsigned c : chosen)
      keep.insert(planner.candidates[c].links.begin(),
                  planner.candidates[c].links.end());
    FunctionOpInterface forward = step.getForward();
    SmallVector<DictionaryAttr> resultAttrs;
    forward.getAllResultAttrs(resultAttrs);
    Builder builder(&getContext());
    for (const Candidate &candidate : planner.candidates) {
      for (unsigned link : candidate.links) {
        unsigned result = step.getSavedResultIndex(link);
        if (keep.contains(link) ||
            !resultAttrs[result].get(OffloadDialect::kSelectedAttrName))
          continue;
        NamedAttrList attrs(resultAttrs[result]);
        attrs.erase(OffloadDialect::kSelectedAttrName);
        attrs.set(OffloadDialect::kKeptAttrName, builder.getStringAttr(reason));
        resultAttrs[result] = attrs.getDictionary(&getContext());
      }
    }
    forward.setAllResultAttrs(resultAttrs);
  }

  /// What the plan of `chosen` predicts with the profile as it is (the
  /// search may have used a copy margin), and that plan: the report shows it
  /// next to its own prediction of the emitted IR.
  FailureOr<std::pair<SimulationResult, CopyPlan>>
  predictNominal(const TrainingStep &step, const Planner &planner,
                 ArrayRef<unsigned> chosen, const ExecutionModel &execution,
                 PlanMode mode, int64_t inflight) {
    std::pair<SimulationResult, CopyPlan> planned;
    if (synchronousPlanner) {
      planned.first = synchronousPlanner->simulate(chosen, &planned.second);
    } else if (mode == PlanMode::Hidden && copyMargin > 0) {
      FailureOr<StepModel> nominal =
          StepModel::build(step, *nominalCostModel, execution);
      if (failed(nominal))
        return failure();
      Planner nominalPlanner(*nominal, schedule, inflight);
      nominalPlanner.candidates = planner.candidates;
      planned.first = nominalPlanner.simulate(chosen, &planned.second);
    } else {
      planned.first = planner.simulate(chosen, &planned.second);
    }
    return planned;
  }

  LogicalResult planStep(const TrainingStep &step, const CostModel &costModel,
                         const ExecutionModel &execution, PlanMode mode,
                         int64_t inflight) {
    FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
    if (failed(model))
      return failure();
    // It plans on this step's model.
    synchronousPlanner.reset();
    auto forgetSynchronous =
        llvm::make_scope_exit([&] { synchronousPlanner.reset(); });
    Planner planner(*model, schedule, inflight);
    collectCandidates(step, *model, planner);

    SimulationResult baseline = planner.simulate({});
    FailureOr<SmallVector<unsigned>> chosen =
        mode == PlanMode::Hidden
            ? FailureOr<SmallVector<unsigned>>(chooseHidden(planner, baseline))
            : chooseBudget(step, *model, planner, baseline, inflight);
    numSimulations += planner.getNumSimulations();
    if (synchronousPlanner)
      numSimulations += synchronousPlanner->getNumSimulations();
    if (failed(chosen))
      return failure();
    markKept(step, planner, *chosen,
             mode == PlanMode::Hidden
                 ? "plan: its copy cannot be hidden under compute"
                 : "plan: not needed to fit the budget");
    if (mode == PlanMode::Hidden && dropPeakNeutral) {
      unsigned simulatedBefore = planner.getNumSimulations();
      *chosen = dropPeakNeutralOffloads(planner, baseline, std::move(*chosen));
      numSimulations += planner.getNumSimulations() - simulatedBefore;
      markKept(step, planner, *chosen,
               "plan: offloading it does not lower the predicted peak");
    }

    FailureOr<std::pair<SimulationResult, CopyPlan>> planned = predictNominal(
        step, planner, *chosen, execution, mode, inflight);
    if (failed(planned))
      return failure();
    if (schedule)
      recordPlacements(step, *model, planned->second);
    Builder builder(&getContext());
    step.getForward()->setAttr(
        OffloadDialect::kPlannedAttrName,
        builder.getDictionaryAttr(
            {builder.getNamedAttr(
                 "peak_bytes", builder.getI64IntegerAttr(planned->first.peakBytes)),
             builder.getNamedAttr("step_seconds",
                                  builder.getF64FloatAttr(
                                      planned->first.stepSeconds))}));
    return success();
  }

  /// Records where `plan` places its copies, for offload-schedule-copies:
  /// an `offload.placement` right before the op at each position where
  /// loads start (in backward, in issue order) or offloads are waited for (in
  /// forward), before the terminator for those at the end of their function,
  /// so that every copy has a placement and offload-schedule-copies can tell
  /// a lost one. Each names every saved value the copy carries (a shared copy
  /// carries several). The placement stays where it is whatever other passes
  /// do to the ops beside it: offload-reorder-backward sinks views past it,
  /// canonicalization folds or hoists the op after it.
  void recordPlacements(const TrainingStep &step, const StepModel &model,
                        const CopyPlan &plan) {
    unsigned numOps = model.getNumOps(), numForward = model.getNumForwardOps();
    auto opAt = [&](unsigned pos, unsigned end, FunctionOpInterface function) {
      return pos < end ? model.getOp(pos)
                       : function.getFunctionBody().front().getTerminator();
    };
    SmallVector<SmallVector<int64_t>> carried(plan.copies.size());
    for (unsigned l = 0, e = step.getNumSaved(); l < e; ++l) {
      if (!plan.offloaded[l])
        continue;
      if (plan.loadOf[l] >= 0)
        carried[plan.loadOf[l]].push_back(l);
      if (plan.offloadOf[l] >= 0)
        carried[plan.offloadOf[l]].push_back(l);
    }
    SmallVector<unsigned> loads;
    for (auto [index, copy] : llvm::enumerate(plan.copies))
      if (copy.kind == PlannedCopy::Kind::Load)
        loads.push_back(index);
    llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
      const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
      return std::make_pair(x.issuePos, x.sequence) <
             std::make_pair(y.issuePos, y.sequence);
    });
    llvm::MapVector<Operation *, SmallVector<int64_t>> loadStarts,
        offloadWaits;
    // Loads started at their waits too: offload-schedule-copies issues the
    // loads of a position in the recorded order.
    for (unsigned index : loads)
      llvm::append_range(
          loadStarts[opAt(plan.copies[index].issuePos, numOps,
                          step.getBackward())],
          carried[index]);
    for (auto [index, copy] : llvm::enumerate(plan.copies))
      if (copy.kind == PlannedCopy::Kind::Offload)
        llvm::append_range(offloadWaits[opAt(std::min(copy.waitPos, numForward),
                                             numForward, step.getForward())],
                           carried[index]);
    OpBuilder builder(&getContext());
    for (auto [kind, points] :
         {std::pair(PlacementKind::LoadStarts, &loadStarts),
          std::pair(PlacementKind::OffloadWaits, &offloadWaits)})
      for (auto &[op, indices] : *points) {
        builder.setInsertionPoint(op);
        PlacementOp::create(builder, op->getLoc(), kind, indices);
      }
  }

  /// planStepJointly: the peak of the step before its recomputation, while
  /// the plan on the recomputed step is made.
  std::optional<int64_t> peakAsItCame;
  /// planStepJointly, plan=hidden: the step time the copies may take the
  /// step to (exposed copies included), set to the joint limit: the step as
  /// it came plus max-slowdown and max-recompute.
  std::optional<double> hiddenStepLimit;
  /// Set where a budget plan is made synchronous (see planStep).
  std::optional<Planner> synchronousPlanner;

  LogicalResult emitBudgetError(const TrainingStep &step, int64_t limit,
                                int64_t peakWithout, int64_t reachedPeak) {
    // Where the plan recomputed, "without offload" is the step as it came.
    if (peakAsItCame)
      peakWithout = *peakAsItCame;
    // Two decimals: the peaks are often within a tenth of the budget.
    auto format = [](int64_t bytes) {
      return offload_support::formatByteSize(bytes, /*decimals=*/2);
    };
    return step.getForward().emitError()
           << "no plan fits the budget of " << format(limit) << " (" << limit
           << " bytes): the smallest predicted peak is " << format(reachedPeak)
           << " (" << reachedPeak << " bytes); without offload it is "
           << format(peakWithout) << " (" << peakWithout << " bytes)";
  }
};
} // namespace
