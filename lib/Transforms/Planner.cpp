//===- Planner.cpp - What the offload-plan searches share -----------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::offload;

SimulationResult Planner::simulate(ArrayRef<unsigned> chosen,
                                   CopyPlan *plan) const {
  SmallVector<unsigned> links;
  for (unsigned c : chosen)
    llvm::append_range(links, candidates[c].links);
  SimulationResult result;
  CopyPlan planned = model.planFor(links, schedule, maxInflight, &result);
  ++numSimulations.count;
  if (plan)
    *plan = std::move(planned);
  return result;
}

void OffloadQueue::update(const CopyPlan &plan,
                          const SimulationResult &result) {
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
  updateLoads(plan);
}

void OffloadQueue::updateLoads(const CopyPlan &plan) {
  loadWaits.clear();
  timeBefore.clear();
  worstFrom.clear();
  grouped = llvm::any_of(plan.copies, [](const PlannedCopy &copy) {
    return copy.groupLeader >= 0;
  });
  if (grouped)
    return;
  SmallVector<unsigned> loads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load)
      loads.push_back(index);
  llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
    return plan.copies[a].waitPos < plan.copies[b].waitPos;
  });
  double computeEnd = model.getComputeStart(model.getNumOps());
  double sum = 0;
  for (unsigned index : loads) {
    const PlannedCopy &copy = plan.copies[index];
    loadWaits.push_back(copy.waitPos);
    timeBefore.push_back(sum);
    sum += model.getMinCopySeconds(PlannedCopy::Kind::Load, copy.bytes);
    worstFrom.push_back(sum + computeEnd -
                        model.getComputeStart(copy.waitPos));
  }
  for (size_t i = worstFrom.size(); i-- > 1;)
    worstFrom[i - 1] = std::max(worstFrom[i - 1], worstFrom[i]);
}

std::optional<double>
OffloadQueue::delayedStepBound(ArrayRef<unsigned> links, int64_t bytes) const {
  std::optional<double> offloaded = earliestEnd(links, bytes);
  if (!offloaded || grouped)
    return std::nullopt;
  std::optional<double> result;
  for (StepModel::PlannedLoad load : model.getPlannedLoads(links)) {
    // The loads waited later run after this one.
    size_t first = llvm::upper_bound(loadWaits, load.wait) - loadWaits.begin();
    if (first == loadWaits.size())
      continue;
    double loaded =
        *offloaded +
        model.getMinCopySeconds(PlannedCopy::Kind::Load, load.bytes);
    result = std::max(result.value_or(0),
                      loaded + worstFrom[first] - timeBefore[first]);
  }
  return result;
}

std::optional<double> OffloadQueue::earliestEnd(ArrayRef<unsigned> links,
                                                int64_t bytes) const {
  std::optional<unsigned> issue = model.getPlannedOffloadIssue(links.front());
  if (!issue)
    return std::nullopt;
  return std::max(model.getComputeStart(*issue), endBefore[*issue]) +
         model.getMinCopySeconds(PlannedCopy::Kind::Offload, bytes);
}
