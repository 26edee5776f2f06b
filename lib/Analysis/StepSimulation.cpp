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

namespace mlir {
namespace offload {
/// One run of StepModel::simulate: the compute stream against the copy
/// streams (runStreams), then the device bytes live swept in time order
/// (the add*Events steps, sweepEvents).
class StepSimulator {
public:
  StepSimulator(const StepModel &model, const CopyPlan &plan,
                SimulationScratch &scratch)
      : model(model), plan(plan), scratch(scratch),
        numOps(model.ops.size()),
        releaseAtWait(model.execution.release ==
                      ExecutionModel::Release::AtWait) {}

  SimulationResult run(SmallVectorImpl<int64_t> *liveAt,
                       SmallVectorImpl<int64_t> *afterRelease);

private:
  using Buffer = StepModel::Buffer;

  void indexCopies();
  ArrayRef<unsigned> issuedAt(unsigned pos) const;
  ArrayRef<unsigned> waitedAt(unsigned pos) const;
  void startPrefetchedLoads(CopyStreams &streams) const;
  void runStreams();
  double runOp(unsigned pos, double time, CopyStreams &streams);
  SmallVector<int> getLastPositions() const;
  void addBufferEvents();
  void addLoadEvents();
  void addNextGraphEvents();
  size_t sweepEvents(SmallVectorImpl<int64_t> *liveAt,
                     SmallVectorImpl<int64_t> *afterRelease);
  void holdLiveAtLoadWaits(SmallVectorImpl<int64_t> &liveAt) const;
  void markLiveAtPeak(size_t peakIndex);
  int64_t getHeldByOtherInstances() const;

  const StepModel &model;
  const CopyPlan &plan;
  SimulationScratch &scratch;
  unsigned numOps;
  bool releaseAtWait;
  SimulationResult result;
};
} // namespace offload
} // namespace mlir

/// The copies issued and waited at each position, in the order the streams
/// see them (by sequence).
void StepSimulator::indexCopies() {
  SmallVector<unsigned> bySequence =
      llvm::to_vector(llvm::seq<unsigned>(0, plan.copies.size()));
  llvm::stable_sort(bySequence, [&](unsigned a, unsigned b) {
    return plan.copies[a].sequence < plan.copies[b].sequence;
  });
  groupByKey(
      numOps + 1, bySequence,
      [&](unsigned c) { return std::min(plan.copies[c].issuePos, numOps); },
      scratch.issuedStart, scratch.issued);
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
      scratch.waitedStart, scratch.waited);
}

ArrayRef<unsigned> StepSimulator::issuedAt(unsigned pos) const {
  return ArrayRef(scratch.issued)
      .slice(scratch.issuedStart[pos],
             scratch.issuedStart[pos + 1] - scratch.issuedStart[pos]);
}

ArrayRef<unsigned> StepSimulator::waitedAt(unsigned pos) const {
  return ArrayRef(scratch.waited)
      .slice(scratch.waitedStart[pos],
             scratch.waitedStart[pos + 1] - scratch.waitedStart[pos]);
}

/// The loads the backward graph before this one started: the link carried
/// them over the lead, one after the other in stream order.
void StepSimulator::startPrefetchedLoads(CopyStreams &streams) const {
  double leadLeft = model.execution.prefetchLead;
  for (unsigned copy : model.getPrefetchedLoads(plan)) {
    double seconds = leadLeft - model.profileLatency;
    if (seconds <= 0)
      break;
    int64_t bytes = std::min<int64_t>(plan.copies[copy].bytes,
                                      int64_t(seconds * model.h2dBandwidth));
    streams.setAcrossBeforeIssue(copy, bytes);
    leadLeft -= model.profileLatency + double(bytes) / model.h2dBandwidth;
  }
}

