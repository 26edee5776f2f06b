//===- PlanOffloads.cpp - Choose what to offload from predicted cost ------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Guarantees: only ever narrows the selection of offload-find-saved-
// activations. A selected saved result it does not keep selected gets
// `offload.kept = "plan: <why>"`. Saved results sharing a storage are kept
// or offloaded together. With plan=budget, the cost model's predicted peak
// device memory of the resulting plan is at most the budget, or the pass
// fails with an error giving the smallest peak it could reach. With
// plan=hidden, the predicted step time grows by at most max-slowdown. The
// plan=all default changes nothing.
//
//===----------------------------------------------------------------------===//

#include "PassDeviceProfile.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Transforms/Passes.h"
#include "offload_support/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_PLANOFFLOADS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

namespace {
/// A `budget=`: bytes, or a fraction of the predicted peak without offload.
struct Budget {
  std::optional<int64_t> bytes;
  double fraction = 1;

  int64_t resolve(int64_t peakWithout) const {
    return bytes ? *bytes : static_cast<int64_t>(fraction * double(peakWithout));
  }
};
} // namespace

/// A number in (0, 1] is a fraction; anything else a byte size.
static FailureOr<Budget> parseBudget(StringRef text, Operation *anchor) {
  text = text.trim();
  Budget budget;
  double number;
  bool isNumber = !text.getAsDouble(number);
  if (isNumber && number > 0 && number <= 1) {
    budget.fraction = number;
    return budget;
  }
  std::string error;
  budget.bytes =
      offload_support::parseByteSize({text.data(), text.size()}, &error);
  if (!budget.bytes) {
    InFlightDiagnostic diag = emitError(anchor->getLoc())
                              << "option budget: " << error;
    if (isNumber)
      diag << "; a fraction of the predicted peak without offload is in "
              "(0, 1]";
    return failure();
  }
  return budget;
}

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

  SimulationResult simulate(ArrayRef<unsigned> chosen) const {
    SmallVector<unsigned> links;
    for (unsigned c : chosen)
      llvm::append_range(links, candidates[c].links);
    SimulationResult result;
    model.planFor(links, schedule, maxInflight, &result);
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
    for (unsigned link : links)
      if (std::optional<unsigned> wait = model.getPlannedLoadWait(link))
        loads.push_back({*wait, model.getMinCopySeconds(
                                    PlannedCopy::Kind::Load,
                                    model.getLinkBytes(link))});
  }

  /// The bound with `extra` loads added to those kept.
  double boundWith(ArrayRef<Load> extra) {
    apply(extra, 1);
    double result = current();
    apply(extra, -1);
    return result;
  }
  void add(ArrayRef<Load> loads) { apply(loads, 1); }

private:
  double current() const {
    if (synchronousLoads)
      return computeEnd + total;
    return computeEnd + std::max(0.0, top[1]);
  }
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

/// The bound rules a plan out if it exceeds `limit` by more than rounding:
/// the simulation sums op times in another order.
static bool exceeds(double bound, double limit) {
  return bound > limit + 1e-9 * std::abs(limit);
}
} // namespace

namespace {
struct PlanOffloads : public offload::impl::PlanOffloadsBase<PlanOffloads> {
  using Base::Base;

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
    if (mode == PlanMode::All) {
      markAllAnalysesPreserved();
      return;
    }
    FailureOr<DeviceProfile> profile =
        getPassDeviceProfile(OFFLOAD_PASS_PROFILE_OVERRIDES(), getOperation());
    if (failed(profile))
      return signalPassFailure();
    ExecutionModel execution = getPassExecutionModel(release, fuseMemoryBound);
    FailureOr<int64_t> inflight = parseBytesOption("max-inflight-bytes", maxInflightBytes, getOperation());
    if (failed(inflight))
      return signalPassFailure();
    if (mode == PlanMode::Budget) {
      FailureOr<Budget> parsed =
          parseBudget(budget, getOperation());
      if (failed(parsed))
        return signalPassFailure();
      budgetValue = *parsed;
    }

    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    CostModel costModel(*profile);
    for (const TrainingStep &step : steps)
      if (failed(planStep(step, costModel, execution, mode, *inflight)))
        return signalPassFailure();
  }

  /// The parsed `budget` option, for plan=budget.
  Budget budgetValue;

