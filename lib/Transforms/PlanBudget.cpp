//===- PlanBudget.cpp - plan=budget: the greedy that fits a peak budget ---===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// fitBudget: while the peak is over the budget, offload the candidate live at
// the peak that frees the most peak bytes per second of added step time (its
// score; ties: the first candidate); then drop offloads the budget no longer
// needs. BudgetGreedy and dropUnneededOffloads do this without simulating
// every candidate at every step; docs/scaling.md says what that keeps.
// plan=hidden's drop-peak-neutral uses dropUnneededOffloads too.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"
#include "offload/Analysis/Bisection.h"

#include "llvm/Support/Debug.h"

#include <map>
#include <queue>

#define DEBUG_TYPE "offload-plan"

using namespace mlir;
using namespace mlir::offload;

namespace {
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
class BudgetGreedy {
public:
  BudgetGreedy(const Planner &planner, int64_t limit, bool loadsStall,
               SmallVector<unsigned> &chosen, SimulationResult &current);

  void run();

private:
  using Trial = std::pair<SimulationResult, CopyPlan>;
  /// A batch in the order, and the peak and step its assumed effects add up
  /// to with each prefix.
  struct Batch {
    SmallVector<unsigned> candidates;
    SmallVector<int64_t> predictedPeak;
    SmallVector<double> predictedStep;
  };

  Effect initialBound(unsigned c) const;
  bool endsAfterPeak(unsigned c) const;
  Batch nextBatch();
  void decide(const Batch &batch);
  void takeBackSetAside();

  const Planner &planner;
  const StepModel &model;
  int64_t limit;
  bool loadsStall;
  SmallVector<unsigned> &chosen;
  SimulationResult &current;
  SmallVector<Effect> effect;
  /// Highest score first, then the first candidate, as the greedy's loop.
  std::function<bool(unsigned, unsigned)> after;
  std::priority_queue<unsigned, std::vector<unsigned>,
                      std::function<bool(unsigned, unsigned)>>
      order;
  /// Out of the order: not live at the peak; freeing nothing at the peak
  /// when it was at that op.
  SmallVector<unsigned> notLive;
  SmallVector<std::pair<unsigned, unsigned>> gainless;
  /// The simulation of one candidate next to the current choice, and which.
  std::optional<std::pair<unsigned, Trial>> lastTrial;
  /// Per candidate, the choice its effect is exact for, or -1.
  unsigned version = 0;
  SmallVector<int> exactAt;
  /// The D2H copies of the current plan (none at first).
  OffloadQueue queue;
  /// Where something can stall the compute stream before the peak's op (an
  /// offload waited with Release::AtWait), or copy_interference slows the
  /// ops before it (so the peak itself moves later), a candidate's copies
  /// may move the peak: endsAfterPeak rules nothing out.
  bool peakMayMove;
  size_t width = 1;
};
} // namespace

BudgetGreedy::BudgetGreedy(const Planner &planner, int64_t limit,
                           bool loadsStall, SmallVector<unsigned> &chosen,
                           SimulationResult &current)
    : planner(planner), model(planner.getModel()), limit(limit),
      loadsStall(loadsStall), chosen(chosen), current(current),
      after([this](unsigned a, unsigned b) {
        double x = effect[a].score(), y = effect[b].score();
        if (x != y)
          return x < y;
        return a > b;
      }),
      order(after), exactAt(planner.candidates.size(), -1), queue(model) {
  peakMayMove =
      model.getExecutionModel().release == ExecutionModel::Release::AtWait ||
      model.getCopyInterference() > 0;
  for (unsigned c = 0, e = planner.candidates.size(); c < e; ++c)
    effect.push_back(initialBound(c));
  for (unsigned c = 0, e = planner.candidates.size(); c < e; ++c)
    if (effect[c].gain > 0)
      order.push(c);
}

Effect BudgetGreedy::initialBound(unsigned c) const {
  Effect bound{planner.candidates[c].bytes, 0};
  if (loadsStall)
    for (StepModel::PlannedLoad load :
         model.getPlannedLoads(planner.candidates[c].links))
      bound.cost +=
          model.getMinCopySeconds(PlannedCopy::Kind::Load, load.bytes);
  return bound;
}

