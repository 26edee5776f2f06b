//===- CopyPlacement.cpp - Where a plan issues and waits its copies ------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The plans a StepModel predicts: planFor (the copies the offload passes
// make for a set of saved links), offload waits at their release points
// (placeOffloadWaits, sinkOffloadWaits), loads hoisted under the memory and
// in-flight limits (scheduleLoads), and copies grouped into one transfer
// (coalesceCopies, coalesceLoads).
//
//===----------------------------------------------------------------------===//

#include "HoistedBytes.h"
#include "offload/Analysis/Bisection.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/SavedActivations.h"
#include "offload/Analysis/SharedStorage.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <limits>

#define DEBUG_TYPE "offload-copy-placement"

using namespace mlir;
using namespace mlir::offload;

static constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

CopyPlan StepModel::getEmptyPlan() const {
  CopyPlan plan;
  plan.offloaded.assign(links.size(), false);
  plan.loadOf.assign(links.size(), -1);
  plan.offloadOf.assign(links.size(), -1);
  return plan;
}

SmallVector<std::pair<int, int>> StepModel::getLiveRangesWithoutOffload() const {
  // As simulate() computes liveness for a plan that offloads nothing.
  SmallVector<std::pair<int, int>> ranges;
  ranges.reserve(buffers.size());
  for (auto [id, buffer] : llvm::enumerate(buffers))
    ranges.push_back({buffer.defPos, std::max(lastDirectUse[id], buffer.holdPos)});
  int lastForward = int(numForwardOps) - 1;
  for (const Link &link : links) {
    if (link.buffer < 0)
      continue;
    int &last = ranges[link.buffer].second;
    last = std::max({last, lastForward, link.lastUse});
  }
  for (auto &[def, last] : ranges)
    last = std::max(last, def);
  return ranges;
}

SmallVector<StepModel::CopyGroup>
StepModel::groupForCopies(ArrayRef<unsigned> chosen) const {
  SmallVector<CopyGroup> groups;
  // Links with a shared copy source, by source (in order of first link).
  llvm::MapVector<Value, SmallVector<unsigned>> bySource;
  for (unsigned l : chosen)
    if (links[l].copySource)
      bySource[links[l].copySource].push_back(l);
  llvm::DenseSet<unsigned> shared;
  for (auto &[source, members] : bySource) {
    SmallVector<Value> values = llvm::map_to_vector(
        members, [&](unsigned l) { return links[l].value; });
    if (!shouldShareCopy(source, values))
      continue;
    // The leader is the first member saved as the source itself, else the
    // first member (findSharedStorageCopies): offload-insert-offloads makes
    // the copy when it reaches the leader, which orders it against the
    // other offloads placed after the same op.
    CopyGroup group{members, members.front(),
                    getTensorSizeInBytes(source.getType()).value_or(0)};
    group.value = source;
    auto sourceMember = llvm::find_if(
        members, [&](unsigned l) { return links[l].value == source; });
    if (sourceMember != members.end())
      group.leader = *sourceMember;
    for (unsigned l : members) {
      const Link &link = links[l];
      if (link.firstUse >= 0 &&
          (group.firstUse < 0 || link.firstUse < group.firstUse))
        group.firstUse = link.firstUse;
      group.lastUse = std::max(group.lastUse, link.lastUse);
      shared.insert(l);
    }
    groups.push_back(std::move(group));
  }
  for (unsigned l : chosen) {
    if (shared.contains(l))
      continue;
    const Link &link = links[l];
    CopyGroup group{{l}, l, link.bytes, link.firstUse, link.lastUse};
    group.value = link.value;
    groups.push_back(std::move(group));
  }
  llvm::stable_sort(groups, [](const CopyGroup &a, const CopyGroup &b) {
    return a.leader < b.leader;
  });
  return groups;
}

SmallVector<StepModel::PlannedLoad>
StepModel::getPlannedLoads(ArrayRef<unsigned> chosen) const {
  SmallVector<unsigned> sorted(chosen);
  llvm::sort(sorted);
  sorted.erase(llvm::unique(sorted), sorted.end());
  SmallVector<PlannedLoad> loads;
  for (const CopyGroup &group : groupForCopies(sorted)) {
    const Link &link = links[group.leader];
    if (link.buffer < 0 || buffers[link.buffer].persistent ||
        group.firstUse < 0)
      continue;
    loads.push_back({unsigned(group.firstUse), group.bytes});
  }
  return loads;
}

