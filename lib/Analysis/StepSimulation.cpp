//===- StepSimulation.cpp - Predicting a training step's time and memory --===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// StepModel::simulate: the compute stream runs the ops in order against the
// two copy streams (CopyStreams.h), stalling at waits; then the device bytes
// live are swept in time order for the peak. Also the loads and offloads that
// run while other graphs of the step do (prefetch across graphs).
//
//===----------------------------------------------------------------------===//

#include "CopyStreams.h"
#include "SimulationScratch.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Analysis/Views.h"
#include "offload/Dialect/Offload/IR/OffloadDialect.h"

#include "llvm/ADT/ScopeExit.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::offload;

static constexpr double kInf = kInfiniteTime;

//===----------------------------------------------------------------------===//
// Prefetch across graphs
//===----------------------------------------------------------------------===//

SmallVector<unsigned>
StepModel::getPrefetchedLoads(const CopyPlan &plan) const {
  SmallVector<unsigned> loads;
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0)
    return loads;
  unsigned slot = getIssueSlot(numForwardOps, /*pastViews=*/true);
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.issuePos <= slot &&
        copy.issuePos >= numForwardOps)
      loads.push_back(index);
  llvm::stable_sort(loads, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  int64_t bytes = 0;
  unsigned fit = 0;
  for (unsigned index : loads) {
    bytes += plan.copies[index].bytes;
    if (bytes > execution.prefetchBytes)
      break;
    ++fit;
  }
  loads.truncate(fit);
  return loads;
}

SmallVector<unsigned>
StepModel::getDeferredOffloads(const CopyPlan &plan) const {
  SmallVector<unsigned> offloads;
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0 ||
      execution.release != ExecutionModel::Release::AtWait)
    return offloads;
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Offload &&
        getIssueSlot(std::min(copy.waitPos, numForwardOps), false) >=
            numForwardOps)
      offloads.push_back(index);
  llvm::stable_sort(offloads, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  int64_t bytes = 0;
  double seconds = 0;
  unsigned fit = 0;
  for (unsigned index : offloads) {
    bytes += plan.copies[index].bytes;
    seconds += getMinCopySeconds(PlannedCopy::Kind::Offload,
                                 plan.copies[index].bytes);
    if (bytes > execution.prefetchBytes || seconds > execution.prefetchLead)
      break;
    ++fit;
  }
  offloads.truncate(fit);
  return offloads;
}

std::optional<unsigned> StepModel::getDeferredRelease() const {
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0 ||
      execution.release != ExecutionModel::Release::AtWait)
    return std::nullopt;
  auto it = std::lower_bound(startTimes.begin(),
                             startTimes.begin() + numForwardOps,
                             execution.prefetchLead);
  return unsigned(it - startTimes.begin());
}