/// Only where nothing can stall the compute stream before the peak's op (no
/// load waited there, no offload waited with Release::AtWait), so that the
/// ops up to the peak run at the same times with the candidate: a stall
/// there lets more copies end before the peak, which can lower it. Nor may
/// any load be issued there (its placement may change).
bool BudgetGreedy::endsAfterPeak(unsigned c) const {
  const Candidate &candidate = planner.candidates[c];
  unsigned peakPos = current.peakPos;
  if (peakMayMove || queue.getFirstLoad() <= peakPos + 1)
    return false;
  for (StepModel::PlannedLoad load : model.getPlannedLoads(candidate.links))
    if (load.wait <= peakPos + 1)
      return false;
  std::optional<double> end =
      queue.earliestEnd(candidate.links, candidate.bytes);
  return end && *end > current.peakTime;
}

BudgetGreedy::Batch BudgetGreedy::nextBatch() {
  Batch batch;
  int64_t peak = current.peakBytes;
  double stepSeconds = current.stepSeconds;
  while (!order.empty() && batch.candidates.size() < width) {
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
    batch.candidates.push_back(c);
    peak -= effect[c].gain;
    stepSeconds += effect[c].cost;
    batch.predictedPeak.push_back(peak);
    batch.predictedStep.push_back(stepSeconds);
    if (peak <= limit)
      break;
  }
  return batch;
}

/// Takes the longest prefix of `batch` whose simulation is what its assumed
/// effects add up to; the candidate after it gets its exact effect.
void BudgetGreedy::decide(const Batch &batch) {
  ArrayRef<unsigned> candidates = batch.candidates;
  // Simulations of the choice with a prefix of the batch, by length.
  std::map<size_t, Trial> tried;
  if (lastTrial && lastTrial->first == candidates.front())
    tried.emplace(1, std::move(lastTrial->second));
  lastTrial.reset();
  auto trial = [&](size_t length) -> Trial & {
    auto it = tried.find(length);
    if (it == tried.end()) {
      SmallVector<unsigned> choice(chosen);
      llvm::append_range(choice, candidates.take_front(length));
      CopyPlan plan;
      SimulationResult result = planner.simulate(choice, &plan);
      it = tried.emplace(length, Trial(std::move(result), std::move(plan)))
               .first;
    }
    return it->second;
  };
  size_t taken = longestHoldingPrefix(candidates.size(), [&](size_t length) {
    const SimulationResult &result = trial(length).first;
    double step = batch.predictedStep[length - 1];
    return result.peakBytes == batch.predictedPeak[length - 1] &&
           std::abs(result.stepSeconds - step) <= 1e-9 * std::abs(step);
  });
  LLVM_DEBUG(llvm::dbgs() << "[offload-plan] budget: batch of "
                          << candidates.size() << ", takes " << taken
                          << "; peak " << current.peakBytes << " -> "
                          << (taken ? trial(taken).first.peakBytes
                                    : current.peakBytes)
                          << "\n");
  if (taken > 0) {
    llvm::append_range(chosen, candidates.take_front(taken));
    current = trial(taken).first;
    queue.update(trial(taken).second, current);
    ++version;
  }
  if (taken == candidates.size()) {
    width *= 2;
    return;
  }
  // Its exact effect next to the new choice: the simulation that refuted it.
  unsigned c = candidates[taken];
  const SimulationResult &result = trial(taken + 1).first;
  effect[c] = {current.peakBytes - result.peakBytes,
               result.stepSeconds - current.stepSeconds};
  exactAt[c] = version;
  if (effect[c].gain > 0) {
    order.push(c);
    lastTrial.emplace(c, trial(taken + 1));
  } else {
    gainless.push_back({c, current.peakPos});
  }
  for (unsigned rest : candidates.drop_front(taken + 1))
    order.push(rest);
  width = std::max<size_t>(1, taken);
}

