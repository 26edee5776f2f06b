//===- SavedActivations.h - Which saved values to offload -------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_SAVEDACTIVATIONS_H
#define OFFLOAD_ANALYSIS_SAVEDACTIVATIONS_H

#include "offload/Dialect/Offload/IR/TrainingStep.h"

#include <optional>
#include <string>

namespace mlir {
namespace offload {

/// Bytes a ranked tensor of `type` occupies (offload::getStorageBytes: sub-byte
/// elements take a byte each); nullopt for other types, dynamic shapes and
/// element types without a known size.
std::optional<int64_t> getTensorSizeInBytes(Type type);

/// A short name for the op that produced `value`: the trace node name and
/// framework target where there is one, else the op name; "argument #i" for
/// block arguments.
std::string describeProducer(Value value);

struct SavedActivationOptions {
  /// Values smaller than this stay on the device. Values of unknown size stay
  /// unless this is 0.
  int64_t minBytes = 1024;
  /// Producers named here (op name, or trace target) stay on the device.
  SmallVector<std::string> denyOps;
};

/// The decision for one saved result of a training step.
struct SavedActivation {
  /// Index among the saved results (0 = first result past num_outputs).
  unsigned savedIndex;
  Value value;
  std::optional<int64_t> bytes;
  bool selected = false;
  /// Why the value stays on the device; empty when selected.
  std::string keptReason;
};

/// Decides, for every saved result of `step`, whether offloading it frees
/// device memory and is allowed: intermediates only (never function arguments
/// or views of them), device-resident, at least `minBytes`, not opted out with
/// `offload.keep`, not denied, and not kept alive by another returned value
/// sharing its storage: a forward output, or a saved value that stays. Saved
/// values sharing one storage are offloaded together, which frees it.
SmallVector<SavedActivation>
findSavedActivations(const TrainingStep &step,
                     const SavedActivationOptions &options);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_SAVEDACTIVATIONS_H
