//===- CopyStreams.h - The copy streams of a simulation ---------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_ANALYSIS_COPYSTREAMS_H
#define OFFLOAD_LIB_ANALYSIS_COPYSTREAMS_H

#include "offload/Analysis/StepSimulation.h"

#include "llvm/ADT/DenseSet.h"

#include <deque>
#include <limits>

namespace mlir {
namespace offload {

inline constexpr double kInfiniteTime = std::numeric_limits<double>::infinity();

/// Two copy streams whose transfers share the link: alone, a transfer runs
/// at its direction's bandwidth; while both transfer, each gets half the
/// both-ways bandwidth (at most its own).
class CopyStreams {
public:
  CopyStreams(const CopyPlan &plan, double latency, double d2h, double h2d,
              double both)
      : plan(plan), latency(latency),
        issueTime(plan.copies.size(), kInfiniteTime),
        endTime(plan.copies.size(), kInfiniteTime),
        across(plan.copies.size(), 0) {
    bandwidth[0] = d2h;
    bandwidth[1] = h2d;
    shared[0] = std::min(d2h, both / 2);
    shared[1] = std::min(h2d, both / 2);
    for (auto [index, copy] : llvm::enumerate(plan.copies))
      if (copy.groupLeader >= 0) {
        if (groups.empty())
          groups.resize(plan.copies.size());
        SmallVector<unsigned> &members = groups[copy.groupLeader];
        if (members.empty())
          members.push_back(copy.groupLeader);
        members.push_back(index);
      }
  }

  /// `bytes` of `copy` crossed the link before it is issued (a load the
  /// graph before started; its latency is paid then, too).
  void setAcrossBeforeIssue(unsigned copy, int64_t bytes) {
    across[copy] = bytes;
  }

  void issue(unsigned copy, double time) {
    issueTime[copy] = time;
    streams[plan.copies[copy].kind == PlannedCopy::Kind::Load].queue.push_back(
        copy);
  }

  bool isDone(unsigned copy) const { return endTime[copy] < kInfiniteTime; }
  /// Ends `copy` now, wherever it is: the rest of it runs while other
  /// graphs do (a deferred offload, StepModel::getDeferredOffloads).
  void settle(unsigned copy) {
    if (isDone(copy))
      return;
    for (Stream &stream : streams) {
      if (stream.active == int(copy))
        stream.active = -1;
      llvm::erase(stream.queue, copy);
    }
    finish(copy);
  }
  /// Seconds the streams have transferred so far, summed over the two.
  double getTransferSeconds() const { return transferSeconds; }
  double getEnd(unsigned copy) const { return endTime[copy]; }
  double getNow() const { return now; }

  /// Runs the streams until `target`, or (with `until`) until that copy is
  /// done, whichever comes first.
  void run(double target, int until = -1) {
    while (true) {
      if (until >= 0 && isDone(until))
        return;
      activate();
      bool transferring[2] = {streams[0].active >= 0 && !streams[0].inLatency,
                              streams[1].active >= 0 && !streams[1].inLatency};
      bool both = transferring[0] && transferring[1];
      double rate[2] = {both ? shared[0] : bandwidth[0],
                        both ? shared[1] : bandwidth[1]};
      double next = kInfiniteTime;
      for (int s = 0; s < 2; ++s) {
        Stream &stream = streams[s];
        if (stream.active >= 0)
          next = std::min(next, stream.inLatency
                                    ? stream.latencyEnd
                                    : now + stream.remaining / rate[s]);
        else if (!stream.queue.empty())
          next = std::min(next, std::max(now, readyTime(stream.queue.front())));
      }
      if (next == kInfiniteTime) {
        now = std::max(now, target == kInfiniteTime ? now : target);
        return;
      }
      if (next > target) {
        for (int s = 0; s < 2; ++s)
          if (transferring[s]) {
            streams[s].remaining -= rate[s] * (target - now);
            transferSeconds += target - now;
          }
        now = target;
        return;
      }
      double dt = next - now;
      transferSeconds += dt * (int(transferring[0]) + int(transferring[1]));
      now = next;
      for (int s = 0; s < 2; ++s) {
        Stream &stream = streams[s];
        if (stream.active < 0)
          continue;
        if (stream.inLatency) {
          if (stream.latencyEnd <= now) {
            stream.inLatency = false;
            stream.latencyEnd = now;
          }
          continue;
        }
        stream.remaining -= rate[s] * dt;
        if (stream.remaining <= 1e-3 ||
            now + stream.remaining / rate[s] <= now * (1 + 1e-12)) {
          finish(stream.active);
          stream.active = -1;
        }
      }
    }
  }

private:
  struct Stream {
    std::deque<unsigned> queue;
    int active = -1;
    bool inLatency = false;
    double latencyEnd = 0;
    double remaining = 0;
  };

  double readyTime(unsigned copy) const {
    double ready = issueTime[copy];
    int dep = plan.copies[copy].dependsOn;
    // A load the graph before started runs after the other graphs' forward
    // and backward that come between, long after its offload ended.
    if (dep >= 0 && across[copy] == 0)
      ready = std::max(ready, endTime[dep]);
    return ready;
  }

  void activate() {
    for (Stream &stream : streams) {
      if (stream.active >= 0 || stream.queue.empty())
        continue;
      unsigned head = stream.queue.front();
      if (readyTime(head) > now)
        continue;
      stream.queue.pop_front();
      int64_t left = plan.copies[head].bytes - across[head];
      if (left <= 0) {
        finish(head);
        continue;
      }
      stream.active = head;
      // A group's later copies are the same transfer, and a load started
      // before is under way: no latency of their own.
      stream.inLatency = plan.copies[head].groupLeader < 0 && across[head] == 0;
      stream.latencyEnd = stream.inLatency ? now + latency : now;
      stream.remaining = double(left);
    }
  }

  /// A copy's bytes are across; a copy of a group ends with its last one.
  void finish(unsigned copy) {
    if (groups.empty()) {
      endTime[copy] = now;
      return;
    }
    int leader = plan.copies[copy].groupLeader;
    ArrayRef<unsigned> members = groups[leader < 0 ? copy : leader];
    if (members.empty()) {
      endTime[copy] = now;
      return;
    }
    transferred.insert(copy);
    if (!llvm::all_of(members,
                      [&](unsigned m) { return transferred.contains(m); }))
      return;
    for (unsigned member : members)
      endTime[member] = now;
  }

  const CopyPlan &plan;
  double latency;
  double bandwidth[2], shared[2];
  Stream streams[2];
  double now = 0, transferSeconds = 0;
  SmallVector<double> issueTime, endTime;
  /// Per copy, its bytes across before it was issued.
  SmallVector<int64_t> across;
  /// Per group leader, the copies of its group (empty if no group).
  SmallVector<SmallVector<unsigned>> groups;
  /// Copies of groups whose bytes are across.
  llvm::DenseSet<unsigned> transferred;
};

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_ANALYSIS_COPYSTREAMS_H
