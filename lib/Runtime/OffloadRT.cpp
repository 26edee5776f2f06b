//===- OffloadRT.cpp - the C ABI of offload_rt ----------------------------===//
//
// Thin extern "C" entry points: resolve the context (NULL = process default),
// check the arguments and handles, run one Context method under the lock,
// reap finished work, then run ready release callbacks after unlocking.
//
//===----------------------------------------------------------------------===//

#include "offload_rt/offload_rt.h"
#include "offload_rt/offload_rt_sim.h"

#include "Context.h"

#include "offload_support/ByteSize.h"

#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <strings.h>

using namespace offload_rt;

//===--- errors -----------------------------------------------------------===//

namespace {
thread_local std::string lastError;
} // namespace

offload_rt_status offload_rt::fail(offload_rt_status status,
                                   const char *format, ...) {
  // Format into a local buffer first: the arguments may point into
  // lastError itself (a message wrapping the previous one).
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  lastError = message;
  return status;
}

extern "C" const char *offload_rt_last_error(void) { return lastError.c_str(); }

extern "C" const char *offload_rt_status_string(offload_rt_status s) {
  switch (s) {
  case OFFLOAD_RT_SUCCESS:
    return "success";
  case OFFLOAD_RT_KEPT_ON_DEVICE:
    return "kept on device (pinned pool exhausted)";
  case OFFLOAD_RT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case OFFLOAD_RT_ERROR_INVALID_HANDLE:
    return "invalid handle";
  case OFFLOAD_RT_ERROR_BACKEND:
    return "backend call failed";
  case OFFLOAD_RT_ERROR_UNAVAILABLE:
    return "backend unavailable";
  case OFFLOAD_RT_ERROR_OUT_OF_MEMORY:
    return "out of pinned memory";
  }
  return "unknown status";
}

//===--- options and contexts ---------------------------------------------===//

namespace {

void warnBadEnv(const char *name, const char *value) {
  std::fprintf(stderr, "offload_rt: warning: ignoring %s=%s\n", name, value);
}

/// A byte size from the environment (offload_support::parseByteSize: 512MiB,
/// 2G, 1.5GB, 4096); warns with the reason and keeps `*out` if it is not one.
void envBytes(const char *name, uint64_t *out) {
  const char *v = std::getenv(name);
  if (!v)
    return;
  std::string error;
  if (std::optional<int64_t> bytes = offload_support::parseByteSize(v, &error))
    *out = static_cast<uint64_t>(*bytes);
  else
    std::fprintf(stderr, "offload_rt: warning: ignoring %s: %s\n", name,
                 error.c_str());
}

void envFlag(const char *name, int *out) {
  if (const char *v = std::getenv(name))
    *out = std::atoi(v) != 0;
}

void envDouble(const char *name, double *out) {
  if (const char *v = std::getenv(name))
    *out = std::atof(v);
}

std::mutex defaultMutex;
offload_rt_context *defaultContext = nullptr;
// Why the default context could not be made, for the calls that needed it.
offload_rt_status defaultStatus = OFFLOAD_RT_SUCCESS;

/// ctx, or the default context; null (with the error set) if there is none.
offload_rt_context *resolve(offload_rt_context *ctx, offload_rt_status *st) {
  *st = OFFLOAD_RT_SUCCESS;
  if (ctx)
    return ctx;
  ctx = offload_rt_default_context();
  if (!ctx) {
    std::lock_guard<std::mutex> lock(defaultMutex);
    *st = defaultStatus;
  }
  return ctx;
}

} // namespace