std::optional<unsigned> StepModel::getPlannedOffloadIssue(unsigned l) const {
  const Link &link = links[l];
  if (link.buffer < 0 || buffers[link.buffer].persistent)
    return std::nullopt;
  // As planFor() places it.
  int last = lastForwardRead[link.buffer];
  if (last < 0 || last >= int(numForwardOps))
    last = buffers[link.buffer].defPos;
  return unsigned(last + 1);
}

/// True for the ops that do not end an issue point (getIssueSlot).
static bool continuesIssuePoint(Operation *op, bool pastViews) {
  return isCopyStart(op) || isa<WaitOp, OffloadToCpuOp, LoadToGpuOp>(op) ||
         (pastViews && getViewSource(op));
}

unsigned StepModel::getIssueSlot(unsigned pos, bool pastViews) const {
  while (pos < ops.size() && continuesIssuePoint(ops[pos].op, pastViews))
    ++pos;
  return pos;
}

SmallVector<unsigned> StepModel::getIssueSlots(bool pastViews) const {
  SmallVector<unsigned> slots(ops.size() + 1);
  slots[ops.size()] = ops.size();
  for (unsigned pos = ops.size(); pos-- > 0;) {
    slots[pos] =
        continuesIssuePoint(ops[pos].op, pastViews) ? slots[pos + 1] : pos;
  }
  return slots;
}

void StepModel::coalesceCopies(CopyPlan &plan, int64_t maxBytes,
                               PlannedCopy::Kind kind) const {
  if (maxBytes <= 0)
    return;
  unsigned numOps = ops.size();
  // An offload starts after the last read of its storage, views included,
  // so its group does not reach past a view (which may read that storage).
  bool pastViews = kind == PlannedCopy::Kind::Load;
  SmallVector<unsigned> issueSlots = getIssueSlots(pastViews);
  SmallVector<unsigned> order;
  SmallVector<unsigned> slotOf(plan.copies.size());
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == kind && copy.groupLeader < 0) {
      order.push_back(index);
      slotOf[index] = issueSlots[std::min(copy.issuePos, numOps)];
    }
  // Stream order: by issue position, then sequence (simulate()).
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    return std::make_tuple(x.issuePos, x.sequence) <
           std::make_tuple(y.issuePos, y.sequence);
  });
  auto eligible = [&](unsigned c) {
    int64_t bytes = plan.copies[c].bytes;
    return bytes > 0 && bytes < maxBytes;
  };
  // Loads waited at their issue point, or later.
  auto waitedAtOnce = [&](unsigned c) {
    return kind == PlannedCopy::Kind::Load &&
           issueSlots[std::min(plan.copies[c].waitPos, numOps)] == slotOf[c];
  };
  for (size_t i = 0; i < order.size();) {
    unsigned leader = order[i];
    size_t end = i + 1;
    if (eligible(leader))
      while (end < order.size() && eligible(order[end]) &&
             slotOf[order[end]] == slotOf[leader] &&
             waitedAtOnce(order[end]) == waitedAtOnce(leader))
        ++end;
    for (size_t j = i + 1; j < end; ++j) {
      PlannedCopy &member = plan.copies[order[j]];
      member.groupLeader = leader;
      member.issuePos = plan.copies[leader].issuePos;
    }
    i = end;
  }
}

SimulationResult StepModel::coalesceLoads(CopyPlan &plan,
                                          SimulationResult apart) const {
  CopyPlan grouped = plan;
  coalesceCopies(grouped, execution.coalesceBelow, PlannedCopy::Kind::Load);
  bool any = llvm::any_of(grouped.copies, [](const PlannedCopy &copy) {
    return copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0;
  });
  if (!any)
    return apart;
  SimulationResult together = simulate(grouped);
  LLVM_DEBUG(llvm::dbgs() << "[copy-placement] load groups: peak "
                          << together.peakBytes << " against "
                          << apart.peakBytes << " apart; "
                          << (together.peakBytes > apart.peakBytes ? "kept apart"
                                                                   : "grouped")
                          << "\n");
  if (together.peakBytes > apart.peakBytes)
    return apart;
  plan = std::move(grouped);
  return together;
}

