//===- MlirWrappers.cpp - Entry points for compiled code ------------------===//
//
// Part of offload-mlir, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
//
// Thin wrappers over the C API for code lowered by -convert-offload-to-llvm,
// in the shape of MLIR's CudaRuntimeWrappers: each names the call that failed
// and aborts, since compiled code cannot handle errors.
//
//===----------------------------------------------------------------------===//

#include "offload_rt/offload_rt_mlir.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
thread_local void *computeStream = nullptr;

void check(offload_rt_status status, const char *call) {
  if (status >= 0)
    return;
  std::fprintf(stderr, "offload_rt: %s failed: %s\n", call,
               offload_rt_last_error());
  std::abort();
}

offload_rt_context *context() {
  offload_rt_context *ctx = offload_rt_default_context();
  if (!ctx) {
    std::fprintf(stderr, "offload_rt: no default context: %s\n",
                 offload_rt_last_error());
    std::abort();
  }
  return ctx;
}

/// The release callback of an offloaded source whose allocation starts
/// before the copied bytes (an aligned allocation): frees the allocation.
void freeAllocation(void * /*copied*/, void *allocated) {
  check(offload_rt_device_free(context(), allocated, nullptr),
        "offload_rt_device_free");
}

/// A NULL output array from compiled code: nothing to report it through.
void checkOut(void **out, const char *call, const char *name) {
  if (out)
    return;
  std::fprintf(stderr, "offload_rt: %s failed: %s is NULL\n", call, name);
  std::abort();
}

/// A started load: the token to wait for and the buffer it fills.
struct PendingLoad {
  offload_rt_token *token;
  void *device;
};
} // namespace

extern "C" {

void offload_rt_mlir_set_compute_stream(void *stream) {
  computeStream = stream;
}

void *offload_rt_mlir_compute_stream(void) { return computeStream; }

void *offload_rt_mlir_offload_start(void *device_ptr, int64_t bytes,
                                    void *stream) {
  offload_rt_host_buffer *buffer = nullptr;
  check(offload_rt_offload(context(), device_ptr, static_cast<size_t>(bytes),
                           stream, &buffer),
        "offload_rt_offload");
  return buffer;
}

void offload_rt_mlir_release_source(void *handle, void *allocated,
                                    void *copied) {
  auto *buffer = static_cast<offload_rt_host_buffer *>(handle);
  if (allocated == copied) {
    check(offload_rt_free_device_after_copy(context(), buffer),
          "offload_rt_free_device_after_copy");
    return;
  }
  check(offload_rt_release_device_after_copy(context(), buffer,
                                             freeAllocation, allocated),
        "offload_rt_release_device_after_copy");
}

void *offload_rt_mlir_host_data(void *handle) {
  void *data = nullptr;
  check(offload_rt_host_data(context(),
                             static_cast<offload_rt_host_buffer *>(handle),
                             /*wait=*/0, &data),
        "offload_rt_host_data");
  return data;
}

void *offload_rt_mlir_load_start(void *handle, int64_t bytes, void *stream) {
  auto *pending = new PendingLoad{nullptr, nullptr};
  check(offload_rt_load_start(context(),
                              static_cast<offload_rt_host_buffer *>(handle),
                              /*device_dst=*/nullptr,
                              static_cast<size_t>(bytes), stream,
                              &pending->device, &pending->token),
        "offload_rt_load_start");
  return pending;
}

void *offload_rt_mlir_wait(void *token, void *stream) {
  auto *pending = static_cast<PendingLoad *>(token);
  void *device = pending->device;
  offload_rt_context *ctx = context();
  check(offload_rt_wait(ctx, pending->token, stream), "offload_rt_wait");
  delete pending;
  // No stream: this thread computes, and reads the buffer next.
  if (!stream)
    check(offload_rt_stream_synchronize(ctx, nullptr),
          "offload_rt_stream_synchronize");
  return device;
}

void offload_rt_mlir_offload_group_start(int64_t n, void **device_ptrs,
                                         int64_t *bytes, void *stream,
                                         void **out_handles) {
  // The C API's arrays have its own element types; n < 1 and NULL input
  // arrays go through to it, which names them.
  checkOut(out_handles, "offload_rt_mlir_offload_group_start", "out_handles");
  size_t count = n > 0 ? static_cast<size_t>(n) : 0;
  std::vector<size_t> sizes;
  if (bytes)
    sizes.assign(bytes, bytes + count);
  std::vector<offload_rt_host_buffer *> buffers(count);
  check(offload_rt_offload_group(context(), count, device_ptrs,
                                 bytes ? sizes.data() : nullptr, stream,
                                 buffers.data()),
        "offload_rt_offload_group");
  for (size_t i = 0; i < count; ++i)
    out_handles[i] = buffers[i];
}

void offload_rt_mlir_load_group_start(int64_t n, void **handles,
                                      int64_t *bytes, void *stream,
                                      void **out_tokens) {
  checkOut(out_tokens, "offload_rt_mlir_load_group_start", "out_tokens");
  size_t count = n > 0 ? static_cast<size_t>(n) : 0;
  std::vector<offload_rt_host_buffer *> buffers;
  if (handles)
    for (size_t i = 0; i < count; ++i)
      buffers.push_back(static_cast<offload_rt_host_buffer *>(handles[i]));
  std::vector<size_t> sizes;
  if (bytes)
    sizes.assign(bytes, bytes + count);
  std::vector<void *> devices(count);
  std::vector<offload_rt_token *> tokens(count);
  check(offload_rt_load_group_start(
            context(), count, handles ? buffers.data() : nullptr,
            bytes ? sizes.data() : nullptr, stream, devices.data(),
            tokens.data()),
        "offload_rt_load_group_start");
  // One PendingLoad per member: offload_rt_mlir_wait takes them one by one.
  for (size_t i = 0; i < count; ++i)
    out_tokens[i] = new PendingLoad{tokens[i], devices[i]};
}

void offload_rt_mlir_free_host(void *handle) {
  check(offload_rt_free_host(context(),
                             static_cast<offload_rt_host_buffer *>(handle)),
        "offload_rt_free_host");
}

void offload_rt_mlir_synchronize(void) {
  check(offload_rt_synchronize(context()), "offload_rt_synchronize");
}

void offload_rt_mlir_print_summary(void) {
  offload_rt_context *ctx = context();
  check(offload_rt_synchronize(ctx), "offload_rt_synchronize");
  std::fflush(stdout);
  check(offload_rt_print_summary(ctx, stdout), "offload_rt_print_summary");
  std::fflush(stdout);
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  void *ptr = nullptr;
  check(offload_rt_device_alloc(context(), bytes, computeStream, &ptr),
        "offload_rt_device_alloc");
  // A stream-ordered allocation is usable by this thread only once the
  // stream reached it.
  if (!computeStream)
    check(offload_rt_stream_synchronize(context(), nullptr),
          "offload_rt_stream_synchronize");
  return ptr;
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (ptr)
    check(offload_rt_device_free(context(), ptr, computeStream),
          "offload_rt_device_free");
}

} // extern "C"
