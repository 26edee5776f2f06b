//===- Context.cpp - offloads, loads, waits and their bookkeeping ---------===//
//
// How each guarantee of offload_rt.h is kept:
//   - an offload records `ready` on the compute stream and the D2H stream
//     waits on it before copying: the copy sees the compute stream's writes;
//   - a load's H2D stream waits on the offload's completion event;
//   - offload_rt_wait makes the waiting stream wait on the copy's completion
//     event; nothing here blocks the host on the device except throttling
//     (max_in_flight), a full pool waiting for pending frees, pool growth
//     (cudaHostAlloc, and cudaFreeHost of idle chunks, which synchronises
//     the device), explicit synchronisation, and teardown;
//   - device releases and pool blocks are "Deferred" records that run only
//     once every event they list has completed, checked without blocking at
//     each runtime call (reap); stream-ordered frees go on the D2H stream
//     behind the copy instead;
//   - a copy group is the same with one of each per group instead of per
//     buffer (one `ready`, one batched copy, one `done` its members share);
//     its members split one pool block, which each member's deferred return
//     hands back to a BlockGroup count, the last one to the pool.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include "offload_support/ByteSize.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

using namespace offload_rt;

namespace {
#ifdef NDEBUG
constexpr bool kChecksByDefault = OFFLOAD_RT_CHECKS_DEFAULT;
#else
constexpr bool kChecksByDefault = true;
#endif

/// Returns from the enclosing function when `expr` is not a success.
#define RETURN_IF_FAILED(expr)                                                 \
  do {                                                                         \
    offload_rt_status status_ = (expr);                                        \
    if (status_ < 0)                                                           \
      return status_;                                                          \
  } while (0)
} // namespace

offload_rt_context::offload_rt_context(const offload_rt_options &opts,
                                       std::unique_ptr<Backend> b)
    : backend(std::move(b)), options(opts),
      checks(opts.checks < 0 ? kChecksByDefault : opts.checks != 0),
      buffers_(checks), tokens_(checks) {}

offload_rt_context::~offload_rt_context() = default;

offload_rt_status offload_rt_context::initialize() {
  RETURN_IF_FAILED(backend->createStream(&d2h));
  RETURN_IF_FAILED(backend->createStream(&h2d));
  if (options.pool_initial_bytes == 0)
    return OFFLOAD_RT_SUCCESS;
  if (addChunk(options.pool_initial_bytes) < 0)
    return fail(OFFLOAD_RT_ERROR_OUT_OF_MEMORY,
                "initial pinned pool of %llu bytes: %s",
                static_cast<unsigned long long>(options.pool_initial_bytes),
                offload_rt_last_error());
  stats_.pool_grows = 0; // the initial chunk is not growth
  return OFFLOAD_RT_SUCCESS;
}

//===--- events -----------------------------------------------------------===//

offload_rt_status offload_rt_context::acquireEvent(SharedEvent **out) {
  if (freeEvents_.empty()) {
    Event e = nullptr;
    RETURN_IF_FAILED(backend->createEvent(&e, options.timing != 0));
    events_.push_back({e, 0});
    freeEvents_.push_back(&events_.back());
  }
  *out = freeEvents_.back();
  freeEvents_.pop_back();
  (*out)->refs = 1;
  (*out)->complete = false; // recorded next
  return OFFLOAD_RT_SUCCESS;
}

SharedEvent *offload_rt_context::retain(SharedEvent *e) {
  if (e)
    ++e->refs;
  return e;
}

void offload_rt_context::releaseEvent(SharedEvent *e) {
  // Reuse is safe even if the event's work is pending: a re-record does not
  // affect waits captured earlier (CUDA semantics, mirrored by the sim).
  if (e && --e->refs == 0)
    freeEvents_.push_back(e);
}