extern "C" void offload_rt_options_init(offload_rt_options *opts) {
  *opts = offload_rt_options{};
  opts->backend = OFFLOAD_RT_BACKEND_DEFAULT;
  opts->pool_growable = 1;
  opts->timing = 1;
  opts->checks = -1;
  if (const char *v = std::getenv("OFFLOAD_RT_BACKEND")) {
    if (!strcasecmp(v, "cuda"))
      opts->backend = OFFLOAD_RT_BACKEND_CUDA;
    else if (!strcasecmp(v, "sim"))
      opts->backend = OFFLOAD_RT_BACKEND_SIM;
    else
      warnBadEnv("OFFLOAD_RT_BACKEND", v);
  }
  envBytes("OFFLOAD_RT_POOL_BYTES", &opts->pool_initial_bytes);
  envFlag("OFFLOAD_RT_POOL_GROWABLE", &opts->pool_growable);
  if (const char *v = std::getenv("OFFLOAD_RT_MAX_IN_FLIGHT"))
    opts->max_in_flight = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
  envFlag("OFFLOAD_RT_TIMING", &opts->timing);
  envFlag("OFFLOAD_RT_CHECKS", &opts->checks);
  envDouble("OFFLOAD_RT_SIM_GBPS", &opts->sim_copy_gbps);
  envDouble("OFFLOAD_RT_SIM_LATENCY_US", &opts->sim_copy_latency_us);
  envFlag("OFFLOAD_RT_HOST_ACCESSIBLE_DEVICE",
          &opts->host_accessible_device_memory);
  envDouble("OFFLOAD_RT_COPY_DELAY_US", &opts->copy_delay_us);
}

extern "C" offload_rt_status
offload_rt_context_create(const offload_rt_options *opts,
                          offload_rt_context **out) {
  if (!out)
    return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                "offload_rt_context_create: out is NULL");
  *out = nullptr;
  offload_rt_options o;
  if (opts)
    o = *opts;
  else
    offload_rt_options_init(&o);

  offload_rt_backend kind = o.backend;
  if (kind == OFFLOAD_RT_BACKEND_DEFAULT) {
    offload_rt_options env;
    offload_rt_options_init(&env);
    kind = env.backend;
  }
  std::unique_ptr<Backend> backend;
  offload_rt_status st = OFFLOAD_RT_SUCCESS;
  if (kind == OFFLOAD_RT_BACKEND_SIM) {
    backend = createSimBackend(o);
  } else {
    // DEFAULT without OFFLOAD_RT_BACKEND means cuda: falling back to the sim
    // silently would treat real device pointers as host memory.
    backend = createCudaBackend(o, &st);
    if (!backend)
      return st;
  }
  auto ctx = std::make_unique<offload_rt_context>(o, std::move(backend));
  int device = ctx->backend->enter();
  st = ctx->initialize();
  if (st < 0) {
    std::string message = offload_rt_last_error();
    ctx->teardown();
    ctx->backend->leave(device);
    return fail(st, "%s", message.c_str());
  }
  ctx->backend->leave(device);
  *out = ctx.release();
  return OFFLOAD_RT_SUCCESS;
}

namespace {

void runCallbacks(const std::vector<ReadyCallback> &ready) {
  for (const ReadyCallback &c : ready)
    c.fn(c.devicePtr, c.user);
}

/// Runs body(ctx) under the context's lock with its device current, reaps
/// finished work, and runs release callbacks once unlocked.
template <typename Body>
offload_rt_status withContext(offload_rt_context *ctx, Body body) {
  offload_rt_status st;
  if (!(ctx = resolve(ctx, &st)))
    return st;
  std::vector<ReadyCallback> ready;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    int device = ctx->backend->enter();
    st = body(*ctx);
    offload_rt_status reaped = ctx->reap();
    if (st >= 0 && reaped < 0)
      st = reaped;
    ready = ctx->takeReady();
    ctx->backend->leave(device);
  }
  runCallbacks(ready);
  return st;
}

offload_rt_status destroy(offload_rt_context *ctx) {
  std::vector<ReadyCallback> ready;
  offload_rt_status st;
  {
    std::lock_guard<std::mutex> lock(ctx->mutex);
    int device = ctx->backend->enter();
    st = ctx->teardown();
    ready = ctx->takeReady();
    ctx->backend->leave(device);
  }
  runCallbacks(ready);
  delete ctx;
  return st;
}

} // namespace

extern "C" offload_rt_status
offload_rt_context_destroy(offload_rt_context *ctx) {
  if (!ctx)
    return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                "offload_rt_context_destroy: context is NULL");
  {
    std::lock_guard<std::mutex> lock(defaultMutex);
    if (ctx == defaultContext)
      defaultContext = nullptr;
  }
  return destroy(ctx);
}

