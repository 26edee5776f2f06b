//===- SimulationScratch.h - Arrays StepModel::simulate reuses -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_ANALYSIS_SIMULATIONSCRATCH_H
#define OFFLOAD_LIB_ANALYSIS_SIMULATIONSCRATCH_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace mlir {
namespace offload {

/// A change of the device bytes live, at one time of the simulated step.
struct MemoryEvent {
  double time;
  int64_t order;
  int64_t delta;
  /// Buffer id (>= 0), load copy (-(copy + 1)) or kNextGraphOwner.
  int owner;
  /// The op position whose issues, waits or run it happens in; kSlotNow for
  /// a release the compute stream does not see (whichever op runs then).
  unsigned slot;
};

/// What simulate() fills per call, reused between calls.
struct SimulationScratch {
  /// The copies issued (waited) at each position, by position: those of
  /// position p are [start[p], start[p + 1]).
  SmallVector<unsigned> issuedStart, issued, waitedStart, waited;
  /// Per position: when its copies are issued (before the compute stream
  /// waits there), when its op starts and ends.
  SmallVector<double> issueStart, opStart, opEnd;
  std::vector<MemoryEvent> events;
};

/// The scratch arrays of the simulations running at one time, shared by the
/// copies of one StepModel.
class SimulationScratchPool {
public:
  std::unique_ptr<SimulationScratch> acquire() {
    std::lock_guard<std::mutex> lock(mutex);
    if (free.empty())
      return std::make_unique<SimulationScratch>();
    std::unique_ptr<SimulationScratch> scratch = std::move(free.back());
    free.pop_back();
    return scratch;
  }
  void release(std::unique_ptr<SimulationScratch> scratch) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(std::move(scratch));
  }

private:
  std::mutex mutex;
  SmallVector<std::unique_ptr<SimulationScratch>> free;
};

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_ANALYSIS_SIMULATIONSCRATCH_H
