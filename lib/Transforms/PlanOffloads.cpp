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
// on the ops they go before (recordPlacements), for offload-schedule-copies.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/Recompute.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Tensor/StorageViewOpInterfaceImpl.h"
#include "offload/Transforms/Passes.h"
#include "offload/Transforms/Recompute.h"
#include "offload_support/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <queue>

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
/// Saved links sharing one device storage: offloading frees it only if all
/// of them go.
struct Candidate {
  SmallVector<unsigned> links;
  int buffer;
  int64_t bytes;
};

class Planner {
public:
  Planner(const StepModel &model, bool schedule, int64_t maxInflight)
      : model(model), schedule(schedule), maxInflight(maxInflight) {}

  /// simulate() of the plan for `chosen`, and that plan in `plan`.
  SimulationResult simulate(ArrayRef<unsigned> chosen,
                            CopyPlan *plan = nullptr) const {
    SmallVector<unsigned> links;
    for (unsigned c : chosen)
      llvm::append_range(links, candidates[c].links);
    SimulationResult result;
    CopyPlan planned = model.planFor(links, schedule, maxInflight, &result);
    if (plan)
      *plan = std::move(planned);
    return result;
  }

  const StepModel &getModel() const { return model; }

  SmallVector<Candidate> candidates;

private:
  const StepModel &model;
  bool schedule;
  int64_t maxInflight;
};
} // namespace

namespace {
/// A lower bound on the predicted step time of a plan from its loads alone,
/// kept as loads are added, so the planner can rule a candidate out without
/// simulating it.
///
/// The bound: no load starts before backward does, so before the compute
/// stream starts the op at backward position w (or ends the step, w = the
/// number of ops), the serial H2D stream has carried every load waited at or
/// before w, each taking at least getMinCopySeconds. Forward takes at least
/// its compute time, so the step takes at least
///   computeEnd + max(0, max_w (loads(<= w) - (start(w) - start(backward))))
/// where start() is the compute stream alone. With synchronous loads
/// (schedule=false) every load is issued where it is waited, and the compute
/// stream waits for all of it: the step takes at least computeEnd + all
/// loads. Both only grow as loads are added, so a candidate the bound rules
/// out next to a set of offloads stays ruled out next to any larger set.
class StepTimeBound {
public:
  StepTimeBound(const StepModel &model, bool synchronousLoads)
      : model(model), synchronousLoads(synchronousLoads),
        first(model.getNumForwardOps()), size(model.getNumOps() + 1 - first),
        top(4 * size, 0), lazy(4 * size, 0) {
    computeEnd = model.getComputeStart(model.getNumOps());
    build(1, 0, size - 1);
  }

  struct Load {
    unsigned wait;
    double seconds;
  };
  /// The loads planFor() issues for `links`.
  void appendLoads(ArrayRef<unsigned> links, SmallVectorImpl<Load> &loads) const {
    for (StepModel::PlannedLoad load : model.getPlannedLoads(links))
      loads.push_back({load.wait, model.getMinCopySeconds(
                                      PlannedCopy::Kind::Load, load.bytes)});
  }

  /// The bound with `extra` loads added to those kept.
  double boundWith(ArrayRef<Load> extra) {
    apply(extra, 1);
    double result = current();
    apply(extra, -1);
    return result;
  }
  void add(ArrayRef<Load> loads) { apply(loads, 1); }
  void remove(ArrayRef<Load> loads) { apply(loads, -1); }
  /// The bound with the loads kept.
  double current() const {
    if (synchronousLoads)
      return computeEnd + total;
    return computeEnd + std::max(0.0, top[1]);
  }

private:
  void apply(ArrayRef<Load> loads, double sign) {
    for (const Load &load : loads) {
      total += sign * load.seconds;
      update(1, 0, size - 1, load.wait - first, sign * load.seconds);
    }
  }
  // A max segment tree over backward positions with range add on suffixes;
  // top[node] is the max of its range including the adds pending at node.
  void build(unsigned node, unsigned lo, unsigned hi) {
    if (lo == hi) {
      top[node] = -(model.getComputeStart(first + lo) -
                    model.getComputeStart(first));
      return;
    }
    unsigned mid = (lo + hi) / 2;
    build(2 * node, lo, mid);
    build(2 * node + 1, mid + 1, hi);
    top[node] = std::max(top[2 * node], top[2 * node + 1]);
  }
  /// Adds `delta` to every position from `from` to the end.
  void update(unsigned node, unsigned lo, unsigned hi, unsigned from,
              double delta) {
    if (from <= lo) {
      top[node] += delta;
      lazy[node] += delta;
      return;
    }
    unsigned mid = (lo + hi) / 2;
    if (from <= mid)
      update(2 * node, lo, mid, from, delta);
    update(2 * node + 1, mid + 1, hi, from, delta);
    top[node] = std::max(top[2 * node], top[2 * node + 1]) + lazy[node];
  }

