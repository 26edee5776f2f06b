//===- CudaBackend.cpp - the runtime's primitives on the CUDA runtime -----===//
//
// Tiny wrappers in the shape of MLIR's CudaRuntimeWrappers.cpp: every CUDA
// call is checked and a failure is reported with the call's name and CUDA's
// message ("cudaMemcpyAsync failed: invalid argument").
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#ifndef OFFLOAD_RT_HAVE_CUDA

namespace offload_rt {
std::unique_ptr<Backend> createCudaBackend(const offload_rt_options &,
                                           offload_rt_status *status) {
  *status = fail(OFFLOAD_RT_ERROR_UNAVAILABLE,
                 "the cuda backend is not compiled in (CUDA toolkit not found "
                 "when offload_rt was built); use OFFLOAD_RT_BACKEND=sim");
  return nullptr;
}
} // namespace offload_rt

#else

#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace offload_rt {
namespace {

offload_rt_status check(cudaError_t err, const char *call) {
  if (err == cudaSuccess)
    return OFFLOAD_RT_SUCCESS;
  // Clear the runtime's last-error slot: the caller (e.g. PyTorch's launch
  // checks) must not see our failure as its own later.
  (void)cudaGetLastError();
  return fail(OFFLOAD_RT_ERROR_BACKEND, "%s failed: %s", call,
              cudaGetErrorString(err));
}

#define OFFLOAD_RT_CUDA(call, ...) check(call(__VA_ARGS__), #call)

cudaStream_t stream(Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t event(Event e) { return static_cast<cudaEvent_t>(e); }

cudaMemcpyKind toCuda(CopyKind kind) {
  switch (kind) {
  case CopyKind::DeviceToHost:
    return cudaMemcpyDeviceToHost;
  case CopyKind::HostToDevice:
    return cudaMemcpyHostToDevice;
  case CopyKind::Default:
    break;
  }
  return cudaMemcpyDefault;
}

class CudaBackend final : public Backend {
public:
  CudaBackend(int device, bool managed) : device_(device), managed_(managed) {}

  const char *name() const override { return "cuda"; }

  // The context was created on device_; callers may have another current.
  int enter() override {
    int previous = device_;
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device_)
      cudaSetDevice(device_);
    return previous;
  }
  void leave(int previous) override {
    if (previous != device_)
      cudaSetDevice(previous);
  }

  offload_rt_status createStream(Stream *out) override {
    cudaStream_t s = nullptr;
    // Non-blocking: the copy streams must not serialise with the legacy
    // default stream that eager frameworks often compute on.
    auto st = OFFLOAD_RT_CUDA(cudaStreamCreateWithFlags, &s,
                              cudaStreamNonBlocking);
    *out = s;
    return st;
  }
  offload_rt_status destroyStream(Stream s) override {
    return OFFLOAD_RT_CUDA(cudaStreamDestroy, stream(s));
  }
  offload_rt_status synchronizeStream(Stream s) override {
    return OFFLOAD_RT_CUDA(cudaStreamSynchronize, stream(s));
  }
  offload_rt_status launchHostFunc(Stream s, void (*fn)(void *),
                                   void *arg) override {
    return OFFLOAD_RT_CUDA(cudaLaunchHostFunc, stream(s), fn, arg);
  }

  offload_rt_status createEvent(Event *out, bool timing) override {
    cudaEvent_t e = nullptr;
    auto st = OFFLOAD_RT_CUDA(cudaEventCreateWithFlags, &e,
                              timing ? cudaEventDefault
                                     : cudaEventDisableTiming);
    *out = e;
    return st;
  }
  offload_rt_status destroyEvent(Event e) override {
    return OFFLOAD_RT_CUDA(cudaEventDestroy, event(e));
  }
  offload_rt_status recordEvent(Event e, Stream s) override {
    return OFFLOAD_RT_CUDA(cudaEventRecord, event(e), stream(s));
  }
  offload_rt_status streamWaitEvent(Stream s, Event e) override {
    return OFFLOAD_RT_CUDA(cudaStreamWaitEvent, stream(s), event(e), 0);
  }
  offload_rt_status queryEvent(Event e, bool *done) override {
    cudaError_t err = cudaEventQuery(event(e));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError(); // "not ready" is an answer, not an error
      *done = false;
      return OFFLOAD_RT_SUCCESS;
    }
    *done = err == cudaSuccess;
    return check(err, "cudaEventQuery");
  }
  offload_rt_status synchronizeEvent(Event e) override {
    return OFFLOAD_RT_CUDA(cudaEventSynchronize, event(e));
  }
  offload_rt_status elapsedMs(Event start, Event end, float *ms) override {
    return OFFLOAD_RT_CUDA(cudaEventElapsedTime, ms, event(start), event(end));
  }

