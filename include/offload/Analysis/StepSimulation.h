//===- StepSimulation.h - Predicting a training step's time and memory -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// StepModel is the abstract form of a training step the cost model simulates:
// forward then backward top-level ops, in order, on one compute stream, each
// with its predicted time and the device buffers it defines and reads; the
// saved values linking forward to backward; and a CopyPlan saying which saved
// values go to host memory, where each copy is issued and where its wait is.
// simulate() runs the compute stream against a D2H and an H2D copy stream
// (sharing the both-ways bandwidth while both transfer) and predicts step
// time, exposed copy time and peak device memory.
//
// The memory model: a buffer is the storage of a tensor (views share their
// source's). Forward arguments (parameters, inputs) are live for the whole
// step; every other buffer is live from the start of the op defining it to
// the end of its last use (forward outputs until the end of forward, backward
// results until the end of the step). An offloaded buffer is released when
// its last use is over and its D2H copy has completed (or, with
// Release::AtWait, at its offload's wait); a loaded value occupies device
// memory from its load's issue (before the compute stream waits there, for
// the load itself if it is synchronous) to its last use, which for a copy
// shared by several saved views (SharedStorage.h) is the last use of any.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_STEPSIMULATION_H
#define OFFLOAD_ANALYSIS_STEPSIMULATION_H

#include "offload/Analysis/CostModel.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include "llvm/ADT/DenseMap.h"

#include <memory>

namespace mlir {
namespace offload {

class SimulationScratchPool;

/// What the model assumes about the code that runs the step, beyond the
/// device's numbers.
struct ExecutionModel {
  /// Where the device memory of an offloaded value comes back.
  enum class Release {
    /// Once its last use and its D2H copy are both over, without the compute
    /// stream waiting (offload_rt_free_device_after_copy).
    AfterCopy,
    /// At its offload's wait, in stream order: the compute stream waits
    /// there for the copy, and the memory is free for what comes after (a
    /// framework's caching allocator, as in the PyTorch bridge).
    AtWait,
  };
  Release release = Release::AfterCopy;
  /// The code generator fuses memory-bound ops (elementwise ops, reductions,
  /// gathers) between two compute-bound ones, as Inductor does: a value only
  /// such ops of one stretch read is never written to device memory, and a
  /// fused op reads each value in device memory once.
  bool fuseMemoryBound = false;
  /// The code generator plans its buffers as Inductor does
  /// (torch/_inductor/codegen/wrapper.py, AllocateLine): a buffer it frees
  /// inside a function waits in a pool, keyed by element type and size, for
  /// the next buffer of that key it allocates, which takes its storage
  /// (the most recently freed first), unless holding it so long would raise
  /// the function's peak. The storage then stays live from the free to that
  /// allocation.
  bool reuseFreedBuffers = false;
  /// Where loads are hoisted (scheduleLoads), each is given this fraction
  /// of its copy time more than the model needs: slack for a link or a
  /// compute stream that runs off the model. The memory bounds stay.
  double loadLead = 0;
  /// With scheduled copies: copies of fewer bytes than this issued at one
  /// point move as one transfer (StepModel::coalesceCopies); 0: never.
  int64_t coalesceBelow = 0;
  /// A step compiled as one of several graphs, whose backward graphs run
  /// one after the other (docs/cost-model.md#prefetch-across-graphs): the
  /// loads issued at the start of backward may run this many seconds
  /// earlier, at the end of the backward graph before, while their bytes fit
  /// `prefetchBytes` (StepModel::getPrefetchedLoads); and over the last
  /// `prefetchLead` seconds of its own backward the step holds
  /// `prefetchBytes` more, the next graph's loads started there
  /// (StepModel::getPrefetchIssue).
  /// 0: none.
  double prefetchLead = 0;
  /// StepModel::build chooses the lead: the one that moves the most bytes.
  bool autoPrefetchLead = false;
  /// Negative: what the last `prefetchLead` seconds of backward leave free
  /// below the peak without offload (StepModel::build resolves it).
  int64_t prefetchBytes = -1;
  /// A step compiled once and run as this many graphs in a row before
  /// their backward graphs, as each layer of a model compiled per layer:
  /// while one instance runs, the others' saved values stay on the device
  /// (the last layer's forward and backward run beside the saved values of
  /// every layer before it). The simulation adds to every moment of the
  /// step savedInstances - 1 times the bytes of the forward intermediates
  /// the plan keeps on the device for backward (StepSimulator::run), so
  /// what a plan keeps through forward counts that many times over. 1: the
  /// step alone.
  unsigned savedInstances = 1;
};

/// One copy over the host link.
struct PlannedCopy {
  enum class Kind { Offload, Load };
  Kind kind;
  /// Offload: the forward buffer copied out. Load: the saved link loaded.
  unsigned target;
  int64_t bytes;
  /// Op position the copy is issued before (at the start of that op).
  unsigned issuePos;
  /// Op position the compute stream waits for it before. Offloads: used
  /// with Release::AtWait only.
  unsigned waitPos = 0;
  /// Load: the offload copy that produced its host value, or -1.
  int dependsOn = -1;
  /// Copies issued before the same op go to their stream in this order (the
  /// order of their ops in the IR).
  int64_t sequence = 0;
  /// In a group of copies moved as one transfer (offload_group_start,
  /// load_group_start; StepModel::coalesceCopies): the group's first copy,
  /// for each of the others; -1 otherwise. A group pays the link's latency
  /// once, its copies go to the stream one after the other, and all of them
  /// complete when the last one does. A load group's members share one
  /// device allocation, held until the last of them is last read.
  int groupLeader = -1;
};

/// Which saved values move, and where their copies are.
struct CopyPlan {
  SmallVector<PlannedCopy> copies;
  /// Per saved link: its forward value is returned as a host copy (so the
  /// return keeps no device memory alive).
  SmallVector<bool> offloaded;
  /// Per saved link: the load copy backward reads it through, or -1.
  SmallVector<int> loadOf;
  /// Per saved link: the offload copy that carries it, or -1.
  SmallVector<int> offloadOf;
};

/// What a simulation predicts.
struct SimulationResult {
  double stepSeconds = 0;
  /// Compute alone, without stalls.
  double computeSeconds = 0;
  /// Time the compute stream stalled at waits.
  double exposedSeconds = 0;
  /// Time kernels ran longer because copies transferred beside them
  /// (DeviceProfile::copyInterference).
  double interferenceSeconds = 0;
  /// With ExecutionModel::savedInstances > 1: what the other instances'
  /// saved values hold, included in peakBytes.
  int64_t heldByOtherInstances = 0;
  int64_t peakBytes = 0;
  /// When the peak was reached, and the op running then.
  double peakTime = 0;
  unsigned peakPos = 0;
  /// Per copy of the plan: stall at its wait, completion time.
  SmallVector<double> exposedPerCopy;
  SmallVector<double> copyEnd;
  int64_t d2hBytes = 0, h2dBytes = 0;
  /// Per buffer: live (on the device) at the moment of the peak.
  SmallVector<bool> liveAtPeak;
  /// Per saved link: its load's destination is live at the moment of the
  /// peak.
  SmallVector<bool> loadLiveAtPeak;
};

class StepModel {
public:
  /// Builds the model of `step`. Copies already in the IR (synchronous or
  /// split) are read into getPlanInIR(); the model itself treats them as
  /// aliases, so simulating an empty plan predicts the step without offload.
  static FailureOr<StepModel> build(const TrainingStep &step,
                                    const CostModel &costModel,
                                    ExecutionModel execution = {});