  const StepModel &model;
  bool synchronousLoads;
  unsigned first, size;
  double computeEnd = 0, total = 0;
  SmallVector<double> top, lazy;
};

/// When the D2H copies of a simulated plan issued before each op position
/// end, so that the earliest end of one more offload can be bounded: the
/// D2H stream is serial, so it starts no earlier than those issued before it
/// end, nor than the compute stream alone reaches its op. Adding an offload
/// is assumed not to make the copies queued ahead of it end earlier.
class OffloadQueue {
public:
  explicit OffloadQueue(const StepModel &model)
      : model(model), endBefore(model.getNumOps() + 1, 0) {}

  void update(const CopyPlan &plan, const SimulationResult &result) {
    unsigned numOps = model.getNumOps();
    endBefore.assign(numOps + 1, 0);
    firstLoad = numOps + 1;
    for (auto [index, copy] : llvm::enumerate(plan.copies)) {
      if (copy.kind == PlannedCopy::Kind::Load)
        firstLoad = std::min(firstLoad, copy.issuePos);
      else if (copy.issuePos < numOps)
        endBefore[copy.issuePos + 1] =
            std::max(endBefore[copy.issuePos + 1], result.copyEnd[index]);
    }
    for (unsigned pos = 1; pos <= numOps; ++pos)
      endBefore[pos] = std::max(endBefore[pos], endBefore[pos - 1]);
  }

  /// The earliest the offload of candidate `links` (`bytes`) can end, or
  /// nothing if planFor() does not offload it.
  std::optional<double> earliestEnd(ArrayRef<unsigned> links,
                                    int64_t bytes) const {
    std::optional<unsigned> issue = model.getPlannedOffloadIssue(links.front());
    if (!issue)
      return std::nullopt;
    return std::max(model.getComputeStart(*issue), endBefore[*issue]) +
           model.getMinCopySeconds(PlannedCopy::Kind::Offload, bytes);
  }

  /// The first op position a load of the plan is issued at.
  unsigned getFirstLoad() const { return firstLoad; }

private:
  const StepModel &model;
  SmallVector<double> endBefore;
  unsigned firstLoad = ~0u;
};

/// The bound rules a plan out if it exceeds `limit` by more than rounding:
/// the simulation sums op times in another order.
/// The longest prefix length in [0, n] for which `holds` is true, given
/// that a prefix holds whenever a longer one does and the empty prefix
/// always holds: n if it holds, else found by bisection (holds(n) is asked
/// first, so a caller that caches trials pays one simulation when it does).
static size_t longestHoldingPrefix(size_t n,
                                   llvm::function_ref<bool(size_t)> holds) {
  if (holds(n))
    return n;
  size_t lo = 0, hi = n; // prefix lo holds, prefix hi does not
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (holds(mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static bool exceeds(double bound, double limit) {
  return bound > limit + 1e-9 * std::abs(limit);
}
} // namespace

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
    // A new plan replaces the placements of any earlier one. It plans a
    // step whose copies are not made yet: the peak without offload of a
    // step with copies is not that of the step.
    for (const TrainingStep &step : steps) {
      for (FunctionOpInterface function :
           {step.getForward(), step.getBackward()}) {
        WalkResult copies = function.walk([](Operation *op) {
          return isa<OffloadToCpuOp, LoadToGpuOp, OffloadStartOp, LoadStartOp,
                     OffloadGroupStartOp, LoadGroupStartOp>(op)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        });
        if (copies.wasInterrupted()) {
          function->emitError()
              << "offload-plan plans a step before its copies are made, "
                 "but this one already has copies; run it before "
                 "offload-insert-offloads";
          return signalPassFailure();
        }
      }
      removePlacements(step.getForward());
      removePlacements(step.getBackward());
    }
    for (const TrainingStep &step : steps)
      if (failed(planStepJointly(step, costModel, execution, mode,
                                 maxInflightBytes)))
        return signalPassFailure();
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
    auto selectedName = StringAttr::get(&getContext(),
                                        OffloadDialect::kSelectedAttrName);
    SmallVector<unsigned> selected;
    for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i)
      if (forward.getResultAttr(step.getSavedResultIndex(i), selectedName))
        selected.push_back(i);
    SmallVector<RecomputeCandidate, 0> candidates = findRecomputeCandidates(
        step, *nominalCostModel, selected, recomputeMaxOps);
    if (candidates.empty())
      return planStep(step, costModel, execution, mode, inflight);
    // Bytes freed per second of recomputation, most first.
    SmallVector<unsigned> order =
        llvm::to_vector(llvm::seq<unsigned>(0, candidates.size()));
    auto rate = [&](unsigned c) {
      return double(candidates[c].bytes) /
             std::max(candidates[c].seconds, 1e-12);
    };
    llvm::stable_sort(order,
                      [&](unsigned a, unsigned b) { return rate(a) > rate(b); });
    SmallVector<unsigned> ranked =
        pickCompatibleRecomputes(candidates, order, candidates.size());

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
      OwningOpRef<ModuleOp> copy = getOperation().clone();
      Outcome outcome;
      {
        // The plans that do not fit are expected: their errors are not the
        // pass's.
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        auto copyForward = dyn_cast_or_null<FunctionOpInterface>(
            SymbolTable::lookupSymbolIn(*copy, forwardName));
        FailureOr<TrainingStep> copyStep = failure();
        if (copyForward)
          copyStep = TrainingStep::get(copyForward);
        if (succeeded(copyStep)) {
          insertRecomputes(*copyStep, prefixOf(*copyStep, k));
          outcome.fits = succeeded(
              planStep(*copyStep, costModel, execution, mode, inflight));
          if (auto planned = copyForward->getAttrOfType<DictionaryAttr>(
                  OffloadDialect::kPlannedAttrName)) {
            outcome.peakBytes =
                planned.getAs<IntegerAttr>("peak_bytes").getInt();
            outcome.stepSeconds =
                planned.getAs<FloatAttr>("step_seconds").getValueAsDouble();
          }
        }
      }
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
    // A grid over k, then a local search around the best point with
    // halving steps.
    size_t n = ranked.size();
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
    // The report sets the plan beside the step as it came.
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
    return success();
  }

