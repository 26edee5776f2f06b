//===- Bisection.h - The longest prefix a monotone test holds for -*- C++ -*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The one bisection of the planners and the copy placement: each tries a
// run of choices (candidates to keep or drop, offload waits to sink) and
// keeps the longest prefix whose simulation still holds.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_ANALYSIS_BISECTION_H
#define OFFLOAD_ANALYSIS_BISECTION_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>

namespace mlir {
namespace offload {

/// The longest prefix length in [0, n] for which `holds` is true, given
/// that a prefix holds whenever a longer one does and the empty prefix
/// always holds: n if it holds, else found by bisection. holds(n) is asked
/// first, so a caller whose state already is the whole prefix pays one test
/// when it holds.
inline size_t longestHoldingPrefix(size_t n,
                                   llvm::function_ref<bool(size_t)> holds) {
  if (holds(n))
    return n;
  size_t lo = 0, hi = n; // prefix lo holds, prefix hi does not
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (holds(mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_ANALYSIS_BISECTION_H