offload_rt_status offload_rt_context::isDone(SharedEvent *e, bool *done) {
  if (e->complete) {
    *done = true;
    return OFFLOAD_RT_SUCCESS;
  }
  RETURN_IF_FAILED(backend->queryEvent(e->event, done));
  e->complete = *done;
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::recordNew(Stream s, SharedEvent **out) {
  RETURN_IF_FAILED(acquireEvent(out));
  offload_rt_status st = backend->recordEvent((*out)->event, s);
  if (st < 0) {
    releaseEvent(*out);
    *out = nullptr;
  }
  return st;
}

//===--- the pinned pool --------------------------------------------------===//

offload_rt_status offload_rt_context::addChunk(size_t bytes) {
  bytes = HostPool::blockSize(bytes);
  void *base = nullptr;
  RETURN_IF_FAILED(backend->hostAlloc(&base, bytes));
  pool_.addChunk(base, bytes);
  ++stats_.pool_grows;
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::waitForOneDeferredBlock(bool *waited) {
  *waited = false;
  auto it = std::find_if(deferred_.begin(), deferred_.end(),
                         [](const Deferred &d) { return d.block != nullptr; });
  if (it == deferred_.end())
    return OFFLOAD_RT_SUCCESS;
  for (SharedEvent *e : it->after)
    RETURN_IF_FAILED(backend->synchronizeEvent(e->event));
  *waited = true;
  return reapDeferred();
}

// Order of resorts when the pool has no room: blocks already freed whose
// copies finished; blocks whose pending copies are enqueued (a short host
// wait, cheaper than cudaHostAlloc); growing, when allowed; and last, keeping
// the buffer on the device (*block = null).
offload_rt_status offload_rt_context::allocateBlock(size_t bytes,
                                                    void **block) {
  if ((*block = pool_.allocate(bytes)))
    return OFFLOAD_RT_SUCCESS;
  RETURN_IF_FAILED(reapDeferred());
  if ((*block = pool_.allocate(bytes)))
    return OFFLOAD_RT_SUCCESS;

  bool stalled = false;
  for (bool waited = true; waited;) {
    RETURN_IF_FAILED(waitForOneDeferredBlock(&waited));
    stalled |= waited;
    if (waited && (*block = pool_.allocate(bytes))) {
      ++stats_.pool_stalls;
      return OFFLOAD_RT_SUCCESS;
    }
  }
  if (stalled)
    ++stats_.pool_stalls;

  std::string growthFailure = "disabled";
  if (options.pool_growable) {
    // Chunks left idle by a change of shapes go back first (their blocks'
    // copies all completed), so reserved memory follows the current need.
    for (const HostPool::Chunk &c : pool_.takeIdleChunks())
      RETURN_IF_FAILED(backend->hostFree(c.base));
    // Grow by at least 1/8 of what is reserved: a few cudaHostAlloc calls
    // when a plan underestimates (about 30 from empty to the peak of the
    // tests' transformer workload) while the unused end of the last chunk
    // and the tails of earlier ones stay within 1.15x of the peak there.
    size_t step = std::max(HostPool::blockSize(bytes),
                           HostPool::blockSize(pool_.reservedBytes() / 8));
    if (addChunk(step) >= 0 && (*block = pool_.allocate(bytes)))
      return OFFLOAD_RT_SUCCESS;
    growthFailure = offload_rt_last_error();
  }
  warnFallbackOnce(bytes, growthFailure.c_str());
  return OFFLOAD_RT_SUCCESS;
}

void offload_rt_context::warnFallbackOnce(size_t bytes,
                                          const char *growthFailure) {
  if (warnedFallback_)
    return;
  warnedFallback_ = true;
  using offload_support::formatByteSize;
  std::fprintf(stderr,
               "offload_rt: warning: pinned pool exhausted (request %s, "
               "reserved %s, in use %s; growth: %s); keeping buffers on the "
               "device. Further fallbacks are counted in the stats, not "
               "reported.\n",
               formatByteSize(static_cast<int64_t>(bytes)).c_str(),
               formatByteSize(static_cast<int64_t>(pool_.reservedBytes())).c_str(),
               formatByteSize(static_cast<int64_t>(pool_.inUseBytes())).c_str(),
               growthFailure);
}

// A group member returns its part of the group's block; the block itself
// goes back with the last member's part, so only once every member's own
// deferred return ran (each after its free_host, offload and loads).
void offload_rt_context::returnBlock(void *block, BlockGroup *group,
                                     size_t liveBytes) {
  liveBytes_ -= liveBytes;
  if (group) {
    if (--group->members > 0)
      return;
    block = group->block;
    *group = BlockGroup{};
    freeGroups_.push_back(group);
  }
  pool_.release(block);
}

BlockGroup *offload_rt_context::newGroup(void *block, size_t members) {
  BlockGroup *group;
  if (!freeGroups_.empty()) {
    group = freeGroups_.back();
    freeGroups_.pop_back();
  } else {
    group = &groups_.emplace_back();
  }
  group->block = block;
  group->members = members;
  return group;
}

offload_rt_status offload_rt_context::reserve(uint64_t bytes) {
  if (pool_.reservedBytes() >= bytes)
    return OFFLOAD_RT_SUCCESS;
  if (addChunk(bytes - pool_.reservedBytes()) < 0)
    return fail(OFFLOAD_RT_ERROR_OUT_OF_MEMORY, "reserving %llu pinned bytes: %s",
                static_cast<unsigned long long>(bytes),
                offload_rt_last_error());
  return OFFLOAD_RT_SUCCESS;
}

//===--- copies -----------------------------------------------------------===//

offload_rt_status offload_rt_context::throttle(std::deque<CopyRecord> &inFlight) {
  if (options.max_in_flight == 0 || inFlight.size() < options.max_in_flight)
    return OFFLOAD_RT_SUCCESS;
  ++stats_.throttles;
  RETURN_IF_FAILED(backend->synchronizeEvent(inFlight.front().done->event));
  return reapCopies(inFlight,
                    &inFlight == &d2hInFlight_ ? stats_.d2h_ms : stats_.h2d_ms);
}

// OFFLOAD_RT_COPY_DELAY_US: holds the copy stream before a copy. Runs on
// the backend's callback thread, which may not call the CUDA API; sleeping
// is allowed. Before the copy's start event, so copy times stay the copy's.
static void sleepOnStream(void *options) {
  double us = static_cast<const offload_rt_options *>(options)->copy_delay_us;
  std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(us));
}

// Enqueues one copy on a copy stream, bracketed by timing events; *done
// (one reference for the caller) completes with the copy.
offload_rt_status offload_rt_context::enqueueCopy(void *dst, const void *src,
                                                  size_t bytes, CopyKind kind,
                                                  Stream s,
                                                  SharedEvent **done) {
  return enqueueCopies(&dst, &src, &bytes, 1, kind, s, done);
}

// n copies as one piece of copy-stream work: one copy, or for a group one
// batched call. It is one submission, so it is throttled, delayed
// (copy_delay_us) and timed once, and takes one in-flight record; the
// statistics count each copy and its bytes, as n single copies would.
offload_rt_status offload_rt_context::enqueueCopies(
    void *const *dsts, const void *const *srcs, const size_t *sizes, size_t n,
    CopyKind kind, Stream s, SharedEvent **done, const size_t *memberSizes,
    size_t members) {
  bool toHost = kind == CopyKind::DeviceToHost;
  std::deque<CopyRecord> &inFlight = toHost ? d2hInFlight_ : h2dInFlight_;
  RETURN_IF_FAILED(throttle(inFlight));
  if (options.copy_delay_us > 0)
    RETURN_IF_FAILED(backend->launchHostFunc(s, sleepOnStream, &options));

  SharedEvent *start = nullptr;
  if (options.timing)
    RETURN_IF_FAILED(recordNew(s, &start));
  offload_rt_status st =
      n == 1 ? backend->memcpyAsync(dsts[0], srcs[0], sizes[0], kind, s)
             : backend->memcpyBatchAsync(dsts, srcs, sizes, n, kind, s);
  if (st < 0) {
    releaseEvent(start);
    return st;
  }
  st = recordNew(s, done);
  if (st < 0) {
    // The copy is queued but cannot be tracked: let it finish before the
    // caller reuses its memory.
    releaseEvent(start);
    backend->synchronizeStream(s);
    return st;
  }
  inFlight.push_back({start, retain(*done)});
  // The statistics count the buffers copied (one run may carry several).
  if (!memberSizes) {
    memberSizes = sizes;
    members = n;
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < members; ++i)
    bytes += memberSizes[i];
  if (toHost) {
    stats_.d2h_copies += members;
    stats_.d2h_bytes += bytes;
  } else {
    stats_.h2d_copies += members;
    stats_.h2d_bytes += bytes;
  }
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::offloadStart(
    const void *devicePtr, size_t bytes, void *computeStream,
    offload_rt_host_buffer **outBuffer, offload_rt_token **outToken) {
  Stream compute = backend->resolve(computeStream);
  void *block = nullptr;
  RETURN_IF_FAILED(allocateBlock(bytes, &block));

  offload_rt_host_buffer *buffer = buffers_.create();
  buffer->devicePtr = devicePtr;
  buffer->bytes = bytes;
  if (!block) {
    buffer->keptOnDevice = true;
    ++stats_.fallbacks;
    *outBuffer = buffer;
    if (outToken)
      *outToken = newToken(nullptr);
    return OFFLOAD_RT_KEPT_ON_DEVICE;
  }

  // The D2H stream waits (on the device) for what compute has enqueued.
  SharedEvent *ready = nullptr;
  offload_rt_status st = recordNew(compute, &ready);
  if (st >= 0)
    st = backend->streamWaitEvent(d2h, ready->event);
  releaseEvent(ready);
  if (st >= 0)
    st = enqueueCopy(block, devicePtr, bytes, CopyKind::DeviceToHost, d2h,
                     &buffer->offloaded);
  if (st < 0) {
    pool_.release(block); // no copy is pending on it
    retire(buffer);
    return st;
  }
  buffer->block = block;
  liveBytes_ += bytes;
  stats_.host_peak_live_bytes =
      std::max<uint64_t>(stats_.host_peak_live_bytes, liveBytes_);
  *outBuffer = buffer;
  if (outToken)
    *outToken = newToken(retain(buffer->offloaded));
  return OFFLOAD_RT_SUCCESS;
}

// The usual load: pinned block -> device on the H2D stream.
offload_rt_status offload_rt_context::copyFromHost(
    offload_rt_host_buffer *buffer, void *dst, bool callerDst, size_t bytes,
    Stream compute, SharedEvent **done) {
  if (callerDst) {
    // The caller's buffer may still be in use by work enqueued on compute.
    SharedEvent *ready = nullptr;
    RETURN_IF_FAILED(recordNew(compute, &ready));
    offload_rt_status st = backend->streamWaitEvent(h2d, ready->event);
    releaseEvent(ready);
    RETURN_IF_FAILED(st);
  }
  RETURN_IF_FAILED(backend->streamWaitEvent(h2d, buffer->offloaded->event));
  return enqueueCopy(dst, buffer->block, bytes, CopyKind::HostToDevice, h2d,
                     done);
}

// A kept-on-device buffer: a device-to-device copy on the compute stream, so
// code that ignored KEPT_ON_DEVICE still gets a buffer it owns.
offload_rt_status offload_rt_context::copyFromDevice(
    offload_rt_host_buffer *buffer, void *dst, size_t bytes, Stream compute,
    SharedEvent **done) {
  RETURN_IF_FAILED(backend->memcpyAsync(dst, buffer->devicePtr, bytes,
                                        CopyKind::Default, compute));
  return recordNew(compute, done);
}

// Drops references to loads that already completed, so a buffer loaded many
// times does not accumulate events.
offload_rt_status offload_rt_context::pruneReads(
    offload_rt_host_buffer *buffer) {
  auto &reads = buffer->reads;
  size_t kept = 0;
  for (SharedEvent *e : reads) {
    bool done = false;
    RETURN_IF_FAILED(isDone(e, &done));
    if (done)
      releaseEvent(e);
    else
      reads[kept++] = e;
  }
  reads.resize(kept);
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::loadStart(
    offload_rt_host_buffer *buffer, void *deviceDst, size_t bytes,
    void *computeStream, void **outDevicePtr, offload_rt_token **outToken) {
  Stream compute = backend->resolve(computeStream);
  RETURN_IF_FAILED(pruneReads(buffer));
  // Memory the runtime allocates comes from the stream that writes it: the
  // H2D stream, or compute for a kept buffer. The compute stream sees it only
  // after waiting on the copy.
  Stream writer = buffer->keptOnDevice ? compute : h2d;
  void *dst = deviceDst;
  if (!dst)
    RETURN_IF_FAILED(backend->mallocAsync(&dst, bytes, writer));
  SharedEvent *done = nullptr;
  offload_rt_status st =
      buffer->keptOnDevice
          ? copyFromDevice(buffer, dst, bytes, compute, &done)
          : copyFromHost(buffer, dst, deviceDst != nullptr, bytes, compute,
                         &done);
  if (st < 0) {
    if (!deviceDst)
      backend->freeAsync(dst, writer);
    return st;
  }
  *outDevicePtr = dst;
  buffer->reads.push_back(done);
  if (outToken)
    *outToken = newToken(retain(done));
  return OFFLOAD_RT_SUCCESS;
}

//===--- copy groups ------------------------------------------------------===//

/// Where a group's members lie in its block: side by side, each at a
/// kAlignment-aligned offset. Offload and load groups share the layout, so
/// a load group of one offload group's members in order is one run of
/// bytes. Returns the block's size.
static size_t layOutGroup(size_t n, const size_t *bytes,
                          std::vector<size_t> &offsets) {
  offsets.resize(n);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    offsets[i] = total;
    total += HostPool::blockSize(bytes[i]);
  }
  return total;
}

// The members lie side by side in one pool block, each at a
// kAlignment-aligned offset, filled by one batched copy behind one wait on
// the compute stream. Each member is then an ordinary host buffer whose
// block lies inside the group's; only returning the block is shared
// (returnBlock). A group of one is an ordinary offload.
offload_rt_status offload_rt_context::offloadGroup(
    size_t n, const void *const *devicePtrs, const size_t *bytes,
    void *computeStream, offload_rt_host_buffer **outBuffers) {
  Stream compute = backend->resolve(computeStream);
  std::vector<size_t> offsets;
  size_t total = layOutGroup(n, bytes, offsets);
  void *block = nullptr;
  RETURN_IF_FAILED(allocateBlock(total, &block));
  if (!block) {
    // As offloadStart does for one buffer, for each member.
    for (size_t i = 0; i < n; ++i) {
      offload_rt_host_buffer *buffer = buffers_.create();
      buffer->devicePtr = devicePtrs[i];
      buffer->bytes = bytes[i];
      buffer->keptOnDevice = true;
      outBuffers[i] = buffer;
    }
    stats_.fallbacks += n;
    return OFFLOAD_RT_KEPT_ON_DEVICE;
  }

  std::vector<void *> dsts(n);
  for (size_t i = 0; i < n; ++i)
    dsts[i] = static_cast<char *>(block) + offsets[i];
  // One device-side wait on compute for the whole group.
  SharedEvent *ready = nullptr, *done = nullptr;
  offload_rt_status st = recordNew(compute, &ready);
  if (st >= 0)
    st = backend->streamWaitEvent(d2h, ready->event);
  releaseEvent(ready);
  if (st >= 0)
    st = enqueueCopies(dsts.data(), devicePtrs, bytes, n,
                       CopyKind::DeviceToHost, d2h, &done);
  if (st < 0) {
    pool_.release(block); // no copy is pending on it
    return st;
  }
  BlockGroup *group = n > 1 ? newGroup(block, n) : nullptr;
  for (size_t i = 0; i < n; ++i) {
    offload_rt_host_buffer *buffer = buffers_.create();
    buffer->devicePtr = devicePtrs[i];
    buffer->bytes = bytes[i];
    buffer->block = dsts[i];
    buffer->group = group;
    buffer->offloaded = retain(done);
    liveBytes_ += bytes[i];
    outBuffers[i] = buffer;
  }
  releaseEvent(done);
  stats_.host_peak_live_bytes =
      std::max<uint64_t>(stats_.host_peak_live_bytes, liveBytes_);
  return OFFLOAD_RT_SUCCESS;
}

// Members in pinned blocks: one batched copy on the H2D stream, behind one
// wait per distinct offload (the members of one offload group share
// theirs). Kept-on-device members: their device-to-device copies on the
// compute stream, as loadStart does. Every copy that was enqueued is
// recorded as its buffer's read even if a later step fails, so no block
// returns under a running copy; a failure then frees the new allocations
// (stream-ordered, behind those copies) and leaves every buffer loadable.
offload_rt_status offload_rt_context::loadGroupStart(
    size_t n, offload_rt_host_buffer *const *buffers, const size_t *bytes,
    void *computeStream, void **outDevicePtrs, offload_rt_token **outTokens) {
  Stream compute = backend->resolve(computeStream);
  for (size_t i = 0; i < n; ++i)
    RETURN_IF_FAILED(pruneReads(buffers[i]));
  auto writer = [&](size_t i) {
    return buffers[i]->keptOnDevice ? compute : h2d;
  };

  std::vector<void *> dsts(n, nullptr);
  std::vector<SharedEvent *> done(n, nullptr); // one reference each
  offload_rt_status st = OFFLOAD_RT_SUCCESS;
  // Every member pinned: one device allocation, the members side by side at
  // the offsets an offload group gives them (one stream-ordered allocation
  // instead of n, and one copy where they come from one offload group in
  // order). It returns with its last member (deviceFree).
  bool allPinned = n > 1;
  for (size_t i = 0; i < n; ++i)
    allPinned = allPinned && !buffers[i]->keptOnDevice;
  std::vector<size_t> offsets;
  size_t total = layOutGroup(n, bytes, offsets);
  void *deviceBlock = nullptr;
  if (allPinned) {
    st = backend->mallocAsync(&deviceBlock, total, h2d);
    for (size_t i = 0; i < n && st >= 0; ++i)
      dsts[i] = static_cast<char *>(deviceBlock) + offsets[i];
  } else {
    for (size_t i = 0; i < n && st >= 0; ++i)
      st = backend->mallocAsync(&dsts[i], bytes[i], writer(i));
  }
  // The members' host copies as one run, in order, at those offsets: then
  // one copy of the run is the whole group's.
  bool oneRun = allPinned;
  for (size_t i = 1; i < n && oneRun; ++i)
    oneRun = buffers[i]->block == static_cast<const char *>(buffers[0]->block) +
                                      offsets[i];

  std::vector<size_t> pinned; // members whose data is in a pinned block
  std::vector<void *> to;
  std::vector<const void *> from;
  std::vector<size_t> sizes;
  std::vector<SharedEvent *> offloads;
  for (size_t i = 0; i < n && st >= 0; ++i) {
    if (buffers[i]->keptOnDevice)
      continue;
    pinned.push_back(i);
    to.push_back(dsts[i]);
    from.push_back(buffers[i]->block);
    sizes.push_back(bytes[i]);
    offloads.push_back(buffers[i]->offloaded);
  }
  std::sort(offloads.begin(), offloads.end(), std::less<SharedEvent *>());
  offloads.erase(std::unique(offloads.begin(), offloads.end()),
                 offloads.end());
  for (SharedEvent *e : offloads)
    if (st >= 0)
      st = backend->streamWaitEvent(h2d, e->event);
  if (st >= 0 && !pinned.empty()) {
    SharedEvent *batch = nullptr;
    if (oneRun) {
      void *dst = deviceBlock;
      const void *src = buffers[0]->block;
      size_t run = offsets[n - 1] + bytes[n - 1];
      st = enqueueCopies(&dst, &src, &run, 1, CopyKind::HostToDevice, h2d,
                         &batch, bytes, n);
    } else {
      st = enqueueCopies(to.data(), from.data(), sizes.data(), pinned.size(),
                         CopyKind::HostToDevice, h2d, &batch);
    }
    for (size_t i : pinned)
      done[i] = retain(batch);
    releaseEvent(batch);
  }
  for (size_t i = 0; i < n && st >= 0; ++i)
    if (buffers[i]->keptOnDevice)
      st = copyFromDevice(buffers[i], dsts[i], bytes[i], compute, &done[i]);

  for (size_t i = 0; i < n; ++i)
    if (done[i])
      buffers[i]->reads.push_back(done[i]); // the reference moves
  if (st < 0) {
    if (deviceBlock)
      backend->freeAsync(deviceBlock, h2d);
    else
      for (size_t i = 0; i < n; ++i)
        if (dsts[i])
          backend->freeAsync(dsts[i], writer(i));
    return st;
  }
  if (deviceBlock) {
    auto block = std::make_shared<DeviceBlock>(DeviceBlock{deviceBlock, n});
    for (size_t i = 0; i < n; ++i)
      deviceBlockOf_[dsts[i]] = block;
  }
  for (size_t i = 0; i < n; ++i) {
    outDevicePtrs[i] = dsts[i];
    if (outTokens)
      outTokens[i] = newToken(retain(done[i]));
  }
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::deviceFree(void *devicePtr,
                                                 void *stream) {
  Stream s = backend->resolve(stream);
  auto it = deviceBlockOf_.find(devicePtr);
  if (it == deviceBlockOf_.end())
    return backend->freeAsync(devicePtr, s);
  std::shared_ptr<DeviceBlock> block = std::move(it->second);
  deviceBlockOf_.erase(it);
  // In stream order behind this member's last use, as a free of its own
  // allocation would be: the block's last member frees it on its stream.
  if (--block->liveMembers > 0)
    return OFFLOAD_RT_SUCCESS;
  return backend->freeAsync(block->base, s);
}

offload_rt_status offload_rt_context::wait(offload_rt_token *token,
                                           void *stream) {
  Stream s = backend->resolve(stream);
  offload_rt_status st = OFFLOAD_RT_SUCCESS;
  if (token->done) {
    // Events right before and after the wait: their gap is the time the
    // stream stood still past its own preceding work.
    SharedEvent *before = nullptr, *after = nullptr;
    if (options.timing)
      st = recordNew(s, &before);
    if (st >= 0)
      st = backend->streamWaitEvent(s, token->done->event);
    if (st >= 0 && options.timing)
      st = recordNew(s, &after);
    if (st >= 0) {
      ++stats_.waits;
      if (after)
        waits_.push_back({before, after, s});
    } else {
      releaseEvent(before);
    }
  }
  retire(token);
  return st;
}

offload_rt_status offload_rt_context::discard(offload_rt_token *token) {
  retire(token);
  return OFFLOAD_RT_SUCCESS;
}

//===--- releases ---------------------------------------------------------===//

// A device buffer is handed to the runtime once, by one of the two calls.
offload_rt_status
offload_rt_context::handOver(offload_rt_host_buffer *buffer,
                             offload_rt_host_buffer::Release how,
                             const char *fn) {
  if (buffer->release != offload_rt_host_buffer::Release::None)
    return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                "%s: the device buffer of host buffer %p was already handed "
                "to the runtime",
                fn, static_cast<void *>(buffer));
  buffer->release = how;
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::releaseDeviceAfterCopy(
    offload_rt_host_buffer *buffer, offload_rt_release_fn fn, void *user) {
  RETURN_IF_FAILED(handOver(buffer, offload_rt_host_buffer::Release::Callback,
                            "offload_rt_release_device_after_copy"));
  buffer->releaseFn = fn;
  buffer->releaseUser = user;
  if (buffer->keptOnDevice)
    return OFFLOAD_RT_SUCCESS; // the data lives there: release at free_host
  Deferred d;
  d.after.push_back(retain(buffer->offloaded));
  d.callback = {fn, const_cast<void *>(buffer->devicePtr), user};
  deferred_.push_back(std::move(d));
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::freeDeviceAfterCopy(
    offload_rt_host_buffer *buffer) {
  RETURN_IF_FAILED(handOver(buffer, offload_rt_host_buffer::Release::FreeAsync,
                            "offload_rt_free_device_after_copy"));
  if (buffer->keptOnDevice)
    return OFFLOAD_RT_SUCCESS;
  // Stream order on the D2H stream puts the free behind the copy.
  RETURN_IF_FAILED(
      backend->freeAsync(const_cast<void *>(buffer->devicePtr), d2h));
  ++stats_.device_releases;
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::freeHost(offload_rt_host_buffer *buffer) {
  Deferred d;
  d.after = std::move(buffer->reads); // the references move with them
  offload_rt_status st = OFFLOAD_RT_SUCCESS;
  if (!buffer->keptOnDevice) {
    d.after.push_back(buffer->offloaded);
    d.block = buffer->block;
    d.group = buffer->group;
    d.liveBytes = buffer->bytes;
  } else if (buffer->release == offload_rt_host_buffer::Release::Callback) {
    d.callback = {buffer->releaseFn, const_cast<void *>(buffer->devicePtr),
                  buffer->releaseUser};
  } else if (buffer->release == offload_rt_host_buffer::Release::FreeAsync) {
    // Behind the loads that read the device copy, on whichever stream.
    for (SharedEvent *e : d.after)
      if (st >= 0)
        st = backend->streamWaitEvent(d2h, e->event);
    if (st >= 0)
      st = backend->freeAsync(const_cast<void *>(buffer->devicePtr), d2h);
    if (st >= 0)
      ++stats_.device_releases;
  }
  retire(buffer);
  if (d.block || d.callback.fn) {
    deferred_.push_back(std::move(d));
  } else {
    for (SharedEvent *e : d.after)
      releaseEvent(e);
  }
  return st;
}

offload_rt_status offload_rt_context::hostData(offload_rt_host_buffer *buffer,
                                               bool wait, void **out) {
  *out = buffer->block;
  if (wait && buffer->offloaded)
    return backend->synchronizeEvent(buffer->offloaded->event);
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::synchronize() {
  RETURN_IF_FAILED(backend->synchronizeStream(d2h));
  RETURN_IF_FAILED(backend->synchronizeStream(h2d));
  return reap();
}

//===--- handles ----------------------------------------------------------===//

offload_rt_token *offload_rt_context::newToken(SharedEvent *done) {
  offload_rt_token *token = tokens_.create();
  token->done = done;
  return token;
}

void offload_rt_context::retire(offload_rt_host_buffer *buffer) {
  buffers_.retire(buffer);
}

void offload_rt_context::retire(offload_rt_token *token) {
  releaseEvent(token->done);
  tokens_.retire(token);
}

namespace {
/// Null, live, released (`released` says how), or not a handle of ours.
template <typename T>
offload_rt_status checkHandle(const HandleStore<T> &store, T *h,
                              const char *fn, const char *noun,
                              const char *released) {
  if (!h)
    return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, noun);
  switch (store.lookup(h)) {
  case HandleStore<T>::Lookup::Live:
    return OFFLOAD_RT_SUCCESS;
  case HandleStore<T>::Lookup::Released:
    return fail(OFFLOAD_RT_ERROR_INVALID_HANDLE, "%s: %s %p was already %s",
                fn, noun, static_cast<void *>(h), released);
  case HandleStore<T>::Lookup::Unknown:
    break;
  }
  return fail(OFFLOAD_RT_ERROR_INVALID_HANDLE,
              "%s: %p is not a %s of this context", fn, static_cast<void *>(h),
              noun);
}
} // namespace

offload_rt_status
offload_rt_context::checkBuffer(offload_rt_host_buffer *buffer,
                                const char *fn) const {
  bool freeing = std::strcmp(fn, "offload_rt_free_host") == 0;
  return checkHandle(buffers_, buffer, fn, "host buffer",
                     freeing ? "released (double release)"
                             : "released (use after release)");
}

offload_rt_status offload_rt_context::checkToken(offload_rt_token *token,
                                                 const char *fn) const {
  return checkHandle(tokens_, token, fn, "token", "waited on or discarded");
}

//===--- reaping finished work --------------------------------------------===//

offload_rt_status offload_rt_context::reapCopies(std::deque<CopyRecord> &inFlight,
                                                 double &totalMs) {
  // A copy stream is FIFO: copies complete in the order they were queued.
  while (!inFlight.empty()) {
    CopyRecord &r = inFlight.front();
    bool done = false;
    RETURN_IF_FAILED(isDone(r.done, &done));
    if (!done)
      break;
    if (r.start) {
      float ms = 0;
      RETURN_IF_FAILED(backend->elapsedMs(r.start->event, r.done->event, &ms));
      totalMs += ms;
    }
    releaseEvent(r.start);
    releaseEvent(r.done);
    inFlight.pop_front();
  }
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::reapWaits() {
  // Waits may sit on several compute streams. On one stream they end in the
  // order they were issued, so after its first unfinished wait the others
  // are not queried: a host running far ahead of the device keeps many
  // waits pending, and querying each at every runtime call would make the
  // calls' cost grow with them.
  std::vector<Stream> pending;
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (std::find(pending.begin(), pending.end(), it->stream) != pending.end()) {
      ++it;
      continue;
    }
    bool done = false;
    RETURN_IF_FAILED(isDone(it->after, &done));
    if (!done) {
      pending.push_back(it->stream);
      ++it;
      continue;
    }
    float ms = 0;
    RETURN_IF_FAILED(backend->elapsedMs(it->before->event, it->after->event, &ms));
    stats_.wait_ms += ms;
    releaseEvent(it->before);
    releaseEvent(it->after);
    it = waits_.erase(it);
  }
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::runDeferredNow(Deferred &d) {
  if (d.block)
    returnBlock(d.block, d.group, d.liveBytes);
  if (d.callback.fn) {
    ready_.push_back(d.callback);
    ++stats_.device_releases;
  }
  for (SharedEvent *e : d.after)
    releaseEvent(e);
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::reapDeferred() {
  for (size_t i = 0; i < deferred_.size();) {
    bool allDone = true;
    for (SharedEvent *e : deferred_[i].after) {
      RETURN_IF_FAILED(isDone(e, &allDone));
      if (!allDone)
        break;
    }
    if (!allDone) {
      ++i;
      continue;
    }
    runDeferredNow(deferred_[i]);
    deferred_.erase(deferred_.begin() + i);
  }
  return OFFLOAD_RT_SUCCESS;
}

offload_rt_status offload_rt_context::reap() {
  RETURN_IF_FAILED(reapCopies(d2hInFlight_, stats_.d2h_ms));
  RETURN_IF_FAILED(reapCopies(h2dInFlight_, stats_.h2d_ms));
  RETURN_IF_FAILED(reapWaits());
  return reapDeferred();
}

//===--- statistics and teardown ------------------------------------------===//

offload_rt_status offload_rt_context::stats(offload_rt_stats *out) {
  RETURN_IF_FAILED(reap());
  *out = stats_;
  out->pinned_reserved_bytes = pool_.reservedBytes();
  out->pinned_in_use_bytes = pool_.inUseBytes();
  out->pinned_peak_in_use_bytes = pool_.peakInUseBytes();
  out->host_live_bytes = liveBytes_;
  out->pool_chunks = pool_.chunks().size();
  out->device_in_use_bytes = backend->getDeviceInUseBytes();
  out->device_peak_bytes = backend->getDevicePeakBytes();
  return OFFLOAD_RT_SUCCESS;
}

void offload_rt_context::resetStats() {
  stats_ = offload_rt_stats{};
  stats_.host_peak_live_bytes = liveBytes_;
  pool_.resetPeak();
  backend->resetDevicePeak();
}

// Best effort: keeps going past failures so that memory is released, and
// reports the first one.
offload_rt_status offload_rt_context::teardown() {
  offload_rt_status first = OFFLOAD_RT_SUCCESS;
  auto note = [&](offload_rt_status st) {
    if (st < 0 && first >= 0)
      first = st;
  };
  buffers_.forEachLive([&](offload_rt_host_buffer *b) { note(freeHost(b)); });
  tokens_.forEachLive([&](offload_rt_token *t) { retire(t); });
  if (d2h)
    note(backend->synchronizeStream(d2h));
  if (h2d)
    note(backend->synchronizeStream(h2d));
  for (Deferred &d : deferred_) {
    for (SharedEvent *e : d.after)
      note(backend->synchronizeEvent(e->event));
    runDeferredNow(d);
  }
  deferred_.clear();
  note(reap());
  for (SharedEvent &e : events_)
    note(backend->destroyEvent(e.event));
  for (const HostPool::Chunk &c : pool_.chunks())
    note(backend->hostFree(c.base));
  if (d2h)
    note(backend->destroyStream(d2h));
  if (h2d)
    note(backend->destroyStream(h2d));
  return first;
}
