/*===- offload_rt.h - activation offloading runtime (C ABI) ---------------===*
 *
 * offload_rt moves device buffers to pinned host memory and back with
 * asynchronous copies on dedicated streams, so the copies overlap compute.
 * It is what the offload compiler lowers `offload.offload`, `offload.load`
 * and their start/wait halves to, and what the PyTorch bridge calls.
 *
 * Two backends sit behind this one API, chosen when a context is created:
 *   - cuda: the CUDA runtime (cudaMemcpyAsync on a device-to-host and a
 *     host-to-device stream, events, cudaMallocAsync/cudaFreeAsync);
 *   - sim:  a host simulation with the same ordering rules and no GPU:
 *     "device" memory is malloc'd, every stream is a worker thread running a
 *     FIFO of tasks, events are real. CI tests the runtime through it.
 *
 * Ordering guarantees (both backends):
 *   1. An offload copies the data the compute stream has produced up to the
 *      offload call: the D2H stream waits on an event recorded on the compute
 *      stream (a device-side wait, never a host wait).
 *   2. A load reads what its offload wrote: the H2D stream waits on the
 *      offload's completion event.
 *   3. After offload_rt_wait / offload_rt_load, work later enqueued on the
 *      compute stream sees the loaded data: the compute stream waits on the
 *      load's completion event (cudaStreamWaitEvent); the host never blocks.
 *   4. A device buffer handed to offload_rt_release_device_after_copy or
 *      offload_rt_free_device_after_copy is released only after its D2H copy
 *      completed.
 *   5. offload_rt_free_host returns the pinned block to the pool only after
 *      the offload and every load reading the block completed.
 *
 * Conventions: every function returns an offload_rt_status (or a value that
 * cannot fail). Passing NULL as the context means the process-default context
 * (created on first use from the OFFLOAD_RT_* environment variables), which is
 * what compiler-lowered code does. Streams are `void *`: a cudaStream_t on the
 * cuda backend (NULL = the legacy default stream), a stream from
 * offload_rt_stream_create on the sim backend (NULL = the context's own
 * default stream). All functions are thread-safe; one context may be used
 * from several threads (autograd runs backward on its own thread).
 *
 *===----------------------------------------------------------------------===*/
#ifndef OFFLOAD_RT_OFFLOAD_RT_H
#define OFFLOAD_RT_OFFLOAD_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(_WIN32)
#define OFFLOAD_RT_EXPORT __declspec(dllexport)
#else
#define OFFLOAD_RT_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===--- status and errors ------------------------------------------------===*/

typedef enum offload_rt_status {
  OFFLOAD_RT_SUCCESS = 0,
  /* Not an error: the pinned pool could not hold the buffer (and could not
   * grow), so no copy was made. The returned handle is valid and "kept on
   * device": loads from it copy device-to-device, so code that ignores this
   * status stays correct. A one-time warning goes to stderr. */
  OFFLOAD_RT_KEPT_ON_DEVICE = 1,
  OFFLOAD_RT_ERROR_INVALID_ARGUMENT = -1,
  /* Unknown handle or token, double release, or use after release. Detected
   * when checks are on (debug builds, OFFLOAD_RT_CHECKS=1, options.checks). */
  OFFLOAD_RT_ERROR_INVALID_HANDLE = -2,
  /* A CUDA (or simulated) call failed; offload_rt_last_error() names it. */
  OFFLOAD_RT_ERROR_BACKEND = -3,
  /* The requested backend is not compiled in. */
  OFFLOAD_RT_ERROR_UNAVAILABLE = -4,
  /* The initial pinned pool or an explicit reservation could not be made. */
  OFFLOAD_RT_ERROR_OUT_OF_MEMORY = -5,
} offload_rt_status;

/* Message of the last failure on the calling thread, e.g.
 * "cudaMemcpyAsync failed: invalid argument". Empty string if none. The
 * pointer stays valid until the thread's next failing call. */
OFFLOAD_RT_EXPORT const char *offload_rt_last_error(void);
OFFLOAD_RT_EXPORT const char *offload_rt_status_string(offload_rt_status s);

/*===--- contexts ---------------------------------------------------------===*/

typedef enum offload_rt_backend {
  /* OFFLOAD_RT_BACKEND, else cuda (never a silent fallback to sim, which
   * would treat device pointers as host memory). */
  OFFLOAD_RT_BACKEND_DEFAULT = 0,
  OFFLOAD_RT_BACKEND_CUDA = 1,
  OFFLOAD_RT_BACKEND_SIM = 2,
} offload_rt_backend;