/// The peak has changed: what was set aside may count again.
void BudgetGreedy::takeBackSetAside() {
  llvm::erase_if(notLive, [&](unsigned c) {
    if (!current.liveAtPeak[planner.candidates[c].buffer])
      return false;
    order.push(c);
    return true;
  });
  llvm::erase_if(gainless, [&](std::pair<unsigned, unsigned> entry) {
    if (entry.second == current.peakPos)
      return false;
    effect[entry.first] = initialBound(entry.first);
    exactAt[entry.first] = -1;
    order.push(entry.first);
    return true;
  });
}

void BudgetGreedy::run() {
  while (current.peakBytes > limit) {
    Batch batch = nextBatch();
    if (batch.candidates.empty())
      break; // No candidate left lowers the peak.
    size_t before = chosen.size();
    decide(batch);
    if (chosen.size() > before)
      takeBackSetAside();
  }
}

/// Drops offloads a peak of at most `limit` (the budget) no longer needs,
/// latest choice first: each one whose removal keeps the peak within the
/// limit and a step `fastEnough` takes. A candidate is kept without a
/// simulation if it is not live at the peak though it would be without its
/// offload, and its bytes do not fit between the peak and the limit (so its
/// removal would raise the peak over the limit unless it moved the other
/// copies' releases). The others are tried in batches: a batch whose
/// removal holds is dropped (every prefix of it then holds where removing
/// offloads never raises the peak nor makes the step too slow), else
/// bisection finds the longest prefix that holds and keeps the candidate
/// after it (its simulation is the one the one-by-one search makes for it).
void mlir::offload::dropUnneededOffloads(
    const Planner &planner, int64_t limit,
    llvm::function_ref<bool(const SimulationResult &trial,
                            const SimulationResult &current)>
        fastEnough,
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
    size_t removed = longestHoldingPrefix(batch.size(), [&](size_t length) {
      const SimulationResult &result = trial(length);
      return result.peakBytes <= limit && fastEnough(result, current);
    });
    LLVM_DEBUG(llvm::dbgs() << "[offload-plan] budget: drops " << removed
                            << " of " << batch.size()
                            << " offloads the budget does not need\n");
    dropped.insert(batch.begin(), batch.begin() + removed);
    if (removed > 0)
      current = trial(removed);
    next += removed == batch.size() ? removed : removed + 1;
    width = removed == batch.size() ? width * 2 : std::max<size_t>(1, removed);
  }
  llvm::erase_if(chosen, [&](unsigned c) { return dropped.contains(c); });
}

BudgetFit mlir::offload::fitBudget(const Planner &planner,
                                   const SimulationResult &baseline,
                                   int64_t limit, bool loadsStall) {
  BudgetFit fit;
  SimulationResult current = baseline;
  BudgetGreedy(planner, limit, loadsStall, fit.chosen, current).run();
  int64_t reachable = current.peakBytes;
  if (current.peakBytes > limit) {
    // The greedy stops where no single offload lowers the peak; offloading
    // everything may still fit, and dropUnneededOffloads drops what it
    // need not.
    SmallVector<unsigned> all =
        llvm::to_vector(llvm::seq<unsigned>(0, planner.candidates.size()));
    SimulationResult everything = planner.simulate(all);
    reachable = std::min(reachable, everything.peakBytes);
    LLVM_DEBUG(llvm::dbgs() << "[offload-plan] budget: the greedy stops at "
                            << current.peakBytes << " bytes; everything: "
                            << everything.peakBytes << "\n");
    if (everything.peakBytes <= limit) {
      fit.chosen = std::move(all);
      current = std::move(everything);
    }
  }
  if (current.peakBytes > limit) {
    fit.reachedPeak = reachable;
    return fit;
  }
  fit.fits = true;
  // A step no slower than the plan's.
  dropUnneededOffloads(
      planner, limit,
      [](const SimulationResult &trial, const SimulationResult &current) {
        return trial.stepSeconds <= current.stepSeconds;
      },
      fit.chosen, current);
  return fit;
}
