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

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace offload {
#define GEN_PASS_DEF_PLANOFFLOADS
#include "offload/Transforms/Passes.h.inc"
} // namespace offload
} // namespace mlir

using namespace mlir;
using namespace mlir::offload;

static std::string formatGiB(int64_t bytes) {
  return llvm::formatv("{0:f2} GiB", double(bytes) / (1ull << 30)).str();
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

  SmallVector<Candidate> candidates;

private:
  const StepModel &model;
  bool schedule;
  int64_t maxInflight;
};
} // namespace

namespace {
struct PlanOffloads : public offload::impl::PlanOffloadsBase<PlanOffloads> {
  using Base::Base;

  void runOnOperation() override {
    std::string mode = plan;
    if (mode != "all" && mode != "hidden" && mode != "budget") {
      getOperation().emitError()
          << "offload-plan: unknown plan '" << mode
          << "' (expected 'all', 'hidden' or 'budget')";
      return signalPassFailure();
    }
    if (!budget.empty() && mode == "all")
      mode = "budget";
    if (mode == "budget" && budget.empty()) {
      getOperation().emitError() << "offload-plan: plan=budget needs budget=";
      return signalPassFailure();
    }
    if (mode == "hidden" && !budget.empty()) {
      getOperation().emitError()
          << "offload-plan: budget= plans to a budget; it cannot be combined "
             "with plan=hidden";
      return signalPassFailure();
    }
    if (mode == "all") {
      markAllAnalysesPreserved();
      return;
    }
    FailureOr<DeviceProfile> profile =
        getPassDeviceProfile(
        getArgument(), OFFLOAD_PASS_PROFILE_OVERRIDES(), getOperation());
    if (failed(profile))
      return signalPassFailure();
    FailureOr<ExecutionModel> execution = getPassExecutionModel(
        getArgument(), release, fuseMemoryBound, getOperation());
    if (failed(execution))
      return signalPassFailure();
    FailureOr<int64_t> inflight = parseBytesOption(
        getArgument(), "max-inflight-bytes", maxInflightBytes, getOperation());
    if (failed(inflight))
      return signalPassFailure();

    SmallVector<TrainingStep> steps;
    if (failed(TrainingStep::collect(getOperation(), steps)))
      return signalPassFailure();
    CostModel costModel(*profile);
    for (const TrainingStep &step : steps)
      if (failed(planStep(step, costModel, *execution, mode, *inflight)))
        return signalPassFailure();
  }

  LogicalResult planStep(const TrainingStep &step, const CostModel &costModel,
                         const ExecutionModel &execution, StringRef mode,
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
    if (mode == "hidden") {
      reason = "plan: its copy cannot be hidden under compute";
      SmallVector<unsigned> order =
          llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
      llvm::stable_sort(order, [&](unsigned a, unsigned b) {
        return planner.candidates[a].bytes > planner.candidates[b].bytes;
      });
      double limit = baseline.stepSeconds * (1 + maxSlowdown);
      for (unsigned c : order) {
        chosen.push_back(c);
        if (planner.simulate(chosen).stepSeconds > limit)
          chosen.pop_back();
      }
    } else {
      reason = "plan: not needed to fit the budget";
      FailureOr<int64_t> limit = resolveBudget(baseline.peakBytes);
      if (failed(limit))
        return failure();
      if (failed(fitBudget(planner, baseline, *limit, chosen, step)))
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

  /// The budget in bytes: a byte size, or a fraction of `peakWithout`.
  FailureOr<int64_t> resolveBudget(int64_t peakWithout) {
    StringRef text = StringRef(budget).trim();
    double fraction;
    if (!text.getAsDouble(fraction) && fraction > 0 && fraction <= 1)
      return static_cast<int64_t>(fraction * double(peakWithout));
    return parseBytesOption(getArgument(), "budget", text, getOperation());
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
      return step.getForward().emitError()
             << "offload-plan: no plan fits the budget of " << formatGiB(limit)
             << " (" << limit << " bytes): the smallest predicted peak is "
             << formatGiB(reachable) << " (" << reachable
             << " bytes); without offload it is "
             << formatGiB(baseline.peakBytes) << " (" << baseline.peakBytes
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
