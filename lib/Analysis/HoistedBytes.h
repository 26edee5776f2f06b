//===- HoistedBytes.h - Live bytes per position, with range adds -*- C++
//-*-===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef OFFLOAD_LIB_ANALYSIS_HOISTEDBYTES_H
#define OFFLOAD_LIB_ANALYSIS_HOISTEDBYTES_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <limits>

namespace mlir {
namespace offload {

/// Per op position, the live bytes of a plan plus the bytes added across it
/// (loads hoisted, sources held to a later wait), and those added bytes
/// alone: a segment tree with range add and range maximum, so placeLoads and
/// sinkOffloadWaits find the position that would break a limit in O(log n)
/// instead of walking every position a copy is moved across (quadratic over
/// a large step's copies).
class HoistedBytes {
public:
  HoistedBytes(ArrayRef<int64_t> liveAt) : size(liveAt.size()) {
    while (leaves < size)
      leaves *= 2;
    live.assign(2 * leaves, std::numeric_limits<int64_t>::min());
    hoisted.assign(2 * leaves, 0);
    pending.assign(2 * leaves, 0);
    for (size_t i = 0; i < size; ++i)
      live[leaves + i] = liveAt[i];
    for (size_t i = leaves; i-- > 1;)
      live[i] = std::max(live[2 * i], live[2 * i + 1]);
  }

  /// Adds `bytes` at positions [from, to).
  void add(size_t from, size_t to, int64_t bytes) {
    if (from < to)
      add(1, 0, leaves, from, to, bytes);
  }

  /// The last position in [from, to) whose live plus hoisted bytes exceed
  /// `liveLimit`, or whose hoisted bytes exceed `hoistedLimit`; -1 if none.
  int64_t lastAbove(size_t from, size_t to, int64_t liveLimit,
                    int64_t hoistedLimit) {
    if (from >= to)
      return -1;
    return lastAbove(1, 0, leaves, from, to, liveLimit, hoistedLimit);
  }

  /// The live plus added bytes at `pos`.
  int64_t at(size_t pos) {
    size_t node = 1, lo = 0, hi = leaves;
    while (hi - lo > 1) {
      push(node);
      size_t mid = (lo + hi) / 2;
      if (pos < mid) {
        node = 2 * node;
        hi = mid;
      } else {
        node = 2 * node + 1;
        lo = mid;
      }
    }
    return live[node];
  }

  /// The first position in [from, to) whose live plus added bytes exceed
  /// `liveLimit`; -1 if none.
  int64_t firstAbove(size_t from, size_t to, int64_t liveLimit) {
    if (from >= to)
      return -1;
    return firstAbove(1, 0, leaves, from, to, liveLimit);
  }

private:
  void apply(size_t node, int64_t bytes) {
    live[node] += bytes;
    hoisted[node] += bytes;
    pending[node] += bytes;
  }
  void push(size_t node) {
    if (pending[node] != 0) {
      apply(2 * node, pending[node]);
      apply(2 * node + 1, pending[node]);
      pending[node] = 0;
    }
  }
  void add(size_t node, size_t lo, size_t hi, size_t from, size_t to,
           int64_t bytes) {
    if (to <= lo || hi <= from)
      return;
    if (from <= lo && hi <= to) {
      apply(node, bytes);
      return;
    }
    push(node);
    size_t mid = (lo + hi) / 2;
    add(2 * node, lo, mid, from, to, bytes);
    add(2 * node + 1, mid, hi, from, to, bytes);
    live[node] = std::max(live[2 * node], live[2 * node + 1]);
    hoisted[node] = std::max(hoisted[2 * node], hoisted[2 * node + 1]);
  }
  int64_t lastAbove(size_t node, size_t lo, size_t hi, size_t from, size_t to,
                    int64_t liveLimit, int64_t hoistedLimit) {
    if (to <= lo || hi <= from ||
        (live[node] <= liveLimit && hoisted[node] <= hoistedLimit))
      return -1;
    if (hi - lo == 1)
      return int64_t(lo);
    push(node);
    size_t mid = (lo + hi) / 2;
    int64_t right =
        lastAbove(2 * node + 1, mid, hi, from, to, liveLimit, hoistedLimit);
    if (right >= 0)
      return right;
    return lastAbove(2 * node, lo, mid, from, to, liveLimit, hoistedLimit);
  }

  int64_t firstAbove(size_t node, size_t lo, size_t hi, size_t from, size_t to,
                     int64_t liveLimit) {
    if (to <= lo || hi <= from || live[node] <= liveLimit)
      return -1;
    if (hi - lo == 1)
      return int64_t(lo);
    push(node);
    size_t mid = (lo + hi) / 2;
    int64_t left = firstAbove(2 * node, lo, mid, from, to, liveLimit);
    if (left >= 0)
      return left;
    return firstAbove(2 * node + 1, mid, hi, from, to, liveLimit);
  }

  size_t size, leaves = 1;
  SmallVector<int64_t> live, hoisted, pending;
};

} // namespace offload
} // namespace mlir

#endif // OFFLOAD_LIB_ANALYSIS_HOISTEDBYTES_H