extern "C" offload_rt_status offload_rt_init(const offload_rt_options *opts) {
  std::lock_guard<std::mutex> lock(defaultMutex);
  if (defaultContext)
    return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                "offload_rt_init: the default context already exists");
  return offload_rt_context_create(opts, &defaultContext);
}

extern "C" offload_rt_status offload_rt_shutdown(void) {
  offload_rt_context *ctx;
  {
    std::lock_guard<std::mutex> lock(defaultMutex);
    ctx = defaultContext;
    defaultContext = nullptr;
  }
  return ctx ? destroy(ctx) : OFFLOAD_RT_SUCCESS;
}

extern "C" offload_rt_context *offload_rt_default_context(void) {
  std::lock_guard<std::mutex> lock(defaultMutex);
  if (!defaultContext)
    defaultStatus = offload_rt_context_create(nullptr, &defaultContext);
  return defaultContext;
}

extern "C" const char *offload_rt_backend_name(offload_rt_context *ctx) {
  if (!ctx && !(ctx = offload_rt_default_context()))
    return "none";
  return ctx->backend->name();
}

extern "C" offload_rt_status offload_rt_get_copy_streams(
    offload_rt_context *ctx, void **d2h_stream, void **h2d_stream) {
  return withContext(ctx, [&](offload_rt_context &c) {
    if (d2h_stream)
      *d2h_stream = c.d2h;
    if (h2d_stream)
      *h2d_stream = c.h2d;
    return OFFLOAD_RT_SUCCESS;
  });
}

//===--- offload and load -------------------------------------------------===//

#define CHECK_ARG(cond, fn, what)                                              \
  do {                                                                         \
    if (!(cond))                                                               \
      return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT, "%s: %s", fn, what);      \
  } while (0)

#define CHECK_BUFFER(c, buffer, fn)                                            \
  do {                                                                         \
    offload_rt_status st_ = (c).checkBuffer(buffer, fn);                       \
    if (st_ < 0)                                                               \
      return st_;                                                              \
  } while (0)

extern "C" offload_rt_status offload_rt_offload_start(
    offload_rt_context *ctx, const void *device_ptr, size_t bytes,
    void *compute_stream, offload_rt_host_buffer **out_buffer,
    offload_rt_token **out_token) {
  const char *fn = "offload_rt_offload_start";
  CHECK_ARG(out_buffer, fn, "out_buffer is NULL");
  *out_buffer = nullptr;
  if (out_token)
    *out_token = nullptr;
  CHECK_ARG(device_ptr || bytes == 0, fn, "device_ptr is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.offloadStart(device_ptr, bytes, compute_stream, out_buffer,
                          out_token);
  });
}

extern "C" offload_rt_status
offload_rt_offload(offload_rt_context *ctx, const void *device_ptr,
                   size_t bytes, void *compute_stream,
                   offload_rt_host_buffer **out_buffer) {
  return offload_rt_offload_start(ctx, device_ptr, bytes, compute_stream,
                                  out_buffer, nullptr);
}

extern "C" offload_rt_status offload_rt_load_start(
    offload_rt_context *ctx, offload_rt_host_buffer *buffer, void *device_dst,
    size_t bytes, void *compute_stream, void **out_device_ptr,
    offload_rt_token **out_token) {
  const char *fn = "offload_rt_load_start";
  CHECK_ARG(out_device_ptr, fn, "out_device_ptr is NULL");
  *out_device_ptr = nullptr;
  if (out_token)
    *out_token = nullptr;
  return withContext(ctx, [&](offload_rt_context &c) {
    CHECK_BUFFER(c, buffer, fn);
    if (bytes > buffer->bytes)
      return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                  "%s: %zu bytes requested from a host buffer of %zu", fn,
                  bytes, buffer->bytes);
    return c.loadStart(buffer, device_dst, bytes, compute_stream,
                       out_device_ptr, out_token);
  });
}