  /// The plan the IR carries.
  const CopyPlan &getPlanInIR() const { return planInIR; }
  /// No copies: every saved value stays on the device.
  CopyPlan getEmptyPlan() const;

  /// The plan the offload passes would produce for the saved links in
  /// `links` (offload after the last forward use of the storage, load wait
  /// before the first real backward use), with load issue positions
  /// scheduled by scheduleLoads and offload waits placed by
  /// placeOffloadWaits when `schedule` is set (else each offload is waited
  /// right where it starts, and each load right where it is needed). With
  /// `simulated`, also simulate() of the plan (scheduling has it at hand).
  CopyPlan planFor(ArrayRef<unsigned> links, bool schedule,
                   int64_t maxInflightBytes,
                   SimulationResult *simulated = nullptr) const;

  /// Puts the wait of every offload in `plan` at its release point: the
  /// first forward op (not a wait) predicted, on the compute stream alone,
  /// to start once the copy has ended, or the end of forward if none does;
  /// never above an op a wait may not cross (getOffloadWaitFloor).
  /// Forward then never stalls on an offload before its end. With
  /// release=at-wait each wait then goes down further (sinkOffloadWaits).
  void placeOffloadWaits(CopyPlan &plan) const;
  /// Groups the copies of `kind` in `plan` that move as one transfer
  /// (PlannedCopy::groupLeader): copies issued at one point (before the
  /// same op that is no copy or wait, nor for loads a view; getIssueSlots),
  /// next to each
  /// other on their stream, each of at least one and fewer than `maxBytes`
  /// bytes, and, for loads, all waited at that point or all later (a load
  /// needed at once is not held back by one started ahead of its use). A
  /// group's copies are issued where its first one is. Nothing with
  /// `maxBytes` <= 0. offload-schedule-copies forms the IR's groups
  /// (offload.offload_group_start, offload.load_group_start) with this, and
  /// planFor predicts them with it.
  void coalesceCopies(CopyPlan &plan, int64_t maxBytes,
                      PlannedCopy::Kind kind) const;
  /// Groups the loads of `plan` (coalesceCopies with
  /// ExecutionModel::coalesceBelow) where that does not raise the predicted
  /// peak over `apart`, simulate() of `plan` as it is; a load group shares
  /// one device allocation until its last member's last read (the
  /// runtime's), so its members may live longer. Returns simulate() of the
  /// plan it leaves. planFor and offload-schedule-copies both decide so.
  SimulationResult coalesceLoads(CopyPlan &plan, SimulationResult apart) const;
  /// The first position at or after `pos` whose op is no copy start or
  /// wait, nor (with `pastViews`) a view; the number of ops if none. Copies
  /// issued anywhere from `pos` up to it are issued at one point in time.
  unsigned getIssueSlot(unsigned pos, bool pastViews) const;
  /// getIssueSlot of every position (and of the number of ops), in one pass
  /// over the ops.
  SmallVector<unsigned> getIssueSlots(bool pastViews) const;

