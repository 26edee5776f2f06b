/*===- offload_torch_ops.h - C entry points of liboffload_torch_ops.so ----===*
 *
 * liboffload_torch_ops.so registers the torch.ops.offload.* copy ops
 * (TORCH_LIBRARY(offload, m), see docs/torch-ops.md) and exports these plain
 * C functions for statistics, which python/offload_mlir/ops.py calls through
 * ctypes. offload_rt itself is compiled into the library but not exported.
 *
 *===----------------------------------------------------------------------===*/
#ifndef OFFLOAD_TORCH_OPS_H
#define OFFLOAD_TORCH_OPS_H

#include "offload_rt/offload_rt.h"

#define OFFLOAD_TORCH_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

enum { OFFLOAD_TORCH_BACKEND_CUDA = 0, OFFLOAD_TORCH_BACKEND_SIM = 1 };

/* Statistics of one backend's runtime context(s) (cuda: summed over the
 * devices used; peaks are summed too, an upper bound). Synchronises first:
 * cuda: cudaDeviceSynchronize on each device with a context, then the
 * runtime's copy streams, so copy and wait times are complete; sim: the ops'
 * compute stream and the copy streams. Returns 0, 1 if that backend's
 * context was never created (*out zeroed), or a negative offload_rt_status
 * (offload_torch_last_error() says why). */
OFFLOAD_TORCH_EXPORT int offload_torch_get_stats(int backend,
                                                 offload_rt_stats *out);
/* Zeroes the runtime statistics of every context and the counters below. */
OFFLOAD_TORCH_EXPORT int offload_torch_reset_stats(void);
/* sizeof(offload_rt_stats), so a ctypes mirror can check its layout. */
OFFLOAD_TORCH_EXPORT size_t offload_torch_stats_size(void);

/* What the ops add to the runtime's statistics. */
typedef struct offload_torch_extra_stats {
  /* sim backend: seconds the calling thread was blocked in offload_wait,
   * load and load_wait (the CPU compute "stream" is the host thread, so this
   * is the exposed wait time; cuda waits never block the host and are in
   * offload_rt_stats.wait_ms). */
  double host_wait_seconds;
  uint64_t host_waits;
  /* offload_start answered OFFLOAD_RT_KEPT_ON_DEVICE (pool full, cannot
   * grow): the tensor was copied synchronously into an ordinary CPU tensor. */
  uint64_t sync_fallbacks;
  /* load/load_start of a host tensor that is not a live offload_start block
   * (a fallback copy, a user tensor): a plain copy_ on the compute stream. */
  uint64_t generic_loads;
  /* Bookkeeping now: offloads started and not waited, loads started and not
   * waited, host blocks alive. */
  uint64_t pending_offloads;
  uint64_t pending_loads;
  uint64_t live_host_blocks;
  /* CUDA contexts that record no timing events (the default; set
   * OFFLOAD_RT_TIMING=1 for timed ones): their copy and wait times
   * (offload_rt_stats d2h_ms, h2d_ms, wait_ms) stay 0. */
  uint64_t untimed_cuda_contexts;
  /* Loads prefetch_issue started that their load_start took. */
  uint64_t prefetched_loads;
} offload_torch_extra_stats;

/* Fills *out (size = sizeof(offload_torch_extra_stats), for ABI checks);
 * returns 0, or -1 on a size mismatch. */
OFFLOAD_TORCH_EXPORT int
offload_torch_get_extra_stats(offload_torch_extra_stats *out, size_t size);
/* extra_stats.host_wait_seconds. */
OFFLOAD_TORCH_EXPORT double offload_torch_host_wait_seconds(void);
/* Message of the calling thread's last failure in the functions above. */
OFFLOAD_TORCH_EXPORT const char *offload_torch_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_TORCH_OPS_H */
