//===- HostPoolTest.cpp - the pinned pool's allocator, white-box ----------===//

#include "TestUtil.h"

#include "HostPool.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>

using offload_rt::HostPool;

namespace {

/// Aligned backing memory for chunks (the allocator never touches it).
struct Arena {
  explicit Arena(size_t bytes)
      : base(static_cast<char *>(std::aligned_alloc(4096, bytes))) {}
  ~Arena() { std::free(base); }
  char *base;
};

TEST(HostPool, RoundsToAlignmentOnly) {
  Arena arena(1 << 20);
  HostPool pool;
  pool.addChunk(arena.base, 1 << 20);
  void *a = pool.allocate(1);
  EXPECT_EQ(pool.inUseBytes(), 256u);
  void *b = pool.allocate(257);
  EXPECT_EQ(pool.inUseBytes(), 256u + 512u);
  void *c = pool.allocate(300000); // not a power of two, not rounded to one
  EXPECT_EQ(pool.inUseBytes(), 256u + 512u + 300032u);
  for (void *p : {a, b, c}) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % HostPool::kAlignment, 0u);
  }
  EXPECT_EQ(pool.reservedBytes(), size_t(1) << 20);
}

TEST(HostPool, BestFitTakesTheSmallestRangeThatFits) {
  Arena arena(16384);
  HostPool pool;
  pool.addChunk(arena.base, 16384);
  char *a = static_cast<char *>(pool.allocate(1024));
  char *b = static_cast<char *>(pool.allocate(4096));
  char *c = static_cast<char *>(pool.allocate(1024));
  char *d = static_cast<char *>(pool.allocate(2048));
  char *e = static_cast<char *>(pool.allocate(1024));
  ASSERT_TRUE(a && b && c && d && e);
  pool.release(b); // free 4 KiB range
  pool.release(d); // free 2 KiB range (not adjacent to b's)
  // The tail after e is larger than both; best fit must not split it.
  EXPECT_EQ(pool.allocate(2048), static_cast<void *>(d));
  EXPECT_EQ(pool.allocate(4096), static_cast<void *>(b));
}

TEST(HostPool, CoalescesWithBothNeighbours) {
  Arena arena(3 * 4096);
  HostPool pool;
  pool.addChunk(arena.base, 3 * 4096);
  void *a = pool.allocate(4096), *b = pool.allocate(4096),
       *c = pool.allocate(4096);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(pool.allocate(1), nullptr);
  pool.release(b);
  pool.release(a); // merges with b's range after it
  pool.release(c); // merges with the range before it
  EXPECT_EQ(pool.freeRangeCount(), 1u);
  EXPECT_EQ(pool.largestFree(), 3u * 4096);
  EXPECT_EQ(pool.inUseBytes(), 0u);
  EXPECT_EQ(pool.peakInUseBytes(), 3u * 4096);
}

TEST(HostPool, NeverMergesAcrossChunks) {
  // Two chunks that touch in memory are still two cudaHostAlloc blocks.
  Arena arena(8192);
  HostPool pool;
  pool.addChunk(arena.base, 4096);
  pool.addChunk(arena.base + 4096, 4096);
  void *a = pool.allocate(4096), *b = pool.allocate(4096);
  ASSERT_TRUE(a && b);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.freeRangeCount(), 2u);
  EXPECT_EQ(pool.allocate(8192), nullptr);
  EXPECT_EQ(pool.chunks().size(), 2u);
}

TEST(HostPool, RandomTrafficKeepsBlocksDisjointAndAccounted) {
  constexpr size_t kChunk = 1 << 22;
  Arena arena(2 * kChunk);
  HostPool pool;
  pool.addChunk(arena.base, kChunk);
  pool.addChunk(arena.base + kChunk, kChunk);
  std::mt19937 rng(7);
  std::map<char *, size_t> live; // block -> size occupied
  size_t inUse = 0;
  for (int step = 0; step < 20000; ++step) {
    bool doAlloc = live.empty() || rng() % 5 < 3;
    if (doAlloc) {
      size_t bytes = 1 + rng() % (64 * 1024);
      char *p = static_cast<char *>(pool.allocate(bytes));
      if (!p)
        continue;
      size_t occupied = HostPool::blockSize(bytes);
      // Disjoint from its neighbours among the live blocks.
      auto next = live.lower_bound(p);
      if (next != live.end()) {
        ASSERT_LE(p + occupied, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, p);
      }
      live[p] = occupied;
      inUse += occupied;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      pool.release(it->first);
      inUse -= it->second;
      live.erase(it);
    }
    ASSERT_EQ(pool.inUseBytes(), inUse);
  }
  for (auto &[p, size] : live)
    pool.release(p);
  EXPECT_EQ(pool.inUseBytes(), 0u);
  EXPECT_EQ(pool.freeRangeCount(), 2u); // each chunk whole again
  EXPECT_EQ(pool.largestFree(), kChunk);
}

} // namespace