  /// Moves the issue of every load in `plan` earlier so that, predicted on
  /// the compute stream alone, its copy ends before its wait (the H2D stream
  /// is serial: loads are placed latest first, each `loadLead` of its own
  /// copy time early, and no load is issued after one that waits later,
  /// which the stream would run first), never above the start of
  /// backward nor above an op a copy start may not cross
  /// (getLoadIssueFloor), never so early that the bytes of loads issued and not yet
  /// waited exceed `maxInflightBytes` (0: no limit), and never so early that
  /// the device memory it holds meanwhile raises the peak: simulate() of the
  /// result predicts a peak no higher than that of `plan` with every load
  /// issued at its wait (the synchronous loads of the same plan, offload
  /// waits as given). So wherever those synchronous loads keep the peak at
  /// or below the peak without offload, so does the result.
  ///
  /// How: the synchronous plan is simulated; its live bytes per op position
  /// bound each load's hoisting (a load's bytes are added from its new issue
  /// to its wait, and no position may exceed the synchronous peak). Hoisting
  /// makes backward run earlier against the copies, so the result is
  /// simulated again; if its peak is still higher, the placement is redone
  /// with less headroom, a few times, and failing that the loads stay at
  /// their waits. Loads issued before one op keep the order of their waits
  /// (their `sequence`), as offload-schedule-copies emits them. Both the
  /// planner (planFor) and offload-schedule-copies place loads with this.
  /// Returns simulate() of the plan it leaves.
  SimulationResult scheduleLoads(CopyPlan &plan,
                                 int64_t maxInflightBytes) const;

  SimulationResult simulate(const CopyPlan &plan) const;