/// The op at `pos` from `time`: how long it runs. A memory-bound op runs
/// longer by the share of copy transfer beside it (the streams run on
/// meanwhile, but the added time is not charged again). Compute-bound ops
/// (matmuls, attention) lose nothing measurable to the copies' memory
/// traffic.
double StepSimulator::runOp(unsigned pos, double time, CopyStreams &streams) {
  double seconds = model.ops[pos].seconds;
  result.computeSeconds += seconds;
  if (model.copyInterference <= 0 || !model.ops[pos].memoryBound)
    return seconds;
  double transferred = streams.getTransferSeconds();
  streams.run(time + seconds);
  double slowdown =
      model.copyInterference * (streams.getTransferSeconds() - transferred);
  result.interferenceSeconds += slowdown;
  return seconds + slowdown;
}

/// The compute stream runs the ops in order, issuing the copies of each
/// position and stalling at its waits; fills the issue, start and end time
/// of every position, the copies' ends and the stalls.
void StepSimulator::runStreams() {
  CopyStreams streams(plan, model.profileLatency, model.d2hBandwidth,
                      model.h2dBandwidth, model.bothWaysBandwidth);
  startPrefetchedLoads(streams);
  SmallVector<bool> deferred(plan.copies.size(), false);
  for (unsigned copy : model.getDeferredOffloads(plan))
    deferred[copy] = true;
  scratch.issueStart.resize_for_overwrite(numOps + 1);
  scratch.opStart.resize_for_overwrite(numOps + 1);
  scratch.opEnd.resize_for_overwrite(numOps + 1);
  double time = 0;
  for (unsigned pos = 0; pos <= numOps; ++pos) {
    streams.run(time);
    scratch.issueStart[pos] = time;
    for (unsigned copy : issuedAt(pos))
      streams.issue(copy, time);
    if (pos == model.numForwardOps)
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
    scratch.opStart[pos] = time;
    if (pos < numOps)
      time += runOp(pos, time, streams);
    scratch.opEnd[pos] = time;
  }
  streams.run(kInf);
  result.copyEnd.resize(plan.copies.size());
  result.stepSeconds = time;
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    result.copyEnd[index] = streams.getEnd(index);
    if (result.copyEnd[index] < kInf)
      result.stepSeconds = std::max(result.stepSeconds, result.copyEnd[index]);
  }
}

/// Per buffer, the last position it is live in under the plan, offloads
/// aside.
SmallVector<int> StepSimulator::getLastPositions() const {
  SmallVector<int> lastPos(model.buffers.size());
  for (auto [id, buffer] : llvm::enumerate(model.buffers))
    lastPos[id] = std::max(model.lastDirectUse[id], buffer.holdPos);
  int lastForward = int(model.numForwardOps) - 1;
  for (auto [l, link] : llvm::enumerate(model.links)) {
    if (link.buffer < 0)
      continue;
    bool readsForwardBuffer =
        !plan.offloaded[l] || (plan.loadOf[l] < 0 && link.firstUse >= 0);
    if (!plan.offloaded[l])
      lastPos[link.buffer] = std::max(lastPos[link.buffer], lastForward);
    if (readsForwardBuffer)
      lastPos[link.buffer] = std::max(lastPos[link.buffer], link.lastUse);
  }
  return lastPos;
}

/// Each buffer's allocation and release. An offloaded buffer is released
/// once its copies are done, or (at their waits) in stream order, if that
/// is later than its last use.
void StepSimulator::addBufferEvents() {
  const SmallVectorImpl<double> &opStart = scratch.opStart,
                                &opEnd = scratch.opEnd;
  SmallVector<int> lastPos = getLastPositions();
  struct Release {
    double end = -1;
    int64_t order = kAsyncOrder;
    unsigned slot = kSlotNow;
  };
  SmallVector<Release> offloadRelease(model.buffers.size());
  for (auto [index, copy] : llvm::enumerate(plan.copies)) {
    if (copy.kind != PlannedCopy::Kind::Offload)
      continue;
    Release release{result.copyEnd[index]};
    if (releaseAtWait) {
      release.slot = std::min(copy.waitPos, numOps);
      release.end = opStart[release.slot];
      release.order = orderBefore(release.slot);
    }
    if (release.end > offloadRelease[copy.target].end)
      offloadRelease[copy.target] = release;
  }
  std::vector<MemoryEvent> &events = scratch.events;
  for (auto [id, buffer] : llvm::enumerate(model.buffers)) {
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
    double defined =
        buffer.backwardArgument ? scratch.issueStart[def] : opStart[def];
    events.push_back({defined, orderAt(def), buffer.bytes, int(id), def});
    int last = lastPos[id] < 0 ? int(def) : std::max(lastPos[id], int(def));
    unsigned lastOp = std::min<unsigned>(last, numOps);
    Release release{opEnd[lastOp], orderAfter(lastOp), lastOp};
    if (offloadRelease[id].end > release.end)
      release = offloadRelease[id];
    events.push_back(
        {release.end, release.order, -buffer.bytes, int(id), release.slot});
  }
}

