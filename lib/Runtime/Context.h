//===- Context.h - one offload_rt context: pool, streams, bookkeeping -----===//
//
// A context owns the backend, its D2H and H2D streams, the pinned pool, the
// handles it gave out and the records of copies still in flight. Everything
// here runs under the context's mutex; the C API (OffloadRT.cpp) takes the
// lock, calls one method, collects finished work (reap) and runs release
// callbacks after unlocking, so a callback may call back into offload_rt.
//
//===----------------------------------------------------------------------===//
#ifndef OFFLOAD_RT_CONTEXT_H
#define OFFLOAD_RT_CONTEXT_H

#include "Backend.h"
#include "HostPool.h"

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace offload_rt {

/// An event shared by the records that wait on it (a buffer, a token, the
/// in-flight copy), returned to the context's free list by the last one.
struct SharedEvent {
  Event event = nullptr;
  uint32_t refs = 0;
  /// A query found the work before the event's record done. It stays done
  /// until the event is recorded again (only after its last release), so
  /// later queries need no backend call: a copy group's members share one
  /// event, and each of them is asked about it.
  bool complete = false;
};

/// The pool block of an offload group, shared by its members (each at its
/// own offset). Every member drops its reference through the same deferred
/// return as a single buffer's block (after its free_host, its offload and
/// its loads); the last one returns the block to the pool.
struct BlockGroup {
  void *block = nullptr;
  size_t members = 0; // members whose part of the block is not returned yet
};

/// A release callback whose copy completed, to run outside the lock.
struct ReadyCallback {
  offload_rt_release_fn fn;
  void *devicePtr;
  void *user;
};

enum class HandleState : uint8_t { Live, Released };

/// Storage for one kind of handle (host buffers, tokens). Handles live in a
/// deque (stable addresses) and are recycled. With checks on, every handle
/// given out is remembered and a released one sits in quarantine for the
/// next kQuarantine releases before reuse, so a stale handle is recognised
/// as released (double release, use after release) instead of aliasing a
/// new one. Without checks a handle is trusted.
template <typename T> class HandleStore {
public:
  static constexpr size_t kQuarantine = 1 << 16;
  enum class Lookup { Live, Released, Unknown };

  explicit HandleStore(bool checks) : checks_(checks) {}

  T *create() {
    T *h;
    if (!free_.empty()) {
      h = free_.back();
      free_.pop_back();
    } else {
      h = &items_.emplace_back();
      if (checks_)
        issued_.insert(h);
    }
    *h = T{};
    return h;
  }

  void retire(T *h) {
    *h = T{};
    h->state = HandleState::Released;
    if (!checks_) {
      free_.push_back(h);
      return;
    }
    quarantine_.push_back(h);
    if (quarantine_.size() > kQuarantine) {
      free_.push_back(quarantine_.front());
      quarantine_.pop_front();
    }
  }

  Lookup lookup(const T *h) const {
    if (checks_ && !issued_.count(h))
      return Lookup::Unknown;
    return h->state == HandleState::Live ? Lookup::Live : Lookup::Released;
  }

  template <typename F> void forEachLive(F f) {
    for (T &h : items_)
      if (h.state == HandleState::Live)
        f(&h);
  }

private:
  bool checks_;
  std::deque<T> items_;
  std::vector<T *> free_;
  std::deque<T *> quarantine_;
  std::unordered_set<const T *> issued_;
};

} // namespace offload_rt

struct offload_rt_host_buffer {
  offload_rt::HandleState state = offload_rt::HandleState::Live;
  bool keptOnDevice = false;
  // How the device buffer is released, once the caller hands it over.
  enum class Release : uint8_t { None, Callback, FreeAsync } release =
      Release::None;
  void *block = nullptr; // pinned pool block; null when kept on device
  // For a member of an offload group: the shared block `block` points into.
  offload_rt::BlockGroup *group = nullptr;
  const void *devicePtr = nullptr;
  size_t bytes = 0;
  offload_rt::SharedEvent *offloaded = nullptr; // D2H copy completed
  std::vector<offload_rt::SharedEvent *> reads; // loads from this buffer
  offload_rt_release_fn releaseFn = nullptr;
  void *releaseUser = nullptr;
};