  const ExecutionModel &getExecutionModel() const { return execution; }
  /// The loads of `plan` that run during the backward graph before this
  /// one (ExecutionModel::prefetchLead): those issued at the start of
  /// backward, before any op that computes, in stream order, while their
  /// bytes together fit ExecutionModel::prefetchBytes. Indices into
  /// `plan.copies`; none without a lead.
  SmallVector<unsigned> getPrefetchedLoads(const CopyPlan &plan) const;
  /// The backward position from which the step starts the next graph's
  /// prefetched loads: the first op predicted (compute alone) to start no
  /// earlier than ExecutionModel::prefetchLead before the end of backward;
  /// nothing without a lead.
  std::optional<unsigned> getPrefetchIssue() const;
  /// With release=at-wait and a lead, the offloads of `plan` waited at the
  /// end of forward (no op that computes after their wait) that complete
  /// while the next graph's forward runs: the compute stream does not wait
  /// for them, and their sources go back once they end, while their copies,
  /// one after the other in stream order, fit prefetchLead and their bytes
  /// prefetchBytes. The simulation ends them when backward begins (the
  /// graphs between run meanwhile). Indices into `plan.copies`.
  SmallVector<unsigned> getDeferredOffloads(const CopyPlan &plan) const;
  /// The forward position until which the step holds the graph before's
  /// deferred offloads' sources (prefetchBytes): the first op predicted to
  /// start no earlier than prefetchLead into forward; nothing without a lead
  /// or with release=after-copy.
  std::optional<unsigned> getDeferredRelease() const;
  /// DeviceProfile::copyInterference: kernel time added per copy second.
  double getCopyInterference() const { return copyInterference; }
  unsigned getNumOps() const { return ops.size(); }
  unsigned getNumForwardOps() const { return numForwardOps; }
  unsigned getNumLinks() const { return links.size(); }
  Operation *getOp(unsigned pos) const { return ops[pos].op; }
  /// Position of a top-level op of either function.
  std::optional<unsigned> getPosition(Operation *op) const;
  /// Device bytes a saved link holds, and the forward buffer it reads.
  int64_t getLinkBytes(unsigned link) const { return links[link].bytes; }
  int getLinkBuffer(unsigned link) const { return links[link].buffer; }
  int64_t getBufferBytes(unsigned buffer) const { return buffers[buffer].bytes; }
  /// Predicted start of the op at `pos` (numOps: the end of the step) on the
  /// compute stream alone, without stalls.
  double getComputeStart(unsigned pos) const { return startTimes[pos]; }
  /// The shortest a copy of `bytes` can take: the copy latency, then the
  /// transfer at the direction's full bandwidth (sharing the link only makes
  /// it longer).
  double getMinCopySeconds(PlannedCopy::Kind kind, int64_t bytes) const {
    return profileLatency +
           double(bytes) / (kind == PlannedCopy::Kind::Load ? h2dBandwidth
                                                            : d2hBandwidth);
  }
  /// The earliest position a load waited before `waitPos` may be issued
  /// before: the start of backward, or just below the last op above the wait
  /// that a copy start may not cross (one whose effects do not commute with
  /// a start's: unknown effects, or effects on every copy).
  unsigned getLoadIssueFloor(unsigned waitPos) const {
    return std::max<unsigned>(numForwardOps, lastCopyBarrier[waitPos] + 1);
  }
  /// The earliest position an offload's wait may move up to from the end of
  /// forward, by the same rule.
  unsigned getOffloadWaitFloor() const {
    return lastCopyBarrier[numForwardOps] + 1;
  }
  /// The op positions a buffer is live in when nothing is offloaded: from
  /// its definition (-1: the start of the step) to its last use or hold
  /// (the end of forward at least for a saved value), as simulate() of the
  /// empty plan has it; one pair per buffer.
  SmallVector<std::pair<int, int>> getLiveRangesWithoutOffload() const;
  /// A load planFor() issues: the position it is waited before, its bytes.
  struct PlannedLoad {
    unsigned wait;
    int64_t bytes;
  };
  /// The loads planFor() issues for `links` chosen together: one per link
  /// backward reads, except that the members of a shared copy
  /// (offload/Analysis/SharedStorage.h) are loaded once, before the first
  /// of them is read. None for links whose storage cannot be offloaded.
  SmallVector<PlannedLoad> getPlannedLoads(ArrayRef<unsigned> links) const;
  /// Where planFor() issues the offload of `link` if the link is chosen
  /// (right after the last forward use of its storage), or nothing if it
  /// would not offload it.
  std::optional<unsigned> getPlannedOffloadIssue(unsigned link) const;

private:
  StepModel() = default;

  /// With release=at-wait: moves the wait of each of `offloads` (indices
  /// into `plan`, waited in forward) down from its release point, latest
  /// first, as far as the bytes it keeps live leave the plan's predicted
  /// peak unchanged, up to the end of forward, never onto another wait.
  /// Slack against a forward that runs faster, or a link that runs slower,
  /// than predicted.
  void sinkOffloadWaits(CopyPlan &plan, ArrayRef<unsigned> offloads) const;

  /// Resolves ExecutionModel::autoPrefetchLead and a negative
  /// prefetchBytes from the step without offload: per candidate lead (the
  /// time from a backward op's start to the end of backward), the bytes free
  /// below the peak over that tail; the chosen lead moves the most bytes
  /// (the smaller of those and what the link carries in the lead).
  void resolvePrefetch();

  /// ExecutionModel::reuseFreedBuffers: the holdPos of every buffer whose
  /// storage waits for a later allocation, found on the plan without
  /// offload, forward and backward apart (Inductor plans each graph alone).
  void reuseFreedBuffers();