CopyPlan StepModel::planFor(ArrayRef<unsigned> chosen, bool schedule,
                            int64_t maxInflightBytes,
                            SimulationResult *simulated) const {
  CopyPlan plan = getEmptyPlan();
  llvm::DenseMap<Value, unsigned> offloadOfValue;
  // In saved order, as offload-insert-offloads and offload-insert-loads
  // place the copies: an offload goes right after the last use of its
  // storage, so before the offloads of other storages placed there earlier
  // and after those of its own storage (they use it); loads before the same
  // op keep the saved order. Saved links sharing one copy (SharedStorage.h)
  // move as one offload and one load, in their leader's place.
  llvm::DenseMap<unsigned, SmallVector<unsigned>> offloadsAt;
  SmallVector<unsigned> sorted(chosen);
  llvm::sort(sorted);
  sorted.erase(llvm::unique(sorted), sorted.end());
  for (const CopyGroup &group : groupForCopies(sorted)) {
    unsigned l = group.leader;
    const Link &link = links[l];
    if (link.buffer < 0 || buffers[link.buffer].persistent)
      continue;
    auto [it, inserted] =
        offloadOfValue.try_emplace(group.value, plan.copies.size());
    for (unsigned member : group.links) {
      plan.offloaded[member] = true;
      plan.offloadOf[member] = it->second;
    }
    if (inserted) {
      // Right after the last forward use of the storage (views included).
      int last = int(*getPlannedOffloadIssue(l)) - 1;
      SmallVector<unsigned> &row = offloadsAt[last + 1];
      auto sameStorage = llvm::find_if(llvm::reverse(row), [&](unsigned c) {
        return plan.copies[c].target == unsigned(link.buffer);
      });
      row.insert(sameStorage == row.rend() ? row.begin() : sameStorage.base(),
                 plan.copies.size());
      plan.copies.push_back({PlannedCopy::Kind::Offload, unsigned(link.buffer),
                             group.bytes, unsigned(last + 1),
                             /*waitPos=*/unsigned(last + 1)});
    }
    if (group.firstUse < 0)
      continue;
    for (unsigned member : group.links)
      plan.loadOf[member] = plan.copies.size();
    plan.copies.push_back({PlannedCopy::Kind::Load, l, group.bytes,
                           unsigned(group.firstUse), unsigned(group.firstUse),
                           int(it->second)});
    plan.copies.back().sequence = plan.copies.size();
  }
  // Offloads go to their stream before loads issued at the same op (the end
  // of forward), in the order of their ops.
  for (auto &[pos, row] : offloadsAt)
    for (auto [rank, copy] : llvm::enumerate(row))
      plan.copies[copy].sequence = int64_t(rank) - int64_t(row.size());
  if (schedule) {
    // As offload-schedule-copies: offloads grouped where they are issued
    // (their waits placed for the groups' ends), loads once placed.
    coalesceCopies(plan, execution.coalesceBelow, PlannedCopy::Kind::Offload);
    placeOffloadWaits(plan);
    SimulationResult result = scheduleLoads(plan, maxInflightBytes);
    if (execution.coalesceBelow > 0)
      result = coalesceLoads(plan, std::move(result));
    if (simulated)
      *simulated = std::move(result);
  } else if (simulated) {
    *simulated = simulate(plan);
  }
  return plan;
}


void StepModel::placeOffloadWaits(CopyPlan &plan) const {
  // Forward has no loads, and nothing stalls it before these waits, so its
  // D2H copies run back to back in issue order from compute-only times.
  SmallVector<unsigned> offloads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Offload &&
        copy.issuePos < numForwardOps)
      offloads.push_back(index);
  llvm::stable_sort(offloads, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    return std::make_pair(x.issuePos, x.sequence) <
           std::make_pair(y.issuePos, y.sequence);
  });
  double streamFree = 0;
  for (unsigned index : offloads) {
    PlannedCopy &copy = plan.copies[index];
    double end = std::max(startTimes[copy.issuePos], streamFree) +
                 profileLatency + double(copy.bytes) / d2hBandwidth;
    streamFree = end;
    // The first forward op after the issue starting at or after `end`
    // (start times only grow), then the first of those not a wait.
    unsigned pos = std::lower_bound(startTimes.begin() + copy.issuePos + 1,
                                    startTimes.begin() + numForwardOps, end) -
                   startTimes.begin();
    while (pos < numForwardOps && isa<WaitOp>(ops[pos].op))
      ++pos;
    // The wait moves up from the end of forward only across ops whose
    // effects commute with it.
    copy.waitPos = std::max(pos, getOffloadWaitFloor());
  }
  if (execution.release == ExecutionModel::Release::AtWait)
    sinkOffloadWaits(plan, offloads);
}