extern "C" offload_rt_status offload_rt_wait(offload_rt_context *ctx,
                                             offload_rt_token *token,
                                             void *stream) {
  return withContext(ctx, [&](offload_rt_context &c) {
    offload_rt_status st = c.checkToken(token, "offload_rt_wait");
    return st < 0 ? st : c.wait(token, stream);
  });
}

extern "C" offload_rt_status
offload_rt_token_discard(offload_rt_context *ctx, offload_rt_token *token) {
  return withContext(ctx, [&](offload_rt_context &c) {
    offload_rt_status st = c.checkToken(token, "offload_rt_token_discard");
    return st < 0 ? st : c.discard(token);
  });
}

extern "C" offload_rt_status
offload_rt_load(offload_rt_context *ctx, offload_rt_host_buffer *buffer,
                void *device_dst, size_t bytes, void *compute_stream,
                void **out_device_ptr) {
  offload_rt_token *token = nullptr;
  offload_rt_status st = offload_rt_load_start(
      ctx, buffer, device_dst, bytes, compute_stream, out_device_ptr, &token);
  if (st < 0)
    return st;
  return offload_rt_wait(ctx, token, compute_stream);
}

extern "C" offload_rt_status offload_rt_release_device_after_copy(
    offload_rt_context *ctx, offload_rt_host_buffer *buffer,
    offload_rt_release_fn fn, void *user) {
  const char *name = "offload_rt_release_device_after_copy";
  CHECK_ARG(fn, name, "release function is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    CHECK_BUFFER(c, buffer, name);
    return c.releaseDeviceAfterCopy(buffer, fn, user);
  });
}

extern "C" offload_rt_status
offload_rt_free_device_after_copy(offload_rt_context *ctx,
                                  offload_rt_host_buffer *buffer) {
  return withContext(ctx, [&](offload_rt_context &c) {
    CHECK_BUFFER(c, buffer, "offload_rt_free_device_after_copy");
    return c.freeDeviceAfterCopy(buffer);
  });
}

extern "C" offload_rt_status
offload_rt_free_host(offload_rt_context *ctx, offload_rt_host_buffer *buffer) {
  return withContext(ctx, [&](offload_rt_context &c) {
    CHECK_BUFFER(c, buffer, "offload_rt_free_host");
    return c.freeHost(buffer);
  });
}

extern "C" offload_rt_status
offload_rt_host_data(offload_rt_context *ctx, offload_rt_host_buffer *buffer,
                     int wait, void **out_host_ptr) {
  CHECK_ARG(out_host_ptr, "offload_rt_host_data", "out_host_ptr is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    CHECK_BUFFER(c, buffer, "offload_rt_host_data");
    return c.hostData(buffer, wait != 0, out_host_ptr);
  });
}

//===--- copy groups ------------------------------------------------------===//

extern "C" offload_rt_status offload_rt_offload_group(
    offload_rt_context *ctx, size_t n, const void *const *device_ptrs,
    const size_t *bytes, void *compute_stream,
    offload_rt_host_buffer **out_buffers) {
  const char *fn = "offload_rt_offload_group";
  CHECK_ARG(n > 0, fn, "n is 0");
  CHECK_ARG(out_buffers, fn, "out_buffers is NULL");
  for (size_t i = 0; i < n; ++i)
    out_buffers[i] = nullptr;
  CHECK_ARG(device_ptrs, fn, "device_ptrs is NULL");
  CHECK_ARG(bytes, fn, "bytes is NULL");
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!device_ptrs[i] && bytes[i] != 0)
      return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                  "%s: device_ptrs[%zu] is NULL", fn, i);
    // The block holds every member at an aligned offset: its size (the sum
    // of the members' rounded sizes) must not wrap around.
    if (bytes[i] > SIZE_MAX / 2 ||
        HostPool::blockSize(bytes[i]) > SIZE_MAX / 2 - total)
      return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                  "%s: the group's size overflows at bytes[%zu] = %zu", fn, i,
                  bytes[i]);
    total += HostPool::blockSize(bytes[i]);
  }
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.offloadGroup(n, device_ptrs, bytes, compute_stream, out_buffers);
  });
}