typedef struct offload_rt_options {
  offload_rt_backend backend;
  /* Pinned bytes allocated at creation in one cudaHostAlloc. The compiler
   * computes it from the plan (peak bytes resident on the host). */
  uint64_t pool_initial_bytes;
  /* Allow the pool to add chunks when it is full (cudaHostAlloc off the
   * plan: slow, a fallback; chunks left idle are released first). When 0,
   * a full pool means KEPT_ON_DEVICE. */
  int pool_growable;
  /* Most copies queued per copy stream before the host throttles by
   * waiting for the oldest; 0 = unlimited. */
  uint32_t max_in_flight;
  /* Record timing events around copies and waits (copy time, wait time). */
  int timing;
  /* Handle checks: 1 on, 0 off, -1 = on unless built with NDEBUG. */
  int checks;
  /* sim backend only: a copy of n bytes takes at least
   * latency + n / bandwidth (0 = as fast as memcpy). */
  double sim_copy_gbps;
  double sim_copy_latency_us;
  /* cuda backend only: device allocations are CUDA managed memory, so code
   * running on the host (CPU-lowered programs, tests) can read and write
   * them; frees synchronise their stream. Not for performance. */
  int host_accessible_device_memory;
  /* Testing, any backend: each copy waits this long on its copy stream
   * before it starts (a host function that sleeps there), so a consumer
   * ordered before a load's wait, or a source reused before an offload's
   * wait, reads or overwrites memory the copy has not reached yet. The
   * sim backend's sim_copy_latency_us delays the copy itself instead. */
  double copy_delay_us;
} offload_rt_options;

/* Fills defaults (backend DEFAULT, no initial pool, growable, no in-flight
 * limit, timing on, checks -1, sim at memcpy speed), then applies the
 * environment: OFFLOAD_RT_BACKEND=cuda|sim,
 * OFFLOAD_RT_POOL_BYTES (a byte size as the passes' options spell it:
 * 512MiB, 2G, 1.5GB, 4096; K, M, G, T alone are binary, KB, MB, GB, TB
 * decimal), OFFLOAD_RT_POOL_GROWABLE,
 * OFFLOAD_RT_MAX_IN_FLIGHT, OFFLOAD_RT_TIMING, OFFLOAD_RT_CHECKS,
 * OFFLOAD_RT_SIM_GBPS, OFFLOAD_RT_SIM_LATENCY_US,
 * OFFLOAD_RT_HOST_ACCESSIBLE_DEVICE, OFFLOAD_RT_COPY_DELAY_US. */
OFFLOAD_RT_EXPORT void offload_rt_options_init(offload_rt_options *opts);

typedef struct offload_rt_context offload_rt_context;

/* opts may be NULL (= offload_rt_options_init). On the cuda backend the
 * context binds to the device current at creation; calls switch to it and
 * back. Creation makes the D2H and H2D streams and the pinned pool. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_context_create(
    const offload_rt_options *opts, offload_rt_context **out);
/* Waits for the runtime's copies, runs pending release callbacks, frees
 * everything. Handles of this context become invalid. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_context_destroy(offload_rt_context *ctx);

/* The process-default context: offload_rt_init creates it with explicit
 * options (replacing none: fails if one exists); otherwise it is created on
 * first use with offload_rt_options_init's values. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_init(const offload_rt_options *opts);
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_shutdown(void);
/* NULL if creating it failed (see offload_rt_last_error). */
OFFLOAD_RT_EXPORT offload_rt_context *offload_rt_default_context(void);

OFFLOAD_RT_EXPORT const char *
offload_rt_backend_name(offload_rt_context *ctx);
/* The runtime's own copy streams (cudaStream_t on cuda), e.g. for a
 * framework's record_stream. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_get_copy_streams(
    offload_rt_context *ctx, void **d2h_stream, void **h2d_stream);

/*===--- offload and load -------------------------------------------------===*/

/* A pinned host copy of one device buffer (a block of the pool). */
typedef struct offload_rt_host_buffer offload_rt_host_buffer;
/* One started copy, for the split start/wait form. A token is consumed by
 * offload_rt_wait (or offload_rt_token_discard). */
typedef struct offload_rt_token offload_rt_token;

/* Starts copying `bytes` from device_ptr into a new pool block, after the
 * work already enqueued on compute_stream. Returns SUCCESS or
 * KEPT_ON_DEVICE with *out_buffer set either way. out_token may be NULL; a
 * token's wait makes a stream wait for the D2H copy (needed only before the
 * device buffer is overwritten or freed on that stream: prefer
 * offload_rt_*_device_after_copy, which do not stall compute). */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_offload_start(
    offload_rt_context *ctx, const void *device_ptr, size_t bytes,
    void *compute_stream, offload_rt_host_buffer **out_buffer,
    offload_rt_token **out_token);
/* offload_rt_offload_start without a token: the compute stream does not wait
 * for the copy (waiting would serialise compute behind the link). */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_offload(offload_rt_context *ctx, const void *device_ptr,
                   size_t bytes, void *compute_stream,
                   offload_rt_host_buffer **out_buffer);