  offload_rt_status memcpyAsync(void *dst, const void *src, size_t bytes,
                                CopyKind kind, Stream s) override {
    return OFFLOAD_RT_CUDA(cudaMemcpyAsync, dst, src, bytes, toCuda(kind),
                           stream(s));
  }
  // One cudaMemcpyBatchAsync where the runtime has it (CUDA 12.8 and later):
  // one submission for a whole copy group instead of one per copy. Where the
  // driver does not support it, the base class's loop, from then on.
  offload_rt_status memcpyBatchAsync(void *const *dsts,
                                     const void *const *srcs,
                                     const size_t *sizes, size_t n,
                                     CopyKind kind, Stream s) override {
#if CUDART_VERSION >= 12080
    // The batch call refuses the legacy default stream, and the location
    // hints below need a direction.
    if (batchSupported_.load(std::memory_order_relaxed) && s &&
        kind != CopyKind::Default) {
      // Zero-byte copies move nothing; leave them out rather than rely on
      // the batch call accepting them.
      std::vector<void *> to;
      std::vector<const void *> from;
      std::vector<size_t> bytes;
      for (size_t i = 0; i < n; ++i) {
        if (sizes[i] == 0)
          continue;
        to.push_back(dsts[i]);
        from.push_back(srcs[i]);
        bytes.push_back(sizes[i]);
      }
      if (bytes.empty())
        return OFFLOAD_RT_SUCCESS;
      if (bytes.size() == 1)
        return memcpyAsync(to[0], from[0], bytes[0], kind, s);
      offload_rt_status st = batch(to, from, bytes, kind, s);
      if (st != OFFLOAD_RT_ERROR_UNAVAILABLE)
        return st;
    }
#endif
    return Backend::memcpyBatchAsync(dsts, srcs, sizes, n, kind, s);
  }
  offload_rt_status mallocAsync(void **out, size_t bytes, Stream s) override {
    offload_rt_status st =
        managed_ ? OFFLOAD_RT_CUDA(cudaMallocManaged, out, bytes,
                                   cudaMemAttachGlobal)
                 : OFFLOAD_RT_CUDA(cudaMallocAsync, out, bytes, stream(s));
    if (st == OFFLOAD_RT_SUCCESS) {
      std::lock_guard<std::mutex> lock(sizesMutex_);
      sizes_[*out] = bytes;
      noteDeviceAlloc(bytes);
    }
    return st;
  }
  offload_rt_status freeAsync(void *ptr, Stream s) override {
    uint64_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(sizesMutex_);
      auto it = sizes_.find(ptr);
      if (it != sizes_.end()) {
        bytes = it->second;
        sizes_.erase(it);
      }
    }
    if (managed_) {
      // Managed memory has no stream-ordered free: wait for the stream's
      // work on it first.
      offload_rt_status st =
          OFFLOAD_RT_CUDA(cudaStreamSynchronize, stream(s));
      if (st == OFFLOAD_RT_SUCCESS)
        st = OFFLOAD_RT_CUDA(cudaFree, ptr);
      if (st == OFFLOAD_RT_SUCCESS)
        noteDeviceFree(bytes);
      return st;
    }
    offload_rt_status st = OFFLOAD_RT_CUDA(cudaFreeAsync, ptr, stream(s));
    if (st != OFFLOAD_RT_SUCCESS || bytes == 0)
      return st;
    // The memory is free once the stream reaches the free: count it then,
    // from a host function enqueued right behind it.
    auto *freed = new FreedBytes{this, bytes};
    if (cudaLaunchHostFunc(stream(s), &FreedBytes::run, freed) != cudaSuccess) {
      (void)cudaGetLastError();
      delete freed;
      noteDeviceFree(bytes);
    }
    return OFFLOAD_RT_SUCCESS;
  }

  offload_rt_status hostAlloc(void **out, size_t bytes) override {
    return OFFLOAD_RT_CUDA(cudaHostAlloc, out, bytes, cudaHostAllocDefault);
  }
  offload_rt_status hostFree(void *ptr) override {
    return OFFLOAD_RT_CUDA(cudaFreeHost, ptr);
  }