void StepModel::sinkOffloadWaits(CopyPlan &plan,
                                 ArrayRef<unsigned> offloads) const {
  // A wait at the predicted end of its copy stalls forward as soon as the
  // compute runs a little faster, or the link a little slower, than
  // predicted (docs/cost-model.md#load-scheduling). Held later, a wait costs
  // only memory: each goes down as far as the bytes it keeps live leave the
  // plan's predicted peak where it was, up to the end of forward. Later
  // offloads first: the D2H queue behind them is longer.
  struct Sink {
    unsigned copy;
    /// Where the wait was placed, and where it goes.
    unsigned from, to;
  };
  SmallVector<Sink> sinks;
  for (unsigned index : offloads) {
    unsigned from = plan.copies[index].waitPos;
    if (from < numForwardOps)
      sinks.push_back({index, from, from});
  }
  if (sinks.empty())
    return;
  llvm::stable_sort(sinks, [](const Sink &a, const Sink &b) {
    return a.from > b.from;
  });
  SmallVector<int64_t> liveAt, afterRelease;
  int64_t peak = simulate(plan, &liveAt, &afterRelease).peakBytes;
  HoistedBytes bytesAt(ArrayRef<int64_t>(liveAt).take_front(numForwardOps));
  for (Sink &sink : sinks) {
    PlannedCopy &copy = plan.copies[sink.copy];
    // The wait's own op counts the source only until its release, which
    // comes before what the op allocates: held across it, the source is
    // live with all of that (and with what earlier sinks hold there).
    int64_t added = bytesAt.at(sink.from) - liveAt[sink.from];
    if (afterRelease[copy.target] >= 0 &&
        afterRelease[copy.target] + copy.bytes + added > peak)
      continue;
    // Then the first op below it where the source, live there too, would
    // raise the peak, or the end of forward; the wait goes right before it,
    // or, if that op is a wait, before the last op above it that is none.
    int64_t blocked =
        bytesAt.firstAbove(sink.from + 1, numForwardOps, peak - copy.bytes);
    unsigned pos = blocked < 0 ? numForwardOps : unsigned(blocked);
    while (pos > sink.from && pos < numForwardOps && isa<WaitOp>(ops[pos].op))
      --pos;
    bytesAt.add(sink.from, pos, copy.bytes);
    copy.waitPos = sink.to = pos;
  }
  // liveAt is per position and the releases move to later times, so the
  // bound is checked once more on the whole plan. If it breaks, the sinks
  // are kept in the order placed (each was placed with the ones before it)
  // up to the longest run that keeps the peak, instead of none
  // (docs/cost-model.md#load-scheduling).
  size_t kept = longestHoldingPrefix(sinks.size(), [&](size_t count) {
    for (auto [rank, sink] : llvm::enumerate(sinks))
      plan.copies[sink.copy].waitPos = rank < count ? sink.to : sink.from;
    return simulate(plan).peakBytes <= peak;
  });
  LLVM_DEBUG(llvm::dbgs() << "[copy-placement] offload waits: " << kept
                          << " of " << sinks.size()
                          << " sunk waits keep the peak of " << peak << "\n");
  for (auto [rank, sink] : llvm::enumerate(sinks))
    plan.copies[sink.copy].waitPos = rank < kept ? sink.to : sink.from;
}