  /// The parsed `budget` option, for plan=budget.
  Budget budgetValue;
  /// The profile as it is (no copy margin), for the prediction recorded on
  /// the IR.
  std::optional<CostModel> nominalCostModel;

  LogicalResult planStep(const TrainingStep &step, const CostModel &costModel,
                         const ExecutionModel &execution, PlanMode mode,
                         int64_t inflight) {
    FunctionOpInterface forward = step.getForward();
    FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
    if (failed(model))
      return failure();
    // It plans on this step's model.
    synchronousPlanner.reset();
    auto forgetSynchronous =
        llvm::make_scope_exit([&] { synchronousPlanner.reset(); });
    Planner planner(*model, schedule, inflight);

    // The candidates: selected results, grouped by storage.
    auto selectedName = StringAttr::get(&getContext(),
                                        OffloadDialect::kSelectedAttrName);
    llvm::MapVector<int, unsigned> groupOf;
    for (unsigned i = 0, e = step.getNumSaved(); i < e; ++i) {
      if (!forward.getResultAttr(step.getSavedResultIndex(i), selectedName))
        continue;
      int buffer = model->getLinkBuffer(i);
      if (buffer < 0)
        continue;
      auto [it, inserted] = groupOf.try_emplace(buffer, planner.candidates.size());
      if (inserted)
        planner.candidates.push_back({{}, buffer, model->getBufferBytes(buffer)});
      planner.candidates[it->second].links.push_back(i);
    }

    SimulationResult baseline = planner.simulate({});
    SmallVector<unsigned> chosen;
    std::string reason;
    if (mode == PlanMode::Hidden) {
      reason = "plan: its copy cannot be hidden under compute";
      SmallVector<unsigned> order =
          llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
      llvm::stable_sort(order, [&](unsigned a, unsigned b) {
        return planner.candidates[a].bytes > planner.candidates[b].bytes;
      });
      double limit =
          hiddenStepLimit.value_or(baseline.stepSeconds * (1 + maxSlowdown));
      fitHidden(planner, order, limit, baseline.stepSeconds * maxInterference,
                chosen);
    } else {
      reason = "plan: not needed to fit the budget";
      int64_t limit = budgetValue.resolve(baseline.peakBytes);
      bool fits = succeeded(fitBudget(planner, baseline, limit, chosen, step,
                                      /*report=*/!schedule));
      if (!fits && !schedule)
        return failure();
      // Scheduled, an offload's wait sits where forward does not stall for
      // its copy, and with release=at-wait its source is held until then; a
      // synchronous copy frees it at once, at the price of the stall. So the
      // synchronous form may reach budgets the scheduled one cannot, and
      // where the scheduled plan adds time it may add less (copies only add
      // time, so a scheduled plan that adds none is not compared). The
      // synchronous plan is taken where only it fits or it is faster, and
      // its placements are recorded (a wait right after each offload, each
      // load started at its wait) for offload-schedule-copies: a scheduled
      // plan is never worse than schedule=false's.
      double scheduledStep = schedule && fits
                                 ? planner.simulate(chosen).stepSeconds
                                 : kInfiniteSeconds;
      if (schedule &&
          (!fits || scheduledStep > baseline.stepSeconds * (1 + 1e-9))) {
        int64_t scheduledReach = reachedPeak;
        Planner &synchronous =
            synchronousPlanner.emplace(*model, /*schedule=*/false, inflight);
        synchronous.candidates = planner.candidates;
        SmallVector<unsigned> synchronousChosen;
        bool synchronousFits = succeeded(
            fitBudget(synchronous, synchronous.simulate({}), limit,
                      synchronousChosen, step, /*report=*/false));
        if (!fits && !synchronousFits) {
          reachedPeak = std::min(reachedPeak, scheduledReach);
          return emitBudgetError(step, limit, baseline.peakBytes);
        }
        if (synchronousFits &&
            (!fits ||
             synchronous.simulate(synchronousChosen).stepSeconds <
                 scheduledStep))
          chosen = std::move(synchronousChosen);
        else
          synchronousPlanner.reset();
      }
    }

    // Rewrite the selection once for the whole function.
    llvm::SmallDenseSet<unsigned> keep;
    for (unsigned c : chosen)
      keep.insert(planner.candidates[c].links.begin(),
                  planner.candidates[c].links.end());
    SmallVector<DictionaryAttr> resultAttrs;
    forward.getAllResultAttrs(resultAttrs);
    Builder builder(&getContext());
    for (const Candidate &candidate : planner.candidates) {
      for (unsigned link : candidate.links) {
        if (keep.contains(link))
          continue;
        unsigned result = step.getSavedResultIndex(link);
        NamedAttrList attrs(resultAttrs[result]);
        attrs.erase(OffloadDialect::kSelectedAttrName);
        attrs.set(OffloadDialect::kKeptAttrName, builder.getStringAttr(reason));
        resultAttrs[result] = attrs.getDictionary(&getContext());
      }
    }
    forward.setAllResultAttrs(resultAttrs);

    // What this plan predicts with the profile as it is (the search may have
    // used a copy margin), for the report to show next to its own
    // prediction of the emitted IR.
    SimulationResult planned;
    CopyPlan plannedPlan;
    if (synchronousPlanner) {
      planned = synchronousPlanner->simulate(chosen, &plannedPlan);
    } else if (mode == PlanMode::Hidden && copyMargin > 0) {
      FailureOr<StepModel> nominal =
          StepModel::build(step, *nominalCostModel, execution);
      if (failed(nominal))
        return failure();
      Planner nominalPlanner(*nominal, schedule, inflight);
      nominalPlanner.candidates = planner.candidates;
      planned = nominalPlanner.simulate(chosen, &plannedPlan);
    } else {
      planned = planner.simulate(chosen, &plannedPlan);
    }
    if (schedule)
      recordPlacements(step, *model, plannedPlan);
    forward->setAttr(
        OffloadDialect::kPlannedAttrName,
        builder.getDictionaryAttr(
            {builder.getNamedAttr("peak_bytes",
                                  builder.getI64IntegerAttr(planned.peakBytes)),
             builder.getNamedAttr("step_seconds",
                                  builder.getF64FloatAttr(planned.stepSeconds))}));
    return success();
  }