extern "C" offload_rt_status offload_rt_load_group_start(
    offload_rt_context *ctx, size_t n, offload_rt_host_buffer *const *buffers,
    const size_t *bytes, void *compute_stream, void **out_device_ptrs,
    offload_rt_token **out_tokens) {
  const char *fn = "offload_rt_load_group_start";
  CHECK_ARG(n > 0, fn, "n is 0");
  CHECK_ARG(out_device_ptrs, fn, "out_device_ptrs is NULL");
  for (size_t i = 0; i < n; ++i) {
    out_device_ptrs[i] = nullptr;
    if (out_tokens)
      out_tokens[i] = nullptr;
  }
  CHECK_ARG(buffers, fn, "buffers is NULL");
  CHECK_ARG(bytes, fn, "bytes is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    // Every member is checked before anything is enqueued: a bad one fails
    // the whole group, naming its index.
    for (size_t i = 0; i < n; ++i) {
      offload_rt_status st = c.checkBuffer(buffers[i], fn);
      if (st < 0)
        return fail(st, "%s (buffers[%zu])", offload_rt_last_error(), i);
      if (bytes[i] > buffers[i]->bytes)
        return fail(OFFLOAD_RT_ERROR_INVALID_ARGUMENT,
                    "%s: %zu bytes requested from a host buffer of %zu "
                    "(buffers[%zu])",
                    fn, bytes[i], buffers[i]->bytes, i);
    }
    return c.loadGroupStart(n, buffers, bytes, compute_stream,
                            out_device_ptrs, out_tokens);
  });
}

extern "C" offload_rt_status offload_rt_poll(offload_rt_context *ctx) {
  return withContext(ctx, [](offload_rt_context &) {
    return OFFLOAD_RT_SUCCESS; // withContext reaps
  });
}

extern "C" offload_rt_status offload_rt_synchronize(offload_rt_context *ctx) {
  return withContext(ctx,
                     [](offload_rt_context &c) { return c.synchronize(); });
}

extern "C" offload_rt_status offload_rt_reserve(offload_rt_context *ctx,
                                                uint64_t bytes) {
  return withContext(ctx,
                     [&](offload_rt_context &c) { return c.reserve(bytes); });
}

//===--- device memory and streams ----------------------------------------===//

extern "C" offload_rt_status
offload_rt_device_alloc(offload_rt_context *ctx, size_t bytes, void *stream,
                        void **out_device_ptr) {
  CHECK_ARG(out_device_ptr, "offload_rt_device_alloc",
            "out_device_ptr is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->mallocAsync(out_device_ptr, bytes,
                                  c.backend->resolve(stream));
  });
}

extern "C" offload_rt_status offload_rt_device_free(offload_rt_context *ctx,
                                                    void *device_ptr,
                                                    void *stream) {
  if (!device_ptr)
    return OFFLOAD_RT_SUCCESS; // like free(NULL)
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.deviceFree(device_ptr, stream);
  });
}

extern "C" offload_rt_status
offload_rt_memcpy_async(offload_rt_context *ctx, void *dst, const void *src,
                        size_t bytes, void *stream) {
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->memcpyAsync(dst, src, bytes, CopyKind::Default,
                                  c.backend->resolve(stream));
  });
}

extern "C" offload_rt_status offload_rt_stream_create(offload_rt_context *ctx,
                                                      void **out_stream) {
  CHECK_ARG(out_stream, "offload_rt_stream_create", "out_stream is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->createStream(out_stream);
  });
}

extern "C" offload_rt_status offload_rt_stream_destroy(offload_rt_context *ctx,
                                                       void *stream) {
  CHECK_ARG(stream, "offload_rt_stream_destroy",
            "the default stream cannot be destroyed");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->destroyStream(stream);
  });
}

extern "C" offload_rt_status
offload_rt_stream_synchronize(offload_rt_context *ctx, void *stream) {
  // Not under the context lock: a long compute stream must not stall other
  // threads' offload_rt calls.
  offload_rt_status st;
  if (!(ctx = resolve(ctx, &st)))
    return st;
  int device = ctx->backend->enter();
  st = ctx->backend->synchronizeStream(ctx->backend->resolve(stream));
  ctx->backend->leave(device);
  return st < 0 ? st : offload_rt_poll(ctx);
}