bool StepModel::placeLoads(CopyPlan &plan, ArrayRef<unsigned> loads,
                           int64_t maxInflightBytes, ArrayRef<int64_t> liveAt,
                           int64_t memoryLimit) const {
  // Per position: the synchronous plan's live bytes (`liveAt`) plus the
  // bytes of hoisted loads issued at or before it and waited after it (in
  // flight), which the synchronous plan lacks.
  HoistedBytes bytesAt(liveAt.take_front(ops.size() + 1));
  double streamFree = kInf;
  // The loads placed so far, latest wait first; their issue positions never
  // grow along it.
  SmallVector<unsigned> placed;
  for (unsigned index : loads) {
    PlannedCopy &copy = plan.copies[index];
    unsigned wait = copy.waitPos;
    unsigned first = getLoadIssueFloor(wait);
    double transfer = profileLatency + double(copy.bytes) / h2dBandwidth;
    double end = std::min(startTimes[wait], streamFree);
    double start = end - transfer * (1 + execution.loadLead);
    // The stream is needed from the copy's own start: the lead is slack for
    // this copy, and does not push every earlier load earlier still.
    streamFree = end - transfer;
    // The latest position at or before the wait whose start is early enough
    // (start times only grow), or the first position allowed.
    unsigned issue = wait;
    if (first < wait && startTimes[wait] > start) {
      auto it = std::upper_bound(startTimes.begin() + first,
                                 startTimes.begin() + wait, start);
      issue = it == startTimes.begin() + first
                  ? first
                  : unsigned(it - startTimes.begin()) - 1;
    }
    // The H2D stream runs loads in the order they are issued: issued after
    // a load that waits later, this one would queue behind it.
    if (!placed.empty())
      issue = std::min(issue, plan.copies[placed.back()].issuePos);
    // Then no higher than the first position, going up from the wait, where
    // its bytes would break the in-flight or the memory limit.
    int64_t blocked = bytesAt.lastAbove(
        issue, wait, memoryLimit - copy.bytes,
        maxInflightBytes > 0 ? maxInflightBytes - copy.bytes
                             : std::numeric_limits<int64_t>::max());
    if (blocked >= 0)
      issue = unsigned(blocked) + 1;
    bytesAt.add(issue, wait, copy.bytes);
    copy.issuePos = issue;
    // Held back by memory below loads that wait later: those are issued no
    // earlier than this one, so the stream still runs loads in wait order
    // (they hold their bytes for less time, so no limit breaks).
    for (unsigned later : llvm::reverse(placed)) {
      PlannedCopy &laterCopy = plan.copies[later];
      if (laterCopy.issuePos >= issue)
        break;
      bytesAt.add(laterCopy.issuePos, issue, -laterCopy.bytes);
      laterCopy.issuePos = issue;
    }
    placed.push_back(index);
  }
  return llvm::any_of(loads, [&](unsigned index) {
    return plan.copies[index].issuePos < plan.copies[index].waitPos;
  });
}

SimulationResult StepModel::scheduleLoads(CopyPlan &plan,
                                          int64_t maxInflightBytes) const {
  SmallVector<unsigned> loads;
  int64_t count = plan.copies.size();
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Load)
      continue;
    loads.push_back(index);
    // Loads issued before one op go to the stream in the order of their
    // waits (offload-schedule-copies emits them so), after the offloads
    // issued there; this changes no order among copies issued apart.
    copy.sequence += int64_t(copy.waitPos) * count;
    // The synchronous plan the peak is held to.
    copy.issuePos = copy.waitPos;
  }
  if (loads.empty())
    return simulate(plan);
  // Latest wait first; the H2D stream is serial, so each load must end
  // before the next one (in time) starts. Of loads waited before one op, the
  // last in the IR waits last.
  llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
    const PlannedCopy &x = plan.copies[a], &y = plan.copies[b];
    if (x.waitPos != y.waitPos)
      return x.waitPos > y.waitPos;
    return x.sequence > y.sequence;
  });

  SmallVector<int64_t> liveAt;
  SimulationResult synchronous = simulate(plan, &liveAt);
  int64_t peak = synchronous.peakBytes;
  // The peak without offload bounds it only where the synchronous loads
  // stay within it: below it, min(peak, no-offload peak) is `peak`, and
  // above it no placement of loads can reach it (the loads are issued no
  // later than their waits already).
  // With a lead, the loads the graph before starts (up to prefetchBytes)
  // are on the device when backward begins whatever this placement does;
  // the peak may grow by as much.
  if (execution.prefetchLead > 0 && execution.prefetchBytes > 0)
    peak += execution.prefetchBytes;
  int64_t limit = peak;
  // Placed on the synchronous plan's positions, the hoisted loads run
  // backward ahead of where it ran against the copies, so buffers whose
  // offload completes late are released at later ops. Few placements need
  // a second try; each one has the excess taken off its headroom.
  constexpr unsigned kAttempts = 4;
  CopyPlan trial = plan;
  for (unsigned attempt = 0; attempt < kAttempts; ++attempt) {
    if (!placeLoads(trial, loads, maxInflightBytes, liveAt, limit))
      break;
    SimulationResult result = simulate(trial);
    LLVM_DEBUG(llvm::dbgs() << "[copy-placement] load placement " << attempt
                            << ": peak " << result.peakBytes << " against "
                            << peak << " (memory limit " << limit << ")\n");
    if (result.peakBytes <= peak) {
      plan = std::move(trial);
      return result;
    }
    limit -= result.peakBytes - peak;
  }
  // Every load at its wait: the synchronous plan itself.
  LLVM_DEBUG(llvm::dbgs() << "[copy-placement] loads stay at their waits\n");
  return synchronous;
}
