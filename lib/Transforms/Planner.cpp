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
}

std::optional<double> OffloadQueue::earliestEnd(ArrayRef<unsigned> links,
                                                int64_t bytes) const {
  std::optional<unsigned> issue = model.getPlannedOffloadIssue(links.front());
  if (!issue)
    return std::nullopt;
  return std::max(model.getComputeStart(*issue), endBefore[*issue]) +
         model.getMinCopySeconds(PlannedCopy::Kind::Offload, bytes);
}
