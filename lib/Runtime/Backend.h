//===- Backend.h - the stream/event/copy primitives offload_rt runs on ----===//
//
// The runtime's logic (pool, ordering, accounting) is written once against
// this interface. It is a deliberately small slice of the CUDA runtime API
// with the same semantics, so the sim backend can be checked against what
// the cuda backend does:
//   - work on one stream runs in FIFO order;
//   - recordEvent captures the work enqueued on the stream so far; a later
//     streamWaitEvent makes a stream wait for exactly that captured work, even
//     if the event is recorded again afterwards;
//   - waiting on an event never recorded is a no-op;
//   - mallocAsync/freeAsync are ordered with the stream's other work.
// Every method reports failure through fail() with the CUDA call's name.
//
//===----------------------------------------------------------------------===//
#ifndef OFFLOAD_RT_BACKEND_H
#define OFFLOAD_RT_BACKEND_H

#include "offload_rt/offload_rt.h"

#include <atomic>
#include <cstdint>
#include <memory>

namespace offload_rt {

using Stream = void *;
using Event = void *;

enum class CopyKind { DeviceToHost, HostToDevice, Default };

class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;

  /// Makes the context's device current for one runtime call and returns what
  /// to hand back to leave(); the caller's current device is restored.
  virtual int enter() { return 0; }
  virtual void leave(int) {}

  /// What a NULL stream from the caller means on this backend.
  virtual Stream resolve(Stream s) { return s; }

  virtual offload_rt_status createStream(Stream *out) = 0;
  virtual offload_rt_status destroyStream(Stream s) = 0;
  virtual offload_rt_status synchronizeStream(Stream s) = 0;
  virtual offload_rt_status launchHostFunc(Stream s, void (*fn)(void *),
                                           void *arg) = 0;

  virtual offload_rt_status createEvent(Event *out, bool timing) = 0;
  virtual offload_rt_status destroyEvent(Event e) = 0;
  virtual offload_rt_status recordEvent(Event e, Stream s) = 0;
  virtual offload_rt_status streamWaitEvent(Stream s, Event e) = 0;
  /// *done = whether the work captured by the last record has completed.
  virtual offload_rt_status queryEvent(Event e, bool *done) = 0;
  virtual offload_rt_status synchronizeEvent(Event e) = 0;
  virtual offload_rt_status elapsedMs(Event start, Event end, float *ms) = 0;

  virtual offload_rt_status memcpyAsync(void *dst, const void *src,
                                        size_t bytes, CopyKind kind,
                                        Stream s) = 0;
  /// n copies of one kind as one piece of stream work (cudaMemcpyBatchAsync):
  /// the batch runs in stream order, the copies within it in any order, so
  /// they must not overlap. s is a created stream, never the legacy default.
  /// On failure no copy of the batch is left pending (those already enqueued
  /// have completed), so the caller may reuse the memory at once. The
  /// default is one memcpyAsync per copy.
  virtual offload_rt_status memcpyBatchAsync(void *const *dsts,
                                             const void *const *srcs,
                                             const size_t *sizes, size_t n,
                                             CopyKind kind, Stream s);
  virtual offload_rt_status mallocAsync(void **out, size_t bytes,
                                        Stream s) = 0;
  virtual offload_rt_status freeAsync(void *ptr, Stream s) = 0;

  /// Page-locked host memory (cudaHostAlloc); slow, only for pool chunks.
  virtual offload_rt_status hostAlloc(void **out, size_t bytes) = 0;
  virtual offload_rt_status hostFree(void *ptr) = 0;

  /// Test hook (sim only): the nth next call named `call` fails.
  virtual offload_rt_status injectFailure(const char *call, int nth);

  /// Device bytes allocated by mallocAsync and not yet freed, and their
  /// high-water mark. An allocation counts from the mallocAsync call (at or
  /// before the stream reaches it), a free once the stream has reached it
  /// (the memory is free for reuse only then).
  uint64_t getDeviceInUseBytes() const { return deviceInUse_.load(); }
  uint64_t getDevicePeakBytes() const { return devicePeak_.load(); }
  /// The peak restarts from what is in use now.
  void resetDevicePeak() { devicePeak_.store(deviceInUse_.load()); }

protected:
  void noteDeviceAlloc(uint64_t bytes) {
    uint64_t now = deviceInUse_.fetch_add(bytes) + bytes;
    uint64_t peak = devicePeak_.load();
    while (now > peak && !devicePeak_.compare_exchange_weak(peak, now)) {
    }
  }
  void noteDeviceFree(uint64_t bytes) { deviceInUse_.fetch_sub(bytes); }

private:
  std::atomic<uint64_t> deviceInUse_{0}, devicePeak_{0};
};

std::unique_ptr<Backend> createSimBackend(const offload_rt_options &opts);
/// Returns null with the error set when CUDA is not compiled in or fails.
std::unique_ptr<Backend> createCudaBackend(const offload_rt_options &opts,
                                           offload_rt_status *status);

/// Records `message` (printf-style) as the calling thread's last error and
/// returns `status`, so failures read `return fail(status, "...", ...)`.
offload_rt_status fail(offload_rt_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

} // namespace offload_rt

#endif // OFFLOAD_RT_BACKEND_H