extern "C" offload_rt_status
offload_rt_stream_enqueue_host_fn(offload_rt_context *ctx, void *stream,
                                  void (*fn)(void *), void *arg) {
  CHECK_ARG(fn, "offload_rt_stream_enqueue_host_fn", "fn is NULL");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->launchHostFunc(c.backend->resolve(stream), fn, arg);
  });
}

extern "C" offload_rt_status
offload_rt_sim_inject_failure(offload_rt_context *ctx, const char *call,
                              int nth) {
  CHECK_ARG(call && nth > 0, "offload_rt_sim_inject_failure",
            "needs a call name and nth >= 1");
  return withContext(ctx, [&](offload_rt_context &c) {
    return c.backend->injectFailure(call, nth);
  });
}

//===--- statistics -------------------------------------------------------===//

extern "C" offload_rt_status offload_rt_get_stats(offload_rt_context *ctx,
                                                  offload_rt_stats *out) {
  CHECK_ARG(out, "offload_rt_get_stats", "out is NULL");
  return withContext(ctx,
                     [&](offload_rt_context &c) { return c.stats(out); });
}

extern "C" offload_rt_status offload_rt_reset_stats(offload_rt_context *ctx) {
  return withContext(ctx, [](offload_rt_context &c) {
    c.resetStats();
    return OFFLOAD_RT_SUCCESS;
  });
}

namespace {
/// Bytes for people ("1.0 GiB", "64.0 KiB"), for printf's %s.
std::string human(uint64_t bytes) {
  return offload_support::formatByteSize(static_cast<int64_t>(bytes));
}
double gbps(uint64_t bytes, double ms) { return ms > 0 ? bytes / ms / 1e6 : 0; }
} // namespace

extern "C" offload_rt_status offload_rt_print_summary(offload_rt_context *ctx,
                                                      FILE *out) {
  // Copy times exist only for finished copies; settle them so bytes and
  // times in the table describe the same copies.
  offload_rt_status st = offload_rt_synchronize(ctx);
  if (st < 0)
    return st;
  offload_rt_stats s;
  st = offload_rt_get_stats(ctx, &s);
  if (st < 0)
    return st;
  if (!out)
    out = stderr;
  std::fprintf(out,
               "offload_rt summary (backend %s)\n"
               "                       device->host    host->device\n"
               "  copies           %15llu %15llu\n"
               "  bytes            %15s %15s\n"
               "  copy time (ms)   %15.3f %15.3f\n"
               "  GB/s             %15.2f %15.2f\n"
               "  compute-stream waits: %llu, %.3f ms exposed\n"
               "  pinned pool: %s reserved in %llu chunk(s) (%llu grown), "
               "%s in use, peak %s in use, peak %s live\n"
               "  fallbacks (kept on device): %llu, pool stalls: %llu, "
               "throttles: %llu, device releases: %llu\n"
               "  device memory through offload_rt: %s in use, peak %s "
               "(%llu bytes)\n",
               offload_rt_backend_name(ctx),
               (unsigned long long)s.d2h_copies,
               (unsigned long long)s.h2d_copies, human(s.d2h_bytes).c_str(),
               human(s.h2d_bytes).c_str(), s.d2h_ms, s.h2d_ms,
               gbps(s.d2h_bytes, s.d2h_ms), gbps(s.h2d_bytes, s.h2d_ms),
               (unsigned long long)s.waits, s.wait_ms,
               human(s.pinned_reserved_bytes).c_str(),
               (unsigned long long)s.pool_chunks,
               (unsigned long long)s.pool_grows,
               human(s.pinned_in_use_bytes).c_str(),
               human(s.pinned_peak_in_use_bytes).c_str(),
               human(s.host_peak_live_bytes).c_str(),
               (unsigned long long)s.fallbacks,
               (unsigned long long)s.pool_stalls,
               (unsigned long long)s.throttles,
               (unsigned long long)s.device_releases,
               human(s.device_in_use_bytes).c_str(),
               human(s.device_peak_bytes).c_str(),
               (unsigned long long)s.device_peak_bytes);
  return OFFLOAD_RT_SUCCESS;
}
