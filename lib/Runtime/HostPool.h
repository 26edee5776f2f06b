//===- HostPool.h - best-fit sub-allocator over pinned chunks -------------===//
//
// The pinned pool is a few large chunks (one cudaHostAlloc each, made by the
// caller) carved into blocks. Best fit keeps the large free ranges whole for
// large tensors; blocks are 256-byte aligned (what cudaMemcpyAsync and the
// copy engines like) and rounded only to that alignment, never to a power of
// two, so reserved bytes stay close to the bytes actually offloaded. Freed
// blocks coalesce with free neighbours of the same chunk.
//
// The pool knows nothing about CUDA and is not thread-safe: the context owns
// it under its lock.
//
//===----------------------------------------------------------------------===//
#ifndef OFFLOAD_RT_HOSTPOOL_H
#define OFFLOAD_RT_HOSTPOOL_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace offload_rt {

class HostPool {
public:
  static constexpr size_t kAlignment = 256;

  struct Chunk {
    char *base;
    size_t bytes;
  };

  /// Adds [base, base + bytes) to the pool; base must be kAlignment-aligned.
  void addChunk(void *base, size_t bytes);
  /// Removes the chunks no block is allocated from and returns them for the
  /// caller to free: before growing, so chunks left too small by a change of
  /// shapes do not pile up.
  std::vector<Chunk> takeIdleChunks();
  /// A block of at least `bytes` (best fit), or null if no free range fits.
  void *allocate(size_t bytes);
  /// Returns a block from allocate(); coalesces with its free neighbours.
  void release(void *block);

  /// Bytes a request occupies: rounded up to kAlignment (at least one unit).
  static size_t blockSize(size_t bytes);
  /// The largest single block allocate() could return now.
  size_t largestFree() const;

  size_t reservedBytes() const { return reserved_; }
  size_t inUseBytes() const { return inUse_; }
  size_t peakInUseBytes() const { return peakInUse_; }
  void resetPeak() { peakInUse_ = inUse_; }
  /// Chunks in the pool (those taken by takeIdleChunks are gone).
  std::vector<Chunk> chunks() const;
  size_t freeRangeCount() const { return freeByAddr_.size(); }

private:
  struct Range {
    size_t bytes;
    uint32_t chunk;
  };
  void insertFree(char *base, Range r);
  void eraseFree(std::map<char *, Range>::iterator it);

  std::vector<Chunk> chunks_; // indexed by Range::chunk; taken ones are null
  // Free ranges twice: by address to find neighbours, by size for best fit.
  std::map<char *, Range> freeByAddr_;
  std::set<std::pair<size_t, char *>> freeBySize_;
  std::unordered_map<char *, Range> allocated_;
  size_t reserved_ = 0, inUse_ = 0, peakInUse_ = 0;
};

} // namespace offload_rt

#endif // OFFLOAD_RT_HOSTPOOL_H
