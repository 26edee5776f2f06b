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

#include <mutex>
#include <unordered_map>

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