/* Starts copying the first `bytes` of buffer to device_dst. If device_dst is
 * NULL, device memory is allocated stream-ordered (cudaMallocAsync) and
 * returned in *out_device_ptr; the caller owns it (offload_rt_device_free).
 * If device_dst is given, the copy also waits for the work enqueued on
 * compute_stream so far, since that work may still use device_dst. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_load_start(
    offload_rt_context *ctx, offload_rt_host_buffer *buffer,
    void *device_dst, size_t bytes, void *compute_stream,
    void **out_device_ptr, offload_rt_token **out_token);
/* Makes `stream` wait (device-side) for the token's copy, then frees the
 * token. The host does not block. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_wait(offload_rt_context *ctx, offload_rt_token *token,
                void *stream);
/* Frees a token without waiting for it. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_token_discard(offload_rt_context *ctx, offload_rt_token *token);
/* offload_rt_load_start followed by offload_rt_wait on compute_stream. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_load(offload_rt_context *ctx, offload_rt_host_buffer *buffer,
                void *device_dst, size_t bytes, void *compute_stream,
                void **out_device_ptr);

/* Called on a host thread with the offloaded device pointer once releasing it
 * is safe. It may call offload_rt functions. */
typedef void (*offload_rt_release_fn)(void *device_ptr, void *user);

/* Hands the offloaded device buffer to the runtime: fn(device_ptr, user) runs
 * only after the D2H copy completed (for a kept-on-device buffer: after
 * offload_rt_free_host and its loads). The callback runs from a later
 * offload_rt call on any thread (each call polls completed copies), from
 * offload_rt_poll, offload_rt_synchronize or context destruction. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_release_device_after_copy(
    offload_rt_context *ctx, offload_rt_host_buffer *buffer,
    offload_rt_release_fn fn, void *user);
/* Stream-ordered form for memory from offload_rt_device_alloc /
 * cudaMallocAsync: a cudaFreeAsync enqueued on the D2H stream behind the
 * copy. Never blocks anything. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_free_device_after_copy(
    offload_rt_context *ctx, offload_rt_host_buffer *buffer);

/* Releases the handle now; its pinned block returns to the pool once the
 * offload and all loads from it completed. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_free_host(offload_rt_context *ctx, offload_rt_host_buffer *buffer);

/* The pinned host copy (NULL for a kept-on-device buffer). With wait != 0
 * the host blocks until the offload copy completed, so the bytes can be read. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_host_data(offload_rt_context *ctx, offload_rt_host_buffer *buffer,
                     int wait, void **out_host_ptr);

/* Runs release callbacks whose copies completed and collects statistics of
 * finished copies; never blocks on the device. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_poll(offload_rt_context *ctx);
/* Blocks until every copy (and stream-ordered free) the runtime enqueued has
 * completed, then does what offload_rt_poll does. Compute streams are not
 * synchronized. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_synchronize(offload_rt_context *ctx);

/* Grows the pinned pool to at least `bytes` reserved (one allocation of the
 * difference). Use at start-up, not on the step's critical path. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_reserve(offload_rt_context *ctx,
                                                       uint64_t bytes);

/*===--- copy groups ------------------------------------------------------===*/

/* Small copies each pay a fixed cost (the lock, event records, stream waits,
 * one copy call) that a large copy amortises. A copy group moves n buffers
 * as one transfer: one lock, one pinned block, one wait on the compute
 * stream, one batched copy call (cudaMemcpyBatchAsync where the CUDA runtime
 * and driver have it, one cudaMemcpyAsync per buffer otherwise), one
 * completion event. The arrays are read during the call only. Statistics
 * count each member as one copy (offload_rt_stats is unchanged); a group is
 * one entry toward max_in_flight. */

