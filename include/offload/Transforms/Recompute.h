//===- Recompute.h - Carrying out recompute decisions -----------*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_TRANSFORMS_RECOMPUTE_H
#define OFFLOAD_TRANSFORMS_RECOMPUTE_H

#include "offload/Analysis/Recompute.h"

namespace mlir {
namespace offload {

/// Recomputes each of `chosen` (candidates of `step` that
/// pickCompatibleRecomputes accepts together) in backward: an
/// `offload.recompute` of its forward ops, reading the backward arguments of
/// its inputs, right before the first real consumer of the saved value (the
/// views of it in between move below it), then drops the recomputed saved
/// results from the step's interface and the forward ops nothing reads any
/// more. The caller checks canShrinkSavedInterface.
void insertRecomputes(const TrainingStep &step,
                      ArrayRef<RecomputeCandidate> chosen);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_TRANSFORMS_RECOMPUTE_H
