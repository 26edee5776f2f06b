//===- HostPool.cpp - best-fit sub-allocator over pinned chunks -----------===//

#include "HostPool.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

using namespace offload_rt;

size_t HostPool::blockSize(size_t bytes) {
  size_t units = std::max<size_t>(1, (bytes + kAlignment - 1) / kAlignment);
  return units * kAlignment;
}

void HostPool::addChunk(void *base, size_t bytes) {
  assert(reinterpret_cast<uintptr_t>(base) % kAlignment == 0);
  // A tail shorter than one unit can never be handed out.
  bytes -= bytes % kAlignment;
  if (bytes == 0)
    return;
  auto index = static_cast<uint32_t>(chunks_.size());
  chunks_.push_back({static_cast<char *>(base), bytes});
  reserved_ += bytes;
  insertFree(static_cast<char *>(base), {bytes, index});
}

std::vector<HostPool::Chunk> HostPool::takeIdleChunks() {
  std::vector<Chunk> idle;
  for (Chunk &c : chunks_) {
    if (!c.base)
      continue;
    // Idle: one free range covers the whole chunk.
    auto it = freeByAddr_.find(c.base);
    if (it == freeByAddr_.end() || it->second.bytes != c.bytes)
      continue;
    eraseFree(it);
    reserved_ -= c.bytes;
    idle.push_back(c);
    c = Chunk{nullptr, 0};
  }
  return idle;
}

std::vector<HostPool::Chunk> HostPool::chunks() const {
  std::vector<Chunk> live;
  for (const Chunk &c : chunks_)
    if (c.base)
      live.push_back(c);
  return live;
}

void *HostPool::allocate(size_t bytes) {
  size_t need = blockSize(bytes);
  auto fit = freeBySize_.lower_bound({need, nullptr});
  if (fit == freeBySize_.end())
    return nullptr;
  char *base = fit->second;
  auto it = freeByAddr_.find(base);
  Range range = it->second;
  eraseFree(it);
  if (range.bytes > need)
    insertFree(base + need, {range.bytes - need, range.chunk});
  allocated_[base] = {need, range.chunk};
  inUse_ += need;
  peakInUse_ = std::max(peakInUse_, inUse_);
  return base;
}

void HostPool::release(void *block) {
  auto found = allocated_.find(static_cast<char *>(block));
  assert(found != allocated_.end() && "block not from this pool");
  char *base = found->first;
  Range range = found->second;
  allocated_.erase(found);
  inUse_ -= range.bytes;

  // Merge with the free range after, then the one before, when they are
  // adjacent and in the same chunk (two chunks may happen to touch).
  auto next = freeByAddr_.lower_bound(base);
  if (next != freeByAddr_.end() && next->first == base + range.bytes &&
      next->second.chunk == range.chunk) {
    range.bytes += next->second.bytes;
    next = std::next(next);
    eraseFree(std::prev(next));
  }
  if (next != freeByAddr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes == base &&
        prev->second.chunk == range.chunk) {
      base = prev->first;
      range.bytes += prev->second.bytes;
      eraseFree(prev);
    }
  }
  insertFree(base, range);
}

size_t HostPool::largestFree() const {
  return freeBySize_.empty() ? 0 : freeBySize_.rbegin()->first;
}

void HostPool::insertFree(char *base, Range r) {
  freeByAddr_.emplace(base, r);
  freeBySize_.emplace(r.bytes, base);
}

void HostPool::eraseFree(std::map<char *, Range>::iterator it) {
  freeBySize_.erase({it->second.bytes, it->first});
  freeByAddr_.erase(it);
}