/* Starts copying n device buffers into ONE new block of the pinned pool (the
 * copies side by side, each at an aligned offset), with one batched copy
 * call on the D2H stream after the work already enqueued on compute_stream.
 * out_buffers[i] is the host buffer of device_ptrs[i]: it is used exactly
 * like one from offload_rt_offload (host_data, load_start, free_host,
 * release/free_device_after_copy, each on its own); the block returns to
 * the pool once all n are freed and their copies are done. The n copies
 * complete together (one event). If the pool cannot hold the block, every
 * buffer of the group is KEPT_ON_DEVICE (as offload_rt_offload does for one),
 * and the call returns KEPT_ON_DEVICE. n >= 1; device_ptrs[i] may be NULL
 * only where bytes[i] is 0. On failure every out_buffers[i] is NULL and
 * nothing was allocated. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_offload_group(
    offload_rt_context *ctx, size_t n, const void *const *device_ptrs,
    const size_t *bytes, void *compute_stream,
    offload_rt_host_buffer **out_buffers);

/* Starts loading n host buffers into new stream-ordered device memory (as
 * offload_rt_load_start with device_dst NULL), with one copy call on the
 * H2D stream. When every member is in pinned memory the n buffers are
 * carved from ONE device allocation (at 256-byte aligned offsets), copied
 * by one plain copy where the members are one offload group's in order, by
 * one batched copy otherwise; free each with offload_rt_device_free (never
 * cudaFree it directly): the allocation returns, stream-ordered, with the
 * last member. Otherwise each member has its own allocation.
 * out_device_ptrs[i] and out_tokens[i] are those of buffers[i] (each token
 * waited or discarded on its own); the n copies complete together. buffers may come from different offloads (and groups)
 * and repeat; a kept-on-device member is copied device-to-device on the
 * compute stream, as offload_rt_load_start does. out_tokens may be NULL.
 * Every member is checked first (a bad one fails the group, naming its
 * index). On failure every output is NULL, device memory the call allocated
 * is freed again (stream-ordered) and every buffer stays loadable. */
OFFLOAD_RT_EXPORT offload_rt_status offload_rt_load_group_start(
    offload_rt_context *ctx, size_t n, offload_rt_host_buffer *const *buffers,
    const size_t *bytes, void *compute_stream, void **out_device_ptrs,
    offload_rt_token **out_tokens);

/*===--- device memory and streams (backend-neutral helpers) --------------===*/

/* Stream-ordered device allocation and free (cudaMallocAsync/cudaFreeAsync). */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_device_alloc(offload_rt_context *ctx, size_t bytes, void *stream,
                        void **out_device_ptr);
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_device_free(offload_rt_context *ctx, void *device_ptr,
                       void *stream);
/* Stream-ordered copy in any direction (cudaMemcpyDefault). */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_memcpy_async(offload_rt_context *ctx, void *dst, const void *src,
                        size_t bytes, void *stream);

/* A compute stream for callers without one (tests, the sim backend): a
 * non-blocking cudaStream_t, or a sim stream (worker thread). */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_stream_create(offload_rt_context *ctx, void **out_stream);
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_stream_destroy(offload_rt_context *ctx, void *stream);
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_stream_synchronize(offload_rt_context *ctx, void *stream);
/* Enqueues fn(arg) as stream work (cudaLaunchHostFunc; a sim task). fn must
 * not call offload_rt or CUDA. Tests use it as "compute". */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_stream_enqueue_host_fn(offload_rt_context *ctx, void *stream,
                                  void (*fn)(void *), void *arg);

/*===--- statistics -------------------------------------------------------===*/

typedef struct offload_rt_stats {
  uint64_t d2h_copies, h2d_copies;
  uint64_t d2h_bytes, h2d_bytes;
  /* Copy time summed over completed copies, from events around each copy on
   * its copy stream (sim: the worker's clock). */
  double d2h_ms, h2d_ms;
  /* Time compute streams spent blocked in offload_rt_wait/offload_rt_load,
   * from events recorded right before and after the stream wait (the gap is
   * how long the stream waited past its own preceding work). */
  uint64_t waits;
  double wait_ms;
  uint64_t pinned_reserved_bytes;  /* sum of pool chunks */
  uint64_t pinned_in_use_bytes;    /* blocks handed out (256-byte units) */
  uint64_t pinned_peak_in_use_bytes;
  uint64_t host_live_bytes;        /* bytes requested by live blocks */
  uint64_t host_peak_live_bytes;
  uint64_t pool_chunks;
  uint64_t pool_grows;             /* chunks added after creation (growth,
                                      offload_rt_reserve) */
  uint64_t fallbacks;              /* offloads answered KEPT_ON_DEVICE */
  uint64_t pool_stalls;            /* host waited for pending frees */
  uint64_t throttles;              /* host waited for max_in_flight */
  uint64_t device_releases;        /* device buffers released after copy */
  /* Device memory allocated through offload_rt (offload_rt_device_alloc,
   * loads into runtime-allocated buffers, the MLIR allocation wrappers) and
   * not yet freed, and its peak since creation or the last reset. A
   * stream-ordered free counts once its stream has reached it. */
  uint64_t device_in_use_bytes;
  uint64_t device_peak_bytes;
} offload_rt_stats;

/* Copy and wait times count copies already seen complete: call
 * offload_rt_synchronize (and sync compute streams) first for exact totals. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_get_stats(offload_rt_context *ctx, offload_rt_stats *out);
/* Zeroes counters and times; peaks restart from the current use. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_reset_stats(offload_rt_context *ctx);
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_print_summary(offload_rt_context *ctx, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_RT_OFFLOAD_RT_H */