struct offload_rt_token {
  offload_rt::HandleState state = offload_rt::HandleState::Live;
  offload_rt::SharedEvent *done = nullptr; // null: nothing to wait for
};

struct offload_rt_context {
  offload_rt_context(const offload_rt_options &opts,
                     std::unique_ptr<offload_rt::Backend> backend);
  ~offload_rt_context();

  /// Streams, first pool chunk. Called once, under no lock.
  offload_rt_status initialize();
  /// Waits for the runtime's work, releases every handle and resource.
  offload_rt_status teardown();

  offload_rt_status offloadStart(const void *devicePtr, size_t bytes,
                                 void *computeStream,
                                 offload_rt_host_buffer **outBuffer,
                                 offload_rt_token **outToken);
  offload_rt_status loadStart(offload_rt_host_buffer *buffer, void *deviceDst,
                              size_t bytes, void *computeStream,
                              void **outDevicePtr, offload_rt_token **outToken);
  /// Copy groups: one pool block (offload), one batched copy, one completion
  /// event for n buffers. Arguments and handles are checked by the caller.
  offload_rt_status offloadGroup(size_t n, const void *const *devicePtrs,
                                 const size_t *bytes, void *computeStream,
                                 offload_rt_host_buffer **outBuffers);
  offload_rt_status loadGroupStart(size_t n,
                                   offload_rt_host_buffer *const *buffers,
                                   const size_t *bytes, void *computeStream,
                                   void **outDevicePtrs,
                                   offload_rt_token **outTokens);
  offload_rt_status wait(offload_rt_token *token, void *stream);
  /// offload_rt_device_free: a member of a load group's device block drops
  /// its reference; the last one frees the block.
  offload_rt_status deviceFree(void *devicePtr, void *stream);
  offload_rt_status discard(offload_rt_token *token);
  offload_rt_status releaseDeviceAfterCopy(offload_rt_host_buffer *buffer,
                                           offload_rt_release_fn fn,
                                           void *user);
  offload_rt_status freeDeviceAfterCopy(offload_rt_host_buffer *buffer);
  offload_rt_status freeHost(offload_rt_host_buffer *buffer);
  offload_rt_status hostData(offload_rt_host_buffer *buffer, bool wait,
                             void **out);
  offload_rt_status synchronize();
  offload_rt_status reserve(uint64_t bytes);
  offload_rt_status stats(offload_rt_stats *out);
  void resetStats();

  /// Collects finished copies, waits and deferred releases without blocking;
  /// callbacks whose copies completed are queued for takeReady().
  offload_rt_status reap();
  /// Release callbacks that may run now; the caller runs them unlocked.
  std::vector<offload_rt::ReadyCallback> takeReady() {
    return std::move(ready_);
  }

  /// Handle checks (when enabled): names what is wrong with the handle.
  offload_rt_status checkBuffer(offload_rt_host_buffer *buffer,
                                const char *fn) const;
  offload_rt_status checkToken(offload_rt_token *token, const char *fn) const;

  std::mutex mutex;
  std::unique_ptr<offload_rt::Backend> backend;
  offload_rt::Stream d2h = nullptr, h2d = nullptr;
  offload_rt_options options;
  bool checks;

private:
  /// A copy on a copy stream, kept until it completes for its timing.
  struct CopyRecord {
    offload_rt::SharedEvent *start; // null when timing is off
    offload_rt::SharedEvent *done;
  };
  /// A compute-stream wait bracketed by two events, for its exposed time.
  struct WaitRecord {
    offload_rt::SharedEvent *before, *after;
    offload_rt::Stream stream; // the waiting stream (its waits end in order)
  };
  /// Host-side work that may run only once all `after` events completed.
  struct Deferred {
    std::vector<offload_rt::SharedEvent *> after;
    void *block = nullptr; // pool block to return
    offload_rt::BlockGroup *group = nullptr; // block is a member's part
    size_t liveBytes = 0;
    offload_rt::ReadyCallback callback{nullptr, nullptr, nullptr};
  };

