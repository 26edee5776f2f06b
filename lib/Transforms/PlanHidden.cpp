//===- PlanHidden.cpp - plan=hidden: first fit of the copies the link hides ===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// fitHidden: first fit in `order`, each candidate kept if the plan with it
// predicts a step within the limit. Done in batches: the next candidates
// StepTimeBound does not rule out are simulated together; if they fit they
// are all kept (doubling the next batch), else bisection finds the longest
// prefix that fits, keeps it and drops the candidate after it. Each kept
// batch and each dropped candidate is decided by a simulation of exactly the
// plan first fit would simulate for it, or by a bound; so the result is first
// fit's wherever adding offloads never shortens the predicted step
// (docs/scaling.md), with O(log) simulations per run of kept or dropped
// candidates instead of one per candidate.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"
#include "offload/Analysis/Bisection.h"

#include "mlir/IR/Threading.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "offload-plan"

using namespace mlir;
using namespace mlir::offload;

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

/// The state of fitHidden: the candidates kept, the bounds that hold for
/// them, and where the search is in its order.
class HiddenSearch {
public:
  HiddenSearch(const Planner &planner, ArrayRef<unsigned> order, double limit,
               double interferenceLimit, unsigned patience,
               MLIRContext *context)
      : planner(planner), model(planner.getModel()), order(order),
        limit(limit), interferenceLimit(interferenceLimit),
        patience(patience), context(context),
        bound(model, !planner.isScheduled()), batchBound(bound), queue(model),
        computeEnd(model.getComputeStart(model.getNumOps())),
        prefetch(model.getExecutionModel().prefetchLead > 0) {}

  SmallVector<unsigned> run();

private:
  using Load = StepTimeBound::Load;
  using Fit = std::pair<CopyPlan, SimulationResult>;

  void loadsOf(unsigned c, SmallVectorImpl<Load> &loads) const;
  double copiesBound(unsigned c) const;
  std::optional<Fit> trySimulate(ArrayRef<unsigned> batch) const;
  bool ruledOut(unsigned c, ArrayRef<Load> loads);
  void keep(ArrayRef<unsigned> kept);
  bool tryDropsInParallel();
  bool tryBatch();
  bool droppedTooMany() const {
    return patience > 0 && droppedInRow >= patience;
  }

  const Planner &planner;
  const StepModel &model;
  ArrayRef<unsigned> order;
  double limit, interferenceLimit;
  unsigned patience;
  MLIRContext *context;
  /// `bound` holds the loads kept; `batchBound` those and the batch's, so
  /// that growing a batch costs its new loads only.
  StepTimeBound bound, batchBound;
  /// The D2H copies of the plan kept so far: a candidate's load starts no
  /// earlier than its offload ends, and the compute stream still has to run
  /// from the load's wait to the end of the step.
  OffloadQueue queue;
  double computeEnd;
  /// The bounds start loads no earlier than backward does; loads the
  /// backward graph before starts (prefetch-lead) break them, and only the
  /// simulation decides.
  bool prefetch;
  SmallVector<unsigned> chosen;
  /// The simulation of the last batch prefix that fit.
  std::optional<Fit> lastFit;
  /// The next candidate of `order` to decide, and the next batch's width.
  size_t next = 0, width = 1;
  /// Candidates simulated and dropped since the last one kept.
  unsigned droppedInRow = 0;
};
} // namespace

void HiddenSearch::loadsOf(unsigned c, SmallVectorImpl<Load> &loads) const {
  bound.appendLoads(planner.candidates[c].links, loads);
}

/// The least step with the candidate's copies added: its offload queued
/// behind those kept, then its load, then the compute from its wait on; or
/// an offload kept, queued behind it, and that one's load
/// (OffloadQueue::delayedStepBound). Without the delay bound, a step whose
/// D2H stream the kept offloads fill simulates each candidate left and drops
/// it (docs/scaling.md#the-loads-a-candidate-delays).
double HiddenSearch::copiesBound(unsigned c) const {
  const Candidate &candidate = planner.candidates[c];
  std::optional<double> offloaded =
      queue.earliestEnd(candidate.links, candidate.bytes);
  double result = 0;
  if (!offloaded)
    return result;
  for (StepModel::PlannedLoad load : model.getPlannedLoads(candidate.links))
    result = std::max(
        result, *offloaded +
                    model.getMinCopySeconds(PlannedCopy::Kind::Load,
                                            load.bytes) +
                    computeEnd - model.getComputeStart(load.wait));
  if (std::optional<double> delayed =
          queue.delayedStepBound(candidate.links, candidate.bytes))
    result = std::max(result, *delayed);
  return result;
}

/// The plan with `batch` added to those kept and its simulation, if it fits.
/// Hidden means no copy exposed (within `limit`); kernels slowed by the
/// copies beside them (copy_interference), which any offload costs, have a
/// limit of their own.
std::optional<HiddenSearch::Fit>
HiddenSearch::trySimulate(ArrayRef<unsigned> batch) const {
  SmallVector<unsigned> trial(chosen);
  llvm::append_range(trial, batch);
  CopyPlan plan;
  SimulationResult result = planner.simulate(trial, &plan);
  if (result.stepSeconds - result.interferenceSeconds > limit ||
      result.interferenceSeconds > interferenceLimit)
    return std::nullopt;
  return Fit(std::move(plan), std::move(result));
}

