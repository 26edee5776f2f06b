/*===- offload_rt_sim.h - test hooks of the sim backend -------------------===*
 *
 * Only for tests of code built on offload_rt: the sim backend can be told to
 * fail a call, so error paths are exercised without a GPU.
 *
 *===----------------------------------------------------------------------===*/
#ifndef OFFLOAD_RT_OFFLOAD_RT_SIM_H
#define OFFLOAD_RT_OFFLOAD_RT_SIM_H

#include "offload_rt/offload_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the nth next call (1 = the very next) of the simulated CUDA call
 * `call` fail, e.g. "cudaMemcpyAsync", "cudaHostAlloc", "cudaMallocAsync",
 * "cudaEventRecord", "cudaStreamWaitEvent". The failure reads
 * "<call> failed: injected failure (sim)". Returns
 * OFFLOAD_RT_ERROR_UNAVAILABLE on the cuda backend. */
OFFLOAD_RT_EXPORT offload_rt_status
offload_rt_sim_inject_failure(offload_rt_context *ctx, const char *call,
                              int nth);

#ifdef __cplusplus
}
#endif

#endif /* OFFLOAD_RT_OFFLOAD_RT_SIM_H */