  /// Records where `plan` places its copies as attributes on the ops they
  /// go before (OffloadDialect::kLoadStartsAttrName, kOffloadWaitsAttrName),
  /// for offload-schedule-copies. Each names every saved value the copy
  /// carries (a shared copy carries several). Positions of the model before
  /// the copies exist are ops that the passes in between keep in order,
  /// except views, which offload-reorder-backward moves: a copy placed
  /// before a view goes before the next op that is no view (views take no
  /// time and hold no memory of their own), and never a constant, which
  /// canonicalization may fold or hoist. A copy placed at the end of its
  /// function is recorded on the terminator, so every copy has a placement
  /// and offload-schedule-copies can tell a lost one.
  void recordPlacements(const TrainingStep &step, const StepModel &model,
                        const CopyPlan &plan) {
    unsigned numOps = model.getNumOps(), numForward = model.getNumForwardOps();
    // The op at or after `pos` that the passes in between keep: no view, and
    // no constant (canonicalization folds, hoists and merges those); the
    // terminator of `block` if none is.
    auto anchorAt = [&](unsigned pos, unsigned end,
                        FunctionOpInterface function) -> Operation * {
      for (; pos < end; ++pos) {
        Operation *op = model.getOp(pos);
        if (!getViewSource(op) && !op->hasTrait<OpTrait::ConstantLike>())
          return op;
      }
      return function.getFunctionBody().front().getTerminator();
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
    for (unsigned index : loads) {
      const PlannedCopy &copy = plan.copies[index];
      llvm::append_range(
          loadStarts[anchorAt(copy.issuePos, numOps, step.getBackward())],
          carried[index]);
    }
    for (auto [index, copy] : llvm::enumerate(plan.copies)) {
      if (copy.kind != PlannedCopy::Kind::Offload)
        continue;
      llvm::append_range(
          offloadWaits[anchorAt(std::min(copy.waitPos, numForward), numForward,
                                step.getForward())],
          carried[index]);
    }
    Builder builder(&getContext());
    for (auto &[op, indices] : loadStarts)
      op->setAttr(OffloadDialect::kLoadStartsAttrName,
                  builder.getDenseI64ArrayAttr(indices));
    for (auto &[op, indices] : offloadWaits)
      op->setAttr(OffloadDialect::kOffloadWaitsAttrName,
                  builder.getDenseI64ArrayAttr(indices));
  }

  /// plan=hidden: first fit in `order`, each candidate kept if the plan with
  /// it predicts a step within `limit`. Done in batches: the next candidates
  /// StepTimeBound does not rule out are simulated together; if they fit they
  /// are all kept (doubling the next batch), else bisection finds the longest
  /// prefix that fits, keeps it and drops the candidate after it. Each kept
  /// batch and each dropped candidate is decided by a simulation of exactly
  /// the plan first fit would simulate for it, or by the bound; so the result
  /// is first fit's wherever adding offloads never shortens the predicted
  /// step (see docs/scaling.md), with O(log) simulations per run of kept or
  /// dropped candidates instead of one per candidate. After
  /// `hidden-patience` candidates in a row are simulated and dropped, the
  /// rest (the smallest) are not tried.
  void fitHidden(const Planner &planner, ArrayRef<unsigned> order,
                 double limit, double interferenceLimit,
                 SmallVector<unsigned> &chosen) {
    const StepModel &model = planner.getModel();
    // `bound` holds the loads kept; `batchBound` those and the batch's, so
    // that growing a batch costs its new loads only.
    StepTimeBound bound(model, !schedule), batchBound(bound);
    using Load = StepTimeBound::Load;
    auto loadsOf = [&](unsigned c, SmallVectorImpl<Load> &loads) {
      bound.appendLoads(planner.candidates[c].links, loads);
    };
    // The D2H copies of the plan kept so far: a candidate's load starts no
    // earlier than its offload ends, and the compute stream still has to run
    // from the load's wait to the end of the step.
    OffloadQueue queue(model);
    double computeEnd = model.getComputeStart(model.getNumOps());
    auto copiesBound = [&](unsigned c) {
      const Candidate &candidate = planner.candidates[c];
      std::optional<double> offloaded =
          queue.earliestEnd(candidate.links, candidate.bytes);
      double result = 0;
      if (!offloaded)
        return result;
      for (StepModel::PlannedLoad load : model.getPlannedLoads(candidate.links))
        result = std::max(
            result,
            *offloaded +
                model.getMinCopySeconds(PlannedCopy::Kind::Load, load.bytes) +
                computeEnd - model.getComputeStart(load.wait));
      return result;
    };
    using Fit = std::pair<CopyPlan, SimulationResult>;
    // The plan with `batch` added to those kept and its simulation, if it
    // fits. Hidden means no copy exposed (within `limit`); kernels slowed by
    // the copies beside them (copy_interference), which any offload costs,
    // have a limit of their own.
    auto trySimulate = [&](ArrayRef<unsigned> batch) -> std::optional<Fit> {
      SmallVector<unsigned> trial(chosen);
      llvm::append_range(trial, batch);
      CopyPlan plan;
      SimulationResult result = planner.simulate(trial, &plan);
      if (result.stepSeconds - result.interferenceSeconds > limit ||
          result.interferenceSeconds > interferenceLimit)
        return std::nullopt;
      return Fit(std::move(plan), std::move(result));
    };
    // The simulation of the last batch prefix that fit.
    std::optional<Fit> lastFit;
    auto fits = [&](ArrayRef<unsigned> batch) {
      std::optional<Fit> fit = trySimulate(batch);
      if (!fit)
        return false;
      lastFit = std::move(fit);
      return true;
    };
    // Ruled out next to the offloads kept so far: first fit drops it.
    // The bounds start loads no earlier than backward does; loads the
    // backward graph before starts (prefetch-lead) break them, and only the
    // simulation decides.
    bool prefetch = model.getExecutionModel().prefetchLead > 0;
    auto ruledOut = [&](unsigned c, ArrayRef<Load> loads) {
      return !prefetch && (exceeds(bound.boundWith(loads), limit) ||
                           exceeds(copiesBound(c), limit));
    };
    auto keep = [&](ArrayRef<unsigned> kept) {
      SmallVector<Load> keptLoads;
      for (unsigned c : kept) {
        chosen.push_back(c);
        loadsOf(c, keptLoads);
      }
      bound.add(keptLoads);
      batchBound.add(keptLoads);
      // The last simulation that fit is that of the plan now kept.
      if (!kept.empty())
        queue.update(lastFit->first, lastFit->second);
    };
    MLIRContext *context = &getContext();
    unsigned threads = context->isMultithreadingEnabled()
                           ? context->getThreadPool().getMaxConcurrency()
                           : 1;
    size_t next = 0, width = 1;
    // Candidates simulated and dropped since the last one kept.
    unsigned droppedInRow = 0;
    while (next < order.size()) {
      // In a run of drops each candidate is its own batch, decided against
      // the same kept plan: the next few are simulated at once, each alone
      // next to that plan, on the context's threads. The first that fits is
      // kept; those before it are dropped as in order; the simulations of
      // those after it (against a plan that no longer holds) are discarded.
      if (droppedInRow > 0 && width == 1 && threads > 1) {
        SmallVector<size_t> trialAt;
        for (size_t i = next; i < order.size() && trialAt.size() < threads;
             ++i) {
          SmallVector<Load> loads;
          loadsOf(order[i], loads);
          if (!ruledOut(order[i], loads))
            trialAt.push_back(i);
        }
        if (trialAt.empty())
          break; // The bound rules out every candidate left.
        SmallVector<std::optional<Fit>, 0> trials(trialAt.size());
        parallelFor(context, 0, trialAt.size(), [&](size_t t) {
          trials[t] = trySimulate(order[trialAt[t]]);
        });
        bool stop = false;
        for (auto [at, trial] : llvm::zip_equal(trialAt, trials)) {
          next = at + 1;
          if (trial) {
            lastFit = std::move(trial);
            keep(order[at]);
            width = 2;
            droppedInRow = 0;
            break;
          }
          if (hiddenPatience > 0 && ++droppedInRow >= hiddenPatience) {
            stop = true;
            break;
          }
        }
        if (stop)
          break;
        continue;
      }
      SmallVector<unsigned> batch;
      SmallVector<size_t> batchAt;
      SmallVector<Load> batchLoads;
      for (size_t i = next; i < order.size() && batch.size() < width; ++i) {
        SmallVector<Load> loads;
        loadsOf(order[i], loads);
        if (ruledOut(order[i], loads))
          continue;
        batchBound.add(loads);
        if (!batch.empty() && !prefetch &&
            exceeds(batchBound.current(), limit)) {
          batchBound.remove(loads);
          break;
        }
        llvm::append_range(batchLoads, loads);
        batch.push_back(order[i]);
        batchAt.push_back(i);
      }
      if (batch.empty())
        break; // The bound rules out every candidate left.
      // The longest prefix that fits: first fit keeps it and drops the
      // candidate after it.
      size_t kept = longestHoldingPrefix(batch.size(), [&](size_t length) {
        return fits(ArrayRef(batch).take_front(length));
      });
      batchBound.remove(batchLoads);
      keep(ArrayRef(batch).take_front(kept));
      if (kept == batch.size()) {
        next = batchAt.back() + 1;
        width *= 2;
        droppedInRow = 0;
      } else {
        next = batchAt[kept] + 1;
        width = std::max<size_t>(1, kept);
        droppedInRow = kept == 0 ? droppedInRow + 1 : 1;
        // Candidates come largest first; past a long run of drops the rest
        // rarely fit, and trying each costs a simulation of the whole step.
        if (hiddenPatience > 0 && droppedInRow >= hiddenPatience)
          break;
      }
    }
  }

  /// plan=budget: greedy. While the peak is over the budget, offload the
  /// candidate live at the peak that frees the most peak bytes per second of
  /// added step time (its score; ties: the first candidate); then drop
  /// offloads the budget no longer needs. See greedyToBudget and
  /// dropUnneeded for how this is done without simulating every candidate
  /// at every step, and docs/scaling.md for what that keeps.
  /// The smallest predicted peak fitBudget reached when it found no plan
  /// within the budget.
  int64_t reachedPeak = 0;
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
                                int64_t peakWithout) {
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

  LogicalResult fitBudget(const Planner &planner,
                          const SimulationResult &baseline, int64_t limit,
                          SmallVector<unsigned> &chosen,
                          const TrainingStep &step, bool report = true) {
    SimulationResult current = baseline;
    greedyToBudget(planner, limit, chosen, current);
    int64_t reachable = current.peakBytes;
    if (current.peakBytes > limit) {
      // The greedy stops where no single offload lowers the peak; offloading
      // everything may still fit, and the step below drops what it need not.
      SmallVector<unsigned> all =
          llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
      SimulationResult everything = planner.simulate(all);
      reachable = std::min(reachable, everything.peakBytes);
      if (everything.peakBytes <= limit) {
        chosen = std::move(all);
        current = std::move(everything);
      }
    }
    if (current.peakBytes > limit) {
      reachedPeak = reachable;
      if (!report)
        return failure();
      return emitBudgetError(step, limit, baseline.peakBytes);
    }
    dropUnneeded(planner, limit, chosen, current);
    return success();
  }

  /// What offloading one candidate does next to the offloads chosen: the
  /// peak bytes it frees and the step time it adds.
  struct Effect {
    int64_t gain = 0;
    double cost = 0;
    double score() const { return double(gain) / std::max(cost, 1e-9); }
  };

  /// The greedy of fitBudget, lazily and in batches. Every candidate has an
  /// effect that is assumed to bound its current one (gain at most, cost at
  /// least): at first its bytes and the least time its loads stall the
  /// compute stream (with synchronous loads; else 0); once simulated, its
  /// effect then. That holds where a candidate's gain never grows and its
  /// cost never shrinks as offloads are added (docs/scaling.md). So the
  /// candidate whose assumed score is highest is the greedy's choice once
  /// its effect is exact. The next candidates in that order (live at the
  /// peak, up to a width that doubles after each batch that holds, and until
  /// the budget would be met) are simulated together; if the peak and the
  /// step are exactly what their assumed effects add up to, each of them had
  /// exactly its assumed effect when the greedy would have taken it (each is
  /// a bound, and they add up), and they are all taken. If not, bisection
  /// finds the longest prefix that does, takes it, and the simulation that
  /// refuted the next candidate gives its exact effect; it goes back into
  /// the order. A candidate not live at the peak waits until the peak has
  /// moved; one whose offload frees nothing at the peak, until the peak is
  /// at another op. Without simulating it, a candidate is taken to free
  /// nothing at the peak if its offload cannot end before the peak: queued
  /// on the serial D2H stream behind the offloads issued before it (as they
  /// end now), from where the compute stream alone would issue it.
  void greedyToBudget(const Planner &planner, int64_t limit,
                      SmallVector<unsigned> &chosen,
                      SimulationResult &current) {
    const StepModel &model = planner.getModel();
    unsigned numCandidates = planner.candidates.size();
    auto bound = [&](unsigned c) {
      Effect effect{planner.candidates[c].bytes, 0};
      if (!schedule)
        for (StepModel::PlannedLoad load :
             model.getPlannedLoads(planner.candidates[c].links))
          effect.cost +=
              model.getMinCopySeconds(PlannedCopy::Kind::Load, load.bytes);
      return effect;
    };
    SmallVector<Effect> effect;
    for (unsigned c = 0; c < numCandidates; ++c)
      effect.push_back(bound(c));
    // Highest score first, then the first candidate, as the greedy's loop.
    auto after = [&](unsigned a, unsigned b) {
      double x = effect[a].score(), y = effect[b].score();
      if (x != y)
        return x < y;
      return a > b;
    };
    std::priority_queue<unsigned, std::vector<unsigned>, decltype(after)>
        order(after);
    for (unsigned c = 0; c < numCandidates; ++c)
      if (effect[c].gain > 0)
        order.push(c);
    // Out of the order: not live at the peak; freeing nothing at the peak
    // when it was at that op.
    SmallVector<unsigned> notLive;
    SmallVector<std::pair<unsigned, unsigned>> gainless;
    // The simulation of one candidate next to the current choice, and which.
    std::optional<std::pair<unsigned, std::pair<SimulationResult, CopyPlan>>>
        lastTrial;
    // Per candidate, the choice its effect is exact for, or -1.
    unsigned version = 0;
    SmallVector<int> exactAt(numCandidates, -1);
    // The D2H copies of the current plan (none at first).
    OffloadQueue queue(model);
    // Only where nothing can stall the compute stream before the peak's op
    // (no load waited there, no offload waited with Release::AtWait), so
    // that the ops up to the peak run at the same times with the candidate:
    // a stall there lets more copies end before the peak, which can lower
    // it. Nor may any load be issued there (its placement may change).
    // Nor with copy_interference: a candidate's copy slows the ops before
    // the peak, so the peak itself moves later.
    bool waitsAtWait = model.getExecutionModel().release ==
                           ExecutionModel::Release::AtWait ||
                       model.getCopyInterference() > 0;
    auto endsAfterPeak = [&](unsigned c) {
      const Candidate &candidate = planner.candidates[c];
      unsigned peakPos = current.peakPos;
      if (waitsAtWait || queue.getFirstLoad() <= peakPos + 1)
        return false;
      for (StepModel::PlannedLoad load : model.getPlannedLoads(candidate.links))
        if (load.wait <= peakPos + 1)
          return false;
      std::optional<double> end =
          queue.earliestEnd(candidate.links, candidate.bytes);
      return end && *end > current.peakTime;
    };
    size_t width = 1;
    while (current.peakBytes > limit) {
      SmallVector<unsigned> batch;
      SmallVector<int64_t> predictedPeak;
      SmallVector<double> predictedStep;
      int64_t peak = current.peakBytes;
      double stepSeconds = current.stepSeconds;
      while (!order.empty() && batch.size() < width) {
        unsigned c = order.top();
        order.pop();
        if (!current.liveAtPeak[planner.candidates[c].buffer]) {
          notLive.push_back(c);
          continue;
        }
        if (exactAt[c] != int(version) && endsAfterPeak(c)) {
          gainless.push_back({c, current.peakPos});
          continue;
        }
        batch.push_back(c);
        peak -= effect[c].gain;
        stepSeconds += effect[c].cost;
        predictedPeak.push_back(peak);
        predictedStep.push_back(stepSeconds);
        if (peak <= limit)
          break;
      }
      if (batch.empty())
        break; // No candidate left lowers the peak.

      // Simulations of the choice with a prefix of the batch, by length.
      std::map<size_t, std::pair<SimulationResult, CopyPlan>> tried;
      if (lastTrial && lastTrial->first == batch.front())
        tried.emplace(1, std::move(lastTrial->second));
      lastTrial.reset();
      auto trialAndPlan = [&](size_t length) -> std::pair<SimulationResult, CopyPlan> & {
        auto it = tried.find(length);
        if (it == tried.end()) {
          SmallVector<unsigned> choice(chosen);
          llvm::append_range(choice, ArrayRef(batch).take_front(length));
          CopyPlan plan;
          SimulationResult result = planner.simulate(choice, &plan);
          it = tried.emplace(length, std::make_pair(std::move(result),
                                                    std::move(plan)))
                   .first;
        }
        return it->second;
      };
      auto trial = [&](size_t length) -> const SimulationResult & {
        return trialAndPlan(length).first;
      };
      auto holds = [&](size_t length) {
        const SimulationResult &result = trial(length);
        double step = predictedStep[length - 1];
        return result.peakBytes == predictedPeak[length - 1] &&
               std::abs(result.stepSeconds - step) <= 1e-9 * std::abs(step);
      };
      size_t taken = longestHoldingPrefix(batch.size(), holds);
      if (taken > 0) {
        llvm::append_range(chosen, ArrayRef(batch).take_front(taken));
        current = trial(taken);
        queue.update(trialAndPlan(taken).second, current);
        ++version;
      }
      if (taken < batch.size()) {
        // Its exact effect next to the new choice: the simulation that
        // refuted it.
        unsigned c = batch[taken];
        const SimulationResult &result = trial(taken + 1);
        effect[c] = {current.peakBytes - result.peakBytes,
                     result.stepSeconds - current.stepSeconds};
        exactAt[c] = version;
        if (effect[c].gain > 0) {
          order.push(c);
          lastTrial.emplace(c, trialAndPlan(taken + 1));
        } else {
          gainless.push_back({c, current.peakPos});
        }
        for (unsigned rest : ArrayRef(batch).drop_front(taken + 1))
          order.push(rest);
        width = std::max<size_t>(1, taken);
      } else {
        width *= 2;
      }
      if (taken == 0)
        continue;
      // The peak has changed: what was set aside may count again.
      llvm::erase_if(notLive, [&](unsigned c) {
        if (!current.liveAtPeak[planner.candidates[c].buffer])
          return false;
        order.push(c);
        return true;
      });
      llvm::erase_if(gainless, [&](std::pair<unsigned, unsigned> entry) {
        if (entry.second == current.peakPos)
          return false;
        effect[entry.first] = bound(entry.first);
        exactAt[entry.first] = -1;
        order.push(entry.first);
        return true;
      });
    }
  }

  /// Drops offloads the budget no longer needs, latest choice first: each
  /// one whose removal keeps the peak within the budget and predicts a step
  /// no slower. A candidate is kept without a simulation if it is not live
  /// at the peak though it would be without its offload, and its bytes do
  /// not fit between the peak and the budget (so its removal would raise the
  /// peak over the budget unless it moved the other copies' releases). The
  /// others are tried in batches: a batch whose removal holds is dropped
  /// (every prefix of it then holds where removing offloads never raises the
  /// peak nor slows the step), else bisection finds the longest prefix that
  /// holds and keeps the candidate after it (its simulation is the one the
  /// one-by-one search makes for it).
  void dropUnneeded(const Planner &planner, int64_t limit,
                    SmallVector<unsigned> &chosen, SimulationResult &current) {
    SmallVector<std::pair<int, int>> ranges =
        planner.getModel().getLiveRangesWithoutOffload();
    auto needed = [&](unsigned c) {
      const Candidate &candidate = planner.candidates[c];
      auto [def, last] = ranges[candidate.buffer];
      int peakPos = current.peakPos;
      if (peakPos <= def || peakPos >= last ||
          current.liveAtPeak[candidate.buffer])
        return false;
      for (unsigned link : candidate.links)
        if (current.loadLiveAtPeak[link])
          return false;
      return current.peakBytes + candidate.bytes > limit;
    };
    SmallVector<unsigned> latestFirst(llvm::reverse(chosen));
    llvm::SmallDenseSet<unsigned> dropped;
    size_t next = 0, width = 1;
    while (next < latestFirst.size()) {
      if (needed(latestFirst[next])) {
        ++next;
        continue;
      }
      SmallVector<unsigned> batch;
      for (size_t i = next; i < latestFirst.size() && batch.size() < width &&
                            !needed(latestFirst[i]);
           ++i)
        batch.push_back(latestFirst[i]);
      std::map<size_t, SimulationResult> tried;
      auto trial = [&](size_t length) -> const SimulationResult & {
        auto it = tried.find(length);
        if (it == tried.end()) {
          llvm::SmallDenseSet<unsigned> removed(dropped.begin(), dropped.end());
          removed.insert(batch.begin(), batch.begin() + length);
          SmallVector<unsigned> plan;
          for (unsigned c : chosen)
            if (!removed.contains(c))
              plan.push_back(c);
          it = tried.emplace(length, planner.simulate(plan)).first;
        }
        return it->second;
      };
      auto holds = [&](size_t length) {
        const SimulationResult &result = trial(length);
        return result.peakBytes <= limit &&
               result.stepSeconds <= current.stepSeconds;
      };
      size_t removed = longestHoldingPrefix(batch.size(), holds);
      dropped.insert(batch.begin(), batch.begin() + removed);
      if (removed > 0)
        current = trial(removed);
      if (removed == batch.size()) {
        next += removed;
        width *= 2;
      } else {
        next += removed + 1;
        width = std::max<size_t>(1, removed);
      }
    }
    llvm::erase_if(chosen, [&](unsigned c) { return dropped.contains(c); });
  }
};
} // namespace
