//===- Planner.h - What the offload-plan searches share --------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The candidates of offload-plan and the two searches over them: fitHidden
// (plan=hidden, PlanHidden.cpp) and fitBudget (plan=budget, PlanBudget.cpp).
// Both decide from StepModel simulations of the plan planFor makes for a
// choice of candidates, and skip simulations where a bound or the
// simulation of a longer choice already decides (docs/scaling.md).
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_TRANSFORMS_PLANNER_H
#define OFFLOAD_LIB_TRANSFORMS_PLANNER_H

#include "offload/Analysis/StepSimulation.h"

#include "mlir/IR/MLIRContext.h"

#include <atomic>
#include <cmath>
#include <optional>

namespace mlir {
namespace offload {

/// Saved links sharing one device storage: offloading frees it only if all
/// of them go.
struct Candidate {
  SmallVector<unsigned> links;
  int buffer;
  int64_t bytes;
};

/// The candidates of one step, and the simulation of a choice of them.
class Planner {
public:
  Planner(const StepModel &model, bool schedule, int64_t maxInflight)
      : model(model), schedule(schedule), maxInflight(maxInflight) {}

  /// simulate() of the plan for `chosen` (indices into `candidates`), and
  /// that plan in `plan`.
  SimulationResult simulate(ArrayRef<unsigned> chosen,
                            CopyPlan *plan = nullptr) const;

  const StepModel &getModel() const { return model; }
  /// Whether the plans hoist their loads (offload-schedule-copies).
  bool isScheduled() const { return schedule; }
  /// How many plans simulate() simulated.
  unsigned getNumSimulations() const { return numSimulations.count; }

  SmallVector<Candidate> candidates;

private:
  const StepModel &model;
  bool schedule;
  int64_t maxInflight;
  /// A count that the searches' parallel simulations share, and that copies
  /// with the planner (the pass that holds one is copied).
  struct Counter {
    Counter() = default;
    Counter(const Counter &other) : count(other.count.load()) {}
    Counter &operator=(const Counter &other) {
      count = other.count.load();
      return *this;
    }
    std::atomic<unsigned> count{0};
  };
  mutable Counter numSimulations;
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

  /// Takes the copies' ends from `result`, the simulation of `plan`.
  void update(const CopyPlan &plan, const SimulationResult &result);

  /// The earliest the offload of candidate `links` (`bytes`) can end, or
  /// nothing if planFor() does not offload it.
  std::optional<double> earliestEnd(ArrayRef<unsigned> links,
                                    int64_t bytes) const;

  /// The first op position a load of the plan is issued at.
  unsigned getFirstLoad() const { return firstLoad; }

  /// A lower bound on the step with the copies of candidate `links`
  /// (`bytes`) added, from the loads they delay: its offload ends no earlier
  /// than earliestEnd says and each of its loads starts after it; the serial
  /// H2D stream runs loads in the order of their waits (scheduleLoads), so
  /// every load of the plan waited later runs after it, each taking at
  /// least its shortest copy time, and the compute stream runs from that
  /// load's wait to the end of the step. Nothing where the plan groups
  /// copies (a group pays the latency once).
  std::optional<double> delayedStepBound(ArrayRef<unsigned> links,
                                         int64_t bytes) const;

private:
  void updateLoads(const CopyPlan &plan);

  const StepModel &model;
  SmallVector<double> endBefore;
  unsigned firstLoad = ~0u;
  /// The plan's loads in the order of their waits: where each is waited,
  /// the sum of the shortest copy times of those before it, and, over those
  /// from it on, the most of that sum up to and with the load plus the
  /// compute from its wait to the end of the step.
  SmallVector<unsigned> loadWaits;
  SmallVector<double> timeBefore, worstFrom;
  bool grouped = false;
};

/// The bound rules a plan out if it exceeds `limit` by more than rounding:
/// the simulation sums op times in another order.
inline bool exceeds(double bound, double limit) {
  return bound > limit + 1e-9 * std::abs(limit);
}

/// plan=hidden: the candidates of `order` first fit keeps, each kept if the
/// plan with it predicts a step within `limit` (copies exposed included) and
/// kernels slowed by copies beside them by at most `interferenceLimit`.
/// After `patience` candidates in a row are simulated and dropped, the rest
/// are not tried (0: every candidate). A run of drops is simulated on the
/// threads of `context`.
SmallVector<unsigned> fitHidden(const Planner &planner,
                                ArrayRef<unsigned> order, double limit,
                                double interferenceLimit, unsigned patience,
                                MLIRContext *context);

/// plan=budget: the candidates chosen to bring the predicted peak of
/// `baseline` (the plan without offload) to at most `limit`. With
/// `loadsStall`, a candidate's assumed cost starts at the least time its
/// loads stall the compute stream, else at 0 (both bound it where the loads
/// are synchronous; the pass passes its own `schedule=false`).
struct BudgetFit {
  /// Indices into Planner::candidates.
  SmallVector<unsigned> chosen;
  bool fits = false;
  /// Where it does not fit: the smallest predicted peak it reached.
  int64_t reachedPeak = 0;
};
BudgetFit fitBudget(const Planner &planner, const SimulationResult &baseline,
                    int64_t limit, bool loadsStall);

/// Drops from `chosen` the offloads a predicted peak of at most `limit`
/// does not need, latest choice first: each whose removal keeps the peak
/// within `limit` and whose simulation is `fastEnough` beside that of the
/// offloads left so far. `current` is the simulation of `chosen` on entry
/// and of what is left on return.
void dropUnneededOffloads(
    const Planner &planner, int64_t limit,
    llvm::function_ref<bool(const SimulationResult &trial,
                            const SimulationResult &current)>
        fastEnough,
    SmallVector<unsigned> &chosen, SimulationResult &current);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_TRANSFORMS_PLANNER_H