  /// simulate(), and with `liveAt`, per op position (and the end of the step,
  /// numOps), the most device bytes live from the copies issued and waited
  /// before that op to its end. With `afterRelease`, per buffer released at
  /// an offload's wait, the most bytes live in that wait's position from the
  /// release on (-1 for the other buffers): held across the position, the
  /// buffer would add its bytes to that.
  SimulationResult simulate(const CopyPlan &plan,
                            SmallVectorImpl<int64_t> *liveAt,
                            SmallVectorImpl<int64_t> *afterRelease = nullptr) const;
  /// One placement of scheduleLoads: `loads` latest wait first, each issued
  /// as early as its copy needs, the in-flight limit and `memoryLimit` allow,
  /// given `liveAt` of the plan with every load issued at its wait. Returns
  /// whether any load is issued before its wait.
  bool placeLoads(CopyPlan &plan, ArrayRef<unsigned> loads,
                  int64_t maxInflightBytes, ArrayRef<int64_t> liveAt,
                  int64_t memoryLimit) const;

  /// Saved links that planFor() moves with one offload and one load.
  struct CopyGroup {
    /// One link, or the members of a shared copy (ascending).
    SmallVector<unsigned> links;
    /// The link the load is recorded for: the shared copy's leader.
    unsigned leader;
    /// Bytes of each copy: the link's, or the shared source's.
    int64_t bytes;
    /// First and last backward op reading any of the links; -1 if none.
    int firstUse = -1, lastUse = -1;
    /// The value offloaded: the link's, or the shared source.
    Value value;
  };
  /// Groups the (sorted, unique) `chosen` links as offload-insert-offloads
  /// would move them, in the order it creates their offloads (by leader).
  SmallVector<CopyGroup> groupForCopies(ArrayRef<unsigned> chosen) const;

  /// A use of a buffer (>= 0) or of a saved link (-(link + 1)).
  using Ref = int;
  struct SimOp {
    Operation *op;
    double seconds;
    /// OpCost::memoryBound: copy_interference slows it.
    bool memoryBound;
    SmallVector<unsigned> defs;
    SmallVector<Ref> uses;
  };
  struct Buffer {
    int64_t bytes;
    /// Defining op position; -1 for values live from the start.
    int defPos;
    bool persistent;
    /// Position it must stay live through regardless of uses, or -1.
    int holdPos = -1;
    /// A backward argument (not a saved value): live from the start of
    /// backward to its last use, and not at all if nothing reads it.
    bool backwardArgument = false;
    /// Element type of the tensor, null if it has none.
    Type elementType;
    /// Allocated by the code generator for the op defining it (a fused
    /// kernel's or a matmul's result), not by the op itself (attention,
    /// copies): with reuseFreedBuffers, it may take a freed buffer's storage.
    bool generatorAllocated = false;
  };
  struct Link {
    /// The forward buffer the saved value's storage is, or -1 if none
    /// (a host value, or not a tensor).
    int buffer = -1;
    int64_t bytes = 0;
    /// The saved value in forward (whose view closure the offload follows).
    Value value;
    /// getSharedCopySource(value), or the value itself if it has none,
    /// where the step's interface may shrink (canShrinkSavedInterface);
    /// null otherwise or once offloaded.
    Value copySource;
    /// First and last backward op that reads the link; -1 if none. The
    /// first is where offload-insert-loads loads it: the first real use, or
    /// earlier where a view of it with effects cannot sink past an op whose
    /// effects do not commute with its own, or the end of backward (the
    /// number of ops) where only the return or views nobody reads read it.
    int firstUse = -1, lastUse = -1;
  };

  SmallVector<SimOp> ops;
  SmallVector<Buffer> buffers;
  SmallVector<Link> links;
  SmallVector<double> startTimes;
  unsigned numForwardOps = 0;
  ExecutionModel execution;
  double profileLatency = 0, d2hBandwidth = 1, h2dBandwidth = 1,
         bothWaysBandwidth = 1, copyInterference = 0;
  llvm::DenseMap<Operation *, unsigned> positions;
  /// The arrays simulate() fills, kept between calls: at 100k ops they are
  /// megabytes, and allocating them afresh for each of the planner's
  /// simulations costs page faults (docs/scaling.md). Shared by copies of
  /// the model; safe for concurrent simulations.
  std::shared_ptr<SimulationScratchPool> scratchPool;
  /// Per position (and numOps), the last position before it whose op a copy
  /// start or wait may not cross, or -1.
  SmallVector<int> lastCopyBarrier;
  /// Per buffer, the last position an op reads it directly, or -1.
  SmallVector<int> lastDirectUse;
  /// Per buffer, the last forward position an op reads it, views included
  /// (where offload-insert-offloads puts its offload), or -1.
  SmallVector<int> lastForwardRead;
  CopyPlan planInIR;

  friend class StepModelBuilder;
  friend class StepSimulator;
};

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_STEPSIMULATION_H
