//===- Recompute.h - Saved values backward can compute again ----*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// A saved value is recomputable when the forward ops that compute it from
// values backward already has (other saved values, which stay saved) are
// cheap and side-effect free: views, constants and memory-bound ops the cost
// model knows (elementwise ops, reductions, casts: norms and pointwise
// chains), never matmuls, attention, scatters, seeded random ops, or ops of
// unknown cost. Recomputing it costs their compute time in backward and frees
// its device memory from its last forward use to its first backward use.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_RECOMPUTE_H
#define OFFLOAD_ANALYSIS_RECOMPUTE_H

#include "offload/Analysis/CostModel.h"
#include "offload/Dialect/Offload/IR/TrainingStep.h"

namespace mlir {
namespace offload {

/// A saved value backward can compute again.
struct RecomputeCandidate {
  /// The saved links (indices among saved results) returning the value.
  SmallVector<unsigned> links;
  /// The value in forward.
  Value value;
  /// The forward ops computing it from `inputs`, in block order.
  SmallVector<Operation *> ops;
  /// The forward values the ops read that backward has, and for each the
  /// saved link carrying it.
  SmallVector<Value> inputs;
  SmallVector<unsigned> inputLinks;
  /// Device bytes of the value.
  int64_t bytes = 0;
  /// Predicted compute time of `ops`, each as its own kernel (an upper
  /// bound: a code generator that fuses them runs them faster).
  double seconds = 0;
};

/// The candidates among the saved links `links` of `step`, at most one per
/// forward value, in the order of their first link. A chain of more than
/// `maxOps` ops is not a candidate.
SmallVector<RecomputeCandidate, 0>
findRecomputeCandidates(const TrainingStep &step, const CostModel &costModel,
                        ArrayRef<unsigned> links, unsigned maxOps);

/// Picks, from `candidates` in order, those that can be recomputed together:
/// a candidate is skipped if one chosen before reads its value, or it reads
/// the value of one chosen before (inputs stay saved). At most `limit` are
/// picked. Returns indices into `candidates`.
SmallVector<unsigned>
pickCompatibleRecomputes(ArrayRef<RecomputeCandidate> candidates,
                         ArrayRef<unsigned> order, size_t limit);

/// True for traced ops whose result depends on a random generator's state
/// (ATen's rand*, bernoulli, dropout, normal, ...): computing them again
/// gives other values.
bool isSeededRandomOp(Operation *op);

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_RECOMPUTE_H