/// Each load's destination, from its issue (before the compute stream waits
/// there, for it if it is also waited there) to the last read of any link
/// it carries (several, for a shared copy). A load group's members share one
/// device allocation, which the runtime frees with the last of them: each
/// lives until the group's last read.
void StepSimulator::addLoadEvents() {
  SmallVector<int> lastRead(plan.copies.size(), -1);
  for (auto [l, link] : llvm::enumerate(model.links))
    if (plan.loadOf[l] >= 0)
      lastRead[plan.loadOf[l]] =
          std::max(lastRead[plan.loadOf[l]], link.lastUse);
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
    scratch.events.push_back({scratch.issueStart[issue], orderBefore(issue),
                              copy.bytes, -int(index) - 1, issue});
    unsigned last = std::max<int>(lastRead[index], copy.waitPos);
    last = std::min(last, numOps);
    scratch.events.push_back({scratch.opEnd[last], orderAfter(last),
                              -copy.bytes, -int(index) - 1, last});
  }
}

/// The graph before's deferred offloads hold up to prefetchBytes of their
/// sources over the first prefetchLead seconds of forward; the next graph's
/// loads, started over the last prefetchLead seconds of backward, hold up
/// to prefetchBytes until the step ends.
void StepSimulator::addNextGraphEvents() {
  int64_t bytes = model.execution.prefetchBytes;
  if (std::optional<unsigned> end = model.getDeferredRelease()) {
    scratch.events.push_back({0, -1, bytes, kNextGraphOwner, 0});
    scratch.events.push_back({scratch.opStart[*end], orderBefore(*end), -bytes,
                              kNextGraphOwner, *end});
  }
  if (std::optional<unsigned> issue = model.getPrefetchIssue()) {
    scratch.events.push_back({scratch.issueStart[*issue], orderBefore(*issue),
                              bytes, kNextGraphOwner, *issue});
    scratch.events.push_back({scratch.opEnd[numOps], orderAfter(numOps),
                              -bytes, kNextGraphOwner, numOps});
  }
}

/// The events in time order: the peak, and where asked, per position the
/// most bytes live in it (what it starts with, and after each of its events)
/// and per buffer released at an offload's wait the most bytes live in that
/// position from the release on. Events come in position order, but for
/// ties at one time (a release at a wait before an end of the op before):
/// those count in the later position, which only overstates it. Returns the
/// index of the peak's event.
size_t StepSimulator::sweepEvents(SmallVectorImpl<int64_t> *liveAt,
                                  SmallVectorImpl<int64_t> *afterRelease) {
  std::vector<MemoryEvent> &events = scratch.events;
  llvm::stable_sort(events, [](const MemoryEvent &a, const MemoryEvent &b) {
    if (a.time != b.time)
      return a.time < b.time;
    return a.order < b.order;
  });
  int64_t live = 0;
  size_t peakIndex = 0;
  unsigned slot = 0;
  // The buffers released at this position's waits, for afterRelease.
  SmallVector<int> releasedHere;
  if (liveAt)
    liveAt->assign(numOps + 1, 0);
  if (afterRelease)
    afterRelease->assign(model.buffers.size(), -1);
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
  if (liveAt)
    for (unsigned p = slot + 1; p <= numOps; ++p)
      (*liveAt)[p] = live;
  return peakIndex;
}