  offload_rt_status acquireEvent(offload_rt::SharedEvent **out);
  offload_rt::SharedEvent *retain(offload_rt::SharedEvent *e);
  void releaseEvent(offload_rt::SharedEvent *e);
  offload_rt_status isDone(offload_rt::SharedEvent *e, bool *done);
  offload_rt_status recordNew(offload_rt::Stream s,
                              offload_rt::SharedEvent **out);

  offload_rt_status allocateBlock(size_t bytes, void **block);
  offload_rt_status addChunk(size_t bytes);
  offload_rt_status waitForOneDeferredBlock(bool *waited);
  offload_rt_status throttle(std::deque<CopyRecord> &inFlight);
  offload_rt_status enqueueCopy(void *dst, const void *src, size_t bytes,
                                offload_rt::CopyKind kind,
                                offload_rt::Stream s,
                                offload_rt::SharedEvent **done);
  /// One batched copy of n runs; the statistics count `members` buffers of
  /// `memberSizes` where one run carries several (default: the runs).
  offload_rt_status enqueueCopies(void *const *dsts, const void *const *srcs,
                                  const size_t *sizes, size_t n,
                                  offload_rt::CopyKind kind,
                                  offload_rt::Stream s,
                                  offload_rt::SharedEvent **done,
                                  const size_t *memberSizes = nullptr,
                                  size_t members = 0);
  offload_rt_status copyFromHost(offload_rt_host_buffer *buffer, void *dst,
                                 bool callerDst, size_t bytes,
                                 offload_rt::Stream compute,
                                 offload_rt::SharedEvent **done);
  offload_rt_status copyFromDevice(offload_rt_host_buffer *buffer, void *dst,
                                   size_t bytes, offload_rt::Stream compute,
                                   offload_rt::SharedEvent **done);
  offload_rt_status pruneReads(offload_rt_host_buffer *buffer);
  offload_rt_status handOver(offload_rt_host_buffer *buffer,
                             offload_rt_host_buffer::Release how,
                             const char *fn);
  void warnFallbackOnce(size_t bytes, const char *growthFailure);
  offload_rt_status reapCopies(std::deque<CopyRecord> &inFlight,
                               double &totalMs);
  offload_rt_status reapWaits();
  offload_rt_status reapDeferred();
  offload_rt_status runDeferredNow(Deferred &d);
  void returnBlock(void *block, offload_rt::BlockGroup *group,
                   size_t liveBytes);
  offload_rt::BlockGroup *newGroup(void *block, size_t members);

  offload_rt_token *newToken(offload_rt::SharedEvent *done);
  void retire(offload_rt_host_buffer *buffer);
  void retire(offload_rt_token *token);

  offload_rt::HostPool pool_;
  std::deque<offload_rt::SharedEvent> events_;
  std::vector<offload_rt::SharedEvent *> freeEvents_;
  std::deque<offload_rt::BlockGroup> groups_; // recycled like events
  std::vector<offload_rt::BlockGroup *> freeGroups_;
  offload_rt::HandleStore<offload_rt_host_buffer> buffers_;
  offload_rt::HandleStore<offload_rt_token> tokens_;

  std::deque<CopyRecord> d2hInFlight_, h2dInFlight_;
  std::deque<WaitRecord> waits_;
  std::vector<Deferred> deferred_;
  /// A load group's device allocation, shared by its members until the last
  /// one is freed (deviceFree).
  struct DeviceBlock {
    void *base;
    size_t liveMembers;
  };
  std::unordered_map<void *, std::shared_ptr<DeviceBlock>> deviceBlockOf_;
  std::vector<offload_rt::ReadyCallback> ready_;

  offload_rt_stats stats_{};
  size_t liveBytes_ = 0;
  bool warnedFallback_ = false;
};

#endif // OFFLOAD_RT_CONTEXT_H
