//===- PassDeviceProfile.h - Device profile from pass options ---*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Every cost-model pass carries the CostModelOptions of Passes.td; these
// turn them into a DeviceProfile and an ExecutionModel, diagnosing a bad
// profile file or option.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H
#define OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H

#include "offload/Analysis/CostModel.h"
#include "offload/Analysis/StepSimulation.h"
#include "offload/Transforms/PassOptionValues.h"

#include "mlir/IR/Operation.h"

#include <cmath>

namespace mlir {
namespace offload {

/// The profile options of the pass this is expanded in (its option members
/// are protected, so this reads them from inside the pass).
#define OFFLOAD_PASS_PROFILE_OVERRIDES()                                       \
  ::mlir::offload::DeviceProfileOverrides {                                    \
    deviceProfile, d2hGBps, h2dGBps, bothWaysGBps, hbmGBps, bf16TFlops,         \
        f32TFlops, attentionTFlops, copyLatencyUs, opOverheadUs,               \
        copyInterference                                                       \
  }

// Errors about options are emitted at the anchor's location, without the
// pass name (MLIR locates diagnostics) and without the op attached: the
// option, not the op, is what is wrong.

/// Resolves `overrides` into a profile; emits an error at `anchor` on failure.
inline FailureOr<DeviceProfile>
getPassDeviceProfile(const DeviceProfileOverrides &overrides,
                     Operation *anchor) {
  std::string error;
  FailureOr<DeviceProfile> profile = overrides.resolve(error);
  if (failed(profile))
    emitError(anchor->getLoc()) << error;
  return profile;
}

/// The execution model from the `release`, `fuse-memory-bound`,
/// `reuse-freed-buffers`, `prefetch-lead`, `prefetch-bytes` and
/// `saved-instances` options
/// (the pass's, read from inside it: OFFLOAD_PASS_EXECUTION_MODEL()); emits
/// an error naming the option on a bad value.
inline FailureOr<ExecutionModel>
getPassExecutionModel(ExecutionModel::Release release, bool fuseMemoryBound,
                      bool reuseFreedBuffers, StringRef prefetchLead,
                      PrefetchBytes prefetchBytes, unsigned savedInstances,
                      Operation *anchor) {
  ExecutionModel execution;
  execution.release = release;
  execution.fuseMemoryBound = fuseMemoryBound;
  execution.reuseFreedBuffers = reuseFreedBuffers;
  if (prefetchLead == "auto") {
    execution.autoPrefetchLead = true;
  } else if (prefetchLead.trim().getAsDouble(execution.prefetchLead) ||
             !(execution.prefetchLead >= 0) ||
             !std::isfinite(execution.prefetchLead)) {
    emitError(anchor->getLoc())
        << "option prefetch-lead: expected seconds >= 0 or auto, got '"
        << prefetchLead << "'";
    return failure();
  }
  execution.prefetchBytes = prefetchBytes.bytes;
  if (savedInstances == 0) {
    emitError(anchor->getLoc())
        << "option saved-instances: expected a count >= 1 (1: the step "
           "alone), got 0";
    return failure();
  }
  execution.savedInstances = savedInstances;
  return execution;
}

#define OFFLOAD_PASS_EXECUTION_MODEL()                                         \
  ::mlir::offload::getPassExecutionModel(release, fuseMemoryBound,             \
                                         reuseFreedBuffers, prefetchLead,      \
                                         prefetchBytes, savedInstances,        \
                                         getOperation())

/// ExecutionModel::loadLead from the `load-lead` option, whose negative
/// default stands for `copy-margin`'s value (the one margin both meant
/// before they were separate options); emits an error naming the option the
/// value came from if it is not a finite fraction >= 0.
inline FailureOr<double> getPassLoadLead(double copyMargin, double loadLead,
                                         Operation *anchor) {
  double lead = loadLead < 0 ? copyMargin : loadLead;
  if (!(lead >= 0) || !std::isfinite(lead)) {
    emitError(anchor->getLoc())
        << (loadLead < 0 ? "copy-margin" : "load-lead")
        << " must be a finite fraction >= 0, got " << lead;
    return failure();
  }
  return lead;
}

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_TRANSFORMS_PASSDEVICEPROFILE_H