/// A model of the step before the copies are inserted (the planner's) has
/// no position for a load's wait: the wait, and the releases its stall lets
/// happen, count in the position of the op it precedes. So the positions
/// after a load's wait, up to that op (past other copies and views, which
/// offload-reorder-backward sinks to it), count what was live at the wait: a
/// schedule made on the IR (offload-schedule-copies) never issues a copy
/// between the two, where the planner could not.
void StepSimulator::holdLiveAtLoadWaits(SmallVectorImpl<int64_t> &liveAt) const {
  for (unsigned p = 0; p < numOps; ++p) {
    auto wait = dyn_cast<WaitOp>(model.ops[p].op);
    if (!wait || !isLoadStart(wait.getFuture().getDefiningOp()))
      continue;
    for (unsigned q = p + 1; q <= numOps; ++q) {
      liveAt[q] = std::max(liveAt[q], liveAt[p]);
      if (q == numOps ||
          !(isa<WaitOp>(model.ops[q].op) || isCopyStart(model.ops[q].op) ||
            getViewSource(model.ops[q].op)))
        break;
    }
  }
}

/// What is live at the peak, and the op running then.
void StepSimulator::markLiveAtPeak(size_t peakIndex) {
  const std::vector<MemoryEvent> &events = scratch.events;
  result.liveAtPeak.assign(model.buffers.size(), false);
  result.loadLiveAtPeak.assign(model.links.size(), false);
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
  ArrayRef<double> opStart = scratch.opStart;
  auto it = llvm::upper_bound(opStart.take_front(numOps), result.peakTime);
  result.peakPos = it == opStart.begin() ? 0 : (it - opStart.begin()) - 1;
}

SimulationResult StepSimulator::run(SmallVectorImpl<int64_t> *liveAt,
                                    SmallVectorImpl<int64_t> *afterRelease) {
  result.exposedPerCopy.assign(plan.copies.size(), 0);
  indexCopies();
  runStreams();
  scratch.events.clear();
  addBufferEvents();
  addLoadEvents();
  addNextGraphEvents();
  size_t peakIndex = sweepEvents(liveAt, afterRelease);
  if (liveAt)
    holdLiveAtLoadWaits(*liveAt);
  markLiveAtPeak(peakIndex);
  // The other instances' saved values are there at every moment: the
  // peak's position stays, its height and each position's rise.
  result.heldByOtherInstances = getHeldByOtherInstances();
  if (int64_t held = result.heldByOtherInstances) {
    result.peakBytes += held;
    if (liveAt)
      for (int64_t &bytes : *liveAt)
        bytes += held;
    if (afterRelease)
      for (int64_t &bytes : *afterRelease)
        if (bytes >= 0)
          bytes += held;
  }
  return std::move(result);
}

/// ExecutionModel::savedInstances: what the other instances of the step
/// hold while it runs. Each keeps on the device the forward intermediates
/// this plan keeps for backward (each storage once; a storage one kept link
/// reads stays, even if another link of it is offloaded). Arguments are
/// the caller's memory, held once however many instances run.
int64_t StepSimulator::getHeldByOtherInstances() const {
  unsigned others = model.execution.savedInstances - 1;
  if (others == 0)
    return 0;
  SmallVector<bool> counted(model.buffers.size(), false);
  int64_t kept = 0;
  for (auto [l, link] : llvm::enumerate(model.links)) {
    if (link.buffer < 0 || plan.offloaded[l] || counted[link.buffer])
      continue;
    const Buffer &buffer = model.buffers[link.buffer];
    if (buffer.defPos < 0 || unsigned(buffer.defPos) >= model.numForwardOps)
      continue;
    counted[link.buffer] = true;
    kept += buffer.bytes;
  }
  return kept * int64_t(others);
}

SimulationResult StepModel::simulate(const CopyPlan &plan) const {
  return simulate(plan, nullptr);
}

SimulationResult
StepModel::simulate(const CopyPlan &plan, SmallVectorImpl<int64_t> *liveAt,
                    SmallVectorImpl<int64_t> *afterRelease) const {
  std::unique_ptr<SimulationScratch> scratch = scratchPool->acquire();
  auto releaseScratch = llvm::make_scope_exit(
      [&] { scratchPool->release(std::move(scratch)); });
  return StepSimulator(*this, plan, *scratch).run(liveAt, afterRelease);
}