  LogicalResult planStep(const TrainingStep &step, const CostModel &costModel,
                         const ExecutionModel &execution, PlanMode mode,
                         int64_t inflight) {
    FunctionOpInterface forward = step.getForward();
    FailureOr<StepModel> model = StepModel::build(step, costModel, execution);
    if (failed(model))
      return failure();
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
      double limit = baseline.stepSeconds * (1 + maxSlowdown);
      fitHidden(planner, order, limit, chosen);
    } else {
      reason = "plan: not needed to fit the budget";
      int64_t limit = budgetValue.resolve(baseline.peakBytes);
      if (failed(fitBudget(planner, baseline, limit, chosen, step)))
        return failure();
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
    return success();
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
  /// dropped candidates instead of one per candidate.
  void fitHidden(const Planner &planner, ArrayRef<unsigned> order,
                 double limit, SmallVector<unsigned> &chosen) {
    StepTimeBound bound(planner.getModel(), !schedule);
    using Load = StepTimeBound::Load;
    auto loadsOf = [&](unsigned c, SmallVectorImpl<Load> &loads) {
      bound.appendLoads(planner.candidates[c].links, loads);
    };
    auto fits = [&](ArrayRef<unsigned> batch) {
      SmallVector<unsigned> trial(chosen);
      llvm::append_range(trial, batch);
      return planner.simulate(trial).stepSeconds <= limit;
    };
    size_t next = 0, width = 1;
    while (next < order.size()) {
      SmallVector<unsigned> batch;
      SmallVector<size_t> batchAt;
      SmallVector<Load> batchLoads;
      for (size_t i = next; i < order.size() && batch.size() < width; ++i) {
        SmallVector<Load> loads;
        loadsOf(order[i], loads);
        // Ruled out next to the offloads kept so far: first fit drops it.
        if (exceeds(bound.boundWith(loads), limit))
          continue;
        size_t before = batchLoads.size();
        llvm::append_range(batchLoads, loads);
        if (!batch.empty() && exceeds(bound.boundWith(batchLoads), limit)) {
          batchLoads.truncate(before);
          break;
        }
        batch.push_back(order[i]);
        batchAt.push_back(i);
      }
      if (batch.empty())
        break; // The bound rules out every candidate left.
      size_t kept = batch.size();
      if (!fits(batch)) {
        // The longest prefix that fits: batch[0, lo) fits, batch[0, hi)
        // does not; first fit keeps batch[0, lo) and drops batch[lo].
        size_t lo = 0, hi = batch.size();
        while (hi - lo > 1) {
          size_t mid = (lo + hi) / 2;
          if (fits(ArrayRef(batch).take_front(mid)))
            lo = mid;
          else
            hi = mid;
        }
        kept = lo;
      }
      SmallVector<Load> keptLoads;
      for (unsigned c : ArrayRef(batch).take_front(kept)) {
        chosen.push_back(c);
        loadsOf(c, keptLoads);
      }
      bound.add(keptLoads);
      if (kept == batch.size()) {
        next = batchAt.back() + 1;
        width *= 2;
      } else {
        next = batchAt[kept] + 1;
        width = std::max<size_t>(1, kept);
      }
    }
  }

  /// Greedy: while the peak is over the budget, offload the candidate live
  /// at the peak that frees the most peak bytes per second of added step
  /// time; then drop offloads the budget no longer needs.
  LogicalResult fitBudget(const Planner &planner,
                          const SimulationResult &baseline, int64_t limit,
                          SmallVector<unsigned> &chosen,
                          const TrainingStep &step) {
    SimulationResult current = baseline;
    SmallVector<bool> taken(planner.candidates.size(), false);
    while (current.peakBytes > limit) {
      int best = -1;
      double bestScore = 0;
      SimulationResult bestResult;
      for (auto [c, candidate] : llvm::enumerate(planner.candidates)) {
        if (taken[c] || !current.liveAtPeak[candidate.buffer])
          continue;
        chosen.push_back(c);
        SimulationResult trial = planner.simulate(chosen);
        chosen.pop_back();
        int64_t gain = current.peakBytes - trial.peakBytes;
        if (gain <= 0)
          continue;
        double cost = std::max(trial.stepSeconds - current.stepSeconds, 1e-9);
        double score = double(gain) / cost;
        if (best < 0 || score > bestScore) {
          best = c;
          bestScore = score;
          bestResult = std::move(trial);
        }
      }
      if (best < 0)
        break;
      taken[best] = true;
      chosen.push_back(best);
      current = std::move(bestResult);
    }
    if (current.peakBytes > limit) {
      // The greedy stops where no single offload lowers the peak; offloading
      // everything may still fit, and the step below drops what it need not.
      SmallVector<unsigned> all =
          llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
      SimulationResult everything = planner.simulate(all);
      if (everything.peakBytes <= limit) {
        chosen = std::move(all);
        current = std::move(everything);
      }
    }
    if (current.peakBytes > limit) {
      SmallVector<unsigned> all =
          llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
      int64_t reachable =
          std::min(current.peakBytes, planner.simulate(all).peakBytes);
      // Two decimals: the peaks are often within a tenth of the budget.
      auto format = [](int64_t bytes) {
        return offload_support::formatByteSize(bytes, /*decimals=*/2);
      };
      return step.getForward().emitError()
             << "no plan fits the budget of " << format(limit)
             << " (" << limit << " bytes): the smallest predicted peak is "
             << format(reachable) << " (" << reachable
             << " bytes); without offload it is "
             << format(baseline.peakBytes) << " (" << baseline.peakBytes
             << " bytes)";
    }
    // Drop offloads that are no longer needed, latest choice first.
    for (int i = int(chosen.size()) - 1; i >= 0; --i) {
      SmallVector<unsigned> trial(chosen);
      trial.erase(trial.begin() + i);
      SimulationResult result = planner.simulate(trial);
      if (result.peakBytes <= limit &&
          result.stepSeconds <= current.stepSeconds) {
        chosen = std::move(trial);
        current = std::move(result);
      }
    }
    return success();
  }
};
} // namespace