std::optional<unsigned> StepModel::getPrefetchIssue() const {
  if (execution.prefetchLead <= 0 || execution.prefetchBytes <= 0)
    return std::nullopt;
  unsigned numOps = ops.size();
  double from = startTimes[numOps] - execution.prefetchLead;
  auto it = std::lower_bound(startTimes.begin() + numForwardOps,
                             startTimes.begin() + numOps, from);
  return unsigned(it - startTimes.begin());
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

namespace {
/// Orders a release the compute stream does not see after everything else
/// at its time.
constexpr int64_t kAsyncOrder = std::numeric_limits<int64_t>::max();

constexpr unsigned kSlotNow = ~0u;
/// MemoryEvent::owner of the bytes the next graph's prefetched loads hold.
constexpr int kNextGraphOwner = std::numeric_limits<int>::min();
/// MemoryEvent::order of events at one time: those before op `pos` (its
/// waits' releases, its loads' issues), those of the op itself (its
/// results), and those at its end (the releases of what it read last).
constexpr int64_t orderBefore(unsigned pos) { return 2 * int64_t(pos) - 1; }
constexpr int64_t orderAt(unsigned pos) { return 2 * int64_t(pos); }
constexpr int64_t orderAfter(unsigned pos) { return 2 * int64_t(pos) + 1; }
} // namespace

/// Fills `start` and `items` with `count` lists, by key: each item in the
/// order given.
static void groupByKey(unsigned count, ArrayRef<unsigned> itemsInOrder,
                       llvm::function_ref<unsigned(unsigned)> keyOf,
                       SmallVectorImpl<unsigned> &start,
                       SmallVectorImpl<unsigned> &items) {
  start.assign(count + 1, 0);
  for (unsigned item : itemsInOrder)
    ++start[keyOf(item) + 1];
  for (unsigned key = 0; key < count; ++key)
    start[key + 1] += start[key];
  items.resize_for_overwrite(itemsInOrder.size());
  SmallVector<unsigned> fill(start.begin(), start.end() - 1);
  for (unsigned item : itemsInOrder)
    items[fill[keyOf(item)]++] = item;
}

SimulationResult StepModel::simulate(const CopyPlan &plan) const {
  return simulate(plan, nullptr);
}

SimulationResult StepModel::simulate(
    const CopyPlan &plan, SmallVectorImpl<int64_t> *liveAt,
    SmallVectorImpl<int64_t> *afterRelease) const {
  SimulationResult result;
  unsigned numOps = ops.size();
  result.exposedPerCopy.assign(plan.copies.size(), 0);

  std::unique_ptr<SimulationScratch> scratch = scratchPool->acquire();
  auto releaseScratch = llvm::make_scope_exit(
      [&] { scratchPool->release(std::move(scratch)); });
  SmallVector<unsigned> bySequence =
      llvm::to_vector(llvm::seq<unsigned>(0, plan.copies.size()));
  llvm::stable_sort(bySequence, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  groupByKey(
      numOps + 1, bySequence,
      [&](unsigned c) { return std::min(plan.copies[c].issuePos, numOps); },
      scratch->issuedStart, scratch->issued);
  bool releaseAtWait = execution.release == ExecutionModel::Release::AtWait;
  SmallVector<unsigned> waitedCopies;
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind == PlannedCopy::Kind::Load || releaseAtWait)
      waitedCopies.push_back(index);
    (copy.kind == PlannedCopy::Kind::Load ? result.h2dBytes : result.d2hBytes) +=
        copy.bytes;
  }
  groupByKey(
      numOps + 1, waitedCopies,
      [&](unsigned c) { return std::min(plan.copies[c].waitPos, numOps); },
      scratch->waitedStart, scratch->waited);
  auto issuedAt = [&](unsigned pos) {
    return ArrayRef(scratch->issued)
        .slice(scratch->issuedStart[pos],
               scratch->issuedStart[pos + 1] - scratch->issuedStart[pos]);
  };
  auto waitedAt = [&](unsigned pos) {
    return ArrayRef(scratch->waited)
        .slice(scratch->waitedStart[pos],
               scratch->waitedStart[pos + 1] - scratch->waitedStart[pos]);
  };

  CopyStreams streams(plan, profileLatency, d2hBandwidth, h2dBandwidth,
                      bothWaysBandwidth);
  // The loads the backward graph before this one started: the link carried
  // them over the lead, one after the other in stream order.
  double leadLeft = execution.prefetchLead;
  for (unsigned copy : getPrefetchedLoads(plan)) {
    double seconds = leadLeft - profileLatency;
    if (seconds <= 0)
      break;
    int64_t bytes = std::min<int64_t>(plan.copies[copy].bytes,
                                      int64_t(seconds * h2dBandwidth));
    streams.setAcrossBeforeIssue(copy, bytes);
    leadLeft -= profileLatency + double(bytes) / h2dBandwidth;
  }
  SmallVector<bool> deferred(plan.copies.size(), false);
  for (unsigned copy : getDeferredOffloads(plan))
    deferred[copy] = true;
    SmallVectorImpl<double> &issueStart = scratch->issueStart,
                          &opStart = scratch->opStart, &opEnd = scratch->opEnd;
  issueStart.resize_for_overwrite(numOps + 1);
  opStart.resize_for_overwrite(numOps + 1);
  opEnd.resize_for_overwrite(numOps + 1);
  double time = 0;
  for (unsigned pos = 0; pos <= numOps; ++pos) {
    streams.run(time);
    issueStart[pos] = time;
    for (unsigned copy : issuedAt(pos))
      streams.issue(copy, time);
    if (pos == numForwardOps)
      for (auto [copy, isDeferred] : llvm::enumerate(deferred))
        if (isDeferred)
          streams.settle(copy);
    for (unsigned copy : waitedAt(pos)) {
      if (deferred[copy])
        continue;
      streams.run(kInf, copy);
      if (streams.isDone(copy) && streams.getEnd(copy) > time) {
        result.exposedPerCopy[copy] += streams.getEnd(copy) - time;
        result.exposedSeconds += streams.getEnd(copy) - time;
        time = streams.getEnd(copy);
      }
    }
    opStart[pos] = time;
    if (pos < numOps) {
      double seconds = ops[pos].seconds;
      if (copyInterference > 0 && ops[pos].memoryBound) {
        // A memory-bound op runs longer by the share of copy transfer beside
        // it (the streams run on meanwhile, but the added time is not
        // charged again). Compute-bound ops (matmuls, attention) lose
        // nothing measurable to the copies' memory traffic.
        double transferred = streams.getTransferSeconds();
        streams.run(time + seconds);
        double slowdown =
            copyInterference * (streams.getTransferSeconds() - transferred);
        seconds += slowdown;
        result.interferenceSeconds += slowdown;
      }
      time += seconds;
      result.computeSeconds += ops[pos].seconds;
    }
    opEnd[pos] = time;
  }
  streams.run(kInf);
  result.copyEnd.resize(plan.copies.size());
  result.stepSeconds = time;
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    result.copyEnd[index] = streams.getEnd(index);
    if (result.copyEnd[index] < kInf)
      result.stepSeconds = std::max(result.stepSeconds, result.copyEnd[index]);
  }

  // Liveness under the plan.
  SmallVector<int> lastPos(buffers.size());
  for (auto [id, buffer] : llvm::enumerate(buffers))
    lastPos[id] = std::max(lastDirectUse[id], buffer.holdPos);
  int lastForward = int(numForwardOps) - 1;
  for (auto [l, link] : llvm::enumerate(links)) {
    if (link.buffer < 0)
      continue;
    bool readsForwardBuffer =
        !plan.offloaded[l] || (plan.loadOf[l] < 0 && link.firstUse >= 0);
    if (!plan.offloaded[l])
      lastPos[link.buffer] = std::max(lastPos[link.buffer], lastForward);
    if (readsForwardBuffer)
      lastPos[link.buffer] = std::max(lastPos[link.buffer], link.lastUse);
  }
  // When each offloaded buffer may be released: once its copies are done,
  // or (at their waits) in stream order.
  SmallVector<double> offloadEnd(buffers.size(), -1);
  SmallVector<int64_t> offloadEndOrder(buffers.size(), kAsyncOrder);
  SmallVector<unsigned> offloadEndSlot(buffers.size(), kSlotNow);
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Offload)
      continue;
    double end = result.copyEnd[index];
    int64_t order = kAsyncOrder;
    unsigned slot = kSlotNow;
    if (releaseAtWait) {
      slot = std::min(copy.waitPos, numOps);
      end = opStart[slot];
      order = orderBefore(slot);
    }
    if (end > offloadEnd[copy.target]) {
      offloadEnd[copy.target] = end;
      offloadEndOrder[copy.target] = order;
      offloadEndSlot[copy.target] = slot;
    }
  }

  std::vector<MemoryEvent> &events = scratch->events;
  events.clear();
  for (auto [id, buffer] : llvm::enumerate(buffers)) {
    if (buffer.bytes == 0)
      continue;
    if (buffer.persistent) {
      events.push_back({0, -1, buffer.bytes, int(id), 0});
      continue;
    }
    // Without this, an unread argument would live as long as whatever op
    // is first in backward, a copy (no time) or not, depending on the pass.
    if (buffer.backwardArgument && lastPos[id] < 0)
      continue;
    unsigned def = std::min<unsigned>(std::max(buffer.defPos, 0), numOps);
    // Backward's arguments exist when backward starts, before its first op
    // waits for anything.
    double defined = buffer.backwardArgument ? issueStart[def] : opStart[def];
    events.push_back({defined, orderAt(def), buffer.bytes, int(id), def});
    int last = lastPos[id] < 0 ? int(def) : std::max(lastPos[id], int(def));
    unsigned lastOp = std::min<unsigned>(last, numOps);
    double free = opEnd[lastOp];
    int64_t order = orderAfter(lastOp);
    unsigned slot = lastOp;
    if (offloadEnd[id] > free) {
      free = offloadEnd[id];
      order = offloadEndOrder[id];
      slot = offloadEndSlot[id];
    }
    events.push_back({free, order, -buffer.bytes, int(id), slot});
  }
  // A load's destination lives until the last read of any link it carries
  // (several, for a shared copy).
  SmallVector<int> lastRead(plan.copies.size(), -1);
  for (auto [l, link] : llvm::enumerate(links))
    if (plan.loadOf[l] >= 0)
      lastRead[plan.loadOf[l]] =
          std::max(lastRead[plan.loadOf[l]], link.lastUse);
  // A load group's members share one device allocation, which the runtime
  // frees with the last of them: each lives until the group's last read.
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0) {
      int groupLast = std::max({lastRead[index], int(copy.waitPos),
                                lastRead[copy.groupLeader],
                                int(plan.copies[copy.groupLeader].waitPos)});
      lastRead[copy.groupLeader] = groupLast;
    }
  for (auto [index, copy] : llvm::enumerate(plan.copies))
    if (copy.kind == PlannedCopy::Kind::Load && copy.groupLeader >= 0)
      lastRead[index] = lastRead[copy.groupLeader];
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Load || copy.bytes == 0)
      continue;
    unsigned issue = std::min(copy.issuePos, numOps);
    // A load allocates its destination when it is issued, before the
    // compute stream waits there (for it, if it is also waited there).
    events.push_back({issueStart[issue], orderBefore(issue), copy.bytes,
                      -int(index) - 1, issue});
    unsigned last = std::max<int>(lastRead[index], copy.waitPos);
    last = std::min(last, numOps);
    events.push_back({opEnd[last], orderAfter(last), -copy.bytes,
                      -int(index) - 1, last});
  }
  // The graph before's deferred offloads hold up to prefetchBytes of their
  // sources over the first prefetchLead seconds of forward.
  if (std::optional<unsigned> end = getDeferredRelease()) {
    events.push_back({0, -1, execution.prefetchBytes, kNextGraphOwner, 0});
    events.push_back({opStart[*end], orderBefore(*end), -execution.prefetchBytes,
                      kNextGraphOwner, *end});
  }
  // The next graph's loads, started over the last prefetchLead seconds of
  // backward, hold up to prefetchBytes until the step ends.
  if (std::optional<unsigned> issue = getPrefetchIssue()) {
    events.push_back({issueStart[*issue], orderBefore(*issue),
                      execution.prefetchBytes, kNextGraphOwner, *issue});
    events.push_back({opEnd[numOps], orderAfter(numOps),
                      -execution.prefetchBytes, kNextGraphOwner, numOps});
  }
  llvm::stable_sort(events, [](const MemoryEvent &a, const MemoryEvent &b) {
    if (a.time != b.time)
      return a.time < b.time;
    return a.order < b.order;
  });
  int64_t live = 0;
  size_t peakIndex = 0;
  // Per position, the most bytes live in it: what it starts with, and after
  // each of its events. Events come in position order, but for ties at one
  // time (a release at a wait before an end of the op before): those count
  // in the later position, which only overstates it.
  unsigned slot = 0;
  // The buffers released at this position's waits, for afterRelease.
  SmallVector<int> releasedHere;
  if (liveAt)
    liveAt->assign(numOps + 1, 0);
  if (afterRelease)
    afterRelease->assign(buffers.size(), -1);
  for (auto [index, event] : llvm::enumerate(events)) {
    if ((liveAt || afterRelease) && event.slot != kSlotNow &&
        event.slot > slot) {
      if (liveAt)
        for (unsigned p = slot + 1; p <= event.slot; ++p)
          (*liveAt)[p] = live;
      slot = event.slot;
      releasedHere.clear();
    }
    live += event.delta;
    if (liveAt)
      (*liveAt)[slot] = std::max((*liveAt)[slot], live);
    if (afterRelease) {
      // An offload's source released at a wait before this position's op.
      if (event.delta < 0 && event.owner >= 0 && event.slot == slot &&
          event.order == orderBefore(slot))
        releasedHere.push_back(event.owner);
      for (int id : releasedHere)
        (*afterRelease)[id] = std::max((*afterRelease)[id], live);
    }
    if (live > result.peakBytes) {
      result.peakBytes = live;
      result.peakTime = event.time;
      peakIndex = index;
    }
  }
  if (liveAt) {
    for (unsigned p = slot + 1; p <= numOps; ++p)
      (*liveAt)[p] = live;
    // A model of the step before the copies are inserted (the planner's) has
    // no position for a load's wait: the wait, and the releases its stall
    // lets happen, count in the position of the op it precedes. So the
    // positions after a load's wait, up to that op (past other copies and
    // views, which offload-reorder-backward sinks to it), count what was
    // live at the wait: a schedule made on the IR (offload-schedule-copies)
    // never issues a copy between the two, where the planner could not.
    for (unsigned p = 0; p < numOps; ++p) {
      auto wait = dyn_cast<WaitOp>(ops[p].op);
      if (!wait || !isLoadStart(wait.getFuture().getDefiningOp()))
        continue;
      for (unsigned q = p + 1; q <= numOps; ++q) {
        (*liveAt)[q] = std::max((*liveAt)[q], (*liveAt)[p]);
        if (q == numOps ||
            !(isa<WaitOp>(ops[q].op) || isCopyStart(ops[q].op) ||
              getViewSource(ops[q].op)))
          break;
      }
    }
  }
  result.liveAtPeak.assign(buffers.size(), false);
  result.loadLiveAtPeak.assign(links.size(), false);
  for (size_t i = 0; i <= peakIndex && i < events.size(); ++i) {
    const MemoryEvent &event = events[i];
    if (event.owner == kNextGraphOwner)
      continue;
    if (event.owner >= 0)
      result.liveAtPeak[event.owner] = event.delta > 0;
    else
      result.loadLiveAtPeak[plan.copies[-event.owner - 1].target] =
          event.delta > 0;
  }
  auto it = llvm::upper_bound(ArrayRef(opStart).take_front(numOps),
                              result.peakTime);
  result.peakPos = it == opStart.begin() ? 0 : (it - opStart.begin()) - 1;
  return result;
}