/// Ruled out next to the offloads kept so far: first fit drops it.
bool HiddenSearch::ruledOut(unsigned c, ArrayRef<Load> loads) {
  return !prefetch && (exceeds(bound.boundWith(loads), limit) ||
                       exceeds(copiesBound(c), limit));
}

void HiddenSearch::keep(ArrayRef<unsigned> kept) {
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
}

/// In a run of drops each candidate is its own batch, decided against the
/// same kept plan: the next few are simulated at once, each alone next to
/// that plan, on the context's threads. The first that fits is kept; those
/// before it are dropped as in order; the simulations of those after it
/// (against a plan that no longer holds) are discarded. Returns whether the
/// search goes on.
bool HiddenSearch::tryDropsInParallel() {
  unsigned threads = context->getThreadPool().getMaxConcurrency();
  SmallVector<size_t> trialAt;
  for (size_t i = next; i < order.size() && trialAt.size() < threads; ++i) {
    SmallVector<Load> loads;
    loadsOf(order[i], loads);
    if (!ruledOut(order[i], loads))
      trialAt.push_back(i);
  }
  if (trialAt.empty())
    return false; // The bound rules out every candidate left.
  SmallVector<std::optional<Fit>, 0> trials(trialAt.size());
  parallelFor(context, 0, trialAt.size(), [&](size_t t) {
    trials[t] = trySimulate(order[trialAt[t]]);
  });
  for (auto [at, trial] : llvm::zip_equal(trialAt, trials)) {
    next = at + 1;
    if (trial) {
      LLVM_DEBUG(llvm::dbgs() << "[offload-plan] hidden: keeps candidate "
                              << order[at] << " after a run of "
                              << droppedInRow << " drops\n");
      lastFit = std::move(trial);
      keep(order[at]);
      width = 2;
      droppedInRow = 0;
      return true;
    }
    LLVM_DEBUG(llvm::dbgs() << "[offload-plan] hidden: drops candidate "
                            << order[at] << " (simulated)\n");
    ++droppedInRow;
    if (droppedTooMany())
      return false;
  }
  return true;
}

/// The next batch: up to `width` candidates the bounds do not rule out,
/// until the batch's own bound breaks. Its longest prefix that fits is
/// kept, and the candidate after it dropped. Returns whether the search
/// goes on.
bool HiddenSearch::tryBatch() {
  SmallVector<unsigned> batch;
  SmallVector<size_t> batchAt;
  SmallVector<Load> batchLoads;
  for (size_t i = next; i < order.size() && batch.size() < width; ++i) {
    SmallVector<Load> loads;
    loadsOf(order[i], loads);
    if (ruledOut(order[i], loads))
      continue;
    batchBound.add(loads);
    if (!batch.empty() && !prefetch && exceeds(batchBound.current(), limit)) {
      batchBound.remove(loads);
      break;
    }
    llvm::append_range(batchLoads, loads);
    batch.push_back(order[i]);
    batchAt.push_back(i);
  }
  if (batch.empty())
    return false; // The bound rules out every candidate left.
  size_t kept = longestHoldingPrefix(batch.size(), [&](size_t length) {
    std::optional<Fit> fit = trySimulate(ArrayRef(batch).take_front(length));
    if (!fit)
      return false;
    lastFit = std::move(fit);
    return true;
  });
  LLVM_DEBUG(llvm::dbgs() << "[offload-plan] hidden: batch of "
                          << batch.size() << " from position " << next
                          << ", keeps " << kept << "\n");
  batchBound.remove(batchLoads);
  keep(ArrayRef(batch).take_front(kept));
  if (kept == batch.size()) {
    next = batchAt.back() + 1;
    width *= 2;
    droppedInRow = 0;
    return true;
  }
  next = batchAt[kept] + 1;
  width = std::max<size_t>(1, kept);
  droppedInRow = kept == 0 ? droppedInRow + 1 : 1;
  // Candidates come largest first; past a long run of drops the rest
  // rarely fit, and trying each costs a simulation of the whole step.
  return !droppedTooMany();
}

SmallVector<unsigned> HiddenSearch::run() {
  bool threaded = context->isMultithreadingEnabled() &&
                  context->getThreadPool().getMaxConcurrency() > 1;
  while (next < order.size()) {
    bool goesOn = droppedInRow > 0 && width == 1 && threaded
                      ? tryDropsInParallel()
                      : tryBatch();
    if (!goesOn)
      break;
  }
  LLVM_DEBUG(llvm::dbgs() << "[offload-plan] hidden: keeps " << chosen.size()
                          << " of " << order.size() << " candidates\n");
  return std::move(chosen);
}

SmallVector<unsigned> mlir::offload::fitHidden(const Planner &planner,
                                               ArrayRef<unsigned> order,
                                               double limit,
                                               double interferenceLimit,
                                               unsigned patience,
                                               MLIRContext *context) {
  return HiddenSearch(planner, order, limit, interferenceLimit, patience,
                      context)
      .run();
}