private:
#if CUDART_VERSION >= 12080
  /// The batch call itself. UNAVAILABLE (after a one-time warning) when the
  /// driver does not support it, for the caller to fall back to the loop.
  offload_rt_status batch(std::vector<void *> &to,
                          std::vector<const void *> &from,
                          std::vector<size_t> &bytes, CopyKind kind,
                          Stream s) {
    // One set of attributes for every copy: the source is read in stream
    // order (behind the D2H stream's wait on compute, or the H2D stream's
    // wait on the offload); the hints only matter for managed memory
    // (host_accessible_device_memory), where they name the device side.
    cudaMemcpyAttributes attrs = {};
    attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    cudaMemLocation device = {}, host = {};
    device.type = cudaMemLocationTypeDevice;
    device.id = device_;
    host.type = cudaMemLocationTypeHost;
    bool toHost = kind == CopyKind::DeviceToHost;
    attrs.srcLocHint = toHost ? device : host;
    attrs.dstLocHint = toHost ? host : device;
    attrs.flags = cudaMemcpyFlagDefault;
    size_t attrsIdx = 0;
#if CUDART_VERSION >= 13000
    cudaError_t err =
        cudaMemcpyBatchAsync(to.data(), from.data(), bytes.data(),
                             bytes.size(), &attrs, &attrsIdx, 1, stream(s));
#else
    // 12.8 and 12.9: non-const arrays and a failIdx, gone in 13.0.
    size_t failIdx = 0;
    cudaError_t err = cudaMemcpyBatchAsync(
        to.data(), const_cast<void **>(from.data()), bytes.data(),
        bytes.size(), &attrs, &attrsIdx, 1, &failIdx, stream(s));
#endif
    if (err == cudaSuccess)
      return OFFLOAD_RT_SUCCESS;
    if (err == cudaErrorNotSupported ||
        err == cudaErrorCallRequiresNewerDriver) {
      (void)cudaGetLastError();
      if (!batchSupported_.exchange(false))
        return OFFLOAD_RT_ERROR_UNAVAILABLE;
      std::fprintf(stderr,
                   "offload_rt: warning: cudaMemcpyBatchAsync is not "
                   "supported here (%s); copy groups are copied with one "
                   "cudaMemcpyAsync per buffer\n",
                   cudaGetErrorString(err));
      return OFFLOAD_RT_ERROR_UNAVAILABLE;
    }
    offload_rt_status st = check(err, "cudaMemcpyBatchAsync");
    // Whether some copies of the batch were queued before the failure is
    // not reported: let any that were finish before the caller takes the
    // memory back. Keep the failure's message.
    std::string message = offload_rt_last_error();
    (void)cudaStreamSynchronize(stream(s));
    (void)cudaGetLastError();
    return fail(st, "%s", message.c_str());
  }
  std::atomic<bool> batchSupported_{true};
#endif

  /// A stream-ordered free's bytes, counted when the stream reaches it.
  struct FreedBytes {
    CudaBackend *backend;
    uint64_t bytes;
    static void run(void *self) {
      auto *freed = static_cast<FreedBytes *>(self);
      freed->backend->noteDeviceFree(freed->bytes);
      delete freed;
    }
  };

  int device_;
  bool managed_;
  std::mutex sizesMutex_;
  std::unordered_map<void *, uint64_t> sizes_;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const offload_rt_options &opts,
                                           offload_rt_status *status) {
  int device = 0;
  *status = OFFLOAD_RT_CUDA(cudaGetDevice, &device);
  if (*status != OFFLOAD_RT_SUCCESS)
    return nullptr;
  // cudaGetDevice succeeds without a GPU on some drivers; creating the
  // primary context here gives a clear error at creation instead of later.
  *status = OFFLOAD_RT_CUDA(cudaFree, nullptr);
  if (*status != OFFLOAD_RT_SUCCESS)
    return nullptr;
  return std::make_unique<CudaBackend>(device,
                                       opts.host_accessible_device_memory != 0);
}

} // namespace offload_rt

#endif // OFFLOAD_RT_HAVE_CUDA
